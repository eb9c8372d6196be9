//! The server bench's load generator (`server_bench`): HTTP scenarios against LangGraph API
//! servers, ours or langgraph-api, given their base URLs. With several URLs (instances of one
//! deployment) the load is split between them: worker `i` or run `i` goes to URL `i mod n`.
//!
//! Every request's answer is checked (the `simple` graph upper-cases `value`): a wrong answer
//! counts as an error, never as a request served. Nothing here asserts on time.

use std::time::{Duration, Instant};

use serde::Serialize;
use serde_json::{Value, json};

/// The graph every scenario runs, and its input and expected output.
pub const GRAPH: &str = "simple";

fn input() -> Value {
    json!({"value": "abc"})
}

fn expected() -> Value {
    json!({"value": "ABC"})
}

/// An HTTP client for `concurrency` connections at once per server.
pub fn client(concurrency: usize) -> Result<reqwest::Client, reqwest::Error> {
    // reqwest is built with rustls and no crypto provider (agent-llm picks ring); plain HTTP
    // needs none, but the builder checks that one is installed.
    let _ = rustls::crypto::ring::default_provider().install_default();
    reqwest::Client::builder()
        .pool_max_idle_per_host(concurrency)
        .timeout(Duration::from_secs(120))
        .build()
}

/// Latency percentiles in milliseconds (nearest rank).
#[derive(Clone, Copy, Debug, Default, Serialize, PartialEq)]
pub struct Percentiles {
    /// Median.
    pub p50_ms: f64,
    /// 99th percentile.
    pub p99_ms: f64,
}

impl Percentiles {
    /// Of `samples` (sorted here); zeros when there are none.
    pub fn of(samples: &mut [Duration]) -> Self {
        samples.sort_unstable();
        let at = |p: f64| {
            if samples.is_empty() {
                return 0.0;
            }
            let rank = ((p * samples.len() as f64).ceil() as usize).clamp(1, samples.len());
            samples[rank - 1].as_secs_f64() * 1000.0
        };
        Self {
            p50_ms: at(0.50),
            p99_ms: at(0.99),
        }
    }
}

/// What a timed scenario measured.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Measured {
    /// Requests (or runs) answered correctly in the measured window.
    pub ok: u64,
    /// Requests that failed or answered wrongly.
    pub errors: u64,
    /// The first error, verbatim.
    pub first_error: Option<String>,
    /// Length of the measured window in seconds.
    pub seconds: f64,
    /// `ok / seconds`.
    pub per_second: f64,
    /// Latencies of the correct answers.
    #[serde(flatten)]
    pub latency: Percentiles,
}

#[derive(Default)]
struct Tally {
    latencies: Vec<Duration>,
    errors: u64,
    first_error: Option<String>,
}

impl Tally {
    fn error(&mut self, error: String) {
        self.errors += 1;
        self.first_error.get_or_insert(error);
    }

    fn merge(&mut self, other: Tally) {
        self.latencies.extend(other.latencies);
        self.errors += other.errors;
        if self.first_error.is_none() {
            self.first_error = other.first_error;
        }
    }

    fn measured(mut self, seconds: f64) -> Measured {
        let ok = self.latencies.len() as u64;
        Measured {
            ok,
            errors: self.errors,
            first_error: self.first_error,
            seconds,
            per_second: if seconds > 0.0 {
                ok as f64 / seconds
            } else {
                0.0
            },
            latency: Percentiles::of(&mut self.latencies),
        }
    }
}

/// One stateless `POST /runs/wait` of the `simple` graph, checked.
async fn run_wait(client: &reqwest::Client, url: &str) -> Result<(), String> {
    let response = client
        .post(format!("{url}/runs/wait"))
        .json(&json!({"assistant_id": GRAPH, "input": input()}))
        .send()
        .await
        .map_err(|e| format!("POST /runs/wait: {e}"))?;
    let status = response.status();
    let body = response
        .bytes()
        .await
        .map_err(|e| format!("POST /runs/wait: reading the body: {e}"))?;
    let value: Value = serde_json::from_slice(&body).map_err(|e| {
        format!(
            "POST /runs/wait: {status}, not JSON ({e}): {}",
            String::from_utf8_lossy(&body)
        )
    })?;
    if !status.is_success() || value != expected() {
        return Err(format!("POST /runs/wait: {status}: {value}"));
    }
    Ok(())
}

/// Stateless `POST /runs/wait` from `concurrency` workers, each sending its next request when
/// the last one is answered: `warmup` unmeasured, then `duration` measured (requests answered
/// within the window; those still in flight when it closes are not counted).
pub async fn runs_wait(
    client: &reqwest::Client,
    urls: &[String],
    concurrency: usize,
    warmup: Duration,
    duration: Duration,
) -> Measured {
    let start = Instant::now();
    let from = start + warmup;
    let until = from + duration;
    let mut workers = tokio::task::JoinSet::new();
    for i in 0..concurrency {
        let client = client.clone();
        let url = urls[i % urls.len()].clone();
        workers.spawn(async move {
            let mut tally = Tally::default();
            loop {
                let sent = Instant::now();
                if sent >= until {
                    break;
                }
                let result = run_wait(&client, &url).await;
                let done = Instant::now();
                if sent < from || done > until {
                    continue;
                }
                match result {
                    Ok(()) => tally.latencies.push(done - sent),
                    Err(e) => tally.error(e),
                }
            }
            tally
        });
    }
    let tally = gather(workers).await;
    tally.measured(duration.as_secs_f64())
}

/// `POST /threads` with an empty body; the new thread's id.
async fn create_thread(client: &reqwest::Client, url: &str) -> Result<String, String> {
    let response = client
        .post(format!("{url}/threads"))
        .json(&json!({}))
        .send()
        .await
        .map_err(|e| format!("POST /threads: {e}"))?;
    let status = response.status();
    let body = response
        .bytes()
        .await
        .map_err(|e| format!("POST /threads: reading the body: {e}"))?;
    let value: Value = serde_json::from_slice(&body)
        .map_err(|e| format!("POST /threads: {status}, not JSON ({e})"))?;
    match value["thread_id"].as_str() {
        Some(id) if status.is_success() => Ok(id.to_owned()),
        _ => Err(format!("POST /threads: {status}: {value}")),
    }
}

/// Whether `buffer` holds a complete SSE event (a block ending in a blank line with an
/// `event:` or `data:` field; `: heartbeat` comments do not count).
fn has_event(buffer: &[u8]) -> bool {
    let text = String::from_utf8_lossy(buffer).replace("\r\n", "\n");
    let Some(end) = text.rfind("\n\n") else {
        return false;
    };
    text[..end].split("\n\n").any(|block| {
        block
            .lines()
            .any(|l| l.starts_with("event:") || l.starts_with("data:"))
    })
}

/// One streamed run on a fresh thread: the time from sending `POST
/// /threads/{id}/runs/stream` to its first complete SSE event; the stream is then read to its
/// end and must carry the run's result.
async fn first_event(client: &reqwest::Client, url: &str) -> Result<Duration, String> {
    let thread = create_thread(client, url).await?;
    let sent = Instant::now();
    let mut response = client
        .post(format!("{url}/threads/{thread}/runs/stream"))
        .json(&json!({"assistant_id": GRAPH, "input": input(), "stream_mode": ["values"]}))
        .send()
        .await
        .map_err(|e| format!("POST /threads/{{id}}/runs/stream: {e}"))?;
    let status = response.status();
    let mut body = Vec::new();
    let mut first = None;
    loop {
        let chunk = response
            .chunk()
            .await
            .map_err(|e| format!("POST /threads/{{id}}/runs/stream: reading: {e}"))?;
        let Some(chunk) = chunk else { break };
        body.extend_from_slice(&chunk);
        if first.is_none() && has_event(&body) {
            first = Some(sent.elapsed());
        }
    }
    let text = String::from_utf8_lossy(&body);
    match first {
        Some(first) if status.is_success() && text.contains("\"ABC\"") => Ok(first),
        _ => Err(format!(
            "POST /threads/{{id}}/runs/stream: {status}: {text}"
        )),
    }
}

/// Time to the first SSE event over `runs` streamed runs one after the other, each on a
/// fresh thread (after `warmup` unmeasured ones). `per_second`: runs a second, thread creation
/// included.
pub async fn first_events(
    client: &reqwest::Client,
    urls: &[String],
    warmup: usize,
    runs: usize,
) -> Measured {
    let mut tally = Tally::default();
    for i in 0..warmup {
        let _ = first_event(client, &urls[i % urls.len()]).await;
    }
    let start = Instant::now();
    for i in 0..runs {
        match first_event(client, &urls[i % urls.len()]).await {
            Ok(latency) => tally.latencies.push(latency),
            Err(e) => tally.error(e),
        }
    }
    tally.measured(start.elapsed().as_secs_f64())
}

/// Creates `count` threads from `concurrency` workers; `latency` is per `POST /threads`.
pub async fn create_threads(
    client: &reqwest::Client,
    urls: &[String],
    count: usize,
    concurrency: usize,
) -> Measured {
    let start = Instant::now();
    let next = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let mut workers = tokio::task::JoinSet::new();
    for i in 0..concurrency.max(1) {
        let client = client.clone();
        let url = urls[i % urls.len()].clone();
        let next = next.clone();
        workers.spawn(async move {
            let mut tally = Tally::default();
            while next.fetch_add(1, std::sync::atomic::Ordering::Relaxed) < count {
                let sent = Instant::now();
                match create_thread(&client, &url).await {
                    Ok(_) => tally.latencies.push(sent.elapsed()),
                    Err(e) => tally.error(e),
                }
            }
            tally
        });
    }
    let tally = gather(workers).await;
    tally.measured(start.elapsed().as_secs_f64())
}

/// The workers' tallies merged into one (a worker that panicked counts as an error).
async fn gather(mut workers: tokio::task::JoinSet<Tally>) -> Tally {
    let mut tally = Tally::default();
    while let Some(worker) = workers.join_next().await {
        match worker {
            Ok(worker) => tally.merge(worker),
            Err(e) => tally.error(format!("a worker failed: {e}")),
        }
    }
    tally
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles_take_the_nearest_rank() {
        let mut samples: Vec<Duration> = (1..=100).rev().map(Duration::from_millis).collect();
        let p = Percentiles::of(&mut samples);
        assert_eq!(p.p50_ms, 50.0);
        assert_eq!(p.p99_ms, 99.0);
        let mut one = vec![Duration::from_millis(7)];
        assert_eq!(Percentiles::of(&mut one).p99_ms, 7.0);
        assert_eq!(Percentiles::of(&mut []), Percentiles::default());
    }

    #[test]
    fn an_event_is_a_block_with_a_field_and_heartbeats_are_not() {
        assert!(!has_event(b": heartbeat\n\n"));
        assert!(!has_event(b"event: metadata\ndata: {}"));
        assert!(has_event(b"event: metadata\ndata: {}\n\n"));
        assert!(has_event(
            b": heartbeat\r\n\r\nevent: values\r\ndata: {}\r\n\r\n"
        ));
    }
}
