//! `store_bench`: agentgraph's long-term memory stores under `cargo xtask bench store`, one
//! store per process (so each has its own peak RSS), called as a Rust user calls them: async,
//! one awaited call after another on a tokio runtime.
//!
//! `store_bench run --backend memory|sqlite|postgres [--items N] [--searches N]` prints JSON
//! lines: plain put, get, filtered search, the embedding function alone, put with an index and
//! semantic search, then the process's peak RSS. `store_bench check` prints the bench's data,
//! queries and a few vectors of the offline embedding as text lines, which xtask compares with
//! the same lines from `xtask/bench/langgraph_store.py` (identical data, identical embedding
//! on both sides). `store_bench report OURS THEIRS` prints the markdown tables.

use std::io::{BufRead, Write};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;

use agent_bench::pg::{analyze, create_database, with_database};
use agent_bench::store_report;
use agent_core::store::{
    InMemoryStore, IndexConfig, PostgresStore, SearchOp, SqliteStore, Store, ns,
};
use agent_llm::embeddings::OfflineEmbeddings;
use serde_json::{Value, json};

const USAGE: &str = "usage: store_bench run --backend memory|sqlite|postgres [--items N] [--searches N] [--sqlite PATH] [--postgres URL] | store_bench check [--items N] | store_bench report OURS.jsonl [THEIRS.jsonl]";

type Error = Box<dyn std::error::Error + Send + Sync>;

/// The offline embedding's dimensions on both sides.
const DIMS: usize = 256;
/// Items are spread over this many namespaces (`["bench", "u<i % USERS>"]`).
const USERS: usize = 100;
const KINDS: [&str; 4] = ["note", "fact", "preference", "todo"];
const WORDS: [&str; 64] = [
    "alpha", "amber", "anchor", "apple", "arrow", "atlas", "autumn", "basil", "beacon", "birch",
    "breeze", "bridge", "canyon", "cedar", "cinder", "clover", "comet", "coral", "crystal",
    "delta", "desert", "ember", "falcon", "fern", "fjord", "forest", "garnet", "glacier", "harbor",
    "hazel", "horizon", "island", "ivory", "jasmine", "juniper", "lagoon", "lantern", "lemon",
    "maple", "meadow", "meteor", "mint", "nebula", "oasis", "ocean", "olive", "orchid", "pebble",
    "pepper", "pine", "prairie", "quartz", "raven", "river", "saffron", "sierra", "spruce",
    "summit", "thunder", "tulip", "valley", "willow", "winter", "zephyr",
];
/// Words in an item's `text` and in a semantic query.
const TEXT_WORDS: usize = 8;
const QUERY_WORDS: usize = 4;

/// A 64-bit LCG (Knuth's MMIX constants): the same stream in Python.
struct Lcg(u64);

impl Lcg {
    fn next(&mut self) -> usize {
        self.0 = self
            .0
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        (self.0 >> 33) as usize
    }

    fn words(&mut self, n: usize) -> String {
        (0..n)
            .map(|_| WORDS[self.next() % WORDS.len()])
            .collect::<Vec<_>>()
            .join(" ")
    }
}

/// One item of the data set.
struct Data {
    user: String,
    key: String,
    kind: &'static str,
    n: usize,
    text: String,
}

fn data(items: usize) -> Vec<Data> {
    let mut rng = Lcg(1);
    (0..items)
        .map(|i| Data {
            user: format!("u{}", i % USERS),
            key: format!("k{i}"),
            kind: KINDS[i % KINDS.len()],
            n: i,
            text: rng.words(TEXT_WORDS),
        })
        .collect()
}

/// The key read by the `q`th get (a stride through the keys).
fn get_index(q: usize, items: usize) -> usize {
    (q * 7919) % items
}

/// The `q`th filtered search's filter: a kind, and `n` above a threshold.
fn filter(q: usize, items: usize) -> (&'static str, usize) {
    (KINDS[q % KINDS.len()], (q * 7919) % items)
}

fn queries(searches: usize) -> Vec<String> {
    let mut rng = Lcg(2);
    (0..searches).map(|_| rng.words(QUERY_WORDS)).collect()
}

/// Texts whose vectors both sides print in `check`: some of the bench's, and others with
/// case, punctuation, digits and non-ASCII letters.
const CHECK_TEXTS: [&str; 8] = [
    "The cat sleeps on the sofa",
    "the CAT sleeps, on the sofa!",
    "quarterly tax report 2026",
    "Ça coûte 12€ — naïve café",
    "Straße über Ölfelder",
    "ΣΊΣΥΦΟΣ and δοκιμή",
    "snake_case and kebab-case x1y2",
    "",
];

struct Args {
    backend: String,
    items: usize,
    searches: usize,
    sqlite: Option<PathBuf>,
    postgres: Option<String>,
}

fn parse(args: &[String]) -> Result<Args, Error> {
    let mut parsed = Args {
        backend: String::new(),
        items: 10_000,
        searches: 200,
        sqlite: None,
        postgres: std::env::var("AGENTGRAPH_POSTGRES_URL")
            .ok()
            .filter(|u| !u.is_empty()),
    };
    let mut it = args.iter();
    while let Some(arg) = it.next() {
        let mut value = || {
            it.next()
                .ok_or_else(|| format!("{arg} takes a value\n{USAGE}"))
        };
        match arg.as_str() {
            "--backend" => parsed.backend = value()?.clone(),
            "--items" => parsed.items = value()?.parse()?,
            "--searches" => parsed.searches = value()?.parse()?,
            "--sqlite" => parsed.sqlite = Some(PathBuf::from(value()?)),
            "--postgres" => parsed.postgres = Some(value()?.clone()),
            _ => return Err(format!("unknown argument `{arg}`\n{USAGE}").into()),
        }
    }
    if parsed.items == 0 || parsed.searches == 0 {
        return Err("--items and --searches must be at least 1".into());
    }
    Ok(parsed)
}

fn main() -> Result<(), Error> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.first().map(String::as_str) {
        Some("run") => {
            let args = parse(&args[1..])?;
            let runtime = tokio::runtime::Builder::new_multi_thread()
                .enable_all()
                .build()?;
            // The calls happen inside a task on the runtime, as a server's requests do
            // (`block_on`'s own thread is not one of its workers: every wake-up of the
            // caller would cross threads, which a program's tasks do not pay).
            runtime.block_on(async move {
                tokio::spawn(async move { run(&args).await })
                    .await
                    .map_err(|e| format!("the measuring task failed: {e}"))?
            })
        }
        Some("check") => check(&parse(&args[1..])?),
        Some("report") => {
            let read = |path: Option<&String>| -> Result<Vec<Value>, Error> {
                let Some(path) = path else {
                    return Ok(Vec::new());
                };
                let file = std::fs::File::open(path).map_err(|e| format!("{path}: {e}"))?;
                let mut rows = Vec::new();
                for line in std::io::BufReader::new(file).lines() {
                    let line = line?;
                    if !line.trim().is_empty() {
                        rows.push(serde_json::from_str(&line).map_err(|e| format!("{path}: {e}"))?);
                    }
                }
                Ok(rows)
            };
            let ours = read(Some(args.get(1).ok_or(USAGE)?))?;
            let theirs = read(args.get(2))?;
            print!("{}", store_report::report(&ours, &theirs));
            Ok(())
        }
        _ => Err(USAGE.into()),
    }
}

/// The data, queries and check vectors as text lines (see the module docs).
fn check(args: &Args) -> Result<(), Error> {
    let mut out = std::io::stdout().lock();
    for d in data(args.items) {
        writeln!(
            out,
            "item bench/{} {} kind={} n={} text={}",
            d.user, d.key, d.kind, d.n, d.text
        )?;
    }
    for q in 0..args.searches {
        let (kind, above) = filter(q, args.items);
        writeln!(
            out,
            "get {} filter kind={kind} n>{above}",
            get_index(q, args.items)
        )?;
    }
    let embed = OfflineEmbeddings::new(DIMS);
    let texts = CHECK_TEXTS
        .iter()
        .map(|t| (*t).to_owned())
        .chain(queries(args.searches).into_iter().take(20));
    for text in texts {
        let bits: Vec<String> = embed
            .vector(&text)
            .iter()
            .map(|x| format!("{:08x}", x.to_bits()))
            .collect();
        writeln!(out, "vector {text:?} {}", bits.join(""))?;
    }
    Ok(())
}

/// Times each op: the per-op nanoseconds and the wall time.
struct Timing {
    nanos: Vec<u64>,
    started: Instant,
    hits: usize,
    first_keys: Vec<String>,
}

impl Timing {
    fn new(count: usize) -> Self {
        Timing {
            nanos: Vec::with_capacity(count),
            started: Instant::now(),
            hits: 0,
            first_keys: Vec::new(),
        }
    }

    fn row(mut self, backend: &str, op: &str) -> Value {
        let seconds = self.started.elapsed().as_secs_f64();
        self.nanos.sort_unstable();
        let pct = |p: f64| {
            let i = ((self.nanos.len() as f64 * p).ceil() as usize).clamp(1, self.nanos.len());
            self.nanos[i - 1] as f64 / 1_000.0
        };
        json!({
            "side": "agentgraph",
            "backend": backend,
            "op": op,
            "count": self.nanos.len(),
            "seconds": seconds,
            "ops_per_s": self.nanos.len() as f64 / seconds,
            "mean_us": self.nanos.iter().sum::<u64>() as f64 / self.nanos.len().max(1) as f64 / 1_000.0,
            "p50_us": pct(0.50),
            "p99_us": pct(0.99),
            "hits": self.hits,
            "first_keys": self.first_keys,
        })
    }
}

/// Runs `f` and records its time.
macro_rules! timed {
    ($timing:expr, $call:expr) => {{
        let start = Instant::now();
        let out = $call;
        $timing.nanos.push(start.elapsed().as_nanos() as u64);
        out
    }};
}

/// After a put phase on PostgreSQL, the database's statistics gathered (untimed; LangGraph's
/// side does the same): autovacuum would within a minute, and a search's plan depends on them.
async fn settle(args: &Args, backend: &str) -> Result<(), Error> {
    match (backend, &args.postgres) {
        ("postgres", Some(url)) => analyze(&with_database(url, DATABASE)).await,
        _ => Ok(()),
    }
}

async fn run(args: &Args) -> Result<(), Error> {
    let backend = args.backend.as_str();
    let embed = Arc::new(OfflineEmbeddings::new(DIMS));
    let index = IndexConfig::new(DIMS, embed.clone()).fields(["text"]);
    let (plain, indexed): (Arc<dyn Store>, Arc<dyn Store>) = match backend {
        "memory" => (
            Arc::new(InMemoryStore::new()),
            Arc::new(InMemoryStore::new().with_index(index)),
        ),
        "sqlite" => {
            let path = args.sqlite.as_ref().ok_or("--sqlite PATH is needed")?;
            let store = SqliteStore::open(path)?;
            (Arc::new(store.clone()), Arc::new(store.with_index(index)))
        }
        "postgres" => {
            let url = args.postgres.as_ref().ok_or("--postgres URL is needed")?;
            create_database(url, DATABASE).await?;
            let store = PostgresStore::connect(&with_database(url, DATABASE)).await?;
            (Arc::new(store.clone()), Arc::new(store.with_index(index)))
        }
        other => return Err(format!("unknown backend `{other}`\n{USAGE}").into()),
    };
    let data = data(args.items);
    let emit = |row: Value| -> Result<(), Error> {
        let mut out = std::io::stdout().lock();
        writeln!(out, "{row}")?;
        Ok(out.flush()?)
    };

    let mut t = Timing::new(data.len());
    for d in &data {
        let value = json!({"kind": d.kind, "n": d.n, "text": d.text});
        timed!(t, plain.put(&ns(["bench", &d.user]), &d.key, value).await?);
    }
    emit(t.row(backend, "put"))?;
    settle(args, backend).await?;

    let mut t = Timing::new(data.len());
    for q in 0..data.len() {
        let d = &data[get_index(q, data.len())];
        let got = timed!(t, plain.get(&ns(["bench", &d.user]), &d.key).await?);
        t.hits += usize::from(got.is_some());
    }
    emit(t.row(backend, "get"))?;

    // Each search phase starts with one untimed search (first-call costs), as LangGraph's does.
    plain
        .search(SearchOp::new(ns(["bench"])).filter(json!({"kind": "warm-up"})))
        .await?;
    let mut t = Timing::new(args.searches);
    for q in 0..args.searches {
        let (kind, above) = filter(q, data.len());
        let op = SearchOp::new(ns(["bench"]))
            .filter(json!({"kind": kind, "n": {"$gt": above}}))
            .limit(10);
        let found = timed!(t, plain.search(op).await?);
        t.hits += found.len();
    }
    emit(t.row(backend, "search_filter"))?;

    // The embedding function alone, a text at a time as a put embeds it.
    let mut t = Timing::new(data.len());
    for d in &data {
        t.hits += timed!(t, embed.vector(&d.text)).len() / DIMS;
    }
    emit(t.row(backend, "embed"))?;

    let mut t = Timing::new(data.len());
    for d in &data {
        let value = json!({"kind": d.kind, "n": d.n, "text": d.text});
        timed!(t, indexed.put(&ns(["idx", &d.user]), &d.key, value).await?);
    }
    emit(t.row(backend, "put_indexed"))?;
    settle(args, backend).await?;

    indexed
        .search(SearchOp::new(ns(["idx"])).query("warm up"))
        .await?;
    let mut t = Timing::new(args.searches);
    for (q, query) in queries(args.searches).into_iter().enumerate() {
        let op = SearchOp::new(ns(["idx"])).query(query).limit(10);
        let found = timed!(t, indexed.search(op).await?);
        t.hits += found.len();
        if q == 0 {
            t.first_keys = found.iter().map(|f| f.key.clone()).collect();
        }
    }
    emit(t.row(backend, "search_semantic"))?;

    emit(json!({
        "side": "agentgraph",
        "backend": backend,
        "op": "process",
        "peak_rss_kib": peak_rss_kib(),
    }))
}

/// Ours runs on a database of its own, made afresh (LangGraph's: `agentgraph_store_bench_lg`).
const DATABASE: &str = "agentgraph_store_bench";

/// The process's peak RSS (`VmHWM`), in KiB.
fn peak_rss_kib() -> Option<u64> {
    std::fs::read_to_string("/proc/self/status")
        .ok()?
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))?
        .trim()
        .trim_end_matches("kB")
        .trim()
        .parse()
        .ok()
}
