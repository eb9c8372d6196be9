//! Tables from the JSON lines: agentgraph per saver and durability next to the hand-written
//! floor, and, when LangGraph's lines are there, LangGraph ÷ agentgraph per super-step (medians)
//! with the targets marked, plus checkpoint bytes of a long chat. Durabilities are compared
//! with like: agentgraph's `exit` with LangGraph's `exit` (one checkpoint per run), agentgraph's
//! `async` and `sync` with LangGraph's default `async` (a checkpoint every step). Every saver
//! of ours is measured against LangGraph's in-memory saver (SQLite: the slower store against
//! the faster one).

use std::fmt::Write as _;

use agent_core::BoxError;
use serde_json::Value;

use crate::SHAPES;

/// Targets: LangGraph ÷ agentgraph per super-step, and agentgraph ÷ hand-written.
const TARGET_NO_SAVER: f64 = 100.0;
const TARGET_MEMORY: f64 = 100.0;
const TARGET_MEMORY_SYNC: f64 = 50.0;
const TARGET_SQLITE: f64 = 20.0;
const TARGET_FLOOR: f64 = 3.0;

/// `shapes report AGENTGRAPH.jsonl [LANGGRAPH.jsonl]`.
pub fn run(args: &[String]) -> Result<(), BoxError> {
    let (ours, theirs) = match args {
        [ours] => (read(ours)?, Vec::new()),
        [ours, theirs] => (read(ours)?, read(theirs)?),
        _ => return Err("usage: shapes report AGENTGRAPH.jsonl [LANGGRAPH.jsonl]".into()),
    };
    print!("{}", render(&ours, &theirs));
    Ok(())
}

fn read(path: &str) -> Result<Vec<Value>, BoxError> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("reading {path}: {e}"))?;
    Ok(text
        .lines()
        .filter(|l| l.starts_with('{'))
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect())
}

fn f(record: &Value, key: &str) -> Option<f64> {
    record.get(key)?.as_f64()
}

/// One of our records; `durability` only matters with a saver (lines without one are `sync`).
fn find<'a>(
    records: &'a [Value],
    runner: &str,
    shape: &str,
    saver: &str,
    durability: &str,
) -> Option<&'a Value> {
    records.iter().find(|r| {
        r["runner"] == runner
            && r["shape"] == shape
            && r["saver"] == saver
            && r.get("kind").is_none()
            && (saver == "none" || r["durability"].as_str().unwrap_or("sync") == durability)
    })
}

/// LangGraph's fastest API (async or sync) for a shape x saver x durability.
fn langgraph<'a>(
    records: &'a [Value],
    shape: &str,
    saver: &str,
    durability: &str,
) -> Option<&'a Value> {
    records
        .iter()
        .filter(|r| {
            r["runner"] == "langgraph"
                && r["shape"] == shape
                && r["saver"] == saver
                && (saver == "none" || r["durability"] == durability)
        })
        .min_by(|a, b| {
            let key = |r: &Value| f(r, "median_us_per_step").unwrap_or(f64::MAX);
            key(a).total_cmp(&key(b))
        })
}

fn us(x: Option<f64>) -> String {
    match x {
        None => "–".to_owned(),
        Some(x) if x >= 10_000.0 => format!("{:.0}", x),
        Some(x) if x >= 100.0 => format!("{:.0}", x),
        Some(x) if x >= 10.0 => format!("{:.1}", x),
        Some(x) => format!("{:.2}", x),
    }
}

fn ratio(x: f64, target: Option<(f64, bool)>) -> String {
    let text = if x >= 100.0 {
        format!("{x:.0}x")
    } else if x >= 10.0 {
        format!("{x:.1}x")
    } else {
        format!("{x:.2}x")
    };
    match target {
        Some((target, higher_is_better)) => {
            let met = if higher_is_better {
                x >= target
            } else {
                x <= target
            };
            if met { text } else { format!("**{text}** ✗") }
        }
        None => text,
    }
}

/// The tables, as Markdown.
pub fn render(ours: &[Value], theirs: &[Value]) -> String {
    let mut out = String::new();
    let shapes: Vec<&str> = SHAPES
        .iter()
        .map(|(n, _)| *n)
        .filter(|n| ours.iter().chain(theirs).any(|r| r["shape"] == *n))
        .collect();

    if !theirs.is_empty() {
        let _ = writeln!(
            out,
            "LangGraph ÷ agentgraph, median time per super-step, against LangGraph's in-memory saver (targets: ≥{TARGET_NO_SAVER:.0}x without a saver, ≥{TARGET_MEMORY:.0}x in memory with `exit` and `async`, ≥{TARGET_MEMORY_SYNC:.0}x in memory with `sync`, ≥{TARGET_SQLITE:.0}x with SQLite; ✗ = missed). LangGraph: the faster of its async and sync APIs. `exit`: both sides write one checkpoint when the run ends. `async`: both write a checkpoint every super-step while the next one runs. `sync ÷ async`: agentgraph awaits each step's checkpoint, LangGraph writes it in the background.\n"
        );
        let _ = writeln!(
            out,
            "| shape | super-steps | no saver | memory, exit | memory, async | memory, sync ÷ async | SQLite, exit | SQLite, async | SQLite, sync ÷ async |"
        );
        let _ = writeln!(out, "|---|---:|---:|---:|---:|---:|---:|---:|---:|");
        for shape in &shapes {
            let steps = find(ours, "agentgraph", shape, "none", "")
                .and_then(|r| r["super_steps"].as_u64())
                .map_or("–".to_owned(), |s| s.to_string());
            let mut row = format!("| {shape} | {steps} |");
            for (saver, mine, theirs_saver, theirs_durability, target) in [
                ("none", "", "none", "", TARGET_NO_SAVER),
                ("memory", "exit", "memory", "exit", TARGET_MEMORY),
                ("memory", "async", "memory", "async", TARGET_MEMORY),
                ("memory", "sync", "memory", "async", TARGET_MEMORY_SYNC),
                ("sqlite", "exit", "memory", "exit", TARGET_SQLITE),
                ("sqlite", "async", "memory", "async", TARGET_SQLITE),
                ("sqlite", "sync", "memory", "async", TARGET_SQLITE),
            ] {
                let cell = match (
                    find(ours, "agentgraph", shape, saver, mine)
                        .and_then(|r| f(r, "median_us_per_step")),
                    langgraph(theirs, shape, theirs_saver, theirs_durability)
                        .and_then(|r| f(r, "median_us_per_step")),
                ) {
                    (Some(a), Some(l)) if a > 0.0 => ratio(l / a, Some((target, true))),
                    _ => "–".to_owned(),
                };
                let _ = write!(row, " {cell} |");
            }
            let _ = writeln!(out, "{row}");
        }
        let _ = writeln!(
            out,
            "\nMedian µs per super-step, LangGraph (async / sync API) next to agentgraph, by durability (without a saver: the `async` / `sync` columns):\n"
        );
        let _ = writeln!(
            out,
            "| shape | saver | LangGraph exit | agentgraph exit | LangGraph async | agentgraph async | agentgraph sync | LangGraph peak RSS MiB | agentgraph peak RSS MiB |"
        );
        let _ = writeln!(out, "|---|---|---:|---:|---:|---:|---:|---:|---:|");
        for shape in &shapes {
            for saver in ["none", "memory", "sqlite"] {
                let api_pair = |durability: &str| {
                    let pick = |api: &str| {
                        theirs
                            .iter()
                            .find(|r| {
                                r["runner"] == "langgraph"
                                    && r["shape"] == *shape
                                    && r["saver"] == saver
                                    && r["api"] == api
                                    && (saver == "none" || r["durability"] == durability)
                            })
                            .and_then(|r| f(r, "median_us_per_step"))
                    };
                    format!("{} / {}", us(pick("async")), us(pick("sync")))
                };
                let (exit, mine_exit) = if saver == "none" {
                    ("–".to_owned(), "–".to_owned())
                } else {
                    (
                        api_pair("exit"),
                        us(find(ours, "agentgraph", shape, saver, "exit")
                            .and_then(|r| f(r, "median_us_per_step"))),
                    )
                };
                let default = api_pair("async");
                let mine = find(ours, "agentgraph", shape, saver, "sync");
                let mine_async = if saver == "none" {
                    "–".to_owned()
                } else {
                    us(find(ours, "agentgraph", shape, saver, "async")
                        .and_then(|r| f(r, "median_us_per_step")))
                };
                let rss = ours
                    .iter()
                    .filter(|r| {
                        r["runner"] == "agentgraph"
                            && r["shape"] == *shape
                            && r["saver"] == saver
                            && r.get("kind").is_none()
                    })
                    .filter_map(|r| f(r, "peak_rss_kib"))
                    .reduce(f64::max)
                    .map_or("–".to_owned(), |k| format!("{:.0}", k / 1024.0));
                let lg_rss = theirs
                    .iter()
                    .filter(|r| {
                        r["runner"] == "langgraph" && r["shape"] == *shape && r["saver"] == saver
                    })
                    .filter_map(|r| f(r, "peak_rss_kib"))
                    .reduce(f64::max)
                    .map_or("–".to_owned(), |k| format!("{:.0}", k / 1024.0));
                let _ = writeln!(
                    out,
                    "| {shape} | {saver} | {exit} | {mine_exit} | {default} | {mine_async} | {} | {lg_rss} | {rss} |",
                    us(mine.and_then(|r| f(r, "median_us_per_step"))),
                );
            }
        }
        // Same final state on both sides?
        let mut mismatches = Vec::new();
        for shape in &shapes {
            let mine = find(ours, "agentgraph", shape, "none", "").map(|r| &r["check"]);
            let other = langgraph(theirs, shape, "none", "").map(|r| &r["check"]);
            let steps = (
                find(ours, "agentgraph", shape, "none", "").map(|r| &r["super_steps"]),
                langgraph(theirs, shape, "none", "").map(|r| &r["super_steps"]),
            );
            if let (Some(a), Some(b)) = (mine, other)
                && (a != b || steps.0 != steps.1)
            {
                mismatches.push(format!(
                    "{shape}: agentgraph {a} in {} steps, LangGraph {b} in {} steps",
                    steps.0.unwrap_or(&Value::Null),
                    steps.1.unwrap_or(&Value::Null)
                ));
            }
        }
        if mismatches.is_empty() {
            let _ = writeln!(
                out,
                "\nEvery shape ends in the same state on both sides (message / result / joke counts) after the same number of super-steps."
            );
        } else {
            let _ = writeln!(out, "\nDifferent outcomes:\n- {}", mismatches.join("\n- "));
        }
        out.push('\n');
    }

    let _ = writeln!(
        out,
        "agentgraph, median µs per run (per super-step), next to the hand-written floor (target: within {TARGET_FLOOR:.0}x); with a saver, `sync` and `async` checkpoint every super-step (`async` while the next runs) and `exit` once per run:\n"
    );
    let _ = writeln!(
        out,
        "| shape | steps | tasks | no saver | memory, sync | memory, async | memory, exit | SQLite, sync | SQLite, async | SQLite, exit | Postgres, sync | Postgres, async | Postgres, exit | hand-written | agentgraph ÷ hand-written |"
    );
    let _ = writeln!(
        out,
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
    );
    for shape in &shapes {
        let none = find(ours, "agentgraph", shape, "none", "");
        let cell = |saver: &str, durability: &str| {
            find(ours, "agentgraph", shape, saver, durability).map_or("–".to_owned(), |r| {
                format!(
                    "{} ({})",
                    us(f(r, "median_us")),
                    us(f(r, "median_us_per_step"))
                )
            })
        };
        let floor = find(ours, "handwritten", shape, "none", "");
        let vs_floor = match (
            none.and_then(|r| f(r, "median_us")),
            floor.and_then(|r| f(r, "median_us")),
        ) {
            (Some(a), Some(h)) if h > 0.0 => ratio(a / h, Some((TARGET_FLOOR, false))),
            _ => "–".to_owned(),
        };
        let _ = writeln!(
            out,
            "| {shape} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {vs_floor} |",
            none.map_or("–".to_owned(), |r| r["super_steps"].to_string()),
            none.map_or("–".to_owned(), |r| r["tasks"].to_string()),
            cell("none", ""),
            cell("memory", "sync"),
            cell("memory", "async"),
            cell("memory", "exit"),
            cell("sqlite", "sync"),
            cell("sqlite", "async"),
            cell("sqlite", "exit"),
            cell("postgres", "sync"),
            cell("postgres", "async"),
            cell("postgres", "exit"),
            us(floor.and_then(|r| f(r, "median_us"))),
        );
    }

    let storage: Vec<&Value> = ours
        .iter()
        .chain(theirs)
        .filter(|r| r["kind"] == "storage")
        .collect();
    if !storage.is_empty() {
        let _ = writeln!(
            out,
            "\nCheckpoint bytes stored for one chat thread (a human and an AI message per turn; agentgraph: field blobs + checkpoint rows):\n"
        );
        let _ = writeln!(
            out,
            "| saver | turns | agentgraph blobs | agentgraph total | LangGraph total | conversation (JSON) |"
        );
        let _ = writeln!(out, "|---|---:|---:|---:|---:|---:|");
        for saver in ["memory", "sqlite", "postgres"] {
            for turns in [100, 500] {
                let pick = |runner: &str| {
                    storage.iter().copied().find(|r| {
                        r["runner"] == runner && r["saver"] == saver && r["turns"] == turns
                    })
                };
                let Some(mine) = pick("agentgraph") else {
                    continue;
                };
                let kib = |r: Option<&Value>, key: &str| {
                    r.and_then(|r| f(r, key))
                        .map_or("–".to_owned(), |b| format!("{:.0} KiB", b / 1024.0))
                };
                let _ = writeln!(
                    out,
                    "| {saver} | {turns} | {} | {} | {} | {} |",
                    kib(Some(mine), "blob_bytes"),
                    kib(Some(mine), "bytes"),
                    kib(pick("langgraph"), "bytes"),
                    kib(Some(mine), "conversation_json_bytes"),
                );
            }
        }
    }
    out
}
