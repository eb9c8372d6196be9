//! The server bench's reads at scale (`server_bench --scale`, `cargo xtask bench server
//! --scale`): a server is filled with threads through its HTTP API (`POST /threads` with
//! metadata `{"user": "u<i % 100>"}`, many at once), then three reads are timed one request at
//! a time — a page of ten threads of one user, the count of one user's threads, a page of ten
//! of all threads — at each size; then more threads are made and the reads timed again. The
//! tables put each read's time at the largest size beside its time at the smallest (the goal:
//! within 1.5x) and ours beside langgraph-api's at the smallest.
//!
//! Every answer is checked (ten threads of the asked user; the count a user has at that
//! size): a wrong answer counts as an error, never as a read served. Nothing here asserts on
//! time.

use std::fmt::Write as _;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use serde::Serialize;
use serde_json::{Value, json};

use crate::load::Percentiles;

/// Users the threads are spread over.
pub const USERS: usize = 100;

/// Ours at the largest size ÷ ours at the smallest, at most.
pub const TARGET_GROWTH: f64 = 1.5;

/// The reads timed.
pub const READS: [Read; 3] = [Read::SearchUser, Read::CountUser, Read::SearchAll];

/// One of the reads timed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Read {
    /// `threads.search(metadata={"user": ..}, limit=10)`.
    SearchUser,
    /// `threads.count(metadata={"user": ..})`.
    CountUser,
    /// `threads.search(limit=10)`.
    SearchAll,
}

impl Read {
    /// Its name in the JSON.
    pub fn name(self) -> &'static str {
        match self {
            Read::SearchUser => "search_user",
            Read::CountUser => "count_user",
            Read::SearchAll => "search_all",
        }
    }

    /// As the SDK call reads.
    pub fn label(self) -> &'static str {
        match self {
            Read::SearchUser => "`threads.search(metadata={\"user\": ..}, limit=10)`",
            Read::CountUser => "`threads.count(metadata={\"user\": ..})`",
            Read::SearchAll => "`threads.search(limit=10)`",
        }
    }
}

/// One read timed at one size.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Timed {
    /// Reads answered correctly.
    pub ok: u64,
    /// Reads that failed or answered wrongly.
    pub errors: u64,
    /// The first error, verbatim.
    pub first_error: Option<String>,
    /// Mean latency in milliseconds.
    pub mean_ms: f64,
    /// Latency percentiles.
    #[serde(flatten)]
    pub latency: Percentiles,
}

/// Makes threads `from..to` on `url` (`concurrency` requests at once), each with metadata
/// `{"user": "u<i % USERS>"}`; the number made and the first error.
pub async fn fill(
    client: &reqwest::Client,
    url: &str,
    from: usize,
    to: usize,
    concurrency: usize,
) -> (usize, Option<String>) {
    let next = Arc::new(AtomicUsize::new(from));
    let mut workers = tokio::task::JoinSet::new();
    for _ in 0..concurrency.max(1) {
        let (client, url, next) = (client.clone(), url.to_owned(), next.clone());
        workers.spawn(async move {
            let (mut made, mut first_error) = (0, None);
            loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                if i >= to {
                    return (made, first_error);
                }
                let body = json!({"metadata": {"user": format!("u{}", i % USERS)}});
                match post(&client, &format!("{url}/threads"), &body).await {
                    Ok(v) if v["thread_id"].is_string() => made += 1,
                    Ok(v) => {
                        first_error.get_or_insert(format!("POST /threads: {v}"));
                    }
                    Err(e) => {
                        first_error.get_or_insert(e);
                    }
                }
            }
        });
    }
    let (mut made, mut first_error) = (0, None);
    while let Some(done) = workers.join_next().await {
        match done {
            Ok((n, e)) => {
                made += n;
                if first_error.is_none() {
                    first_error = e;
                }
            }
            Err(e) => {
                first_error.get_or_insert(format!("a worker failed: {e}"));
            }
        }
    }
    (made, first_error)
}

async fn post(client: &reqwest::Client, url: &str, body: &Value) -> Result<Value, String> {
    let response = client
        .post(url)
        .json(body)
        .send()
        .await
        .map_err(|e| format!("POST {url}: {e}"))?;
    let status = response.status();
    let text = response
        .text()
        .await
        .map_err(|e| format!("POST {url}: reading the body: {e}"))?;
    let value: Value = serde_json::from_str(text.trim())
        .map_err(|e| format!("POST {url}: {status}, not JSON ({e}): {text}"))?;
    if !status.is_success() {
        return Err(format!("POST {url}: {status}: {value}"));
    }
    Ok(value)
}

/// One read of user `user` on a server holding `size` threads, checked.
async fn read_once(
    client: &reqwest::Client,
    url: &str,
    read: Read,
    user: usize,
    size: usize,
) -> Result<(), String> {
    let who = format!("u{user}");
    match read {
        Read::SearchUser => {
            let body = json!({"metadata": {"user": who}, "limit": 10});
            let v = post(client, &format!("{url}/threads/search"), &body).await?;
            let page = v.as_array().ok_or("not a list")?;
            let theirs = page.iter().all(|t| t["metadata"]["user"] == who.as_str());
            if page.len() != 10.min(size / USERS) || !theirs {
                return Err(format!(
                    "threads of {who}: {} threads, or another's",
                    page.len()
                ));
            }
        }
        Read::CountUser => {
            let body = json!({"metadata": {"user": who}});
            let v = post(client, &format!("{url}/threads/count"), &body).await?;
            let expected = (size / USERS) as u64 + u64::from(user < size % USERS);
            if v.as_u64() != Some(expected) {
                return Err(format!("count of {who}: {v}, not {expected}"));
            }
        }
        Read::SearchAll => {
            let v = post(
                client,
                &format!("{url}/threads/search"),
                &json!({"limit": 10}),
            )
            .await?;
            if v.as_array().map(Vec::len) != Some(10.min(size)) {
                return Err(format!("a page of all threads: {v}"));
            }
        }
    }
    Ok(())
}

/// `read` timed: `warmup` reads unmeasured, then `reads` measured, one at a time, over the
/// users in turn.
pub async fn time(
    client: &reqwest::Client,
    url: &str,
    read: Read,
    size: usize,
    warmup: usize,
    reads: usize,
) -> Timed {
    let mut timed = Timed::default();
    let mut samples = Vec::with_capacity(reads);
    for i in 0..warmup + reads {
        let sent = Instant::now();
        let outcome = read_once(client, url, read, (i * 37) % USERS, size).await;
        let took = sent.elapsed();
        if i < warmup {
            continue;
        }
        match outcome {
            Ok(()) => samples.push(took),
            Err(e) => {
                timed.errors += 1;
                timed.first_error.get_or_insert(e);
            }
        }
    }
    timed.ok = samples.len() as u64;
    if !samples.is_empty() {
        let total: Duration = samples.iter().sum();
        timed.mean_ms = total.as_secs_f64() * 1000.0 / samples.len() as f64;
    }
    timed.latency = Percentiles::of(&mut samples);
    timed
}

fn median(row: &Value, read: Read, size: usize) -> Option<f64> {
    row["reads"][size.to_string()][read.name()]["p50_ms"].as_f64()
}

fn ms(x: Option<f64>) -> String {
    match x {
        None => "–".to_owned(),
        Some(x) if x >= 10.0 => format!("{x:.1}"),
        Some(x) => format!("{x:.2}"),
    }
}

fn ratio(x: Option<f64>, y: Option<f64>, target: Option<f64>) -> String {
    let (Some(x), Some(y)) = (x, y) else {
        return "–".to_owned();
    };
    if y <= 0.0 {
        return "–".to_owned();
    }
    let r = x / y;
    let text = if r >= 10.0 {
        format!("{r:.1}x")
    } else {
        format!("{r:.2}x")
    };
    match target {
        Some(t) if r <= t => format!("{text} ✓"),
        Some(_) => format!("**{text}** ✗"),
        None => text,
    }
}

fn thousands(n: usize) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// The tables, as Markdown: per read, each backend's median latency at every size with the
/// largest ÷ the smallest, then ours ÷ langgraph-api's at the smallest size.
pub fn render(report: &Value) -> String {
    let mut out = String::new();
    let empty = Vec::new();
    let rows = report["rows"].as_array().unwrap_or(&empty);
    let sizes: Vec<usize> = report["settings"]["sizes"]
        .as_array()
        .unwrap_or(&empty)
        .iter()
        .filter_map(|s| s.as_u64().map(|s| s as usize))
        .collect();
    let (Some(&small), Some(&large)) = (sizes.first(), sizes.last()) else {
        return "no sizes\n".to_owned();
    };
    let peer = rows.iter().find(|r| r["server"] == "langgraph-api");
    let ours: Vec<&Value> = rows
        .iter()
        .filter(|r| r["server"] != "langgraph-api")
        .collect();
    let _ = writeln!(
        out,
        "Median latency (ms) of one read at a time, over HTTP, with {} and then {} threads:\n",
        thousands(small),
        thousands(large)
    );
    let mut header = String::from("| read |");
    let mut rule = String::from("| --- |");
    for row in &ours {
        let store = store_name(row);
        for size in &sizes {
            let _ = write!(header, " {store}, {} |", thousands(*size));
            rule.push_str(" ---: |");
        }
        let _ = write!(
            header,
            " {store}: {} ÷ {} |",
            thousands(large),
            thousands(small)
        );
        rule.push_str(" ---: |");
    }
    if peer.is_some() {
        let _ = write!(header, " langgraph-api, {} |", thousands(small));
        rule.push_str(" ---: |");
    }
    let _ = writeln!(out, "{header}\n{rule}");
    for read in READS {
        let mut line = format!("| {} |", read.label());
        for row in &ours {
            for size in &sizes {
                let _ = write!(line, " {} |", ms(median(row, read, *size)));
            }
            let growth = ratio(
                median(row, read, large),
                median(row, read, small),
                Some(TARGET_GROWTH),
            );
            let _ = write!(line, " {growth} |");
        }
        if let Some(peer) = peer {
            let _ = write!(line, " {} |", ms(median(peer, read, small)));
        }
        let _ = writeln!(out, "{line}");
    }
    if let Some(peer) = peer {
        let _ = writeln!(
            out,
            "\nOurs ÷ langgraph-api at {} threads (median; below 1 is faster):\n",
            thousands(small)
        );
        let mut header = String::from("| read |");
        let mut rule = String::from("| --- |");
        for row in &ours {
            let _ = write!(header, " {} |", store_name(row));
            rule.push_str(" ---: |");
        }
        let _ = writeln!(out, "{header}\n{rule}");
        for read in READS {
            let mut line = format!("| {} |", read.label());
            for row in &ours {
                let r = ratio(
                    median(row, read, small),
                    median(peer, read, small),
                    Some(1.0),
                );
                let _ = write!(line, " {r} |");
            }
            let _ = writeln!(out, "{line}");
        }
    }
    let mut problems = Vec::new();
    for row in rows {
        if let Some(e) = row["error"].as_str() {
            problems.push(format!("{}: failed: {e}", row_name(row)));
        }
        for size in &sizes {
            for read in READS {
                let cell = &row["reads"][size.to_string()][read.name()];
                if let Some(n) = cell["errors"].as_u64().filter(|n| *n > 0) {
                    problems.push(format!(
                        "{} at {}: {} {n} wrong or failed reads (`{}`)",
                        row_name(row),
                        thousands(*size),
                        read.name(),
                        cell["first_error"].as_str().unwrap_or("?")
                    ));
                }
            }
        }
    }
    for note in report["notes"].as_array().unwrap_or(&empty) {
        if let Some(n) = note.as_str() {
            problems.push(n.to_owned());
        }
    }
    if !problems.is_empty() {
        out.push('\n');
        for p in problems {
            let _ = writeln!(out, "- {p}");
        }
    }
    out
}

fn store_name(row: &Value) -> &'static str {
    match row["store"].as_str() {
        Some("sqlite") => "SQLite",
        Some("postgres") => "PostgreSQL",
        _ => "?",
    }
}

fn row_name(row: &Value) -> String {
    format!(
        "{} ({})",
        row["server"].as_str().unwrap_or("?"),
        row["store"].as_str().unwrap_or("?")
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cell(p50: f64) -> Value {
        json!({"p50_ms": p50, "p99_ms": p50 * 2.0, "mean_ms": p50, "ok": 100, "errors": 0})
    }

    #[test]
    fn the_tables_mark_growth_and_the_peer() {
        let report = json!({
            "settings": {"sizes": [10000, 200000]},
            "rows": [
                {"server": "langgraph-api", "store": "in-memory", "reads": {"10000": {
                    "search_user": cell(4.0), "count_user": cell(4.0), "search_all": cell(2.0)}}},
                {"server": "agent-server", "store": "sqlite", "reads": {
                    "10000": {"search_user": cell(0.2), "count_user": cell(0.2), "search_all": cell(0.2)},
                    "200000": {"search_user": cell(0.25), "count_user": cell(0.4), "search_all": cell(0.2)}}},
            ],
            "notes": [],
        });
        let text = render(&report);
        assert!(text.contains("| SQLite, 10,000 |"), "{text}");
        assert!(text.contains("1.25x ✓"), "{text}");
        assert!(text.contains("**2.00x** ✗"), "{text}");
        assert!(text.contains("0.05x ✓"), "{text}");
        assert_eq!(thousands(200000), "200,000");
    }
}
