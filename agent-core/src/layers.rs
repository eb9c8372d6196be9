//! Node wrappers for cross-cutting concerns: retry with backoff, per-attempt timeout.
//!
//! They are nodes around nodes (tower's `Layer` idea), so the executor knows nothing of them.

use std::sync::Arc;
use std::time::Duration;

use crate::context::NodeContext;
use crate::node::{BoxFuture, Node, NodeError, NodeOutput};
use crate::state::GraphState;

/// When and how often to retry a failed operation that fails with `E`: a node (`E` =
/// [`NodeError`], the default), a tool call (`agent_tools::ToolError`) or an HTTP request to
/// a model (`agent_llm::LlmError`). LangGraph's `RetryPolicy`, with its defaults.
///
/// One vocabulary for every retry in the workspace: `max_attempts` counts the first attempt
/// too, waits grow from `initial_interval` by `backoff_factor` up to `max_interval` (see
/// [`backoff_interval`]), and `retry_on` picks the errors worth retrying; without one, an
/// error's own [`Retryable::retry_by_default`] decides.
///
/// ```
/// use std::time::Duration;
/// use agent_core::{NodeError, RetryPolicy};
///
/// let policy: RetryPolicy = RetryPolicy::new()
///     .max_attempts(5)
///     .initial_interval(Duration::from_millis(100))
///     .jitter(false);
/// assert_eq!(policy.interval(3), Duration::from_millis(400));
/// let error = NodeError::TimedOut(Duration::from_secs(1));
/// assert_eq!(policy.next_wait(1, &error), Some(Duration::from_millis(100)));
/// assert_eq!(policy.next_wait(5, &error), None, "the fifth attempt was the last");
/// ```
pub struct RetryPolicy<E = NodeError> {
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
    /// Which errors are worth retrying.
    pub retry_on: Arc<dyn Fn(&E) -> bool + Send + Sync>,
}

/// An error a [`RetryPolicy`] can retry, saying which of its values are worth retrying when
/// the policy has no `retry_on` of its own.
pub trait Retryable {
    /// Whether trying again may succeed.
    fn retry_by_default(&self) -> bool;
}

/// Every node error is retried by default (LangGraph retries what the node raises); an
/// interrupt is never retried, whatever the policy says.
impl Retryable for NodeError {
    fn retry_by_default(&self) -> bool {
        true
    }
}

impl<E> Clone for RetryPolicy<E> {
    fn clone(&self) -> Self {
        RetryPolicy {
            max_attempts: self.max_attempts,
            initial_interval: self.initial_interval,
            backoff_factor: self.backoff_factor,
            max_interval: self.max_interval,
            jitter: self.jitter,
            retry_on: self.retry_on.clone(),
        }
    }
}

impl<E> std::fmt::Debug for RetryPolicy<E> {
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

impl<E: Retryable + 'static> Default for RetryPolicy<E> {
    fn default() -> Self {
        RetryPolicy {
            max_attempts: 3,
            initial_interval: Duration::from_millis(500),
            backoff_factor: 2.0,
            max_interval: Duration::from_secs(128),
            jitter: true,
            retry_on: Arc::new(E::retry_by_default),
        }
    }
}

impl<E: Retryable + 'static> RetryPolicy<E> {
    /// The default policy: 3 attempts, 0.5 s doubling up to 128 s, with jitter, retrying the
    /// errors [`Retryable::retry_by_default`] picks.
    pub fn new() -> Self {
        RetryPolicy::default()
    }

    /// A single attempt: nothing is retried.
    pub fn none() -> Self {
        RetryPolicy::default().max_attempts(1)
    }
}

impl<E> RetryPolicy<E> {
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
    pub fn retry_on(mut self, predicate: impl Fn(&E) -> bool + Send + Sync + 'static) -> Self {
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

    /// What to do after attempt number `attempt` (1-based) failed with `error`: the wait
    /// before the next attempt, or `None` when the policy gives up (that was the last
    /// attempt, or `retry_on` rejects the error).
    pub fn next_wait(&self, attempt: u32, error: &E) -> Option<Duration> {
        if attempt >= self.max_attempts || !(self.retry_on)(error) {
            None
        } else {
            Some(self.interval(attempt))
        }
    }
}

/// Exponential backoff: the wait after failed attempt number `attempt` (1-based), starting at
/// `initial`, times `factor` per attempt, capped at `max`, randomized by +/-50% with `jitter`.
/// Shared by every retry policy of the workspace (nodes here, tool calls in agent-tools).
///
/// Any input gives a wait, never a panic: a wait too long for a [`Duration`] (a huge
/// `initial` or `max`, an infinite `factor`) saturates at [`Duration::MAX`], and a negative
/// or NaN product is no wait.
pub fn backoff_interval(
    attempt: u32,
    initial: Duration,
    factor: f64,
    max: Duration,
    jitter: bool,
) -> Duration {
    let exp = factor.powi(attempt.saturating_sub(1).min(64) as i32);
    let base = initial.as_secs_f64() * exp;
    let capped = if base.is_nan() {
        0.0
    } else {
        base.min(max.as_secs_f64()).max(0.0)
    };
    let spread = if jitter { 0.5 + random_unit() } else { 1.0 };
    // `u64::MAX` seconds round up to 2^64 as an f64, which `Duration` cannot hold: saturate.
    Duration::try_from_secs_f64(capped * spread).unwrap_or(Duration::MAX)
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
                    Ok(output) => {
                        record_attempts(attempt);
                        return Ok(output);
                    }
                    Err(error) => {
                        let paused = matches!(&error, NodeError::Failed(e) if e.is::<crate::interrupt::Interrupted>());
                        let next = if paused {
                            None
                        } else {
                            policy.next_wait(attempt, &error)
                        };
                        let Some(wait) = next else {
                            record_attempts(attempt);
                            if attempt == 1 {
                                return Err(error);
                            }
                            return Err(NodeError::RetriesExhausted {
                                attempts: attempt,
                                last: Box::new(error),
                            });
                        };
                        tracing::warn!(node = ctx.node(), attempt, ?wait, %error, "node failed; retrying");
                        tokio::time::sleep(wait).await;
                        attempt += 1;
                    }
                }
            }
        })
    }
}

/// Records on the node's span (the current one: the executor runs each task in its node's
/// span) how many attempts the call took.
fn record_attempts(attempts: u32) {
    tracing::Span::current().record("agentgraph.node.attempts", i64::from(attempts));
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
        let p: RetryPolicy = RetryPolicy::new()
            .jitter(false)
            .initial_interval(Duration::from_millis(100))
            .max_interval(Duration::from_millis(350));
        assert_eq!(p.interval(1), Duration::from_millis(100));
        assert_eq!(p.interval(2), Duration::from_millis(200));
        assert_eq!(p.interval(3), Duration::from_millis(350));
    }

    #[test]
    fn huge_intervals_saturate_instead_of_panicking() {
        let huge: RetryPolicy = RetryPolicy::new()
            .initial_interval(Duration::MAX)
            .max_interval(Duration::MAX);
        for attempt in [1, 2, 64, u32::MAX] {
            assert!(huge.interval(attempt) >= Duration::from_secs(u64::MAX / 2));
            assert_eq!(huge.clone().jitter(false).interval(attempt), Duration::MAX);
        }
        let wild = |factor: f64| {
            RetryPolicy::<NodeError>::new()
                .initial_interval(Duration::from_secs(1))
                .backoff_factor(factor)
                .max_interval(Duration::MAX)
                .jitter(false)
        };
        assert_eq!(wild(f64::INFINITY).interval(3), Duration::MAX);
        assert_eq!(wild(1e300).interval(3), Duration::MAX);
        assert_eq!(wild(f64::NAN).interval(3), Duration::ZERO);
        assert_eq!(wild(-2.0).interval(2), Duration::ZERO);
        assert_eq!(
            backoff_interval(1, Duration::MAX, 2.0, Duration::from_secs(5), false),
            Duration::from_secs(5),
            "the cap still holds"
        );
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig {
            cases: std::env::var("PROPTEST_CASES").ok().and_then(|v| v.parse().ok()).unwrap_or(256),
            ..proptest::prelude::ProptestConfig::default()
        })]

        /// Whatever a user puts in a policy, a wait comes out: no panic.
        #[test]
        fn any_policy_gives_a_wait(
            attempt in proptest::prelude::any::<u32>(),
            initial in proptest::prelude::any::<(u64, u32)>(),
            factor in proptest::prelude::any::<f64>(),
            max in proptest::prelude::any::<(u64, u32)>(),
            jitter in proptest::prelude::any::<bool>(),
        ) {
            let d = |(s, n): (u64, u32)| Duration::new(s, n % 1_000_000_000);
            let _ = backoff_interval(attempt, d(initial), factor, d(max), jitter);
        }
    }

    #[test]
    fn jitter_stays_in_band() {
        let p: RetryPolicy = RetryPolicy::new().initial_interval(Duration::from_millis(100));
        for _ in 0..100 {
            let d = p.interval(1);
            assert!(d >= Duration::from_millis(50) && d < Duration::from_millis(150));
        }
    }
}
