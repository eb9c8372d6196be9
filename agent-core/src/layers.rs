//! Node wrappers for cross-cutting concerns: retry with backoff, per-attempt timeout.
//!
//! They are nodes around nodes (tower's `Layer` idea), so the executor knows nothing of them.

use std::sync::Arc;
use std::time::Duration;

use crate::context::NodeContext;
use crate::node::{BoxFuture, Node, NodeError, NodeOutput};
use crate::state::GraphState;

/// When and how often to retry a failed node (LangGraph's `RetryPolicy`, same defaults).
#[derive(Clone)]
pub struct RetryPolicy {
    /// Attempts in all, the first included.
    pub max_attempts: u32,
    /// Wait before the second attempt.
    pub initial_interval: Duration,
    /// Each wait is the previous one times this.
    pub backoff_factor: f64,
    /// No wait is longer than this.
    pub max_interval: Duration,
    /// Randomize each wait by up to +/-50% so retries of many runs spread out.
    pub jitter: bool,
    /// Which errors are worth retrying; all of them by default.
    pub retry_on: Arc<dyn Fn(&NodeError) -> bool + Send + Sync>,
}

impl std::fmt::Debug for RetryPolicy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RetryPolicy")
            .field("max_attempts", &self.max_attempts)
            .field("initial_interval", &self.initial_interval)
            .field("backoff_factor", &self.backoff_factor)
            .field("max_interval", &self.max_interval)
            .field("jitter", &self.jitter)
            .finish_non_exhaustive()
    }
}

impl Default for RetryPolicy {
    fn default() -> Self {
        RetryPolicy {
            max_attempts: 3,
            initial_interval: Duration::from_millis(500),
            backoff_factor: 2.0,
            max_interval: Duration::from_secs(128),
            jitter: true,
            retry_on: Arc::new(|_| true),
        }
    }
}

impl RetryPolicy {
    /// The default policy: 3 attempts, 0.5 s doubling up to 128 s, with jitter.
    pub fn new() -> Self {
        RetryPolicy::default()
    }

    /// Sets the number of attempts (at least 1).
    pub fn max_attempts(mut self, attempts: u32) -> Self {
        self.max_attempts = attempts.max(1);
        self
    }

    /// Sets the first wait.
    pub fn initial_interval(mut self, interval: Duration) -> Self {
        self.initial_interval = interval;
        self
    }

    /// Sets the growth factor of the waits.
    pub fn backoff_factor(mut self, factor: f64) -> Self {
        self.backoff_factor = factor;
        self
    }

    /// Sets the longest wait.
    pub fn max_interval(mut self, interval: Duration) -> Self {
        self.max_interval = interval;
        self
    }

    /// Turns jitter on or off.
    pub fn jitter(mut self, jitter: bool) -> Self {
        self.jitter = jitter;
        self
    }

    /// Retries only errors for which `predicate` is true.
    pub fn retry_on(
        mut self,
        predicate: impl Fn(&NodeError) -> bool + Send + Sync + 'static,
    ) -> Self {
        self.retry_on = Arc::new(predicate);
        self
    }

    /// The wait after failed attempt number `attempt` (1-based).
    pub fn interval(&self, attempt: u32) -> Duration {
        backoff_interval(
            attempt,
            self.initial_interval,
            self.backoff_factor,
            self.max_interval,
            self.jitter,
        )
    }
}

/// Exponential backoff: the wait after failed attempt number `attempt` (1-based), starting at
/// `initial`, times `factor` per attempt, capped at `max`, randomized by +/-50% with `jitter`.
/// Shared by every retry policy of the workspace (nodes here, tool calls in agent-tools).
pub fn backoff_interval(
    attempt: u32,
    initial: Duration,
    factor: f64,
    max: Duration,
    jitter: bool,
) -> Duration {
    let exp = factor.powi(attempt.saturating_sub(1).min(64) as i32);
    let base = initial.as_secs_f64() * exp;
    let capped = base.min(max.as_secs_f64()).max(0.0);
    let spread = if jitter { 0.5 + random_unit() } else { 1.0 };
    Duration::from_secs_f64(capped * spread)
}

/// A number in [0, 1) from std's randomly keyed hasher; good enough for jitter.
fn random_unit() -> f64 {
    use std::hash::{BuildHasher, Hasher};
    let mut hasher = std::collections::hash_map::RandomState::new().build_hasher();
    hasher.write_u8(0);
    (hasher.finish() >> 11) as f64 / (1u64 << 53) as f64
}

pub(crate) struct Retry<S: GraphState> {
    inner: Arc<dyn Node<S>>,
    policy: RetryPolicy,
}

impl<S: GraphState> Retry<S> {
    pub(crate) fn new(inner: Arc<dyn Node<S>>, policy: RetryPolicy) -> Self {
        Retry { inner, policy }
    }
}

impl<S: GraphState> Node<S> for Retry<S> {
    fn call(&self, state: Arc<S>, ctx: NodeContext) -> BoxFuture<Result<NodeOutput<S>, NodeError>> {
        let inner = self.inner.clone();
        let policy = self.policy.clone();
        Box::pin(async move {
            let mut attempt = 1;
            loop {
                ctx.restart_attempt();
                match inner.call(state.clone(), ctx.clone()).await {
                    Ok(output) => return Ok(output),
                    Err(error) => {
                        let paused = matches!(&error, NodeError::Failed(e) if e.is::<crate::interrupt::Interrupted>());
                        if paused || attempt >= policy.max_attempts || !(policy.retry_on)(&error) {
                            if attempt == 1 {
                                return Err(error);
                            }
                            return Err(NodeError::RetriesExhausted {
                                attempts: attempt,
                                last: Box::new(error),
                            });
                        }
                        let wait = policy.interval(attempt);
                        tracing::warn!(node = ctx.node(), attempt, ?wait, %error, "node failed; retrying");
                        tokio::time::sleep(wait).await;
                        attempt += 1;
                    }
                }
            }
        })
    }
}

pub(crate) struct Timeout<S: GraphState> {
    inner: Arc<dyn Node<S>>,
    after: Duration,
}

impl<S: GraphState> Timeout<S> {
    pub(crate) fn new(inner: Arc<dyn Node<S>>, after: Duration) -> Self {
        Timeout { inner, after }
    }
}

impl<S: GraphState> Node<S> for Timeout<S> {
    fn call(&self, state: Arc<S>, ctx: NodeContext) -> BoxFuture<Result<NodeOutput<S>, NodeError>> {
        let fut = self.inner.call(state, ctx);
        let after = self.after;
        Box::pin(async move {
            match tokio::time::timeout(after, fut).await {
                Ok(result) => result,
                Err(_) => Err(NodeError::TimedOut(after)),
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn intervals_grow_and_cap() {
        let p = RetryPolicy::new()
            .jitter(false)
            .initial_interval(Duration::from_millis(100))
            .max_interval(Duration::from_millis(350));
        assert_eq!(p.interval(1), Duration::from_millis(100));
        assert_eq!(p.interval(2), Duration::from_millis(200));
        assert_eq!(p.interval(3), Duration::from_millis(350));
    }

    #[test]
    fn jitter_stays_in_band() {
        let p = RetryPolicy::new().initial_interval(Duration::from_millis(100));
        for _ in 0..100 {
            let d = p.interval(1);
            assert!(d >= Duration::from_millis(50) && d < Duration::from_millis(150));
        }
    }
}
