//! LangGraph's benchmark shapes on agentgraph, with each checkpointer, next to a hand-written
//! floor; one JSON object per line. `cargo xtask bench` builds and runs this (and, with
//! `--vs-langgraph`, the same shapes on LangGraph) and prints the ratio tables.
//!
//! ```text
//! shapes [--quick] [--shape NAME].. [--saver none|memory|sqlite|postgres|floor].. [--out FILE]
//!        [--durability sync|async|exit].. [--runtime multi|current] [--processes N]
//! shapes report AGENTGRAPH.jsonl [LANGGRAPH.jsonl]
//! ```
//!
//! With a saver, each shape runs in every durability: `sync` (a checkpoint every super-step,
//! awaited before the next; the default), `async` (a checkpoint every super-step, stored while
//! the next runs, as LangGraph's default) and `exit` (one checkpoint when the run ends, as
//! LangGraph's `durability="exit"`); each line records its `durability` (`null` without a saver).
//!
//! Every shape x saver x durability runs in a child process of its own (this program again, with
//! `--child`), so the peak RSS (`VmHWM`) it reports is that combination's (also after each
//! timed run, `peak_rss_kib_by_runs`: `[runs, KiB]` where it grew, so memory can be compared
//! at LangGraph's run count). A child builds the
//! graph once, runs it once to warm up, then times whole runs (`invoke`, a fresh thread id per
//! run when there is a saver) until its time budget is spent; the input is cloned before the
//! clock starts. `postgres` runs when `AGENTGRAPH_POSTGRES_URL` is set. After the shapes, a
//! child measures the checkpoint bytes of a 100- and a 500-turn chat per saver, and one what a
//! bare SQLite commit costs on the machine (`--sqlite-commit`: the least a checkpoint per
//! super-step can cost with SQLite, whatever the saver does).
//!
//! Every heap allocation of the process is counted (a counting global allocator over mimalloc,
//! or over the system's without the default `mimalloc` feature: one relaxed atomic add per
//! allocation, on a counter of the allocating thread's own), and each line records
//! `allocs_per_step` (allocations during the timed runs per super-step) and `allocator`.
//!
//! Not a test: nothing here asserts on time, and `cargo test` does not build it.

use std::alloc::{GlobalAlloc, Layout};
use std::cell::Cell;
use std::io::Write as _;
use std::process::{Command, ExitCode, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use agent_bench::{DURABILITIES, SAVERS, SHAPES, floor, graphs, report, savers};
use agent_core::{
    BoxError, Checkpointer, END, InMemorySaver, ListFilter, PostgresSaver, RunConfig, START,
    SqliteSaver, StateGraph,
};
use agent_llm::{CallOptions, ChatModel, Message, Reply, ScriptedModel};
use serde_json::{Value, json};

/// Heap allocations (and reallocations) since the process started, counted per thread: each
/// of the first 64 threads to allocate owns a counter, on a cache line of its own, and adds
/// to it with a plain load and store (it is the counter's only writer); later threads share
/// one more counter and add with `fetch_add`. One counter shared by every thread made each
/// allocation move that line between the cores: 8% of a `fanout_to_subgraph_10x` run's CPU
/// went to the instrument's `lock incq`, a cost the code it measures does not have; and a
/// locked add even on a line of the thread's own was 3.5% of the same run's samples (it
/// waits for the thread's pending stores), where a load and a store cost nothing measurable.
static ALLOCATIONS: [Stripe; STRIPES + 1] = [const { Stripe(AtomicU64::new(0)) }; STRIPES + 1];

/// Counters owned by one thread each; the one after them is shared.
const STRIPES: usize = 64;

/// A counter on a cache line of its own (128 bytes: adjacent-line prefetch pairs lines).
#[repr(align(128))]
struct Stripe(AtomicU64);

/// The counter the next thread to allocate takes (past `STRIPES`: the shared one).
static NEXT_STRIPE: AtomicUsize = AtomicUsize::new(0);

thread_local! {
    /// This thread's counter (`usize::MAX` until its first allocation).
    static STRIPE: Cell<usize> = const { Cell::new(usize::MAX) };
}

/// Counts one allocation on the calling thread's counter.
fn count_allocation() {
    let stripe = STRIPE
        .try_with(|stripe| match stripe.get() {
            usize::MAX => {
                let taken = NEXT_STRIPE.fetch_add(1, Ordering::Relaxed).min(STRIPES);
                stripe.set(taken);
                taken
            }
            taken => taken,
        })
        // A thread being torn down counts on the shared counter.
        .unwrap_or(STRIPES);
    let counter = &ALLOCATIONS[stripe].0;
    if stripe < STRIPES {
        // This thread is the counter's only writer: no other add can come between the two.
        counter.store(counter.load(Ordering::Relaxed) + 1, Ordering::Relaxed);
    } else {
        counter.fetch_add(1, Ordering::Relaxed);
    }
}

/// Allocations so far, every thread's.
fn allocations() -> u64 {
    ALLOCATIONS
        .iter()
        .map(|stripe| stripe.0.load(Ordering::Relaxed))
        .sum()
}

/// The allocator the counting wrapper forwards to: mimalloc (the default feature), or the
/// system's (glibc's malloc on Linux) built with `--no-default-features`
/// (`cargo xtask bench --system-alloc`). Under tokio's work-stealing workers a buffer is often
/// freed on another core than the one that made it, and glibc's malloc then takes the other
/// thread's arena lock; the same binary with mimalloc measured `fanout_to_subgraph_10x` 24%
/// faster in memory with `async` and its hand-written floor 43% faster. Each JSON line
/// records which one ran (`allocator`).
#[cfg(feature = "mimalloc")]
type Inner = mimalloc::MiMalloc;
#[cfg(not(feature = "mimalloc"))]
type Inner = std::alloc::System;

/// What the JSON lines call [`Inner`].
const ALLOCATOR: &str = if cfg!(feature = "mimalloc") {
    "mimalloc"
} else {
    "system"
};

/// [`Inner`], counting.
struct Counting;

// SAFETY: every method forwards to `Inner` with the caller's arguments unchanged; counting
// touches only an atomic.
#[allow(unsafe_code)]
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        count_allocation();
        // SAFETY: the caller upholds `GlobalAlloc::alloc`'s contract, which `Inner` shares.
        unsafe { Inner {}.alloc(layout) }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        count_allocation();
        // SAFETY: as for `alloc`.
        unsafe { Inner {}.alloc_zeroed(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: `ptr` came from this allocator, that is from `Inner`, with `layout`.
        unsafe { Inner {}.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        count_allocation();
        // SAFETY: `ptr` came from `Inner` with `layout`; the caller upholds the rest.
        unsafe { Inner {}.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

struct Options {
    quick: bool,
    shapes: Vec<String>,
    savers: Vec<String>,
    out: Option<String>,
    durabilities: Vec<String>,
    runtime: String,
    /// Child processes per cell (the report keeps the median one).
    processes: usize,
}

fn main() -> ExitCode {
    // `cargo bench` appends `--bench`; nothing else is cargo's.
    let args: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| a != "--bench")
        .collect();
    let result = match args.first().map(String::as_str) {
        Some("report") => report::run(&args[1..]),
        _ => parse(&args).and_then(|(options, child)| match child {
            Some(Child::Shape(shape, saver, durability)) => {
                child_shape(&options, &shape, &saver, &durability)
            }
            Some(Child::Storage) => child_storage(&options),
            Some(Child::SqliteCommit) => child_sqlite_commit(&options),
            None => drive(&options),
        }),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("shapes: {error}");
            ExitCode::FAILURE
        }
    }
}

enum Child {
    Shape(String, String, String),
    Storage,
    SqliteCommit,
}

fn parse(args: &[String]) -> Result<(Options, Option<Child>), BoxError> {
    let mut options = Options {
        quick: false,
        shapes: Vec::new(),
        savers: Vec::new(),
        out: None,
        durabilities: Vec::new(),
        runtime: "multi".to_owned(),
        processes: 1,
    };
    let mut child = None;
    let mut it = args.iter();
    let value = |it: &mut std::slice::Iter<'_, String>, flag: &str| {
        it.next()
            .cloned()
            .ok_or_else(|| format!("{flag} needs a value"))
    };
    while let Some(arg) = it.next() {
        match arg.as_str() {
            "--quick" => options.quick = true,
            "--shape" => options.shapes.push(value(&mut it, arg)?),
            "--saver" => options.savers.push(value(&mut it, arg)?),
            "--out" => options.out = Some(value(&mut it, arg)?),
            "--durability" => options.durabilities.push(value(&mut it, arg)?),
            "--runtime" => options.runtime = value(&mut it, arg)?,
            "--processes" => {
                options.processes = value(&mut it, arg)?
                    .parse()
                    .ok()
                    .filter(|n| *n > 0)
                    .ok_or("--processes needs a count of 1 or more")?;
            }
            "--child" => {
                let shape = value(&mut it, arg)?;
                let saver = value(&mut it, arg)?;
                let durability = value(&mut it, arg)?;
                child = Some(Child::Shape(shape, saver, durability));
            }
            "--storage" => child = Some(Child::Storage),
            "--sqlite-commit" => child = Some(Child::SqliteCommit),
            other => {
                return Err(format!(
                    "unknown argument `{other}`\nusage: shapes [--quick] [--shape NAME].. [--saver {}].. [--out FILE] [--durability sync|async|exit].. [--runtime multi|current] [--processes N]\n       shapes report AGENTGRAPH.jsonl [LANGGRAPH.jsonl]",
                    SAVERS.join("|")
                )
                .into());
            }
        }
    }
    for shape in &options.shapes {
        if !SHAPES.iter().any(|(name, _)| name == shape) {
            let known: Vec<&str> = SHAPES.iter().map(|(n, _)| *n).collect();
            return Err(format!("unknown shape `{shape}`; known: {}", known.join(", ")).into());
        }
    }
    for saver in &options.savers {
        if !SAVERS.contains(&saver.as_str()) {
            return Err(format!("unknown saver `{saver}`; known: {}", SAVERS.join(", ")).into());
        }
    }
    for durability in &options.durabilities {
        if !DURABILITIES.contains(&durability.as_str()) {
            return Err(format!(
                "unknown durability `{durability}`; known: {}",
                DURABILITIES.join(", ")
            )
            .into());
        }
    }
    if let Some(Child::Shape(_, _, durability)) = &child
        && !DURABILITIES.contains(&durability.as_str())
    {
        return Err(format!(
            "unknown durability `{durability}`; known: {}",
            DURABILITIES.join(", ")
        )
        .into());
    }
    if !matches!(options.runtime.as_str(), "multi" | "current") {
        return Err("--runtime is `multi` (tokio's multi-thread default) or `current`".into());
    }
    Ok((options, child))
}

/// Runs every selected shape x saver x durability in a child process and prints what they
/// print.
fn drive(options: &Options) -> Result<(), BoxError> {
    let exe = std::env::current_exe()?;
    let savers: Vec<&str> = if options.savers.is_empty() {
        savers::available(SAVERS.iter().copied())
    } else {
        options.savers.iter().map(String::as_str).collect()
    };
    let durabilities: Vec<&str> = if options.durabilities.is_empty() {
        DURABILITIES.to_vec()
    } else {
        options.durabilities.iter().map(String::as_str).collect()
    };
    let mut out = match &options.out {
        Some(path) => Some(std::fs::File::create(path)?),
        None => None,
    };
    let mut lines = Vec::new();
    let mut failures = Vec::new();
    let started = Instant::now();
    let mut spawn = |label: String, extra: &[&str]| -> Result<(), BoxError> {
        eprintln!("shapes: {label}");
        let mut cmd = Command::new(&exe);
        cmd.args(extra).args(["--runtime", &options.runtime]);
        if options.quick {
            cmd.arg("--quick");
        }
        let output = cmd.stderr(Stdio::inherit()).output()?;
        let text = String::from_utf8_lossy(&output.stdout).into_owned();
        for line in text.lines().filter(|l| l.starts_with('{')) {
            println!("{line}");
            if let Some(file) = &mut out {
                writeln!(file, "{line}")?;
            }
            lines.push(line.to_owned());
        }
        if !output.status.success() {
            failures.push(label);
        }
        Ok(())
    };
    // Rounds over every cell, not one cell's processes back to back: a slow minute of the
    // machine lands on several cells once rather than on one cell every time.
    for round in 1..=options.processes {
        let of = if options.processes > 1 {
            format!(" ({round} of {})", options.processes)
        } else {
            String::new()
        };
        for (name, _) in SHAPES {
            if !options.shapes.is_empty() && !options.shapes.iter().any(|s| s == name) {
                continue;
            }
            for saver in &savers {
                if matches!(*saver, "none" | "floor") {
                    spawn(
                        format!("{name} / {saver}{of}"),
                        &["--child", name, saver, "sync"],
                    )?;
                    continue;
                }
                for durability in &durabilities {
                    spawn(
                        format!("{name} / {saver} / {durability}{of}"),
                        &["--child", name, saver, durability],
                    )?;
                }
            }
        }
    }
    if options.shapes.is_empty() {
        spawn("storage: 100- and 500-turn chat".to_owned(), &["--storage"])?;
    }
    if savers.contains(&"sqlite") {
        for _ in 0..options.processes {
            spawn("SQLite: a bare commit".to_owned(), &["--sqlite-commit"])?;
        }
    }
    eprintln!("shapes: done in {:.1} s", started.elapsed().as_secs_f64());
    let records: Vec<Value> = lines
        .iter()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect();
    eprintln!("\n{}", report::render(&records, &[]));
    if failures.is_empty() {
        Ok(())
    } else {
        Err(format!("failed: {}", failures.join(", ")).into())
    }
}

fn runtime(options: &Options) -> std::io::Result<tokio::runtime::Runtime> {
    match options.runtime.as_str() {
        "current" => tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build(),
        _ => tokio::runtime::Builder::new_multi_thread()
            .enable_all()
            .build(),
    }
}

/// (time budget, least runs, most runs) of one shape x saver.
fn budget(name: &str, quick: bool) -> (Duration, usize, usize) {
    let big = name.ends_with("_1000") || name.ends_with("_100x") || name.starts_with("wide_state");
    match (quick, big) {
        (true, true) => (Duration::from_millis(300), 2, 50),
        (true, false) => (Duration::from_millis(200), 5, 500),
        (false, true) => (Duration::from_millis(1500), 5, 500),
        (false, false) => (Duration::from_millis(1000), 20, 2000),
    }
}

fn scratch_dir() -> std::path::PathBuf {
    std::env::temp_dir().join(format!("agentgraph-bench-{}", std::process::id()))
}

/// A thread id no other run (or earlier bench) used.
fn thread_id(run: usize) -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or_default();
    format!("bench-{}-{nanos}-{run}", std::process::id())
}

fn peak_rss_kib() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|status| {
            status
                .lines()
                .find_map(|l| l.strip_prefix("VmHWM:"))
                .and_then(|v| v.split_whitespace().next()?.parse().ok())
        })
        .unwrap_or(0)
}

fn child_shape(
    options: &Options,
    name: &str,
    kind: &str,
    durability: &str,
) -> Result<(), BoxError> {
    let durability_mode = savers::durability(durability);
    let shape = SHAPES
        .iter()
        .find(|(n, _)| *n == name)
        .map(|(_, s)| *s)
        .ok_or_else(|| format!("unknown shape `{name}`"))?;
    let dir = scratch_dir();
    let scratch = dir.clone();
    let options_quick = options.quick;
    let kind_owned = kind.to_owned();
    let name_owned = name.to_owned();
    let rt = runtime(options)?;
    // The runs happen inside a task on the runtime, as a server's requests do (with the
    // multi-thread runtime, `block_on`'s own thread is not one of its workers).
    let measured = rt.spawn(async move {
        let (dir, kind, name) = (scratch, kind_owned.as_str(), name_owned.as_str());
        let saver = savers::open(kind, &dir).await?;
        let persistent = saver.clone();
        let runner = if kind == "floor" {
            floor::build(shape)?
        } else {
            graphs::build(shape, saver.clone())?
        };
        let config = |run: usize| {
            let config = RunConfig::default().recursion_limit(1_000_000);
            if persistent.is_some() {
                config.thread_id(thread_id(run)).durability(durability_mode)
            } else {
                config
            }
        };
        let mut threads = Vec::new();
        let warm = runner();
        warm(config(usize::MAX)).await?;
        let (seconds, least, most) = budget(name, options_quick);
        let mut times = Vec::new();
        let allocations_before = allocations();
        let mut last = None;
        let mut peaks: Vec<(usize, u64)> = Vec::new();
        let started = Instant::now();
        while times.len() < most && (times.len() < least || started.elapsed() < seconds) {
            let run = runner();
            let config = config(times.len());
            threads.extend(config.thread_id.clone());
            let t0 = Instant::now();
            let outcome = run(config).await?;
            times.push(t0.elapsed());
            last = Some(outcome);
            // The peak after each run (read outside the timed call), so the report can
            // compare memory at LangGraph's run count: an in-memory saver keeps every run.
            let peak = peak_rss_kib();
            if peaks.last().is_none_or(|&(_, kib)| kib != peak) {
                peaks.push((times.len(), peak));
            }
        }
        let allocations = allocations() - allocations_before;
        if kind == "postgres"
            && let Some(saver) = &saver
        {
            for thread in &threads {
                saver.delete_thread(thread).await?;
            }
        }
        let outcome = last.ok_or("no run")?;
        Ok::<_, BoxError>((times, outcome, allocations, peaks))
    });
    let result = rt
        .block_on(measured)
        .map_err(|e| format!("the measuring task failed: {e}"));
    let _ = std::fs::remove_dir_all(&dir);
    let result = result?;
    let (mut times, outcome, allocations, peaks) = result?;
    times.sort();
    let us = |d: Duration| d.as_secs_f64() * 1e6;
    let median = us(times[times.len() / 2]);
    let min = us(times[0]);
    let steps = outcome.steps.max(1) as f64;
    let record = json!({
        "runner": if kind == "floor" { "handwritten" } else { "agentgraph" },
        "allocator": ALLOCATOR,
        "shape": name,
        "saver": if kind == "floor" { "none" } else { kind },
        "durability": if matches!(kind, "none" | "floor") { None } else { Some(durability) },
        "runtime": options.runtime,
        "super_steps": outcome.steps,
        "tasks": outcome.tasks,
        "runs": times.len(),
        "median_us": round(median, 2),
        "min_us": round(min, 2),
        "median_us_per_step": round(median / steps, 4),
        "min_us_per_step": round(min / steps, 4),
        "peak_rss_kib": peak_rss_kib(),
        "peak_rss_kib_by_runs": peaks,
        "allocs_per_step": round(allocations as f64 / (times.len() as f64 * steps), 1),
        "check": outcome.check,
    });
    println!("{record}");
    Ok(())
}

fn round(x: f64, digits: i32) -> f64 {
    let scale = 10f64.powi(digits);
    (x * scale).round() / scale
}

// ---------------------------------------------------------------------------------------------
// Storage: checkpoint bytes of a long chat.

/// The chat's state.
#[derive(agent_core::GraphState, Clone, Default, Debug)]
struct Chat {
    #[reducer(agent_llm::add_messages)]
    messages: Vec<Message>,
}

/// What the user says on `turn` (the same text as the LangGraph side's).
fn human_text(turn: usize) -> String {
    format!("question {turn}: ") + &"how do I keep a long conversation cheap to store? ".repeat(2)
}

/// What the model answers on `turn`.
fn ai_text(turn: usize) -> String {
    format!("answer {turn}: ") + &"store what changed, not the whole history again. ".repeat(4)
}

/// A saver with its concrete type, for `blob_bytes`.
enum Typed {
    Memory(Arc<InMemorySaver>),
    Sqlite(Arc<SqliteSaver>),
    Postgres(Arc<PostgresSaver>),
}

impl Typed {
    async fn open(kind: &str, dir: &std::path::Path) -> Result<Typed, BoxError> {
        Ok(match kind {
            "memory" => Typed::Memory(Arc::new(InMemorySaver::new())),
            "sqlite" => {
                std::fs::create_dir_all(dir)?;
                Typed::Sqlite(Arc::new(savers::open_sqlite(&dir.join("chat.sqlite"))?))
            }
            _ => Typed::Postgres(Arc::new(savers::connect_postgres().await?)),
        })
    }

    fn shared(&self) -> Arc<dyn Checkpointer> {
        match self {
            Typed::Memory(s) => s.clone(),
            Typed::Sqlite(s) => s.clone(),
            Typed::Postgres(s) => s.clone(),
        }
    }

    async fn blob_bytes(&self, thread: &str) -> Result<u64, BoxError> {
        Ok(match self {
            Typed::Memory(s) => s.blob_bytes(thread) as u64,
            Typed::Sqlite(s) => s.blob_bytes(thread).await?,
            Typed::Postgres(s) => s.blob_bytes(thread).await?,
        })
    }
}

/// Transactions of one `INSERT` of a 100-byte row, with the journal settings `SqliteSaver`
/// uses (WAL, `synchronous=NORMAL`) and cached statements, but none of the saver's own setup
/// (its log checkpoints on a thread of their own, a fixed plan per statement): SQLite itself
/// checkpoints the log here, inside some of the commits timed. What SQLite alone costs a
/// commit on this machine.
fn child_sqlite_commit(options: &Options) -> Result<(), BoxError> {
    let dir = scratch_dir();
    std::fs::create_dir_all(&dir)?;
    let conn = rusqlite::Connection::open(dir.join("commit.sqlite"))?;
    let mode: String = conn.query_row("PRAGMA journal_mode=WAL", [], |r| r.get(0))?;
    if !mode.eq_ignore_ascii_case("wal") {
        return Err(format!("SQLite would not use WAL (journal mode {mode})").into());
    }
    conn.pragma_update(None, "synchronous", "NORMAL")?;
    conn.execute_batch("CREATE TABLE t (k INTEGER PRIMARY KEY, v BLOB NOT NULL)")?;
    let row = vec![7u8; 100];
    // 1,000 commits, one row each (keys from `next` on); µs a commit.
    let mut next = 0_i64;
    let mut batch = || -> rusqlite::Result<f64> {
        let started = Instant::now();
        for _ in 0..1_000 {
            conn.prepare_cached("BEGIN")?.execute([])?;
            conn.prepare_cached("INSERT INTO t (k, v) VALUES (?1, ?2)")?
                .execute(rusqlite::params![next, row])?;
            conn.prepare_cached("COMMIT")?.execute([])?;
            next += 1;
        }
        Ok(started.elapsed().as_secs_f64() * 1e6 / 1_000.0)
    };
    // One batch to warm up, then batches until the budget is spent; the median batch's mean.
    let budget = if options.quick {
        Duration::from_millis(200)
    } else {
        Duration::from_secs(1)
    };
    batch()?;
    let started = Instant::now();
    let mut batches = Vec::new();
    while started.elapsed() < budget || batches.len() < 3 {
        batches.push(batch()?);
    }
    drop(conn);
    std::fs::remove_dir_all(&dir).ok();
    batches.sort_by(f64::total_cmp);
    let record = json!({
        "runner": "agentgraph",
        "kind": "sqlite_commit",
        "commits": batches.len() * 1_000,
        "median_us_per_step": round(batches[batches.len() / 2], 2),
        "note": "one INSERT of a 100-byte row per transaction; WAL, synchronous=NORMAL",
    });
    println!("{record}");
    Ok(())
}

fn child_storage(options: &Options) -> Result<(), BoxError> {
    let dir = scratch_dir();
    let kinds = savers::available(["memory", "sqlite", "postgres"]);
    let result = runtime(options)?.block_on(async {
        for kind in kinds {
            let typed = Typed::open(kind, &dir).await?;
            let saver = typed.shared();
            let model = ScriptedModel::from_fn(|messages: &[Message]| {
                let turn = messages.iter().filter(|m| m.kind() == "human").count();
                Reply::text(ai_text(turn))
                    .with_id(format!("ai-{turn}"))
                    .with_usage(10, 10)
            })
            .without_recording();
            let model = Arc::new(model);
            let graph = StateGraph::<Chat>::new()
                .add_node("chat", move |s: Arc<Chat>| {
                    let model = model.clone();
                    async move {
                        let reply = model.invoke(&s.messages, &CallOptions::default()).await?;
                        Ok::<_, agent_llm::LlmError>(
                            ChatUpdate::default().messages(vec![reply.into()]),
                        )
                    }
                })
                .add_edge(START, "chat")
                .add_edge("chat", END)
                .compile_with(saver.clone())?;
            let thread = thread_id(0);
            let config = RunConfig::default().thread_id(thread.clone());
            for turn in 1..=500 {
                let human = Message::human(human_text(turn)).with_id(format!("h-{turn}"));
                let out = graph
                    .invoke(ChatUpdate::default().messages(vec![human]), config.clone())
                    .await?;
                if turn != 100 && turn != 500 {
                    continue;
                }
                let blobs = typed.blob_bytes(&thread).await?;
                let records = saver.list(&thread, "", &ListFilter::default()).await?;
                let record_bytes: usize = records
                    .iter()
                    .map(|r| {
                        serde_json::to_string(&r.metadata).map_or(0, |m| m.len())
                            + serde_json::to_string(&r.versions).map_or(0, |v| v.len())
                            + r.body.len()
                    })
                    .sum();
                let conversation = serde_json::to_vec(&out.state.messages)?.len();
                let record = json!({
                    "runner": "agentgraph",
                    "kind": "storage",
                    "saver": kind,
                    "turns": turn,
                    "checkpoints": records.len(),
                    "blob_bytes": blobs,
                    "record_bytes": record_bytes,
                    "bytes": blobs + record_bytes as u64,
                    "conversation_json_bytes": conversation,
                });
                println!("{record}");
            }
            if kind == "postgres" {
                saver.delete_thread(&thread).await?;
            }
        }
        Ok::<_, BoxError>(())
    });
    let _ = std::fs::remove_dir_all(&dir);
    result
}
