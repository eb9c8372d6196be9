//! A PostgreSQL cluster of the chaos run's own (initdb in a temporary directory, on a free
//! port), so it can be stopped and started again under load without touching anyone
//! else's. Commit timestamps are on: the checker reads when each row was committed.

use std::path::{Path, PathBuf};
use std::process::Command;

/// A running cluster, stopped when dropped.
pub struct Cluster {
    bin: PathBuf,
    data: PathBuf,
    dir: PathBuf,
    port: u16,
}

fn pg_bin() -> Result<PathBuf, String> {
    let mut found: Vec<PathBuf> = std::fs::read_dir("/usr/lib/postgresql")
        .map_err(|e| format!("no PostgreSQL under /usr/lib/postgresql: {e}"))?
        .filter_map(|e| e.ok().map(|e| e.path().join("bin")))
        .filter(|p| p.join("initdb").exists())
        .collect();
    found.sort();
    found
        .pop()
        .ok_or_else(|| "no initdb under /usr/lib/postgresql/*/bin".to_owned())
}

fn free_port() -> Result<u16, String> {
    let l = std::net::TcpListener::bind("127.0.0.1:0").map_err(|e| e.to_string())?;
    Ok(l.local_addr().map_err(|e| e.to_string())?.port())
}

/// Runs `program args` as the `postgres` user when this process is root (PostgreSQL refuses
/// to run as root).
fn as_postgres(program: &Path, args: &[&str]) -> Result<(), String> {
    let root = Command::new("id")
        .arg("-u")
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim() == "0")
        .unwrap_or(false);
    let mut cmd = if root {
        let mut c = Command::new("runuser");
        c.args(["-u", "postgres", "--"]).arg(program);
        c
    } else {
        Command::new(program)
    };
    let out = cmd
        .args(args)
        .output()
        .map_err(|e| format!("{}: {e}", program.display()))?;
    if !out.status.success() {
        return Err(format!(
            "{} {args:?}: {}{}",
            program.display(),
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    Ok(())
}

impl Cluster {
    /// A new cluster under `dir`, started.
    pub fn start(dir: &Path) -> Result<Cluster, String> {
        let bin = pg_bin()?;
        std::fs::create_dir_all(dir).map_err(|e| e.to_string())?;
        // The postgres user must own it (created when missing, as .ci/services does).
        let _ = Command::new("useradd")
            .args(["--system", "--no-create-home", "postgres"])
            .output();
        let _ = Command::new("chown")
            .args(["-R", "postgres"])
            .arg(dir)
            .output();
        let data = dir.join("data");
        as_postgres(
            &bin.join("initdb"),
            &[
                "-D",
                &data.display().to_string(),
                "-A",
                "trust",
                "-U",
                "postgres",
            ],
        )?;
        let cluster = Cluster {
            bin,
            data,
            dir: dir.to_owned(),
            port: free_port()?,
        };
        cluster.up()?;
        Ok(cluster)
    }

    /// `postgres://` URL of its `postgres` database.
    pub fn url(&self) -> String {
        format!("postgres://postgres@127.0.0.1:{}/postgres", self.port)
    }

    /// Starts it (again).
    pub fn up(&self) -> Result<(), String> {
        let opts = format!(
            "-p {} -k {} -c listen_addresses=127.0.0.1 -c fsync=off -c max_connections=300 -c track_commit_timestamp=on",
            self.port,
            self.dir.display()
        );
        as_postgres(
            &self.bin.join("pg_ctl"),
            &[
                "-D",
                &self.data.display().to_string(),
                "-l",
                &self.dir.join("log").display().to_string(),
                "-w",
                "-o",
                &opts,
                "start",
            ],
        )
    }

    /// Stops it (fast: open connections are cut, as a crash or a failover cuts them).
    pub fn down(&self) -> Result<(), String> {
        as_postgres(
            &self.bin.join("pg_ctl"),
            &[
                "-D",
                &self.data.display().to_string(),
                "-m",
                "fast",
                "-w",
                "stop",
            ],
        )
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        let _ = self.down();
    }
}
