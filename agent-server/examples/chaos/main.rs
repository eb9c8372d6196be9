//! The fault suite: `cargo xtask chaos` runs this (and `cargo test` a short form of it).
//!
//! `chaos [--seed N] [--seconds S] [--backend postgres|sqlite] [--instances N]` starts the
//! reference server (`--with-slow`) as several instances on one PostgreSQL of its own (or
//! one instance on SQLite), and for S seconds runs a schedule drawn from the seed: clients
//! creating runs on a few hot threads with every `multitask_strategy`, cancels of each
//! action, thread deletes, joins, stateless runs, crons; and faults — SIGKILL (the
//! instance started again), SIGSTOP past the lease then SIGCONT, PostgreSQL stopped and
//! started again. Then it waits for the runs to settle and an independent checker reads
//! the database and every client's observations (`checker`). A failure prints the seed,
//! and the same seed replays the same schedule.

mod checker;
mod cluster;

use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

/// What the run is told.
#[derive(Debug, Clone)]
struct Args {
    seed: u64,
    seconds: u64,
    postgres: bool,
    instances: usize,
}

fn args() -> Result<Args, String> {
    let mut a = Args {
        seed: 1,
        seconds: 20,
        postgres: true,
        instances: 3,
    };
    let mut it = std::env::args().skip(1);
    while let Some(arg) = it.next() {
        let mut value = || it.next().ok_or(format!("{arg} takes a value"));
        match arg.as_str() {
            "--seed" => a.seed = value()?.parse().map_err(|e| format!("--seed: {e}"))?,
            "--seconds" => a.seconds = value()?.parse().map_err(|e| format!("--seconds: {e}"))?,
            "--instances" => {
                a.instances = value()?.parse().map_err(|e| format!("--instances: {e}"))?
            }
            "--backend" => {
                a.postgres = match value()?.as_str() {
                    "postgres" => true,
                    "sqlite" => false,
                    other => return Err(format!("--backend: postgres or sqlite, not {other}")),
                }
            }
            other => return Err(format!("unknown argument {other}")),
        }
    }
    if !a.postgres {
        a.instances = 1;
    }
    Ok(a)
}

/// Milliseconds since the Unix epoch (the clock the checker compares commits with).
pub fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .unwrap_or(0)
}

/// What the clients saw, for the checker.
#[derive(Default, Debug)]
pub struct Observations {
    /// Every answer: (when, path, status).
    pub answers: Vec<(i64, String, u16)>,
    /// Runs a server accepted: run, thread, input tag, strategy, stateless.
    pub accepted: Vec<Accepted>,
    /// Cancels acknowledged: run, action, when.
    pub cancels: Vec<(String, String, i64)>,
    /// Threads deleted: thread, when acknowledged.
    pub deleted: Vec<(String, i64)>,
    /// Threads whose delete got no answer (its instance stopped or the database went away
    /// as it committed): deleted or not, nothing is asserted of them.
    pub maybe_deleted: Vec<String>,
    /// Runs whose rollback got no answer: rolled back or not.
    pub maybe_rolled_back: Vec<String>,
    /// When the database was down: (from, to).
    pub outages: Vec<(i64, i64)>,
    /// Requests that got no answer in time (a join that hangs).
    pub hung: Vec<String>,
}

/// A run a server accepted.
#[derive(Debug, Clone)]
pub struct Accepted {
    /// The run.
    pub run_id: String,
    /// Its thread.
    pub thread_id: String,
    /// The input it appends to the thread's `inputs`.
    pub tag: String,
    /// Its `multitask_strategy`.
    pub strategy: String,
    /// When it was asked for.
    pub sent_ms: i64,
    /// When its acceptance arrived.
    pub accepted_ms: i64,
}

/// A running instance of the reference server.
struct Instance {
    child: Child,
    url: String,
    log: PathBuf,
}

impl Drop for Instance {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_file(&self.log);
    }
}

fn reference_exe() -> Result<PathBuf, String> {
    let exe = std::env::current_exe().map_err(|e| e.to_string())?;
    let path = exe
        .parent()
        .map(|dir| dir.join("reference"))
        .ok_or("no examples directory")?;
    if !path.exists() {
        return Err(format!(
            "{} is missing: build it with `cargo build -p agent-server --examples`",
            path.display()
        ));
    }
    Ok(path)
}

fn start_instance(db: &str) -> Result<Instance, String> {
    use std::io::BufRead;
    // Its warnings and errors, kept to say why it did not start.
    let log = std::env::temp_dir().join(format!(
        "agentgraph-chaos-instance-{}.log",
        uuid::Uuid::new_v4()
    ));
    let stderr = std::fs::File::create(&log).map_err(|e| e.to_string())?;
    let mut child = Command::new(reference_exe()?)
        .args([
            "--db",
            db,
            "--lease-ms",
            "1500",
            "--workers",
            "4",
            "--with-slow",
        ])
        .env("RUST_LOG", "warn")
        .stdout(Stdio::piped())
        .stderr(stderr)
        .spawn()
        .map_err(|e| e.to_string())?;
    let mut line = String::new();
    let stdout = child.stdout.take().ok_or("no stdout")?;
    std::io::BufReader::new(stdout)
        .read_line(&mut line)
        .map_err(|e| e.to_string())?;
    let Some(url) = line.trim().strip_prefix("listening on ").map(str::to_owned) else {
        let _ = child.kill();
        let _ = child.wait();
        let said = std::fs::read_to_string(&log).unwrap_or_default();
        let _ = std::fs::remove_file(&log);
        let tail: String = said
            .chars()
            .rev()
            .take(4000)
            .collect::<Vec<_>>()
            .into_iter()
            .rev()
            .collect();
        return Err(format!(
            "the server did not start: {line:?}; it said:\n{tail}"
        ));
    };
    Ok(Instance { child, url, log })
}

fn signal(child: &Child, sig: &str) {
    let _ = Command::new("kill")
        .args([sig, &child.id().to_string()])
        .status();
}

/// The servers, restartable.
struct Fleet {
    db: String,
    instances: Mutex<Vec<Option<Instance>>>,
}

impl Fleet {
    /// A live instance's URL, chosen by `pick`.
    fn url(&self, pick: usize) -> Option<String> {
        let all = self.instances.lock().ok()?;
        let live: Vec<&Instance> = all.iter().flatten().collect();
        if live.is_empty() {
            return None;
        }
        Some(live[pick % live.len()].url.clone())
    }
}

struct Client {
    http: reqwest::Client,
    fleet: Arc<Fleet>,
    obs: Arc<Mutex<Observations>>,
    rng: Mutex<fastrand::Rng>,
}

impl Client {
    fn pick(&self, n: usize) -> usize {
        self.rng
            .lock()
            .map(|mut r| r.usize(..n.max(1)))
            .unwrap_or(0)
    }

    /// A request to a live instance; `None` when none answered (killed, stopped, gone).
    async fn send(
        &self,
        method: reqwest::Method,
        path: &str,
        body: Option<Value>,
    ) -> Option<(u16, Value)> {
        let url = self.fleet.url(self.pick(16))?;
        let mut req = self
            .http
            .request(method, format!("{url}{path}"))
            .timeout(Duration::from_secs(20));
        if let Some(b) = body {
            req = req.json(&b);
        }
        match req.send().await {
            Ok(resp) => {
                let status = resp.status().as_u16();
                let text = resp.text().await.unwrap_or_default();
                let mut key = path.split('?').next().unwrap_or(path).to_owned();
                if status >= 500 {
                    key = format!("{key} ({})", text.chars().take(300).collect::<String>());
                }
                if let Ok(mut o) = self.obs.lock() {
                    o.answers.push((now_ms(), key, status));
                }
                Some((status, serde_json::from_str(&text).unwrap_or(Value::Null)))
            }
            Err(e) if e.is_timeout() => {
                if let Ok(mut o) = self.obs.lock() {
                    o.hung.push(path.to_owned());
                }
                None
            }
            Err(_) => None,
        }
    }
}

/// The hot threads, replaced by new ones when deleted (a deleted thread's id is never made
/// again: whatever of it is left afterwards is a leak).
struct Threads(Mutex<Vec<String>>);

impl Threads {
    fn pick(&self, i: usize) -> String {
        self.0
            .lock()
            .map(|t| t[i % t.len()].clone())
            .unwrap_or_default()
    }

    /// Makes a new thread (on whichever instance answers) in the place of `old`.
    async fn replace(&self, c: &Client, old: &str) {
        let new = uuid::Uuid::new_v4().to_string();
        while c
            .send(
                reqwest::Method::POST,
                "/threads",
                Some(json!({"thread_id": new})),
            )
            .await
            // 409: made by an earlier try whose answer was lost (its instance killed).
            .is_none_or(|(status, _)| status != 200 && status != 409)
        {
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
        if let Ok(mut t) = self.0.lock()
            && let Some(slot) = t.iter_mut().find(|t| *t == old)
        {
            *slot = new;
        }
    }
}

/// The multitask strategies runs ask for, as often as they come here (a rollback undoes
/// the runs before it: fewer of them leave more runs to check).
const STRATEGIES: [&str; 10] = [
    "enqueue",
    "enqueue",
    "enqueue",
    "enqueue",
    "enqueue",
    "reject",
    "reject",
    "interrupt",
    "interrupt",
    "rollback",
];

async fn client_loop(c: Arc<Client>, threads: Arc<Threads>, until: Instant) {
    while Instant::now() < until {
        let roll = c.pick(100);
        let thread = threads.pick(c.pick(1000));
        let tag = uuid::Uuid::new_v4().to_string();
        let seconds = c.pick(12) as f64 / 10.0;
        match roll {
            0..=44 => {
                let strategy = STRATEGIES[c.pick(STRATEGIES.len())];
                let sent_ms = now_ms();
                let body = json!({"assistant_id": "slow",
                    "multitask_strategy": strategy,
                    "input": {"seconds": seconds, "inputs": [tag]}});
                if let Some((200, run)) = c
                    .send(
                        reqwest::Method::POST,
                        &format!("/threads/{thread}/runs"),
                        Some(body),
                    )
                    .await
                    && let Some(id) = run["run_id"].as_str()
                    && let Ok(mut o) = c.obs.lock()
                {
                    o.accepted.push(Accepted {
                        run_id: id.to_owned(),
                        thread_id: thread.clone(),
                        tag,
                        strategy: strategy.to_owned(),
                        sent_ms,
                        accepted_ms: now_ms(),
                    });
                }
            }
            45..=59 => {
                let known: Vec<Accepted> = c
                    .obs
                    .lock()
                    .map(|o| o.accepted.iter().rev().take(20).cloned().collect())
                    .unwrap_or_default();
                if known.is_empty() {
                    continue;
                }
                let run = &known[c.pick(known.len())];
                let action = if c.pick(2) == 0 {
                    "interrupt"
                } else {
                    "rollback"
                };
                let path = format!(
                    "/threads/{}/runs/{}/cancel?action={action}",
                    run.thread_id, run.run_id
                );
                let answer = c.send(reqwest::Method::POST, &path, None).await;
                if let Ok(mut o) = c.obs.lock() {
                    match answer {
                        Some((status, _)) if status < 300 => {
                            o.cancels
                                .push((run.run_id.clone(), action.to_owned(), now_ms()))
                        }
                        None | Some((500.., _)) if action == "rollback" => {
                            o.maybe_rolled_back.push(run.run_id.clone())
                        }
                        _ => {}
                    }
                }
            }
            60..=61 => {
                match c
                    .send(reqwest::Method::DELETE, &format!("/threads/{thread}"), None)
                    .await
                {
                    Some((204, _)) => {
                        if let Ok(mut o) = c.obs.lock() {
                            o.deleted.push((thread.clone(), now_ms()));
                        }
                        threads.replace(&c, &thread).await;
                    }
                    // No answer, or a failure that may have come after the commit: the
                    // thread may be gone; it is used no more.
                    None | Some((500.., _)) => {
                        if let Ok(mut o) = c.obs.lock() {
                            o.maybe_deleted.push(thread.clone());
                        }
                        threads.replace(&c, &thread).await;
                    }
                    Some(_) => {}
                }
            }
            62..=74 => {
                let known: Vec<Accepted> = c
                    .obs
                    .lock()
                    .map(|o| o.accepted.iter().rev().take(20).cloned().collect())
                    .unwrap_or_default();
                if let Some(run) = known.get(c.pick(known.len().max(1))) {
                    let path = format!("/threads/{}/runs/{}/join", run.thread_id, run.run_id);
                    c.send(reqwest::Method::GET, &path, None).await;
                }
            }
            75..=79 => {
                let body = json!({"assistant_id": "slow", "input": {"seconds": seconds / 2.0, "inputs": [tag]}});
                c.send(reqwest::Method::POST, "/runs/wait", Some(body))
                    .await;
            }
            80..=82 => {
                let body = json!({"assistant_id": "slow", "schedule": "* * * * *",
                    "input": {"seconds": 0.0, "inputs": [format!("cron-{tag}")]}});
                if let Some((200, cron)) = c
                    .send(
                        reqwest::Method::POST,
                        &format!("/threads/{thread}/runs/crons"),
                        Some(body),
                    )
                    .await
                    && let Some(id) = cron["cron_id"].as_str()
                {
                    c.send(reqwest::Method::DELETE, &format!("/runs/crons/{id}"), None)
                        .await;
                }
            }
            _ => {
                c.send(
                    reqwest::Method::GET,
                    &format!("/threads/{thread}/state"),
                    None,
                )
                .await;
                c.send(
                    reqwest::Method::POST,
                    &format!("/threads/{thread}/history"),
                    Some(json!({"limit": 5})),
                )
                .await;
            }
        }
    }
}

async fn faults(
    fleet: Arc<Fleet>,
    cluster: Option<Arc<cluster::Cluster>>,
    obs: Arc<Mutex<Observations>>,
    seed: u64,
    until: Instant,
) -> Result<(), String> {
    let mut rng = fastrand::Rng::with_seed(seed ^ 0x5eed);
    while Instant::now() < until {
        tokio::time::sleep(Duration::from_millis(2000 + rng.u64(..3000))).await;
        if Instant::now() >= until {
            break;
        }
        let n = fleet.instances.lock().map(|i| i.len()).unwrap_or(0);
        let which = rng.usize(..n.max(1));
        match rng.u8(..3) {
            0 => {
                // SIGKILL, started again a moment later.
                let killed = fleet
                    .instances
                    .lock()
                    .ok()
                    .and_then(|mut i| i[which].take());
                drop(killed);
                tokio::time::sleep(Duration::from_millis(300 + rng.u64(..1500))).await;
                let fresh = start_instance(&fleet.db)?;
                if let Ok(mut i) = fleet.instances.lock() {
                    i[which] = Some(fresh);
                }
            }
            1 => {
                // SIGSTOP past the lease (1.5 s), then SIGCONT: it comes back believing it
                // still holds its runs.
                let pid = fleet
                    .instances
                    .lock()
                    .ok()
                    .and_then(|i| i[which].as_ref().map(|x| x.child.id()));
                if let Some(pid) = pid {
                    let _ = Command::new("kill")
                        .args(["-STOP", &pid.to_string()])
                        .status();
                    tokio::time::sleep(Duration::from_millis(2000 + rng.u64(..1500))).await;
                    let _ = Command::new("kill")
                        .args(["-CONT", &pid.to_string()])
                        .status();
                }
            }
            _ => {
                if let Some(cluster) = &cluster {
                    let from = now_ms();
                    cluster.down()?;
                    tokio::time::sleep(Duration::from_millis(500 + rng.u64(..1500))).await;
                    cluster.up()?;
                    if let Ok(mut o) = obs.lock() {
                        o.outages.push((from, now_ms()));
                    }
                }
            }
        }
    }
    Ok(())
}

#[tokio::main]
async fn main() {
    let args = match args() {
        Ok(a) => a,
        Err(e) => {
            eprintln!("chaos: {e}");
            std::process::exit(2);
        }
    };
    match run(&args).await {
        Ok(report) => println!("chaos: seed {} passed: {report}", args.seed),
        Err(e) => {
            eprintln!(
                "chaos: seed {} FAILED ({}):\n{e}",
                args.seed,
                if args.postgres { "postgres" } else { "sqlite" }
            );
            eprintln!(
                "replay: cargo xtask chaos --seed {} --seconds {}{}",
                args.seed,
                args.seconds,
                if args.postgres {
                    ""
                } else {
                    " --backend sqlite"
                }
            );
            std::process::exit(1);
        }
    }
}

async fn run(args: &Args) -> Result<String, String> {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let work = std::env::temp_dir().join(format!("agentgraph-chaos-{}", uuid::Uuid::new_v4()));
    std::fs::create_dir_all(&work).map_err(|e| e.to_string())?;
    let cluster = if args.postgres {
        Some(Arc::new(cluster::Cluster::start(&work.join("pg"))?))
    } else {
        None
    };
    let db = match &cluster {
        Some(c) => c.url(),
        None => work.join("chaos.sqlite").display().to_string(),
    };
    let mut instances = Vec::new();
    for _ in 0..args.instances {
        instances.push(Some(start_instance(&db)?));
    }
    let fleet = Arc::new(Fleet {
        db: db.clone(),
        instances: Mutex::new(instances),
    });
    let obs = Arc::new(Mutex::new(Observations::default()));
    let first: Vec<String> = (0..4).map(|_| uuid::Uuid::new_v4().to_string()).collect();
    // The checker's reads too are bounded: a read that hangs fails the run, saying which.
    let http = reqwest::Client::builder()
        .timeout(Duration::from_secs(60))
        .build()
        .map_err(|e| e.to_string())?;
    let url = fleet.url(0).ok_or("no instance")?;
    for t in &first {
        http.post(format!("{url}/threads"))
            .json(&json!({"thread_id": t}))
            .send()
            .await
            .map_err(|e| e.to_string())?;
    }
    let threads = Arc::new(Threads(Mutex::new(first)));
    let until = Instant::now() + Duration::from_secs(args.seconds);
    let mut tasks = Vec::new();
    for i in 0..6u64 {
        let c = Arc::new(Client {
            http: http.clone(),
            fleet: fleet.clone(),
            obs: obs.clone(),
            rng: Mutex::new(fastrand::Rng::with_seed(
                args.seed.wrapping_mul(1000).wrapping_add(i),
            )),
        });
        tasks.push(tokio::spawn(client_loop(c, threads.clone(), until)));
    }
    let fault = tokio::spawn(faults(
        fleet.clone(),
        cluster.clone(),
        obs.clone(),
        args.seed,
        until,
    ));
    // The checker watches run statuses meanwhile: a run seen ended must never be seen
    // otherwise.
    let checker = Arc::new(checker::Checker::open(&db, args.postgres).await?);
    let watcher = {
        let checker = checker.clone();
        tokio::spawn(async move {
            while Instant::now() < until {
                let _ = checker.look().await;
                tokio::time::sleep(Duration::from_millis(300)).await;
            }
        })
    };
    for t in tasks {
        t.await.map_err(|e| e.to_string())?;
    }
    fault.await.map_err(|e| e.to_string())??;
    watcher.await.map_err(|e| e.to_string())?;
    // Every instance back, then the runs settle.
    {
        let mut all = fleet.instances.lock().map_err(|e| e.to_string())?;
        for slot in all.iter_mut() {
            if let Some(i) = slot {
                signal(&i.child, "-CONT");
            } else {
                *slot = Some(start_instance(&db)?);
            }
        }
    }
    checker.settle(Duration::from_secs(90)).await?;
    let url = fleet.url(0).ok_or("no instance")?;
    let observations = std::mem::take(&mut *obs.lock().map_err(|e| e.to_string())?);
    let report = checker.check(&observations, &http, &url).await;
    drop(fleet);
    if report.is_err() && std::env::var_os("AGENTGRAPH_CHAOS_KEEP").is_some() {
        // Left for a look: the database (its cluster still up) and what the clients saw.
        let _ = std::fs::write(work.join("observations.txt"), format!("{observations:#?}"));
        eprintln!("chaos: kept {} (database {db})", work.display());
        std::mem::forget(cluster);
        return report;
    }
    drop(cluster);
    let _ = std::fs::remove_dir_all(&work);
    report
}
