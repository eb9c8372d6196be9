//! Following a run another instance executes: its events and result are read from the
//! shared store into a local [`RunChannel`], woken by the store's notices. Without one it
//! looks again after a while, in case a notice was lost — a second at first, then longer
//! while nothing happens (up to 30 s), so thousands of runs waiting in the queue cost next
//! to nothing; a lost listener wakes every mirror at once.

use std::sync::Arc;
use std::time::Duration;

use serde_json::json;
use tokio::sync::Notify;

use super::{LiveEvent, RunChannel, Runs};
use crate::store::Kind;

impl Runs {
    /// The local channel of `run_id`, fed from the store by a task of its own.
    pub(super) fn mirror(self: &Arc<Self>, run_id: &str) -> Arc<RunChannel> {
        if let Some(c) = self.live().get(run_id).cloned() {
            return c;
        }
        let channel = self.local_channel(run_id);
        let waker = Arc::new(Notify::new());
        if let Ok(mut m) = self.mirrors.lock() {
            m.insert(run_id.to_owned(), waker.clone());
        }
        let me = self.clone();
        let feed = channel.clone();
        let id = run_id.to_owned();
        tokio::spawn(async move {
            me.feed(&id, &feed, &waker).await;
            if let Ok(mut m) = me.mirrors.lock() {
                m.remove(&id);
            }
        });
        channel
    }

    async fn feed(&self, run_id: &str, channel: &RunChannel, waker: &Notify) {
        let mut last = -1i64;
        let mut idle_rounds = 0u32;
        loop {
            match self.store.events_after(run_id, last).await {
                Ok(events) => {
                    idle_rounds = if events.is_empty() {
                        idle_rounds + 1
                    } else {
                        0
                    };
                    push_all(channel, events, &mut last);
                }
                Err(e) => tracing::warn!(run_id, error = %e, "reading a run's events failed"),
            }
            if let Ok(Some(result)) = self.store.result(run_id).await {
                // The result is stored after the last event: read what came meanwhile.
                if let Ok(events) = self.store.events_after(run_id, last).await {
                    push_all(channel, events, &mut last);
                }
                channel.finish(result);
                return;
            }
            // A run deleted (rolled back) or gone ends its followers; so does one that ended
            // whose result was swept (its events and result are gone for good).
            if idle_rounds % 5 == 4 {
                match self.store.get(Kind::Run, run_id).await {
                    Ok(None) => {
                        channel.finish(json!({}));
                        return;
                    }
                    Ok(Some(run))
                        if !matches!(run["status"].as_str(), Some("pending" | "running")) =>
                    {
                        channel.finish(json!({}));
                        return;
                    }
                    _ => {}
                }
            }
            let wait = Duration::from_secs(1)
                .saturating_mul(1 << idle_rounds.min(5))
                .min(Duration::from_secs(30));
            let _ = tokio::time::timeout(wait, waker.notified()).await;
        }
    }
}

fn push_all(channel: &RunChannel, events: Vec<crate::store::StoredEvent>, last: &mut i64) {
    for e in events {
        *last = e.seq;
        channel.push_event(LiveEvent {
            id: e.id,
            name: e.name,
            data: e.data.into(),
        });
    }
}
