//! Helpers shared by the integration tests: fast retry policies, SSE / NDJSON bodies and a
//! tracing capture.
#![allow(dead_code)]

use std::io::Write;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use agent_llm::{RetryPolicy, Timeouts};
use serde_json::Value;

/// Up to `max_attempts` attempts with millisecond waits, so retry tests stay fast.
pub fn fast_retry(max_attempts: u32) -> RetryPolicy {
    RetryPolicy::new()
        .max_attempts(max_attempts)
        .initial_interval(Duration::from_millis(1))
        .max_interval(Duration::from_millis(5))
}

/// Short timeouts for tests.
pub fn test_timeouts() -> Timeouts {
    Timeouts {
        connect: Duration::from_secs(2),
        request: Duration::from_secs(5),
        stream_idle: Duration::from_secs(5),
    }
}

/// The JSON body of the `i`-th request `server` received.
pub async fn sent_body(server: &wiremock::MockServer, i: usize) -> Value {
    server.received_requests().await.unwrap()[i]
        .body_json()
        .unwrap()
}

/// An SSE body of `data:` events (no event names).
pub fn sse(events: &[Value]) -> String {
    events.iter().map(|e| format!("data: {e}\n\n")).collect()
}

/// An SSE body of named events (`event:` + `data:`), the Anthropic framing.
pub fn sse_named(events: &[Value]) -> String {
    events
        .iter()
        .map(|e| {
            format!(
                "event: {}\ndata: {e}\n\n",
                e["type"].as_str().unwrap_or("message")
            )
        })
        .collect()
}

/// An NDJSON body.
pub fn ndjson(lines: &[Value]) -> String {
    lines.iter().map(|l| format!("{l}\n")).collect()
}

/// Everything `tracing` writes while it lives (installed for the current thread).
#[derive(Clone, Default)]
pub struct Captured(Arc<Mutex<Vec<u8>>>);

impl Captured {
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.0.lock().unwrap()).into_owned()
    }
}

impl Write for Captured {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// Installs a TRACE-level global subscriber writing into the returned buffer. Global, because
/// `tracing` caches per-callsite interest across threads, which makes thread-local capture
/// flaky when other tests run in parallel; so call it once, from a test binary of its own.
pub fn capture_tracing() -> Captured {
    let captured = Captured::default();
    let writer = captured.clone();
    let subscriber = tracing_subscriber::fmt()
        .with_max_level(tracing::Level::TRACE)
        .with_ansi(false)
        .with_span_events(tracing_subscriber::fmt::format::FmtSpan::CLOSE)
        .with_writer(move || writer.clone())
        .finish();
    tracing::subscriber::set_global_default(subscriber).unwrap();
    captured
}

/// The URL of an external test server from `var`. Without it the test is skipped with a note,
/// except under CI (`CI` set), where a missing server is a failure: `.ci/services/llm.sh`
/// starts the servers and exports their URLs.
pub fn service_url(var: &str) -> Option<String> {
    match std::env::var(var) {
        Ok(url) if !url.trim().is_empty() => Some(url.trim().trim_end_matches('/').to_owned()),
        _ => {
            assert!(
                std::env::var_os("CI").is_none(),
                "{var} is not set but CI is: `.ci/services/llm.sh` should have started the server and exported {var}"
            );
            eprintln!(
                "note: {var} is not set, skipping; `source .ci/services/llm.sh` starts the server"
            );
            None
        }
    }
}
