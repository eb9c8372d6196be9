//! Items that expire: [`TtlConfig`] (LangGraph's `TTLConfig`, with durations for minutes) and
//! the [`Sweeper`] that deletes expired items in the background. Expired items are hidden
//! from reads as soon as they expire; sweeping only frees their space.

use std::sync::{Arc, Weak};
use std::time::Duration;

use super::Store;

/// A store's TTL rules.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TtlConfig {
    /// The TTL of items put without one (`None`: they live until deleted).
    pub default_ttl: Option<Duration>,
    /// Whether `get` and `search` restart the TTL of what they read, unless they say.
    pub refresh_on_read: bool,
    /// How often [`Sweeper::spawn`] deletes expired items (`None`: never in the background).
    pub sweep_interval: Option<Duration>,
}

impl Default for TtlConfig {
    fn default() -> Self {
        TtlConfig {
            default_ttl: None,
            refresh_on_read: true,
            sweep_interval: None,
        }
    }
}

/// A task deleting a store's expired items every `sweep_interval`; stops when dropped or
/// when the store is dropped.
#[derive(Debug)]
pub struct Sweeper {
    task: tokio::task::JoinHandle<()>,
}

impl Sweeper {
    /// Starts sweeping `store` every `interval` (on the current tokio runtime). Failures are
    /// logged and the next tick tries again.
    pub fn spawn(store: &Arc<dyn Store>, interval: Duration) -> Self {
        let weak: Weak<dyn Store> = Arc::downgrade(store);
        let task = tokio::spawn(async move {
            let mut ticks = tokio::time::interval(interval.max(Duration::from_millis(1)));
            ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            ticks.tick().await;
            loop {
                ticks.tick().await;
                let Some(store) = weak.upgrade() else { return };
                match store.sweep_expired().await {
                    Ok(0) => {}
                    Ok(n) => tracing::debug!(
                        swept = n,
                        backend = store.backend(),
                        "expired store items deleted"
                    ),
                    Err(e) => tracing::warn!(error = %e, "sweeping expired store items failed"),
                }
            }
        });
        Sweeper { task }
    }

    /// Starts sweeping at the store's configured `sweep_interval`, if it has one.
    pub fn for_store(store: &Arc<dyn Store>) -> Option<Self> {
        let interval = store.ttl_config()?.sweep_interval?;
        Some(Self::spawn(store, interval))
    }
}

impl Drop for Sweeper {
    fn drop(&mut self) {
        self.task.abort();
    }
}
