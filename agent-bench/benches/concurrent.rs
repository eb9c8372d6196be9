//! Many runs at once on one saver, as a server has them: `sequential_10` (ten no-op steps, so
//! a step costs what its checkpoint costs) started `N` at a time on distinct threads, with each
//! saver (PostgreSQL when `AGENTGRAPH_POSTGRES_URL` is set) and durability; one JSON object per line, the median time per super-step over rounds
//! of `N` runs (a round's wall time divided by its steps).
//!
//! ```text
//! cargo bench -p agent-bench --bench concurrent [-- --quick]
//! ```
//!
//! What it shows: whether a saver's cost per step stays flat as runs pile up (SQLite batches
//! the checkpoints that arrive while one commits into one transaction) or grows with them.
//! Not a test: nothing here asserts on time, and `cargo test` does not build it.

use std::time::Instant;

use agent_bench::{Shape, graphs, savers};
use agent_core::{BoxError, RunConfig};
use serde_json::json;

/// Runs started at once.
const CONCURRENCY: [usize; 3] = [1, 8, 64];

/// Super-steps of a run.
const STEPS: usize = 10;

fn main() -> Result<(), BoxError> {
    let quick = std::env::args().any(|a| a == "--quick");
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    let dir = std::env::temp_dir().join(format!("agentgraph-concurrent-{}", std::process::id()));
    std::fs::create_dir_all(&dir)?;
    let result = runtime.block_on(async {
        for saver_kind in savers::available(["memory", "sqlite", "postgres"]) {
            for durability in ["sync", "async"] {
                for concurrency in CONCURRENCY {
                    let line = measure(&dir, saver_kind, durability, concurrency, quick).await?;
                    println!("{line}");
                }
            }
        }
        Ok::<_, BoxError>(())
    });
    std::fs::remove_dir_all(&dir)?;
    result
}

async fn measure(
    dir: &std::path::Path,
    saver_kind: &str,
    durability: &str,
    concurrency: usize,
    quick: bool,
) -> Result<serde_json::Value, BoxError> {
    let dir = dir.join(format!("{saver_kind}-{durability}-{concurrency}"));
    let saver = savers::open(saver_kind, &dir).await?;
    let runner = graphs::build(Shape::Sequential(STEPS), saver)?;
    let rounds = if quick { 5 } else { 41 };
    let mut per_step = Vec::with_capacity(rounds);
    // One round to warm up, untimed.
    for round in 0..=rounds {
        let started = Instant::now();
        let mut runs = tokio::task::JoinSet::new();
        for i in 0..concurrency {
            let run = runner();
            let config = RunConfig::default()
                .thread_id(format!("r{round}-{i}"))
                .durability(savers::durability(durability));
            runs.spawn(run(config));
        }
        while let Some(outcome) = runs.join_next().await {
            outcome??;
        }
        if round > 0 {
            per_step.push(started.elapsed().as_secs_f64() * 1e6 / (concurrency * STEPS) as f64);
        }
    }
    per_step.sort_by(f64::total_cmp);
    Ok(json!({
        "shape": "sequential_10",
        "saver": saver_kind,
        "durability": durability,
        "concurrent_runs": concurrency,
        "rounds": rounds,
        "median_us_per_step": (per_step[per_step.len() / 2] * 100.0).round() / 100.0,
        "min_us_per_step": (per_step[0] * 100.0).round() / 100.0,
    }))
}
