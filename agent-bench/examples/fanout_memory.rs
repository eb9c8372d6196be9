//! What the in-memory saver keeps per run of `fanout_to_subgraph_10x`: runs the shape N times
//! on one `InMemorySaver` (a fresh thread each run, all kept, as the `shapes` bench does) and
//! prints the growth of the process's RSS per run and the blob bytes stored per run.
//!
//! ```text
//! cargo run --release -p agent-bench --example fanout_memory -- [RUNS] [sync|async|exit] [N]
//! ```
//!
//! The bench's `peak_rss_kib` counts every run it timed (up to 2,000 here, a dozen or so on
//! LangGraph's side in the same time): compare the per-run figure, not the peak.

use std::sync::Arc;

use agent_bench::{Shape, graphs, savers};
use agent_core::{BoxError, InMemorySaver, RunConfig};

/// The bench's allocator (the default feature; `--no-default-features`: the system's).
#[cfg(feature = "mimalloc")]
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// A `/proc/self/status` entry in KiB (0 where there is none).
fn status_kib(key: &str) -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix(key))
                .and_then(|v| v.split_whitespace().next()?.parse().ok())
        })
        .unwrap_or(0)
}

fn main() -> Result<(), BoxError> {
    let mut args = std::env::args().skip(1);
    let runs: usize = args.next().map_or(Ok(400), |a| a.parse())?;
    let durability = args.next().unwrap_or_else(|| "async".to_owned());
    let n: usize = args.next().map_or(Ok(10), |a| a.parse())?;
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    rt.block_on(async move {
        let saver = Arc::new(InMemorySaver::new());
        let runner = graphs::build(Shape::FanoutToSubgraph(n), Some(saver.clone()))?;
        let config = |i: usize| {
            RunConfig::default()
                .recursion_limit(1_000_000)
                .thread_id(format!("t{i}"))
                .durability(savers::durability(&durability))
        };
        // A first run warms the process up (its thread stays, as in the bench).
        (runner())(config(usize::MAX)).await?;
        let before = status_kib("VmRSS:");
        for i in 0..runs {
            (runner())(config(i)).await?;
        }
        let after = status_kib("VmRSS:");
        let blobs: usize = (0..runs).map(|i| saver.blob_bytes(&format!("t{i}"))).sum();
        println!(
            "fanout_to_subgraph_{n}x, {durability}, {runs} runs kept: RSS {before} -> {after} KiB, \
             {:.1} KiB a run ({:.1} KiB of it blobs)",
            after.saturating_sub(before) as f64 / runs as f64,
            blobs as f64 / runs as f64 / 1024.0,
        );
        Ok(())
    })
}
