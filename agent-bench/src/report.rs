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

/// Targets: LangGraph ÷ agentgraph per super-step (with either allocator), and agentgraph ÷
/// hand-written. A `react_agent` step without a saver is mostly the scripted model's and the
/// tool node's own work, so its target is half the others'.
const TARGET_NO_SAVER: f64 = 100.0;
const TARGET_NO_SAVER_REACT: f64 = 50.0;
const TARGET_MEMORY: f64 = 50.0;
const TARGET_SQLITE: f64 = 15.0;
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

/// What makes two records the same cell measured twice (in two processes).
const CELL: [&str; 8] = [
    "runner",
    "kind",
    "shape",
    "saver",
    "durability",
    "api",
    "runtime",
    "turns",
];

/// One record per cell: of a cell measured in several processes, the one with the median
/// time per super-step (with an even count, the faster of the middle two), marked with how
/// many processes there were. Whole records are kept, so a cell's numbers come from one
/// process.
pub fn fold(records: &[Value]) -> Vec<Value> {
    let mut cells: Vec<(Vec<&Value>, Vec<&Value>)> = Vec::new();
    for record in records {
        let key: Vec<&Value> = CELL.iter().map(|k| &record[*k]).collect();
        match cells.iter_mut().find(|(k, _)| *k == key) {
            Some((_, same)) => same.push(record),
            None => cells.push((key, vec![record])),
        }
    }
    cells
        .into_iter()
        .map(|(_, mut same)| {
            let per_step = |r: &Value| f(r, "median_us_per_step").unwrap_or(f64::MAX);
            same.sort_by(|a, b| per_step(a).total_cmp(&per_step(b)));
            let mut kept = same[(same.len() - 1) / 2].clone();
            if same.len() > 1
                && let Some(map) = kept.as_object_mut()
            {
                map.insert("processes".to_owned(), same.len().into());
            }
            kept
        })
        .collect()
}

fn read(path: &str) -> Result<Vec<Value>, BoxError> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("reading {path}: {e}"))?;
    Ok(text
        .lines()
        .filter(|l| l.starts_with('{'))
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect())
}

/// `runner`'s timed records of `shape` with `saver` (every durability; not the other kinds of
/// line, such as a chat's bytes).
fn shape_records<'a>(
    records: &'a [Value],
    runner: &'a str,
    shape: &'a str,
    saver: &'a str,
) -> impl Iterator<Item = &'a Value> {
    records.iter().filter(move |r| {
        r["runner"] == runner
            && r["shape"] == shape
            && r["saver"] == saver
            && r.get("kind").is_none()
    })
}

/// agentgraph's peak RSS (KiB) after as many timed runs as LangGraph's process of the same
/// shape, saver and durability timed (both APIs run in that one process), the highest over
/// durabilities: the same checkpoints kept on both sides. `None` without LangGraph's lines
/// or our `peak_rss_kib_by_runs`.
fn peak_at_their_runs(ours: &[Value], theirs: &[Value], shape: &str, saver: &str) -> Option<f64> {
    shape_records(ours, "agentgraph", shape, saver)
        .filter_map(|mine| {
            let runs: f64 = theirs
                .iter()
                .filter(|r| {
                    r["runner"] == "langgraph"
                        && r["shape"] == shape
                        && r["saver"] == saver
                        && r["durability"] == mine["durability"]
                })
                .filter_map(|r| f(r, "runs"))
                .sum();
            let peaks = mine["peak_rss_kib_by_runs"].as_array()?;
            if runs == 0.0 {
                return None;
            }
            // The last peak recorded at or before that run count (one is recorded per
            // change, the first after the first run).
            peaks
                .iter()
                .filter_map(|p| Some((p.get(0)?.as_f64()?, p.get(1)?.as_f64()?)))
                .take_while(|(n, _)| *n <= runs)
                .last()
                .map(|(_, kib)| kib)
        })
        .reduce(f64::max)
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
    let (ours, theirs) = (&fold(ours)[..], &fold(theirs)[..]);
    let mut out = String::new();
    let processes = ours
        .iter()
        .chain(theirs)
        .filter_map(|r| r["processes"].as_u64())
        .max();
    if let Some(n) = processes {
        let _ = writeln!(
            out,
            "Each cell: the median of {n} processes (its numbers from that one process).\n"
        );
    }
    let mut allocators: Vec<&str> = ours
        .iter()
        .filter_map(|r| r["allocator"].as_str())
        .collect();
    allocators.sort_unstable();
    allocators.dedup();
    if !allocators.is_empty() {
        let _ = writeln!(
            out,
            "agentgraph's global allocator (the bench binary's, the hand-written floor's too): {}.\n",
            allocators.join(", ")
        );
    }
    let shapes: Vec<&str> = SHAPES
        .iter()
        .map(|(n, _)| *n)
        .filter(|n| ours.iter().chain(theirs).any(|r| r["shape"] == *n))
        .collect();

    if !theirs.is_empty() {
        let _ = writeln!(
            out,
            "LangGraph ÷ agentgraph, median time per super-step, against LangGraph's in-memory saver (targets: ≥{TARGET_NO_SAVER:.0}x without a saver (`react_agent` ≥{TARGET_NO_SAVER_REACT:.0}x), ≥{TARGET_MEMORY:.0}x in memory, ≥{TARGET_SQLITE:.0}x with SQLite; ✗ = missed). LangGraph: the faster of its async and sync APIs. `exit`: both sides write one checkpoint when the run ends. `async`: both write a checkpoint every super-step while the next one runs. `sync ÷ async`: agentgraph awaits each step's checkpoint, LangGraph writes it in the background. SQLite: agentgraph's saver holds its file (`SqliteSaver::open_exclusive`, as a process that owns its checkpoints opens it; `open` shares the file with other processes).\n"
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
                (
                    "none",
                    "",
                    "none",
                    "",
                    if shape.starts_with("react_agent") {
                        TARGET_NO_SAVER_REACT
                    } else {
                        TARGET_NO_SAVER
                    },
                ),
                ("memory", "exit", "memory", "exit", TARGET_MEMORY),
                ("memory", "async", "memory", "async", TARGET_MEMORY),
                ("memory", "sync", "memory", "async", TARGET_MEMORY),
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
        sqlite_commit_floor(&mut out, ours, theirs, &shapes);
        let _ = writeln!(
            out,
            "\nMedian µs per super-step, LangGraph (async / sync API) next to agentgraph, by durability (without a saver: the `async` / `sync` columns), and each side's peak RSS in MiB with, in brackets, the KiB a run's checkpoints keep in it (the peak above the side's own no-saver peak, divided by the runs that process timed: an in-memory saver keeps every run, and agentgraph times hundreds of runs while LangGraph times a handful). agentgraph's first number is its peak after as many timed runs as LangGraph's process timed (the same checkpoints kept), the second its peak after all of its own; target: ours no higher at the same runs and no more a run; ✗ = higher or more):\n"
        );
        let _ = writeln!(
            out,
            "| shape | saver | LangGraph exit | agentgraph exit | LangGraph async | agentgraph async | agentgraph sync | LangGraph peak RSS MiB (KiB a run) | agentgraph peak RSS MiB at LangGraph's runs / at its own (KiB a run) |"
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
                // Peak RSS, and what a run's checkpoints keep: the peak above the same side's
                // no-saver peak, divided by the runs that process timed (an in-memory saver
                // keeps every run's thread, and agentgraph times hundreds of runs in the
                // time LangGraph times a handful, so peaks alone compare different amounts
                // of kept checkpoints). Target: ours keeps no more a run than LangGraph's.
                let side = |records: &[Value], runner: &str| -> Option<(f64, Option<f64>)> {
                    let of = |saver: &str| {
                        shape_records(records, runner, shape, saver)
                            .filter_map(|r| Some((f(r, "peak_rss_kib")?, f(r, "runs")?)))
                            .collect::<Vec<_>>()
                    };
                    let base = of("none").iter().map(|(k, _)| *k).reduce(f64::max);
                    let mine = of(saver);
                    let peak = mine.iter().map(|(k, _)| *k).reduce(f64::max)?;
                    let per_run = match (saver, base) {
                        ("none", _) | (_, None) => None,
                        (_, Some(base)) => mine
                            .iter()
                            .filter(|(_, runs)| *runs > 0.0)
                            .map(|(k, runs)| (k - base).max(0.0) / runs)
                            .reduce(f64::max),
                    };
                    Some((peak, per_run))
                };
                let cell =
                    |value: Option<(f64, Option<f64>)>, at: Option<f64>, worse: bool| match value {
                        None => "–".to_owned(),
                        Some((peak, per_run)) => {
                            let at = at
                                .map(|kib| format!("{:.0} / ", kib / 1024.0))
                                .unwrap_or_default();
                            let text = match per_run {
                                Some(kib) => format!("{at}{:.0} ({:.0})", peak / 1024.0, kib),
                                None => format!("{at}{:.0}", peak / 1024.0),
                            };
                            if worse {
                                format!("**{text}** ✗")
                            } else {
                                text
                            }
                        }
                    };
                let ours_rss = side(ours, "agentgraph");
                let theirs_rss = side(theirs, "langgraph");
                let at_theirs = peak_at_their_runs(ours, theirs, shape, saver);
                let worse = matches!(
                    (ours_rss, theirs_rss),
                    (Some((_, Some(o))), Some((_, Some(t)))) if o > t
                ) || matches!(
                    (at_theirs, theirs_rss),
                    (Some(o), Some((t, _))) if o > t
                );
                let lg_rss = cell(theirs_rss, None, false);
                let rss = cell(ours_rss, at_theirs, worse);
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

/// What a bare SQLite commit costs on the machine, and the shapes whose `SQLite, sync` target
/// leaves less than one per super-step.
fn sqlite_commit_floor(out: &mut String, ours: &[Value], theirs: &[Value], shapes: &[&str]) {
    let Some(commit) = ours.iter().find(|r| r["kind"] == "sqlite_commit") else {
        return;
    };
    let Some(floor) = f(commit, "median_us_per_step") else {
        return;
    };
    let budget = TARGET_SQLITE * floor;
    let under: Vec<String> = shapes
        .iter()
        .filter_map(|shape| {
            let theirs = langgraph(theirs, shape, "memory", "async")
                .and_then(|r| f(r, "median_us_per_step"))?;
            (theirs < budget).then(|| format!("`{shape}` {}", us(Some(theirs))))
        })
        .collect();
    let _ = write!(
        out,
        "\nSQLite alone, on this machine: a transaction inserting one 100-byte row costs {} µs (WAL, `synchronous=NORMAL`; the median of batches of 1,000, {} commits in all). A checkpoint awaited every super-step costs at least one commit unless several runs share it, so `SQLite, sync ÷ async` can reach {TARGET_SQLITE:.0}x only where LangGraph's super-step takes {} µs or more",
        us(Some(floor)),
        commit["commits"],
        us(Some(budget)),
    );
    if under.is_empty() {
        let _ = writeln!(out, ".");
    } else {
        let _ = writeln!(
            out,
            "; it takes less in: {} (µs, in memory with `async`).",
            under.join(", ")
        );
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::{fold, peak_at_their_runs};

    #[test]
    fn fold_keeps_each_cells_median_process() {
        let cell = |saver: &str, us: f64, rss: u64| {
            json!({"runner": "agentgraph", "shape": "sequential_10", "saver": saver,
                   "durability": "sync", "median_us_per_step": us, "peak_rss_kib": rss})
        };
        let records = [
            cell("memory", 3.0, 30),
            cell("sqlite", 20.0, 1),
            cell("memory", 1.0, 10),
            cell("memory", 2.0, 20),
        ];
        let folded = fold(&records);
        assert_eq!(folded.len(), 2);
        // The median process's record whole, in the order cells first appeared.
        assert_eq!(folded[0]["saver"], "memory");
        assert_eq!(folded[0]["median_us_per_step"], 2.0);
        assert_eq!(folded[0]["peak_rss_kib"], 20);
        assert_eq!(folded[0]["processes"], 3);
        // A cell measured once is left as it was.
        assert_eq!(folded[1], records[1]);
    }

    #[test]
    fn fold_takes_the_faster_middle_of_an_even_count() {
        let cell = |durability: &str, us: f64| {
            json!({"runner": "langgraph", "shape": "s", "saver": "memory", "api": "async",
                   "durability": durability, "median_us_per_step": us})
        };
        let folded = fold(&[cell("exit", 4.0), cell("exit", 1.0), cell("async", 9.0)]);
        assert_eq!(folded.len(), 2);
        assert_eq!(folded[0]["median_us_per_step"], 1.0);
        assert_eq!(folded[0]["processes"], 2);
    }

    #[test]
    fn our_peak_is_read_at_langgraphs_run_count_per_durability() {
        let ours = |durability: &str, peaks: serde_json::Value| {
            json!({"runner": "agentgraph", "shape": "s", "saver": "memory",
                   "durability": durability, "peak_rss_kib_by_runs": peaks})
        };
        let theirs = |durability: &str, api: &str, runs: u64| {
            json!({"runner": "langgraph", "shape": "s", "saver": "memory",
                   "durability": durability, "api": api, "runs": runs})
        };
        let ours = [
            ours("sync", json!([[1, 100], [3, 130], [9, 190]])),
            ours("exit", json!([[1, 90], [5, 120], [6, 125]])),
        ];
        // Both APIs ran in LangGraph's one process: 2 + 3 runs with `sync`, 4 with `exit`.
        let theirs = [
            theirs("sync", "async", 2),
            theirs("sync", "sync", 3),
            theirs("exit", "async", 4),
        ];
        // `sync` at 5 runs: 130 (recorded at 3, unchanged until 9); `exit` at 4 runs: 90.
        assert_eq!(
            peak_at_their_runs(&ours, &theirs, "s", "memory"),
            Some(130.0)
        );
        assert_eq!(peak_at_their_runs(&ours, &[], "s", "memory"), None);
    }
}
