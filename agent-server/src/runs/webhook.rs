//! Webhooks: a run with a `webhook` URL has its final result POSTed there when it ends.
//!
//! The body is langgraph-api's: the run object with its final `status`, `run_started_at`,
//! `run_ended_at`, `webhook_sent_at`, the thread's final `values`, and `error` when it
//! failed. Delivery runs on a task of its own (never in the worker's way), retried with
//! backoff on connection errors, timeouts and 5xx/429 answers: best effort, at least once
//! while it lasts, with nothing kept across restarts.
//!
//! A webhook is a request the server makes for whoever created the run, so only http(s)
//! URLs go out, and — unless the server allows it — none to a loopback, private,
//! link-local or otherwise internal address: the host is resolved and every address
//! checked, when the run is created and again at each delivery (the connection goes to
//! the addresses checked, so a name that resolves elsewhere the second time gains
//! nothing).

use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use opentelemetry::trace::TraceContextExt as _;
use serde_json::Value;
use tracing::Instrument as _;
use tracing_opentelemetry::OpenTelemetrySpanExt as _;

use crate::graph::Failure;
use crate::time::{iso_ms, now_iso};
use crate::trace::Carrier;

/// How webhooks are sent.
#[derive(Debug, Clone)]
pub struct WebhookPolicy {
    /// Whether loopback, private and link-local targets are allowed (a receiver on the
    /// same machine or network).
    pub allow_private: bool,
    /// Tries in all (the first and the retries).
    pub attempts: u32,
    /// The wait before the first retry; doubled before each next one.
    pub backoff: Duration,
    /// How long one try may take.
    pub timeout: Duration,
    /// Deliveries under way (tries and waits between them).
    pub(crate) in_flight: Arc<AtomicUsize>,
}

impl Default for WebhookPolicy {
    fn default() -> Self {
        WebhookPolicy {
            allow_private: false,
            attempts: 5,
            backoff: Duration::from_millis(500),
            timeout: Duration::from_secs(10),
            in_flight: Arc::default(),
        }
    }
}

/// Why `ip` may not receive webhooks, if it may not.
fn internal(ip: IpAddr) -> Option<&'static str> {
    match ip {
        IpAddr::V4(v4) => internal_v4(v4),
        IpAddr::V6(v6) => {
            if let Some(v4) = v6.to_ipv4_mapped() {
                return internal_v4(v4);
            }
            let segments = v6.segments();
            let first = segments[0];
            // Forms that carry an IPv4 address a router may reach: judged by that address.
            // NAT64 (64:ff9b::/96) and IPv4-compatible (::a.b.c.d) hold it in the last 32
            // bits, 6to4 (2002::/16) in bits 16-48.
            let low = Ipv4Addr::new(
                (segments[6] >> 8) as u8,
                segments[6] as u8,
                (segments[7] >> 8) as u8,
                segments[7] as u8,
            );
            if (segments[..6] == [0x64, 0xff9b, 0, 0, 0, 0] || segments[..6] == [0; 6])
                && !v6.is_loopback()
                && !v6.is_unspecified()
            {
                return internal_v4(low);
            }
            if first == 0x2002 {
                let [a, b] = segments[1].to_be_bytes();
                let [c, d] = segments[2].to_be_bytes();
                return internal_v4(Ipv4Addr::new(a, b, c, d));
            }
            if v6.is_loopback() {
                Some("a loopback address")
            } else if v6.is_unspecified() {
                Some("the unspecified address")
            } else if first & 0xfe00 == 0xfc00 {
                Some("a private (unique local) address")
            } else if first & 0xffc0 == 0xfe80 {
                Some("a link-local address")
            } else if first & 0xffc0 == 0xfec0 {
                Some("a site-local address")
            } else if first == 0x64 && segments[1] == 0xff9b {
                Some("a local-use NAT64 address (64:ff9b:1::/48)")
            } else if first == 0x2001 && segments[1] == 0 {
                Some("a Teredo address (it tunnels to an IPv4 host)")
            } else if v6.is_multicast() {
                Some("a multicast address")
            } else {
                None
            }
        }
    }
}

fn internal_v4(ip: Ipv4Addr) -> Option<&'static str> {
    let [a, b, ..] = ip.octets();
    if ip.is_loopback() {
        Some("a loopback address")
    } else if ip.is_private() {
        Some("a private address")
    } else if ip.is_link_local() {
        Some("a link-local address (cloud metadata lives there)")
    } else if ip.is_unspecified() || a == 0 {
        Some("the unspecified address")
    } else if a == 100 && (64..128).contains(&b) {
        Some("a shared (carrier-grade NAT) address")
    } else if a == 192 && b == 0 && ip.octets()[2] == 0 {
        Some("an IETF protocol assignment (192.0.0.0/24)")
    } else if a == 198 && (b == 18 || b == 19) {
        Some("a benchmarking address (198.18.0.0/15)")
    } else if a >= 240 || ip.is_broadcast() || ip.is_multicast() {
        Some("a reserved, broadcast or multicast address")
    } else {
        None
    }
}

/// A webhook URL checked: where to send, and the addresses its host resolved to.
#[derive(Debug, Clone)]
pub struct Target {
    url: reqwest::Url,
    host: String,
    addrs: Vec<SocketAddr>,
}

/// Checks `url` for a webhook: http or https, a host, and unless `allow_private` no
/// address of it internal. The error says what is wrong (a 422 at run creation).
pub async fn check(url: &str, allow_private: bool) -> Result<Target, String> {
    let parsed =
        reqwest::Url::parse(url).map_err(|e| format!("Invalid webhook URL '{url}': {e}"))?;
    if !matches!(parsed.scheme(), "http" | "https") {
        return Err(format!(
            "Invalid webhook URL '{url}': only http and https webhooks are sent"
        ));
    }
    let host = match parsed.host_str() {
        Some(h) if !h.is_empty() => h.trim_start_matches('[').trim_end_matches(']').to_owned(),
        _ => return Err(format!("Invalid webhook hostname in '{url}'")),
    };
    let port = parsed.port_or_known_default().unwrap_or(80);
    let addrs: Vec<SocketAddr> = match host.parse::<IpAddr>() {
        Ok(ip) => vec![SocketAddr::new(ip, port)],
        Err(_) => tokio::net::lookup_host((host.as_str(), port))
            .await
            .map_err(|e| format!("Webhook host '{host}' does not resolve: {e}"))?
            .collect(),
    };
    if addrs.is_empty() {
        return Err(format!("Webhook host '{host}' resolves to no address"));
    }
    if !allow_private {
        for a in &addrs {
            if let Some(why) = internal(a.ip()) {
                return Err(format!(
                    "Webhook host blocked: '{host}' is {why} ({}); the server refuses internal targets unless started with --allow-private-webhooks",
                    a.ip()
                ));
            }
        }
    }
    Ok(Target {
        url: parsed,
        host,
        addrs,
    })
}

/// langgraph-api's webhook body for a run that ended.
pub fn payload(run: &Value, started_ms: i64, values: &Value, error: Option<&Failure>) -> Value {
    let mut body = run.clone();
    if let Some(o) = body.as_object_mut() {
        o.remove("attempt");
        o.remove(crate::trace::FIELD);
        o.insert("run_started_at".into(), iso_ms(started_ms).into());
        o.insert("run_ended_at".into(), now_iso().into());
        o.insert("webhook_sent_at".into(), now_iso().into());
        o.insert("values".into(), values.clone());
        if let Some(f) = error {
            o.insert("error".into(), f.to_json());
        }
    }
    body
}

impl WebhookPolicy {
    /// Deliveries under way now.
    pub fn in_flight(&self) -> usize {
        self.in_flight.load(Ordering::Relaxed)
    }
}

/// Sends `body` to `url` on a task of its own, retrying as `policy` says; failures are
/// logged. Each try is a client span under the span current here (the run's), and carries
/// its trace context in `traceparent` (see `crate::trace`).
pub fn deliver(policy: Arc<WebhookPolicy>, url: String, body: Value) {
    policy.in_flight.fetch_add(1, Ordering::Relaxed);
    let trace = Trace {
        parent: tracing::Span::current(),
        fallback: Carrier::current(),
    };
    tokio::spawn(async move {
        if let Err(e) = send(&policy, &url, &body, &trace).await {
            tracing::warn!(webhook = url, run_id = %body["run_id"], error = e, "webhook not delivered");
        }
        policy.in_flight.fetch_sub(1, Ordering::Relaxed);
    });
}

/// The trace a delivery belongs to: the run's span, and the context that goes out when no
/// span is exported (the run's own).
struct Trace {
    parent: tracing::Span,
    fallback: Carrier,
}

impl Trace {
    /// The client span of try `attempt` to `target`.
    fn span(&self, target: &Target, attempt: u32) -> tracing::Span {
        let span = tracing::info_span!(
            parent: &self.parent,
            "webhook",
            otel.name = "POST",
            otel.kind = "client",
            http.request.method = "POST",
            server.address = target.host.as_str(),
            server.port = i64::from(target.url.port_or_known_default().unwrap_or(80)),
            http.request.resend_count = tracing::field::Empty,
            http.response.status_code = tracing::field::Empty,
            "error.type" = tracing::field::Empty,
            otel.status_code = tracing::field::Empty,
        );
        if attempt > 1 {
            span.record("http.request.resend_count", i64::from(attempt - 1));
        }
        span
    }

    /// The headers that carry `span`'s context (or the run's, when it has none).
    fn carrier(&self, span: &tracing::Span) -> Carrier {
        let cx = span.context();
        if cx.span().span_context().is_valid() {
            Carrier::of(&cx)
        } else {
            self.fallback.clone()
        }
    }
}

async fn send(
    policy: &WebhookPolicy,
    url: &str,
    body: &Value,
    trace: &Trace,
) -> Result<(), String> {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let mut wait = policy.backoff;
    let mut last = String::new();
    for attempt in 1..=policy.attempts.max(1) {
        if attempt > 1 {
            tokio::time::sleep(wait).await;
            wait = wait.saturating_mul(2);
        }
        // Checked again: the name may resolve elsewhere now. A refusal is final.
        let target = check(url, policy.allow_private).await?;
        let client = reqwest::Client::builder()
            .timeout(policy.timeout)
            .redirect(reqwest::redirect::Policy::none())
            .no_proxy()
            .resolve_to_addrs(&target.host, &target.addrs)
            .build()
            .map_err(|e| format!("building the HTTP client: {e}"))?;
        let span = trace.span(&target, attempt);
        let mut request = client.post(target.url).json(body);
        for (name, value) in trace.carrier(&span).headers() {
            request = request.header(name, value);
        }
        let sent = request.send().instrument(span.clone()).await;
        match &sent {
            Ok(r) => {
                span.record("http.response.status_code", i64::from(r.status().as_u16()));
                if !r.status().is_success() {
                    span.record("error.type", r.status().as_str());
                    span.record("otel.status_code", "ERROR");
                }
            }
            Err(e) => {
                let kind = if e.is_timeout() {
                    "timeout"
                } else {
                    "connection"
                };
                span.record("error.type", kind);
                span.record("otel.status_code", "ERROR");
            }
        }
        drop(span);
        match sent {
            Ok(r) if r.status().is_success() => return Ok(()),
            Ok(r) if r.status().is_server_error() || r.status().as_u16() == 429 => {
                last = format!("answered {}", r.status());
            }
            Ok(r) => return Err(format!("answered {} (not retried)", r.status())),
            Err(e) => last = e.to_string(),
        }
        tracing::debug!(webhook = url, attempt, error = last, "webhook try failed");
    }
    Err(format!("gave up after {} tries: {last}", policy.attempts))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn only_public_http_targets_pass_unless_allowed() {
        for (url, says) in [
            ("ftp://example.com/hook", "only http and https"),
            ("not a url", "Invalid webhook URL"),
            ("/relative/hook", "Invalid webhook URL"),
            ("http://127.0.0.1:9/hook", "loopback"),
            ("http://localhost:9/hook", "loopback"),
            ("http://[::1]/hook", "loopback"),
            ("http://10.1.2.3/hook", "private"),
            ("http://192.168.0.10/hook", "private"),
            ("http://172.16.5.4/hook", "private"),
            ("http://169.254.169.254/latest/meta-data", "link-local"),
            ("http://[fe80::1]/hook", "link-local"),
            ("http://[fd00::1]/hook", "private"),
            ("http://[::ffff:127.0.0.1]/hook", "loopback"),
            ("http://0.0.0.0/hook", "unspecified"),
            ("http://100.64.0.1/hook", "carrier-grade"),
            // IPv6 forms that carry an internal IPv4 address, and other reserved ranges.
            ("http://[64:ff9b::a00:1]/hook", "private"),
            ("http://[64:ff9b::7f00:1]/hook", "loopback"),
            ("http://[64:ff9b:1::1]/hook", "NAT64"),
            ("http://[::10.0.0.1]/hook", "private"),
            ("http://[2002:a9fe:a9fe::1]/hook", "link-local"),
            ("http://[2001:0:4136:e378::1]/hook", "Teredo"),
            ("http://[fec0::1]/hook", "site-local"),
            ("http://192.0.0.8/hook", "IETF"),
            ("http://198.18.0.1/hook", "benchmarking"),
            ("http://240.0.0.1/hook", "reserved"),
        ] {
            let e = check(url, false).await.unwrap_err();
            assert!(e.contains(says), "{url}: {e}");
        }
        // Public addresses (literals: no DNS in tests) pass; internal ones when allowed.
        assert!(check("https://93.184.215.14/hook", false).await.is_ok());
        // A public IPv4 address through NAT64 or 6to4 is public.
        assert!(
            check("http://[64:ff9b::5db8:d70e]/hook", false)
                .await
                .is_ok()
        );
        assert!(
            check("http://[2002:5db8:d70e::1]/hook", false)
                .await
                .is_ok()
        );
        assert!(
            check("http://[2606:4700::1111]:8080/x", false)
                .await
                .is_ok()
        );
        assert!(check("http://127.0.0.1:9/hook", true).await.is_ok());
        assert!(check("http://localhost:9/hook", true).await.is_ok());
    }
}
