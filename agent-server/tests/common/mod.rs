//! What the tests that run the reference example as processes share: starting it (and
//! stopping it when dropped), and a PostgreSQL database of their own.

#![allow(dead_code)]

pub mod served;

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};

/// A running reference server, killed when dropped.
pub struct Instance {
    pub child: Child,
    pub url: String,
}

impl Drop for Instance {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Starts `examples/reference` with `args` (cargo test builds it) and waits for its
/// "listening on" line.
pub fn start_reference(args: &[&str]) -> Instance {
    let exe = std::env::current_exe().unwrap();
    let example = exe
        .parent()
        .and_then(|deps| deps.parent())
        .map(|dir| dir.join("examples").join("reference"))
        .unwrap();
    assert!(
        example.exists(),
        "cargo test builds the reference example ({})",
        example.display()
    );
    let mut child = Command::new(&example)
        .args(args)
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let url = line
        .trim()
        .strip_prefix("listening on ")
        .unwrap_or_else(|| panic!("the server did not start: {line:?}"))
        .to_owned();
    Instance { child, url }
}

/// A fresh database (named `<prefix>_<uuid>`) on the server of `AGENTGRAPH_POSTGRES_URL`;
/// `None` (and a note) without one, a panic in CI without one.
pub async fn fresh_database(prefix: &str) -> Option<String> {
    let url = match std::env::var("AGENTGRAPH_POSTGRES_URL") {
        Ok(u) if !u.is_empty() => u,
        _ if std::env::var_os("CI").is_some() => {
            panic!(
                "AGENTGRAPH_POSTGRES_URL is not set in CI: .ci/services/postgres.sh starts a server"
            )
        }
        _ => {
            eprintln!(
                "skipped PostgreSQL: AGENTGRAPH_POSTGRES_URL not set (source .ci/services/postgres.sh)"
            );
            return None;
        }
    };
    let (client, connection) = tokio_postgres::connect(&url, tokio_postgres::NoTls)
        .await
        .unwrap();
    tokio::spawn(connection);
    let name = format!("{prefix}_{}", uuid::Uuid::new_v4().simple());
    client
        .batch_execute(&format!("CREATE DATABASE {name}"))
        .await
        .unwrap();
    let (base, _) = url.rsplit_once('/').unwrap();
    Some(format!("{base}/{name}"))
}
