//! The server bench's tables (Markdown) from its JSON (`<target dir>/bench/server.json`): one
//! table per scenario, a row per deployment (langgraph-api, ours on SQLite, on PostgreSQL with
//! one and two instances), each of ours divided by langgraph-api with the targets
//! marked: ≥20x requests per second, p99 latency ≤ 1/10.

use std::fmt::Write as _;

use serde_json::Value;

/// Ours ÷ langgraph-api, requests per second.
pub const TARGET_THROUGHPUT: f64 = 20.0;
/// Ours ÷ langgraph-api, p99 latency.
pub const TARGET_P99: f64 = 0.1;

fn f(value: &Value, path: &[&str]) -> Option<f64> {
    path.iter().try_fold(value, |v, k| v.get(k))?.as_f64()
}

fn num(x: Option<f64>) -> String {
    match x {
        None => "–".to_owned(),
        Some(x) if x >= 100.0 => format!("{x:.0}"),
        Some(x) if x >= 10.0 => format!("{x:.1}"),
        Some(x) => format!("{x:.2}"),
    }
}

/// `ours ÷ theirs`, marked against `target` (✓ met, ✗ missed).
fn versus(ours: Option<f64>, theirs: Option<f64>, target: Option<(f64, bool)>) -> String {
    let (Some(ours), Some(theirs)) = (ours, theirs) else {
        return "–".to_owned();
    };
    if theirs <= 0.0 {
        return "–".to_owned();
    }
    let x = ours / theirs;
    let text = if x >= 100.0 {
        format!("{x:.0}x")
    } else if x >= 10.0 {
        format!("{x:.1}x")
    } else if x >= 0.1 {
        format!("{x:.2}x")
    } else {
        format!("{x:.3}x")
    };
    match target {
        Some((target, higher)) if (higher && x >= target) || (!higher && x <= target) => {
            format!("{text} ✓")
        }
        Some(_) => format!("**{text}** ✗"),
        None => text,
    }
}

fn name(row: &Value) -> String {
    let server = row["server"].as_str().unwrap_or("?");
    let store = row["store"].as_str().unwrap_or("?");
    match row["instances"].as_u64() {
        Some(n) if n > 1 => format!("{server}, {store}, {n} instances"),
        _ => format!("{server}, {store}"),
    }
}

fn errors(row: &Value, scenario: &str) -> String {
    let n = row[scenario]["errors"].as_u64().unwrap_or(0);
    match row[scenario]["first_error"].as_str() {
        Some(e) if n > 0 => {
            let short: String = e.chars().take(80).collect();
            format!("{n} (`{}`)", short.replace('|', "/").replace('`', "'"))
        }
        _ => n.to_string(),
    }
}

/// The tables, as Markdown.
pub fn render(report: &Value) -> String {
    let mut out = String::new();
    let empty = Vec::new();
    let rows = report["rows"].as_array().unwrap_or(&empty);
    let peer = rows.iter().find(|r| r["server"] == "langgraph-api");
    let settings = &report["settings"];
    let measured: Vec<&Value> = rows.iter().filter(|r| r.get("error").is_none()).collect();

    let _ = writeln!(
        out,
        "Stateless `POST /runs/wait` of the `simple` graph, {} concurrent clients for {} s (after {} s of warm-up); latency in ms; ours ÷ langgraph-api (targets: ≥{TARGET_THROUGHPUT:.0}x requests/s, p99 ≤ {TARGET_P99}x; ✓ met, ✗ missed):\n",
        settings["concurrency"], settings["seconds"], settings["warmup_seconds"]
    );
    let _ = writeln!(
        out,
        "| server | requests/s | p50 | p99 | errors | requests/s ÷ langgraph-api | p99 ÷ langgraph-api |"
    );
    let _ = writeln!(out, "|---|---:|---:|---:|---:|---:|---:|");
    for row in &measured {
        let rps = f(row, &["runs_wait", "per_second"]);
        let p99 = f(row, &["runs_wait", "p99_ms"]);
        let (vs_rps, vs_p99) = match peer {
            Some(peer) if row["server"] != "langgraph-api" => (
                versus(
                    rps,
                    f(peer, &["runs_wait", "per_second"]),
                    Some((TARGET_THROUGHPUT, true)),
                ),
                versus(
                    p99,
                    f(peer, &["runs_wait", "p99_ms"]),
                    Some((TARGET_P99, false)),
                ),
            ),
            _ => ("–".to_owned(), "–".to_owned()),
        };
        let _ = writeln!(
            out,
            "| {} | {} | {} | {} | {} | {vs_rps} | {vs_p99} |",
            name(row),
            num(rps),
            num(f(row, &["runs_wait", "p50_ms"])),
            num(p99),
            errors(row, "runs_wait"),
        );
    }

    let _ = writeln!(
        out,
        "\nTime to the first SSE event of `POST /threads/{{id}}/runs/stream` (stream mode `values`), {} runs one after the other, each on a fresh thread; ms; ours ÷ langgraph-api (target: p99 ≤ {TARGET_P99}x):\n",
        settings["stream_runs"]
    );
    let _ = writeln!(
        out,
        "| server | p50 | p99 | errors | p50 ÷ langgraph-api | p99 ÷ langgraph-api |"
    );
    let _ = writeln!(out, "|---|---:|---:|---:|---:|---:|");
    for row in &measured {
        let p50 = f(row, &["first_event", "p50_ms"]);
        let p99 = f(row, &["first_event", "p99_ms"]);
        let (vs_p50, vs_p99) = match peer {
            Some(peer) if row["server"] != "langgraph-api" => (
                versus(p50, f(peer, &["first_event", "p50_ms"]), None),
                versus(
                    p99,
                    f(peer, &["first_event", "p99_ms"]),
                    Some((TARGET_P99, false)),
                ),
            ),
            _ => ("–".to_owned(), "–".to_owned()),
        };
        let _ = writeln!(
            out,
            "| {} | {} | {} | {} | {vs_p50} | {vs_p99} |",
            name(row),
            num(p50),
            num(p99),
            errors(row, "first_event"),
        );
    }

    let _ = writeln!(
        out,
        "\nMemory: RSS of the server's processes (all instances) when idle after start, then after the scenarios above, then after creating {} threads (`POST /threads`, {} at a time); MiB:\n",
        settings["threads"], settings["concurrency"]
    );
    let _ = writeln!(
        out,
        "| server | idle | before the threads | after the threads | KiB a thread | threads created/s | errors | after ÷ langgraph-api |"
    );
    let _ = writeln!(out, "|---|---:|---:|---:|---:|---:|---:|---:|");
    for row in &measured {
        let mib = |key: &str| f(row, &["threads", key]).map(|k| k / 1024.0);
        let per_thread = match (
            f(row, &["threads", "before_kib"]),
            f(row, &["threads", "after_kib"]),
            f(row, &["threads", "created", "ok"]),
        ) {
            (Some(before), Some(after), Some(n)) if n > 0.0 => Some((after - before) / n),
            _ => None,
        };
        let vs = match peer {
            Some(peer) if row["server"] != "langgraph-api" => versus(
                f(row, &["threads", "after_kib"]),
                f(peer, &["threads", "after_kib"]),
                None,
            ),
            _ => "–".to_owned(),
        };
        let _ = writeln!(
            out,
            "| {} | {} | {} | {} | {} | {} | {} | {vs} |",
            name(row),
            num(mib("idle_kib")),
            num(mib("before_kib")),
            num(mib("after_kib")),
            num(per_thread),
            num(f(row, &["threads", "created", "per_second"])),
            errors(&row["threads"], "created"),
        );
    }

    let failed: Vec<String> = rows
        .iter()
        .filter_map(|r| Some(format!("{}: {}", name(r), r.get("error")?.as_str()?)))
        .collect();
    let notes: Vec<&str> = report["notes"]
        .as_array()
        .unwrap_or(&empty)
        .iter()
        .filter_map(Value::as_str)
        .collect();
    if !failed.is_empty() || !notes.is_empty() {
        out.push('\n');
        for line in notes.iter().map(|n| n.to_string()).chain(failed) {
            let _ = writeln!(out, "- {line}");
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn ours_are_divided_by_the_peer_and_marked_against_the_targets() {
        let row = |server: &str, store: &str, rps: f64, p99: f64| {
            json!({"server": server, "store": store, "instances": 1,
                   "runs_wait": {"per_second": rps, "p50_ms": 1.0, "p99_ms": p99, "errors": 0},
                   "first_event": {"p50_ms": 1.0, "p99_ms": p99, "errors": 0},
                   "threads": {"idle_kib": 1024.0, "before_kib": 2048.0, "after_kib": 4096.0,
                               "created": {"ok": 1024.0, "per_second": 10.0, "errors": 0}}})
        };
        let report = json!({
            "settings": {"concurrency": 32, "seconds": 10, "warmup_seconds": 1,
                         "stream_runs": 100, "threads": 1024},
            "rows": [
                row("langgraph-api", "in-memory", 100.0, 50.0),
                row("agent-server", "sqlite", 3000.0, 2.0),
                row("agent-server", "postgres", 1000.0, 10.0),
                {"server": "agent-server", "store": "postgres", "instances": 2,
                 "error": "did not start"},
            ],
            "notes": ["a note"],
        });
        let text = render(&report);
        assert!(
            text.contains("| agent-server, sqlite | 3000 | 1.00 | 2.00 | 0 | 30.0x ✓ | 0.040x ✓ |"),
            "{text}"
        );
        assert!(
            text.contains(
                "| agent-server, postgres | 1000 | 1.00 | 10.0 | 0 | **10.0x** ✗ | **0.20x** ✗ |"
            ),
            "{text}"
        );
        // 2 MiB over 1,024 threads: 2 KiB a thread.
        assert!(
            text.contains(
                "| agent-server, sqlite | 1.00 | 2.00 | 4.00 | 2.00 | 10.0 | 0 | 1.00x |"
            ),
            "{text}"
        );
        assert!(
            text.contains("- agent-server, postgres, 2 instances: did not start"),
            "{text}"
        );
        assert!(text.contains("- a note"), "{text}");
    }
}
