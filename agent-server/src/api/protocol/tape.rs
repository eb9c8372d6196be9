//! A thread's protocol events, as one connection sees them: every run of the thread the
//! server still keeps, oldest first, each from its first event, then the runs queued after,
//! live. Each event gets the connection's next `seq`; since every connection converts the
//! same runs' same events the same way, a `seq` names the same event on a reconnect.
//!
//! A run executing on another instance is read from the store (its mirror, woken by the
//! store's notices); a run queued anywhere wakes the tape. A thread that does not exist yet
//! is waited for (the SDKs open the stream before `run.start` creates it); one that turns
//! out to be someone else's ends the stream, as if it did not exist.

use std::collections::{HashSet, VecDeque};
use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use futures::stream::BoxStream;
use serde_json::Value;

use super::convert::{Converter, Ending, Raw};
use crate::api::{App, Grant};
use crate::runs::LiveEvent;
use crate::store::Kind;

/// How often the thread's runs are looked up when no notice came (one lost).
const POLL: Duration = Duration::from_secs(2);

/// An event with its place on the connection.
#[derive(Debug, Clone)]
pub(super) struct Placed {
    pub(super) seq: u64,
    pub(super) raw: Raw,
}

struct Current {
    run_id: String,
    converter: Converter,
    events: BoxStream<'static, LiveEvent>,
}

struct Tape {
    app: Arc<App>,
    thread_id: String,
    grant: Grant,
    seq: u64,
    seen: HashSet<String>,
    current: Option<Current>,
    pending: VecDeque<Raw>,
}

/// How many events wait for a slow reader before the tape waits for it.
const BUFFER: usize = 256;

/// The thread's events from its first kept run on, live; ends when the thread turns out to
/// be another user's, or is deleted after it existed.
///
/// The tape runs on a task of its own ([`detached`](crate::api::sse::detached)): a reader
/// that stops reading must not leave one of its store calls half done.
pub(super) fn follow(app: Arc<App>, thread_id: String, grant: Grant) -> BoxStream<'static, Placed> {
    let tape = Tape {
        app,
        thread_id,
        grant,
        seq: 0,
        seen: HashSet::new(),
        current: None,
        pending: VecDeque::new(),
    };
    let events =
        futures::stream::unfold(tape, |mut t| async move { t.next().await.map(|p| (p, t)) });
    crate::api::sse::detached(events.boxed(), BUFFER)
}

/// The millisecond time in a run event's id (`<ms>-<n>`), or now.
fn time_of(event: &LiveEvent) -> i64 {
    event
        .id
        .split('-')
        .next()
        .and_then(|ms| ms.parse().ok())
        .unwrap_or_else(crate::time::now_ms)
}

impl Tape {
    async fn next(&mut self) -> Option<Placed> {
        loop {
            if let Some(raw) = self.pending.pop_front() {
                self.seq += 1;
                return Some(Placed { seq: self.seq, raw });
            }
            if let Some(cur) = &mut self.current {
                match cur.events.next().await {
                    Some(e) => {
                        let ts = time_of(&e);
                        let raw = cur.converter.push(&e, ts);
                        self.pending.extend(raw);
                    }
                    None => {
                        let ending = ending(&self.app, &cur.run_id).await;
                        let raw = cur.converter.end(ending, crate::time::now_ms());
                        self.pending.extend(raw);
                        self.current = None;
                    }
                }
                continue;
            }
            // Registered before looking, so a run queued meanwhile is not missed.
            let queued = self.app.runs.queued.clone();
            let notified = queued.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            match self.next_run().await {
                Ok(true) => {}
                Ok(false) => {
                    let _ = tokio::time::timeout(POLL, notified).await;
                }
                Err(()) => return None,
            }
        }
    }

    /// Starts following the oldest run not followed yet; `Ok(false)` when there is none,
    /// `Err` when the stream must end (not the caller's thread).
    async fn next_run(&mut self) -> Result<bool, ()> {
        let thread = self.app.store.get(Kind::Thread, &self.thread_id).await;
        match &thread {
            Ok(Some(doc)) if !self.grant.admits(&doc["metadata"]) => return Err(()),
            Ok(None) if !self.seen.is_empty() => return Err(()),
            Ok(None) | Err(_) => return Ok(false),
            Ok(Some(_)) => {}
        }
        let Ok(runs) = self.app.store.runs_of(&self.thread_id).await else {
            return Ok(false);
        };
        for run in runs {
            let Some(run_id) = run["run_id"].as_str().map(str::to_owned) else {
                continue;
            };
            if !self.seen.insert(run_id.clone()) {
                continue;
            }
            // A run whose events the server no longer keeps shows nothing.
            let Some(channel) = self.app.runs.follow(&run_id).await else {
                continue;
            };
            let configurable = &run["kwargs"]["config"]["configurable"];
            let graph = configurable["graph_id"]
                .as_str()
                .or(run["assistant_id"].as_str())
                .unwrap_or_default();
            let from = channel.position_after(Some("-1"));
            self.current = Some(Current {
                converter: Converter::new(&run_id, graph),
                events: channel.follow(from),
                run_id,
            });
            return Ok(true);
        }
        Ok(false)
    }
}

/// How a run whose events ended ended, from its row.
async fn ending(app: &App, run_id: &str) -> Ending {
    let run: Option<Value> = app.store.get(Kind::Run, run_id).await.ok().flatten();
    match run.as_ref().and_then(|r| r["status"].as_str()) {
        Some("success") => Ending::Completed,
        Some("error") => Ending::Failed(None),
        Some("timeout") => Ending::Failed(Some("the run ran past its time limit".to_owned())),
        Some("interrupted") => Ending::Interrupted,
        _ => Ending::Unknown,
    }
}
