//! `server_bench`: the LangGraph server API under load, ours (`agent-server`'s reference
//! example) and langgraph-api (`langgraph dev`, in-memory runtime), one deployment after the
//! other, each started here on free ports and stopped after its scenarios (see
//! `agent_bench::load`): stateless `/runs/wait` throughput and latency, time to the first SSE
//! event, RSS after creating many threads. Ours runs on a SQLite file and, when a PostgreSQL
//! URL is given, on a fresh database with one and with two instances (the load split between
//! them). Writes the JSON to `--out` and prints the tables. `cargo xtask bench server` builds
//! what it needs and runs it.
//!
//! With `--scale`, the reads at scale instead (see `agent_bench::scale`): each deployment
//! (ours on SQLite and on PostgreSQL with one instance, langgraph-api at the smallest size
//! only) is filled through its API to each of `--sizes` in turn and the reads timed at each.
//! On PostgreSQL each kind of read runs once untimed after each fill (the first count folds
//! the fill's count changes), then the database is vacuumed and analyzed, as autovacuum does
//! within a minute of such writes, before the reads are timed.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use agent_bench::pg::{create_database, drop_database, with_database};
use agent_bench::{load, server_report};
use serde_json::{Value, json};

const USAGE: &str = "usage: server_bench --ours PATH [--langgraph PATH --langgraph-config PATH] [--note TEXT].. [--postgres URL] [--concurrency N] [--seconds N] [--warmup-seconds N] [--stream-runs N] [--threads N] [--client-threads N] [--scale [--sizes N,N..] [--reads N]] [--commit TEXT] --out FILE --work DIR";

type Error = Box<dyn std::error::Error + Send + Sync>;

struct Args {
    ours: PathBuf,
    langgraph: Option<PathBuf>,
    langgraph_config: Option<PathBuf>,
    notes: Vec<String>,
    postgres: Option<String>,
    concurrency: usize,
    seconds: u64,
    warmup_seconds: u64,
    stream_runs: usize,
    threads: usize,
    client_threads: usize,
    /// The reads at scale instead of the load scenarios.
    scale: bool,
    /// Thread counts the reads are timed at (ascending).
    sizes: Vec<usize>,
    /// Reads timed per read and size.
    reads: usize,
    commit: Option<String>,
    out: PathBuf,
    work: PathBuf,
}

fn parse() -> Result<Args, Error> {
    let mut ours = None;
    let mut out = None;
    let mut work = None;
    let mut args = Args {
        ours: PathBuf::new(),
        langgraph: None,
        langgraph_config: None,
        notes: Vec::new(),
        postgres: std::env::var("AGENTGRAPH_POSTGRES_URL")
            .ok()
            .filter(|u| !u.is_empty()),
        concurrency: 32,
        seconds: 10,
        warmup_seconds: 2,
        stream_runs: 100,
        threads: 10_000,
        client_threads: 1,
        scale: false,
        sizes: vec![10_000, 200_000],
        reads: 300,
        commit: None,
        out: PathBuf::new(),
        work: PathBuf::new(),
    };
    let mut it = std::env::args().skip(1);
    while let Some(arg) = it.next() {
        let mut value = || {
            it.next()
                .ok_or_else(|| format!("{arg} takes a value\n{USAGE}"))
        };
        match arg.as_str() {
            "--ours" => ours = Some(PathBuf::from(value()?)),
            "--langgraph" => args.langgraph = Some(PathBuf::from(value()?)),
            "--langgraph-config" => args.langgraph_config = Some(PathBuf::from(value()?)),
            "--note" => args.notes.push(value()?),
            "--postgres" => args.postgres = Some(value()?),
            "--concurrency" => args.concurrency = value()?.parse()?,
            "--seconds" => args.seconds = value()?.parse()?,
            "--warmup-seconds" => args.warmup_seconds = value()?.parse()?,
            "--stream-runs" => args.stream_runs = value()?.parse()?,
            "--threads" => args.threads = value()?.parse()?,
            "--client-threads" => args.client_threads = value()?.parse()?,
            "--scale" => args.scale = true,
            "--sizes" => {
                args.sizes = value()?
                    .split(',')
                    .map(|n| n.trim().replace('_', "").parse())
                    .collect::<Result<_, _>>()?;
            }
            "--reads" => args.reads = value()?.parse()?,
            "--commit" => args.commit = Some(value()?),
            "--out" => out = Some(PathBuf::from(value()?)),
            "--work" => work = Some(PathBuf::from(value()?)),
            _ => return Err(format!("unknown argument `{arg}`\n{USAGE}").into()),
        }
    }
    // The servers run in directories of their own: paths from here are made absolute.
    args.ours = std::path::absolute(ours.ok_or(USAGE)?)?;
    if let Some(cli) = &args.langgraph {
        args.langgraph = Some(std::path::absolute(cli)?);
    }
    if let Some(config) = &args.langgraph_config {
        args.langgraph_config = Some(std::path::absolute(config)?);
    }
    args.out = out.ok_or(USAGE)?;
    args.work = std::path::absolute(work.ok_or(USAGE)?)?;
    if args.concurrency == 0 || args.client_threads == 0 {
        return Err("--concurrency and --client-threads must be at least 1".into());
    }
    if args.sizes.is_empty() || !args.sizes.is_sorted() || args.reads == 0 {
        return Err("--sizes must be ascending and --reads at least 1".into());
    }
    Ok(args)
}

fn main() -> Result<(), Error> {
    let args = parse()?;
    std::fs::create_dir_all(&args.work)?;
    // The load generator's own threads: the servers share the machine's cores with it.
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(args.client_threads)
        .enable_all()
        .build()?;
    let load_before = load_average();
    let mut notes = args.notes.clone();
    let mut rows = Vec::new();
    let mut deployments = Vec::new();
    match (&args.langgraph, &args.langgraph_config) {
        (Some(cli), Some(config)) => deployments.push(Deployment::LangGraph {
            cli: cli.clone(),
            config: config.clone(),
        }),
        _ => notes.push("langgraph-api: not measured (no `--langgraph`).".to_owned()),
    }
    deployments.push(Deployment::Ours {
        store: Store::Sqlite,
        instances: 1,
    });
    if args.postgres.is_some() {
        deployments.push(Deployment::Ours {
            store: Store::Postgres,
            instances: 1,
        });
        if !args.scale {
            deployments.push(Deployment::Ours {
                store: Store::Postgres,
                instances: 2,
            });
        }
    } else {
        notes.push(
            "PostgreSQL: not measured (`AGENTGRAPH_POSTGRES_URL` is not set; `source .ci/services/postgres.sh` starts a server).".to_owned(),
        );
    }
    for deployment in &deployments {
        eprintln!("== server bench: {}", deployment.label());
        let mut row = deployment.row();
        match runtime.block_on(measure(&args, deployment, &mut row)) {
            Ok(()) => {}
            Err(e) => {
                eprintln!("   failed: {e}");
                row["error"] = e.to_string().into();
            }
        }
        rows.push(row);
    }
    if args.scale {
        let report = json!({
            "commit": args.commit,
            "machine": machine(),
            "load_before": load_before,
            "load_after": load_average(),
            "settings": {
                "sizes": args.sizes,
                "reads": args.reads,
                "fill_concurrency": args.concurrency,
            },
            "rows": rows,
            "notes": notes,
        });
        std::fs::write(&args.out, serde_json::to_string_pretty(&report)?)?;
        println!(
            "Machine: {}; load average (1, 5, 15 min) {} before, {} after{}.\n",
            report["machine"].as_str().unwrap_or("?"),
            load_before,
            report["load_after"].as_str().unwrap_or("?"),
            args.commit
                .as_deref()
                .map(|c| format!("; commit {c}"))
                .unwrap_or_default(),
        );
        print!("{}", agent_bench::scale::render(&report));
        eprintln!("(JSON in {})", args.out.display());
        return Ok(());
    }
    let report = json!({
        "commit": args.commit,
        "machine": machine(),
        "load_before": load_before,
        "load_after": load_average(),
        "settings": {
            "concurrency": args.concurrency,
            "seconds": args.seconds,
            "warmup_seconds": args.warmup_seconds,
            "stream_runs": args.stream_runs,
            "threads": args.threads,
            "client_threads": args.client_threads,
        },
        "rows": rows,
        "notes": notes,
    });
    std::fs::write(&args.out, serde_json::to_string_pretty(&report)?)?;
    println!(
        "Machine: {}; load average (1, 5, 15 min) {} before, {} after{}.\n",
        report["machine"].as_str().unwrap_or("?"),
        load_before,
        report["load_after"].as_str().unwrap_or("?"),
        args.commit
            .as_deref()
            .map(|c| format!("; commit {c}"))
            .unwrap_or_default(),
    );
    print!("{}", server_report::render(&report));
    eprintln!("(JSON in {})", args.out.display());
    Ok(())
}

#[derive(Clone, Copy, PartialEq)]
enum Store {
    Sqlite,
    Postgres,
}

enum Deployment {
    LangGraph { cli: PathBuf, config: PathBuf },
    Ours { store: Store, instances: usize },
}

impl Deployment {
    fn label(&self) -> String {
        match self {
            Deployment::LangGraph { .. } => "langgraph-api (langgraph dev, in-memory)".to_owned(),
            Deployment::Ours {
                store: Store::Sqlite,
                ..
            } => "agent-server, SQLite file".to_owned(),
            Deployment::Ours { instances, .. } => {
                format!("agent-server, PostgreSQL, {instances} instance(s)")
            }
        }
    }

    fn row(&self) -> Value {
        match self {
            Deployment::LangGraph { .. } => {
                json!({"server": "langgraph-api", "store": "in-memory", "instances": 1})
            }
            Deployment::Ours { store, instances } => json!({
                "server": "agent-server",
                "store": if *store == Store::Sqlite { "sqlite" } else { "postgres" },
                "instances": instances,
            }),
        }
    }
}

/// Starts the deployment, runs every scenario against it, stops it.
async fn measure(args: &Args, deployment: &Deployment, row: &mut Value) -> Result<(), Error> {
    let mut database = None;
    let mut servers = Vec::new();
    let started = start(args, deployment, &mut database, &mut servers).await;
    let result = match started {
        Ok(()) if args.scale => {
            let db = database
                .as_ref()
                .map(|(admin, name)| with_database(admin, name));
            let peer = matches!(deployment, Deployment::LangGraph { .. });
            scale(args, &servers, db.as_deref(), peer, row).await
        }
        Ok(()) => scenarios(args, &servers, row).await,
        Err(e) => Err(e),
    };
    for server in &mut servers {
        server.stop();
    }
    if let Some((admin, name)) = database {
        drop_database(&admin, &name).await;
    }
    result
}

async fn start(
    args: &Args,
    deployment: &Deployment,
    database: &mut Option<(String, String)>,
    servers: &mut Vec<Server>,
) -> Result<(), Error> {
    match deployment {
        Deployment::LangGraph { cli, config } => {
            // `langgraph dev` resolves the config's paths from its working directory and
            // keeps its state (`.langgraph_api/`) there: it runs in a copy of the app.
            let dir = fresh_dir(&args.work.join("langgraph"))?;
            let app = config
                .parent()
                .ok_or("the langgraph config has no directory")?;
            copy_dir(app, &dir)?;
            let config = config
                .file_name()
                .ok_or("the langgraph config has no name")?;
            let port = free_port()?;
            let mut cmd = Command::new(cli);
            cmd.args(["dev", "--no-browser", "--port"])
                .arg(port.to_string())
                .args(["--n-jobs-per-worker", "10", "--no-reload", "--config"])
                .arg(config)
                .env("LANGSMITH_TRACING", "false")
                .env("LANGGRAPH_NO_ANALYTICS", "1")
                .current_dir(&dir);
            servers.push(Server::spawn(cmd, port, &dir.join("server.log"))?);
        }
        Deployment::Ours { store, instances } => {
            let db = match store {
                Store::Sqlite => {
                    let dir = fresh_dir(&args.work.join("sqlite"))?;
                    std::path::absolute(dir.join("bench.sqlite"))?
                        .to_string_lossy()
                        .into_owned()
                }
                Store::Postgres => {
                    let admin = args.postgres.clone().ok_or("no PostgreSQL URL")?;
                    let name = format!(
                        "agentgraph_server_bench_{}_{}",
                        std::process::id(),
                        instances
                    );
                    create_database(&admin, &name).await?;
                    *database = Some((admin.clone(), name.clone()));
                    with_database(&admin, &name)
                }
            };
            let dir = fresh_dir(&args.work.join(match store {
                Store::Sqlite => "ours-sqlite".to_owned(),
                Store::Postgres => format!("ours-postgres-{instances}"),
            }))?;
            for i in 0..*instances {
                let port = free_port()?;
                let mut cmd = Command::new(&args.ours);
                cmd.arg("--port")
                    .arg(port.to_string())
                    .arg("--db")
                    .arg(&db)
                    .current_dir(&dir);
                servers.push(Server::spawn(
                    cmd,
                    port,
                    &dir.join(format!("server-{i}.log")),
                )?);
            }
        }
    }
    let client = load::client(4)?;
    for server in servers.iter_mut() {
        server.wait_ready(&client, Duration::from_secs(180)).await?;
    }
    Ok(())
}

async fn scenarios(args: &Args, servers: &[Server], row: &mut Value) -> Result<(), Error> {
    let urls: Vec<String> = servers.iter().map(|s| s.url.clone()).collect();
    let pids: Vec<u32> = servers.iter().map(|s| s.pid).collect();
    let client = load::client(args.concurrency)?;
    let idle = rss_kib(&pids);

    eprintln!(
        "   POST /runs/wait: {} clients, {} s (+{} s warm-up)",
        args.concurrency, args.seconds, args.warmup_seconds
    );
    let wait = load::runs_wait(
        &client,
        &urls,
        args.concurrency,
        Duration::from_secs(args.warmup_seconds),
        Duration::from_secs(args.seconds),
    )
    .await;
    eprintln!(
        "   {:.0} requests/s, p50 {:.2} ms, p99 {:.2} ms, {} errors",
        wait.per_second, wait.latency.p50_ms, wait.latency.p99_ms, wait.errors
    );
    row["runs_wait"] = serde_json::to_value(&wait)?;

    eprintln!("   first SSE event: {} runs", args.stream_runs);
    let first = load::first_events(&client, &urls, 10, args.stream_runs).await;
    eprintln!(
        "   p50 {:.2} ms, p99 {:.2} ms, {} errors",
        first.latency.p50_ms, first.latency.p99_ms, first.errors
    );
    row["first_event"] = serde_json::to_value(&first)?;

    eprintln!("   {} threads", args.threads);
    let before = rss_kib(&pids);
    let created = load::create_threads(&client, &urls, args.threads, args.concurrency).await;
    // Let the servers settle (background writes, allocator) before reading their RSS.
    tokio::time::sleep(Duration::from_secs(1)).await;
    let after = rss_kib(&pids);
    eprintln!(
        "   {:.0} threads/s, {} errors; RSS {} -> {} KiB",
        created.per_second,
        created.errors,
        before.unwrap_or(0),
        after.unwrap_or(0)
    );
    row["threads"] = json!({
        "idle_kib": idle,
        "before_kib": before,
        "after_kib": after,
        "created": created,
    });
    Ok(())
}

/// The reads at scale: filled to each size in turn (langgraph-api: the smallest only), the
/// reads timed at each.
async fn scale(
    args: &Args,
    servers: &[Server],
    postgres: Option<&str>,
    peer: bool,
    row: &mut Value,
) -> Result<(), Error> {
    use agent_bench::scale;
    let url = &servers.first().ok_or("no server")?.url;
    let client = load::client(args.concurrency)?;
    let sizes = if peer {
        &args.sizes[..1]
    } else {
        &args.sizes[..]
    };
    let mut made = 0;
    let mut reads = serde_json::Map::new();
    let mut fills = serde_json::Map::new();
    for &size in sizes {
        eprintln!("   filling to {size} threads");
        let start = Instant::now();
        let (n, error) = scale::fill(&client, url, made, size, args.concurrency).await;
        let seconds = start.elapsed().as_secs_f64();
        eprintln!(
            "   {n} threads in {seconds:.1} s ({:.0}/s)",
            n as f64 / seconds.max(1e-9)
        );
        if let Some(e) = error {
            return Err(format!("filling to {size} threads: {e}").into());
        }
        made = size;
        fills.insert(size.to_string(), json!({"threads": n, "seconds": seconds}));
        if let Some(db) = postgres {
            // One read of each kind first: the server folds the fill's count changes (one
            // per thread made, with no read in between) on the first count and vacuums the
            // change log off the request's path. A server whose counts are read folds every
            // 200 changes; the bulk fold and its vacuum are the fill's cost, not a read's, so
            // the vacuum here waits for the server's and the timed reads start after both.
            for read in scale::READS {
                scale::time(&client, url, read, size, 1, 0).await;
            }
            agent_bench::pg::vacuum_analyze(db).await?;
        }
        let mut at = serde_json::Map::new();
        for read in scale::READS {
            let timed = scale::time(&client, url, read, size, 30, args.reads).await;
            eprintln!(
                "   {size}: {}: p50 {:.3} ms, mean {:.3} ms, p99 {:.3} ms, {} errors",
                read.name(),
                timed.latency.p50_ms,
                timed.mean_ms,
                timed.latency.p99_ms,
                timed.errors
            );
            at.insert(read.name().to_owned(), serde_json::to_value(&timed)?);
        }
        reads.insert(size.to_string(), Value::Object(at));
    }
    row["fills"] = Value::Object(fills);
    row["reads"] = Value::Object(reads);
    Ok(())
}

/// A server process (with its children: its own process group), stopped on drop.
struct Server {
    child: Child,
    pid: u32,
    url: String,
    log: PathBuf,
    stopped: bool,
}

impl Server {
    fn spawn(mut cmd: Command, port: u16, log: &Path) -> Result<Self, Error> {
        use std::os::unix::process::CommandExt as _;
        let file = std::fs::File::create(log)?;
        cmd.stdin(Stdio::null())
            .stdout(Stdio::from(file.try_clone()?))
            .stderr(Stdio::from(file))
            .process_group(0);
        let child = cmd
            .spawn()
            .map_err(|e| format!("cannot start {:?}: {e}", cmd.get_program()))?;
        Ok(Self {
            pid: child.id(),
            child,
            url: format!("http://127.0.0.1:{port}"),
            log: log.to_owned(),
            stopped: false,
        })
    }

    async fn wait_ready(&mut self, client: &reqwest::Client, limit: Duration) -> Result<(), Error> {
        let start = Instant::now();
        loop {
            if let Ok(Some(status)) = self.child.try_wait() {
                return Err(format!(
                    "{} exited ({status}) before it answered; log: {}",
                    self.url,
                    self.log.display()
                )
                .into());
            }
            if let Ok(r) = client.get(format!("{}/ok", self.url)).send().await
                && r.status().is_success()
            {
                eprintln!(
                    "   {} ready after {:.1} s (pid {})",
                    self.url,
                    start.elapsed().as_secs_f64(),
                    self.pid
                );
                return Ok(());
            }
            if start.elapsed() > limit {
                return Err(format!(
                    "{} did not answer /ok within {} s; log: {}",
                    self.url,
                    limit.as_secs(),
                    self.log.display()
                )
                .into());
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }

    /// SIGTERM to the process group, SIGKILL after 10 s.
    fn stop(&mut self) {
        if self.stopped {
            return;
        }
        self.stopped = true;
        let group = format!("-{}", self.pid);
        let _ = Command::new("kill")
            .args(["-TERM", "--", &group])
            .stderr(Stdio::null())
            .status();
        let start = Instant::now();
        while start.elapsed() < Duration::from_secs(10) {
            if let Ok(Some(_)) = self.child.try_wait() {
                break;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        // Children of the group (langgraph's workers) may outlive the leader.
        let _ = Command::new("kill")
            .args(["-KILL", "--", &group])
            .stderr(Stdio::null())
            .status();
        let _ = self.child.wait();
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.stop();
    }
}

/// The summed `VmRSS` of every process in the given process groups (a server and its
/// children).
fn rss_kib(groups: &[u32]) -> Option<u64> {
    let mut total = 0;
    let mut found = false;
    for entry in std::fs::read_dir("/proc").ok()?.flatten() {
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|s| s.parse::<u32>().ok())
        else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
            continue;
        };
        // Fields after the command's closing parenthesis: state, ppid, pgrp, ...
        let pgrp = stat
            .rsplit_once(')')
            .and_then(|(_, rest)| rest.split_whitespace().nth(2))
            .and_then(|g| g.parse::<u32>().ok());
        if !pgrp.is_some_and(|g| groups.contains(&g)) {
            continue;
        }
        let Ok(status) = std::fs::read_to_string(format!("/proc/{pid}/status")) else {
            continue;
        };
        if let Some(kib) = status
            .lines()
            .find_map(|l| l.strip_prefix("VmRSS:"))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        {
            total += kib;
            found = true;
        }
    }
    found.then_some(total)
}

/// A port free right now on loopback (the OS picks it).
fn free_port() -> Result<u16, Error> {
    let listener = std::net::TcpListener::bind(("127.0.0.1", 0))?;
    Ok(listener.local_addr()?.port())
}

/// `dir`, emptied.
fn fresh_dir(dir: &Path) -> Result<PathBuf, Error> {
    if dir.exists() {
        std::fs::remove_dir_all(dir)?;
    }
    std::fs::create_dir_all(dir)?;
    Ok(dir.to_owned())
}

/// Copies the files under `from` into `to` (made as needed).
fn copy_dir(from: &Path, to: &Path) -> Result<(), Error> {
    std::fs::create_dir_all(to)?;
    for entry in std::fs::read_dir(from)? {
        let entry = entry?;
        let target = to.join(entry.file_name());
        if entry.file_type()?.is_dir() {
            copy_dir(&entry.path(), &target)?;
        } else {
            std::fs::copy(entry.path(), target)?;
        }
    }
    Ok(())
}

/// CPU model and cores.
fn machine() -> String {
    let cpu = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|info| {
            info.lines()
                .find_map(|l| l.strip_prefix("model name"))
                .map(|l| l.trim_start_matches([' ', '\t', ':']).to_owned())
        })
        .unwrap_or_else(|| "unknown CPU".to_owned());
    let cores = std::thread::available_parallelism().map_or(0, |n| n.get());
    format!("{cpu}, {cores} cores")
}

/// The 1-, 5- and 15-minute load averages.
fn load_average() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .ok()
        .map(|l| l.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_else(|| "unknown".to_owned())
}
