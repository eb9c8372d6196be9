//! The store bench's tables (`cargo xtask bench store`): for each backend, each op's
//! time a call (mean, p50, p99) on both sides, the ratio (LangGraph's mean time a call over
//! ours: the store's own time, without the bench loop's work of building the next value,
//! which ops per second of a phase include and which costs either side differently) against
//! the goals (≥20x in memory, ≥5x on PostgreSQL), and each process's peak RSS.
//! The input is the JSON lines of `store_bench run` and of `xtask/bench/langgraph_store.py`:
//! `{side, backend, op, count, ops_per_s, mean_us, p50_us, p99_us, hits}` per op, and
//! `{side, backend, op: "process", peak_rss_kib}` per process.

use std::fmt::Write;

use serde_json::Value;

/// The backends in the report's order: ours, LangGraph's store of the same kind, the goal.
const BACKENDS: [(&str, &str, Option<f64>); 3] = [
    ("memory", "InMemoryStore", Some(20.0)),
    ("sqlite", "SqliteStore", None),
    ("postgres", "PostgresStore", Some(5.0)),
];

/// The ops in the report's order, with how they read.
const OPS: [(&str, &str); 6] = [
    ("put", "put (no index)"),
    ("get", "get"),
    ("search_filter", "filtered search (limit 10)"),
    ("put_indexed", "put with index (embeds `text`)"),
    ("search_semantic", "semantic search (limit 10)"),
    ("embed", "the embedding function alone"),
];

fn find<'a>(rows: &'a [Value], backend: &str, op: &str) -> Option<&'a Value> {
    rows.iter()
        .find(|r| r["backend"] == backend && r["op"] == op)
}

fn cell(row: Option<&Value>) -> String {
    match row {
        Some(r) if r.get("error").is_some() => {
            format!("not run: {}", r["error"].as_str().unwrap_or("?"))
        }
        Some(r) => match (mean_us(r), r["p50_us"].as_f64(), r["p99_us"].as_f64()) {
            (Some(mean), Some(p50), Some(p99)) => {
                format!("{} ({} / {})", micros(mean), micros(p50), micros(p99))
            }
            _ => "?".to_owned(),
        },
        None => "—".to_owned(),
    }
}

/// The mean µs a call (from ops per second for lines written before the mean was).
fn mean_us(r: &Value) -> Option<f64> {
    r["mean_us"]
        .as_f64()
        .or_else(|| r["ops_per_s"].as_f64().map(|ops| 1e6 / ops))
}

fn micros(us: f64) -> String {
    if us >= 100.0 {
        format!("{us:.0}")
    } else if us >= 10.0 {
        format!("{us:.1}")
    } else {
        format!("{us:.2}")
    }
}

/// The markdown tables.
pub fn report(ours: &[Value], theirs: &[Value]) -> String {
    let mut out = String::new();
    let items = find(ours, "memory", "put")
        .or_else(|| ours.first())
        .and_then(|r| r["count"].as_u64())
        .unwrap_or(0);
    let _ = writeln!(
        out,
        "Store bench: {items} items, one op at a time, µs a call: mean (p50 / p99); ratio = LangGraph's mean over agentgraph's (the calls alone, without the bench loop's work between them).\n"
    );
    let _ = writeln!(
        out,
        "| store | op | LangGraph | agentgraph | ratio | goal |\n| --- | --- | --- | --- | --- | --- |"
    );
    let mut mismatches = Vec::new();
    for (backend, theirs_name, goal) in BACKENDS {
        if !ours.iter().any(|r| r["backend"] == backend) {
            continue;
        }
        for (op, label) in OPS {
            let mine = find(ours, backend, op);
            let lg = find(theirs, backend, op);
            if mine.is_none() && lg.is_none() {
                continue;
            }
            let mean = |r: Option<&Value>| r.and_then(mean_us);
            let ratio = mean(lg).zip(mean(mine)).map(|(a, b)| a / b);
            let goal_cell = match (goal, ratio) {
                (Some(goal), Some(r)) if op != "embed" => {
                    format!("≥{goal:.0}x {}", if r >= goal { "✓" } else { "✗" })
                }
                _ => String::new(),
            };
            let _ = writeln!(
                out,
                "| {backend} ({theirs_name}) | {label} | {} | {} | {} | {goal_cell} |",
                cell(lg),
                cell(mine),
                ratio.map_or_else(|| "—".to_owned(), |r| format!("{r:.1}x")),
            );
            let measured = |r: &&Value| r.get("error").is_none();
            if let (Some(a), Some(b)) = (mine.filter(measured), lg.filter(measured)) {
                if a["hits"] != b["hits"] && op != "embed" {
                    mismatches.push(format!(
                        "{backend} {op}: agentgraph found {} items, LangGraph {}",
                        a["hits"], b["hits"]
                    ));
                }
                if op == "search_semantic" && a["first_keys"] != b["first_keys"] {
                    mismatches.push(format!(
                        "{backend} semantic search, first query: agentgraph ranked {}, LangGraph {}",
                        a["first_keys"], b["first_keys"]
                    ));
                }
            }
        }
    }
    let _ = writeln!(
        out,
        "\nPeak RSS of each process (MiB; one process per store and side):\n\n| store | LangGraph | agentgraph |\n| --- | --- | --- |"
    );
    for (backend, theirs_name, _) in BACKENDS {
        let rss = |rows: &[Value]| {
            find(rows, backend, "process")
                .and_then(|r| r["peak_rss_kib"].as_f64())
                .map_or_else(|| "—".to_owned(), |k| format!("{:.1}", k / 1024.0))
        };
        if ours.iter().any(|r| r["backend"] == backend) {
            let _ = writeln!(
                out,
                "| {backend} ({theirs_name}) | {} | {} |",
                rss(theirs),
                rss(ours)
            );
        }
    }
    let notes: Vec<&str> = theirs
        .iter()
        .chain(ours)
        .filter(|r| r["op"] == "note")
        .filter_map(|r| r["text"].as_str())
        .collect();
    if !notes.is_empty() || !mismatches.is_empty() {
        let _ = writeln!(out);
    }
    for note in notes {
        let _ = writeln!(out, "- {note}");
    }
    for mismatch in mismatches {
        let _ = writeln!(out, "- Results differ: {mismatch}");
    }
    out
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn ratio_goal_and_differences() {
        let ours = vec![
            json!({"side": "agentgraph", "backend": "memory", "op": "put", "count": 100, "ops_per_s": 40000.0, "mean_us": 20.0, "p50_us": 15.0, "p99_us": 40.0, "hits": 0}),
            json!({"side": "agentgraph", "backend": "memory", "op": "get", "count": 100, "ops_per_s": 1000.0, "p50_us": 900.0, "p99_us": 1200.0, "hits": 100}),
            json!({"side": "agentgraph", "backend": "memory", "op": "process", "peak_rss_kib": 2048}),
        ];
        let theirs = vec![
            json!({"side": "langgraph", "backend": "memory", "op": "put", "count": 100, "ops_per_s": 900.0, "mean_us": 1000.0, "p50_us": 800.0, "p99_us": 1500.0, "hits": 0}),
            json!({"side": "langgraph", "backend": "memory", "op": "get", "count": 100, "ops_per_s": 500.0, "p50_us": 1900.0, "p99_us": 2500.0, "hits": 99}),
            json!({"side": "langgraph", "backend": "postgres", "op": "note", "text": "no pgvector"}),
        ];
        let text = report(&ours, &theirs);
        assert!(text.contains("100 items"), "{text}");
        assert!(
            text.contains("| memory (InMemoryStore) | put (no index) | 1000 (800 / 1500) | 20.0 (15.0 / 40.0) | 50.0x | ≥20x ✓ |"),
            "{text}"
        );
        // Lines without `mean_us` are read through their ops per second.
        assert!(
            text.contains("| get | 2000 (1900 / 2500) | 1000 (900 / 1200) | 2.0x | ≥20x ✗ |"),
            "{text}"
        );
        assert!(
            text.contains("| memory (InMemoryStore) | — | 2.0 |"),
            "{text}"
        );
        assert!(text.contains("- no pgvector"), "{text}");
        assert!(
            text.contains("memory get: agentgraph found 100 items, LangGraph 99"),
            "{text}"
        );
        assert!(!text.contains("postgres (PostgresStore) |"), "{text}");
    }
}
