//! `GET /threads/{id}/stream`: every run of a thread, one after the other, on one open
//! stream (the python SDK's `threads.join_stream`). Each run's events come as its own
//! stream sends them (`metadata` first), then `metadata {"status": "run_done"}`; the stream
//! stays open, with heartbeats, until the client leaves (or the server stops). A run queued
//! here or on another instance (a notice) wakes the stream to look for it in the run store;
//! without one it looks every few seconds.

use std::collections::HashSet;
use std::sync::Arc;
use std::time::Duration;

use axum::extract::{Path, State};
use axum::http::HeaderMap;
use axum::response::Response;
use futures::StreamExt;
use futures::stream::BoxStream;
use serde_json::json;

use super::threads::found;
use super::{App, Caller, Shared, sse};
use crate::auth::Verb;
use crate::error::ApiError;
use crate::runs::{LiveEvent, RunChannel};

/// How often the thread's runs are looked up while none is being followed and no run was
/// queued (a notice lost).
const POLL: Duration = Duration::from_secs(5);

struct Follow {
    app: Arc<App>,
    thread_id: String,
    seen: HashSet<String>,
    current: Option<(String, BoxStream<'static, LiveEvent>)>,
}

pub(super) async fn stream(
    State(app): Shared,
    caller: Caller,
    Path(id): Path<String>,
) -> Result<Response, ApiError> {
    let doc = found(&app, &caller, &id, Verb::Read).await?;
    let permit = app.streams.open(&caller, app.limits.streams_per_user)?;
    let thread_id = doc["thread_id"].as_str().unwrap_or_default().to_owned();
    // Runs that ended before the client came are not replayed.
    let seen = app
        .store
        .runs_of(&thread_id)
        .await?
        .into_iter()
        .filter(|r| !matches!(r["status"].as_str(), Some("pending" | "running")))
        .filter_map(|r| r["run_id"].as_str().map(str::to_owned))
        .collect();
    let state = Follow {
        app: app.clone(),
        thread_id,
        seen,
        current: None,
    };
    let queued = app.runs.queued.clone();
    let events = futures::stream::unfold(state, move |mut s| {
        let queued = queued.clone();
        async move {
            loop {
                // Registered before looking, so a run queued meanwhile is not missed.
                let queued = queued.notified();
                tokio::pin!(queued);
                queued.as_mut().enable();
                if let Some((run_id, events)) = &mut s.current {
                    match events.next().await {
                        Some(e) => {
                            let event = LiveEvent {
                                id: format!("{run_id}/{}", e.id),
                                ..e
                            };
                            return Some((event, s));
                        }
                        None => {
                            let done = LiveEvent {
                                id: format!("{run_id}/done"),
                                name: "metadata".to_owned(),
                                data: json!({"status": "run_done", "run_id": run_id})
                                    .to_string()
                                    .into(),
                            };
                            s.current = None;
                            return Some((done, s));
                        }
                    }
                }
                let next = s
                    .app
                    .store
                    .runs_of(&s.thread_id)
                    .await
                    .ok()
                    .and_then(|runs| {
                        // The oldest run not followed yet, finished or not: a quick run may be
                        // done before the next look.
                        runs.into_iter()
                            .filter_map(|r| r["run_id"].as_str().map(str::to_owned))
                            .find(|id| !s.seen.contains(id))
                    });
                match next {
                    Some(run_id) => {
                        s.seen.insert(run_id.clone());
                        let channel: Option<Arc<RunChannel>> = s.app.runs.follow(&run_id).await;
                        if let Some(channel) = channel {
                            s.current = Some((run_id, channel.follow(0)));
                        }
                    }
                    None => {
                        let _ = tokio::time::timeout(POLL, queued).await;
                    }
                }
            }
        }
    });
    Ok(sse::sse(
        &app,
        events.boxed(),
        None,
        true,
        HeaderMap::new(),
        permit,
    ))
}
