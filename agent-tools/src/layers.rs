//! Wrappers around tools for cross-cutting concerns (tower's layers): [`Timeout`] per call,
//! [`Retry`] with backoff, [`Redacted`] arguments in logs, and panic catching.
//!
//! Each wrapper is a [`DynTool`] around a `DynTool`, so they stack
//! (`tool.with_timeout(d).with_retry(p)` retries calls that each get `d`), and nothing that
//! runs tools needs a flag for any of them. [`ToolNode`](crate::ToolNode)'s per-call timeout
//! and retry settings apply these same wrappers.

use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use std::time::Duration;

use agent_core::RetryPolicy;
use futures::FutureExt;
use serde_json::Value;

use crate::error::ToolError;
use crate::tool::{BoxFuture, DynTool};

/// Adapters on every [`DynTool`] (and so on every [`Tool`](crate::Tool)).
pub trait ToolExt: DynTool + Sized {
    /// Fails a call that takes longer than `after` with [`ToolError::TimedOut`].
    fn with_timeout(self, after: Duration) -> Timeout<Self> {
        Timeout::new(self, after)
    }

    /// Retries failed calls with `policy`.
    fn with_retry(self, policy: ToolRetryPolicy) -> Retry<Self> {
        Retry::new(self, policy)
    }

    /// Masks secret-looking arguments (see [`Redacted`]) wherever arguments are logged.
    fn redacted(self) -> Redacted<Self> {
        Redacted::new(self)
    }

    /// Erases the type, for storage next to other tools.
    fn into_dyn(self) -> Arc<dyn DynTool> {
        Arc::new(self)
    }
}

impl<T: DynTool> ToolExt for T {}

/// Forwards the `DynTool` methods a wrapper does not change to `self.inner`.
macro_rules! forward_metadata {
    () => {
        fn name(&self) -> &str {
            self.inner.name()
        }

        fn description(&self) -> &str {
            self.inner.description()
        }

        fn parameters(&self) -> Value {
            self.inner.parameters()
        }
    };
}

/// A tool whose calls fail with [`ToolError::TimedOut`] after a while.
///
/// Needs a tokio runtime with the time driver (any runtime a graph runs on).
#[derive(Debug, Clone)]
pub struct Timeout<T> {
    inner: T,
    after: Duration,
}

impl<T> Timeout<T> {
    /// Wraps `inner`; each call may take at most `after`.
    pub fn new(inner: T, after: Duration) -> Self {
        Timeout { inner, after }
    }
}

impl<T: DynTool> DynTool for Timeout<T> {
    forward_metadata!();

    fn call(&self, args: Value) -> BoxFuture<'_, Result<Value, ToolError>> {
        Box::pin(async move {
            match tokio::time::timeout(self.after, self.inner.call(args)).await {
                Ok(result) => result,
                Err(_) => Err(ToolError::TimedOut {
                    tool: self.inner.name().to_owned(),
                    after: self.after,
                }),
            }
        })
    }

    fn redact_args(&self, args: &Value) -> Value {
        self.inner.redact_args(args)
    }
}

/// When and how often to retry a failed tool call: agent-core's [`RetryPolicy`] over
/// [`ToolError`], the same vocabulary as node retries (`max_attempts`, `initial_interval`,
/// `backoff_factor`, `max_interval`, `jitter`, `retry_on`).
///
/// By default: 3 attempts, waits of 0.5 s doubling with jitter, and only
/// [transient](ToolError::is_transient) errors (time-outs and the tool's own errors) are
/// retried; bad arguments and unknown tools fail the same way every time.
pub type ToolRetryPolicy = RetryPolicy<ToolError>;

/// A tool whose failed calls are tried again, per a [`ToolRetryPolicy`].
///
/// When every attempt fails the error is [`ToolError::RetriesExhausted`] holding the last one;
/// an error the policy does not retry is returned as it is.
#[derive(Debug, Clone)]
pub struct Retry<T> {
    inner: T,
    policy: ToolRetryPolicy,
}

impl<T> Retry<T> {
    /// Wraps `inner` with `policy`.
    pub fn new(inner: T, policy: ToolRetryPolicy) -> Self {
        Retry { inner, policy }
    }
}

impl<T: DynTool> DynTool for Retry<T> {
    forward_metadata!();

    fn call(&self, args: Value) -> BoxFuture<'_, Result<Value, ToolError>> {
        Box::pin(async move {
            let mut attempt = 1;
            loop {
                let error = match self.inner.call(args.clone()).await {
                    Ok(value) => return Ok(value),
                    Err(error) => error,
                };
                let Some(wait) = self.policy.next_wait(attempt, &error) else {
                    if attempt == 1 {
                        return Err(error);
                    }
                    return Err(ToolError::RetriesExhausted {
                        tool: self.inner.name().to_owned(),
                        attempts: attempt,
                        last: Box::new(error),
                    });
                };
                tracing::warn!(tool = self.inner.name(), attempt, ?wait, %error, "tool call failed; retrying");
                tokio::time::sleep(wait).await;
                attempt += 1;
            }
        })
    }

    fn redact_args(&self, args: &Value) -> Value {
        self.inner.redact_args(args)
    }
}

/// Argument names whose values [`Redacted`] masks by default.
///
/// A key matches when, lowercased with `_` and `-` removed, it ends with one of these
/// (`api_key`, `OpenAI-Api-Key`, `access_token`, `db_password` match; `max_tokens` does not).
pub const DEFAULT_SECRET_KEYS: &[&str] = &[
    "apikey",
    "token",
    "password",
    "passwd",
    "passphrase",
    "secret",
    "secretkey",
    "privatekey",
    "accesskey",
    "authorization",
    "credential",
    "credentials",
    "cookie",
];

/// What a masked value is replaced with.
pub const REDACTED: &str = "[REDACTED]";

/// Whether `key` names a secret per `secret_keys` (see [`DEFAULT_SECRET_KEYS`]).
pub fn is_secret_key(key: &str, secret_keys: &[impl AsRef<str>]) -> bool {
    let normalized: String = key
        .chars()
        .filter(|c| *c != '_' && *c != '-')
        .flat_map(char::to_lowercase)
        .collect();
    secret_keys.iter().any(|secret| {
        let secret: String = secret
            .as_ref()
            .chars()
            .filter(|c| *c != '_' && *c != '-')
            .flat_map(char::to_lowercase)
            .collect();
        !secret.is_empty() && normalized.ends_with(&secret)
    })
}

/// `value` with every object entry whose key is a secret (at any depth) replaced by
/// [`REDACTED`].
pub fn redact_secrets(value: &Value, secret_keys: &[impl AsRef<str>]) -> Value {
    match value {
        Value::Object(map) => Value::Object(
            map.iter()
                .map(|(key, value)| {
                    let value = if is_secret_key(key, secret_keys) {
                        Value::String(REDACTED.to_owned())
                    } else {
                        redact_secrets(value, secret_keys)
                    };
                    (key.clone(), value)
                })
                .collect(),
        ),
        Value::Array(items) => Value::Array(
            items
                .iter()
                .map(|item| redact_secrets(item, secret_keys))
                .collect(),
        ),
        other => other.clone(),
    }
}

/// A tool whose arguments show up masked wherever they are logged (the tool itself still gets
/// them in full).
///
/// ```
/// use agent_tools::{builtin::Echo, DynTool, ToolExt};
/// use serde_json::json;
///
/// let echo = Echo.redacted();
/// let shown = echo.redact_args(&json!({"text": "hi", "api_key": "sk-123"}));
/// assert_eq!(shown, json!({"text": "hi", "api_key": "[REDACTED]"}));
/// ```
#[derive(Debug, Clone)]
pub struct Redacted<T> {
    inner: T,
    keys: Arc<[String]>,
}

impl<T> Redacted<T> {
    /// Masks the [`DEFAULT_SECRET_KEYS`].
    pub fn new(inner: T) -> Self {
        Redacted::with_keys(inner, DEFAULT_SECRET_KEYS.iter().copied())
    }

    /// Masks exactly these keys (same matching rule as the defaults).
    pub fn with_keys<K: Into<String>>(inner: T, keys: impl IntoIterator<Item = K>) -> Self {
        Redacted {
            inner,
            keys: keys.into_iter().map(Into::into).collect(),
        }
    }

    /// Masks `key` too.
    pub fn also(mut self, key: impl Into<String>) -> Self {
        let mut keys = self.keys.to_vec();
        keys.push(key.into());
        self.keys = keys.into();
        self
    }
}

impl<T: DynTool> DynTool for Redacted<T> {
    forward_metadata!();

    fn call(&self, args: Value) -> BoxFuture<'_, Result<Value, ToolError>> {
        self.inner.call(args)
    }

    fn redact_args(&self, args: &Value) -> Value {
        redact_secrets(&self.inner.redact_args(args), &self.keys)
    }
}

/// A tool whose panics become [`ToolError::Panicked`] (used by `ToolNode` around every tool,
/// inside the timeout and retry wrappers).
pub(crate) struct CatchPanic<T> {
    pub(crate) inner: T,
}

impl<T: DynTool> DynTool for CatchPanic<T> {
    forward_metadata!();

    fn call(&self, args: Value) -> BoxFuture<'_, Result<Value, ToolError>> {
        let panicked = |payload: Box<dyn std::any::Any + Send>| ToolError::Panicked {
            tool: self.inner.name().to_owned(),
            message: agent_core::panic_message(payload.as_ref()),
        };
        match std::panic::catch_unwind(AssertUnwindSafe(|| self.inner.call(args))) {
            Ok(future) => Box::pin(async move {
                AssertUnwindSafe(future)
                    .catch_unwind()
                    .await
                    .unwrap_or_else(|payload| Err(panicked(payload)))
            }),
            Err(payload) => {
                let error = panicked(payload);
                Box::pin(async move { Err(error) })
            }
        }
    }

    fn redact_args(&self, args: &Value) -> Value {
        self.inner.redact_args(args)
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicU32, Ordering};

    use schemars::JsonSchema;
    use serde::Deserialize;
    use serde_json::json;

    use super::*;
    use crate::tool::tool_fn;

    #[derive(Deserialize, JsonSchema)]
    struct Wait {
        ms: u64,
    }

    fn sleeper() -> impl DynTool {
        tool_fn("sleep", "Sleeps.", |w: Wait| async move {
            tokio::time::sleep(Duration::from_millis(w.ms)).await;
            Ok::<_, String>(w.ms)
        })
    }

    #[tokio::test(start_paused = true)]
    async fn timeout_fails_slow_calls() {
        let tool = sleeper().with_timeout(Duration::from_millis(100));
        assert_eq!(tool.call(json!({"ms": 50})).await.unwrap(), json!(50));
        let error = tool.call(json!({"ms": 500})).await.unwrap_err();
        assert!(
            matches!(&error, ToolError::TimedOut { tool, after } if tool == "sleep" && *after == Duration::from_millis(100)),
            "{error}"
        );
        assert_eq!(tool.name(), "sleep");
    }

    #[tokio::test(start_paused = true)]
    async fn retry_retries_transient_errors_then_gives_up() {
        let calls = Arc::new(AtomicU32::new(0));
        let counter = calls.clone();
        let flaky = tool_fn("flaky", "Fails twice.", move |w: Wait| {
            let n = counter.fetch_add(1, Ordering::SeqCst);
            async move {
                if n < 2 {
                    Err(format!("attempt {n} failed"))
                } else {
                    Ok(w.ms)
                }
            }
        });
        let policy = ToolRetryPolicy::new().jitter(false);
        let tool = flaky.with_retry(policy.clone());
        assert_eq!(tool.call(json!({"ms": 7})).await.unwrap(), json!(7));
        assert_eq!(calls.load(Ordering::SeqCst), 3);

        calls.store(0, Ordering::SeqCst);
        let tool = Retry::new(tool.inner, policy.max_attempts(2));
        let error = tool.call(json!({"ms": 7})).await.unwrap_err();
        assert!(
            matches!(&error, ToolError::RetriesExhausted { attempts: 2, .. }),
            "{error}"
        );
        assert_eq!(
            error.to_string(),
            "tool `flaky` gave up after 2 attempts: tool `flaky` failed: attempt 1 failed"
        );
    }

    #[tokio::test(start_paused = true)]
    async fn retry_skips_bad_arguments_and_retries_timeouts() {
        let tool = sleeper()
            .with_timeout(Duration::from_millis(10))
            .with_retry(ToolRetryPolicy::new().jitter(false).max_attempts(3));
        let error = tool.call(json!({"ms": "soon"})).await.unwrap_err();
        assert!(
            matches!(error, ToolError::InvalidArguments { .. }),
            "{error}"
        );
        let error = tool.call(json!({"ms": 1000})).await.unwrap_err();
        assert!(
            matches!(&error, ToolError::RetriesExhausted { attempts: 3, last, .. } if matches!(**last, ToolError::TimedOut { .. })),
            "{error}"
        );
    }

    #[test]
    fn only_transient_errors_are_retried_by_default() {
        let policy = ToolRetryPolicy::new().jitter(false);
        let timed_out = ToolError::TimedOut {
            tool: "t".into(),
            after: Duration::from_secs(1),
        };
        assert_eq!(
            policy.next_wait(1, &timed_out),
            Some(Duration::from_millis(500))
        );
        assert_eq!(policy.next_wait(3, &timed_out), None);
        let unknown = ToolError::UnknownTool {
            name: "nope".into(),
            known: String::new(),
        };
        assert_eq!(policy.next_wait(1, &unknown), None);
    }

    #[test]
    fn secret_keys_match_by_suffix() {
        for key in [
            "api_key",
            "OpenAI-Api-Key",
            "apiKey",
            "access_token",
            "token",
            "db_password",
            "client_secret",
            "Authorization",
            "aws_secret_key",
        ] {
            assert!(is_secret_key(key, DEFAULT_SECRET_KEYS), "{key}");
        }
        for key in ["max_tokens", "text", "author", "keyword", "tokenizer"] {
            assert!(!is_secret_key(key, DEFAULT_SECRET_KEYS), "{key}");
        }
    }

    #[test]
    fn redaction_walks_nested_values() {
        let args = json!({
            "query": "weather",
            "auth": {"password": "hunter2", "user": "ada"},
            "headers": [{"authorization": "Bearer x"}, {"accept": "json"}],
            "token": {"nested": "whole value masked"},
        });
        let shown = redact_secrets(&args, DEFAULT_SECRET_KEYS);
        assert_eq!(
            shown,
            json!({
                "query": "weather",
                "auth": {"password": REDACTED, "user": "ada"},
                "headers": [{"authorization": REDACTED}, {"accept": "json"}],
                "token": REDACTED,
            })
        );
        let custom = Redacted::with_keys(sleeper(), ["ms"]).also("pin");
        assert_eq!(
            custom.redact_args(&json!({"ms": 3, "pin": 1234, "api_key": "k"})),
            json!({"ms": REDACTED, "pin": REDACTED, "api_key": "k"})
        );
    }

    #[tokio::test]
    async fn redacted_tools_still_get_the_real_arguments() {
        #[derive(Deserialize, JsonSchema)]
        struct Login {
            password: String,
        }
        let tool = tool_fn("login", "Logs in.", |l: Login| async move {
            Ok::<_, String>(l.password.len())
        })
        .redacted();
        assert_eq!(
            tool.call(json!({"password": "hunter2"})).await.unwrap(),
            json!(7)
        );
    }

    #[tokio::test]
    async fn panics_become_errors() {
        #[derive(Deserialize, JsonSchema)]
        struct Nothing {}
        let tool = CatchPanic {
            inner: tool_fn("boom", "Panics.", |_: Nothing| async {
                if true {
                    panic!("kaboom");
                }
                Ok::<u8, String>(0)
            }),
        };
        let error = tool.call(json!({})).await.unwrap_err();
        assert_eq!(
            error.to_string(),
            "tool `boom` panicked: kaboom; this is a bug in the tool"
        );
    }
}
