//! The live side of one run: its events so far and how it ended, for every reader in this
//! process (`/stream`, `/wait`, `/join`, join-stream) to follow from where it asks.

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

#[derive(Default)]
struct Log {
    events: Vec<LiveEvent>,
    /// The `/wait` body, once the run ended.
    result: Option<Value>,
}

/// A run's events and result, as they arrive.
pub struct RunChannel {
    /// The run.
    pub run_id: String,
    log: Mutex<Log>,
    version: watch::Sender<usize>,
}

impl RunChannel {
    pub(crate) fn new(run_id: &str) -> Arc<Self> {
        Arc::new(RunChannel {
            run_id: run_id.to_owned(),
            log: Mutex::new(Log::default()),
            version: watch::channel(0).0,
        })
    }

    /// The number of events so far.
    pub fn len(&self) -> usize {
        self.log.lock().map(|l| l.events.len()).unwrap_or(0)
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
            log.events.push(event);
            let n = log.events.len();
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

    /// The position right after the event with `id` (`-1`: the start), or the end.
    pub fn position_after(&self, id: Option<&str>) -> usize {
        let Ok(log) = self.log.lock() else {
            return 0;
        };
        match id {
            Some("-1") => 0,
            Some(id) => log
                .events
                .iter()
                .position(|e| e.id == id)
                .map(|i| i + 1)
                .unwrap_or(0),
            None => log.events.len(),
        }
    }

    /// Whether the run ended.
    pub fn finished(&self) -> bool {
        self.log.lock().map(|l| l.result.is_some()).unwrap_or(true)
    }

    /// Events from `from` on, as they come; ends when the run ends.
    pub fn follow(self: &Arc<Self>, from: usize) -> futures::stream::BoxStream<'static, LiveEvent> {
        let rx = self.version.subscribe();
        let me = self.clone();
        futures::stream::unfold((me, rx, from), |(me, mut rx, pos)| async move {
            loop {
                let (next, done) = {
                    let log = me.log.lock().ok()?;
                    (log.events.get(pos).cloned(), log.result.is_some())
                };
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
