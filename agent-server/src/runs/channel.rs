//! The live side of one run: its events so far and how it ended, for every reader in this
//! process (`/stream`, `/wait`, `/join`, join-stream) to follow from where it asks.
//!
//! The log is bounded in bytes: a run's events are kept whole only up to its cap (large
//! for a `stream_resumable` run, whose clients may replay it, a short window otherwise);
//! past it the oldest go. A reader that falls behind what is kept gets an `error` event
//! saying so, and its stream ends, rather than a stream with a hole in it.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

use futures::StreamExt;
use serde_json::{Value, json};
use tokio::sync::watch;

use crate::time::now_ms;

/// One event of a run, as sent: its resumable id, name and JSON data.
#[derive(Debug, Clone)]
pub struct LiveEvent {
    /// `<ms>-<seq>`, LangGraph's resumable id.
    pub id: String,
    /// The event name.
    pub name: String,
    /// The data, serialized once.
    pub data: Arc<str>,
}

struct Log {
    events: VecDeque<LiveEvent>,
    /// The position (in the whole stream) of `events[0]`.
    base: usize,
    /// The bytes `events` hold.
    bytes: usize,
    /// The most bytes kept.
    cap: usize,
    /// The `/wait` body, once the run ended.
    result: Option<Value>,
}

impl Log {
    fn end(&self) -> usize {
        self.base + self.events.len()
    }

    fn trim(&mut self) {
        while self.bytes > self.cap && self.events.len() > 1 {
            if let Some(e) = self.events.pop_front() {
                self.bytes -= size(&e);
                self.base += 1;
            }
        }
    }
}

/// The `error` event of a reader `lost` events behind the log.
fn lagged(lost: usize) -> LiveEvent {
    let message = format!(
        "this reader fell {lost} events behind what the server keeps for the run; \
         rejoin the run, or stream it with stream_resumable"
    );
    LiveEvent {
        id: format!("{}-lagged", now_ms()),
        name: "error".to_owned(),
        data: json!({"error": "StreamLagged", "message": message})
            .to_string()
            .into(),
    }
}

fn size(e: &LiveEvent) -> usize {
    e.id.len() + e.name.len() + e.data.len()
}

/// A run's events and result, as they arrive.
pub struct RunChannel {
    /// The run.
    pub run_id: String,
    log: Mutex<Log>,
    version: watch::Sender<usize>,
}

impl RunChannel {
    /// A channel keeping at most `cap` bytes of events.
    pub(crate) fn new(run_id: &str, cap: usize) -> Arc<Self> {
        Arc::new(RunChannel {
            run_id: run_id.to_owned(),
            log: Mutex::new(Log {
                events: VecDeque::new(),
                base: 0,
                bytes: 0,
                cap,
                result: None,
            }),
            version: watch::channel(0).0,
        })
    }

    /// Keeps up to `cap` bytes of events from now on (a resumable run's replays).
    pub(crate) fn keep(&self, cap: usize) {
        if let Ok(mut log) = self.log.lock() {
            log.cap = log.cap.max(cap);
        }
    }

    /// The number of events so far.
    pub fn len(&self) -> usize {
        self.log.lock().map(|l| l.end()).unwrap_or(0)
    }

    /// Appends an event with a fresh id; returns it.
    pub(crate) fn push(&self, name: &str, data: &Value) -> LiveEvent {
        let n = self.len();
        let event = LiveEvent {
            id: format!("{}-{n}", now_ms()),
            name: name.to_owned(),
            data: data.to_string().into(),
        };
        self.push_event(event.clone());
        event
    }

    /// Appends an event as it was stored (a run executing elsewhere).
    pub(crate) fn push_event(&self, event: LiveEvent) {
        if let Ok(mut log) = self.log.lock() {
            log.bytes += size(&event);
            log.events.push_back(event);
            log.trim();
            let n = log.end();
            self.version.send_replace(n);
        }
    }

    pub(crate) fn finish(&self, result: Value) {
        if let Ok(mut log) = self.log.lock()
            && log.result.is_none()
        {
            log.result = Some(result);
        }
        self.version.send_modify(|_| {});
    }

    /// The position right after the event with `id` (`-1`: the start of what is kept, as
    /// for an id no longer kept), or the end.
    pub fn position_after(&self, id: Option<&str>) -> usize {
        let Ok(log) = self.log.lock() else {
            return 0;
        };
        match id {
            Some("-1") => log.base,
            Some(id) => log
                .events
                .iter()
                .position(|e| e.id == id)
                .map_or(log.base, |i| log.base + i + 1),
            None => log.end(),
        }
    }

    /// Whether the run ended.
    pub fn finished(&self) -> bool {
        self.log.lock().map(|l| l.result.is_some()).unwrap_or(true)
    }

    /// Events from `from` on, as they come; ends when the run ends, or after an `error`
    /// event when the reader fell behind what the log keeps.
    pub fn follow(self: &Arc<Self>, from: usize) -> futures::stream::BoxStream<'static, LiveEvent> {
        let rx = self.version.subscribe();
        let me = self.clone();
        futures::stream::unfold((me, rx, from), |(me, mut rx, pos)| async move {
            loop {
                let (next, done, lost) = {
                    let log = me.log.lock().ok()?;
                    let lost = log.base.saturating_sub(pos);
                    let next = log.events.get(pos.saturating_sub(log.base)).cloned();
                    (next, log.result.is_some(), lost)
                };
                if lost > 0 {
                    return Some((lagged(lost), (me, rx, usize::MAX)));
                }
                if pos == usize::MAX {
                    return None;
                }
                if let Some(e) = next {
                    return Some((e, (me, rx, pos + 1)));
                }
                if done {
                    return None;
                }
                rx.changed().await.ok()?;
            }
        })
        .boxed()
    }

    /// The `/wait` body once the run ends.
    pub async fn result(&self) -> Value {
        let mut rx = self.version.subscribe();
        loop {
            if let Ok(log) = self.log.lock()
                && let Some(r) = &log.result
            {
                return r.clone();
            }
            if rx.changed().await.is_err() {
                return json!({});
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn the_log_keeps_its_bytes_and_a_reader_behind_them_is_told() {
        let channel = RunChannel::new("r", 200);
        let data = json!("x".repeat(40));
        for _ in 0..10 {
            channel.push("values", &data);
        }
        assert_eq!(channel.len(), 10);
        // A reader from the start lost what was trimmed: one error event, then the end.
        let lost: Vec<LiveEvent> = channel.follow(0).collect().await;
        assert_eq!(lost.len(), 1);
        assert_eq!(lost[0].name, "error");
        assert!(lost[0].data.contains("StreamLagged"), "{}", lost[0].data);
        // A reader within the window reads on; a replay from an id no longer kept starts at
        // the oldest kept event.
        let from = channel.position_after(Some("-1"));
        assert!(from > 0 && from < 10, "{from}");
        channel.finish(json!({}));
        let kept: Vec<LiveEvent> = channel.follow(from).collect().await;
        assert_eq!(kept.len(), 10 - from);
        assert!(kept.iter().all(|e| e.name == "values"));
        // A resumable run keeps more from then on.
        let resumable = RunChannel::new("s", 100);
        resumable.keep(10_000);
        for _ in 0..10 {
            resumable.push("values", &data);
        }
        assert_eq!(resumable.position_after(Some("-1")), 0);
    }
}
