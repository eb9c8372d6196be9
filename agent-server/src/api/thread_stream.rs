//! `GET /threads/{id}/stream`: every run of a thread, one after the other, on one open
//! stream (the python SDK's `threads.join_stream`). Each run's events come as its own
//! stream sends them (`metadata` first), then `metadata {"status": "run_done"}`; the stream
//! stays open, with heartbeats, until the client leaves (or the server stops). A run queued
//! here or on another instance (a notice) wakes the stream to look for it in the run store;
//! without one it looks every few seconds.
//!
//! `stream_modes` picks what is sent, as langgraph-api's: `run_modes` (the default) every
//! run's events, `lifecycle` only each run's start (`metadata`) and end, `state_update` a
//! `state_update` event (`{"state", "thread_id"}`) each time the thread's state is written
//! outside a run (`POST /threads/{id}/state`, a create with `supersteps`).
//!
//! Event ids are `<run_id>/<event id>` (`<run_id>/done` for a run's end), so a client that
//! comes back with `Last-Event-ID` picks up after that event: the rest of that run (what
//! its log still keeps), then every run after it. `Last-Event-ID: -` replays every run of
//! the thread the server still keeps; without one, only runs not yet ended are followed.

use std::collections::HashSet;
use std::sync::Arc;
use std::time::Duration;

use axum::extract::{Path, State};
use axum::http::HeaderMap;
use axum::response::Response;
use futures::StreamExt;
use futures::stream::BoxStream;
use serde::Deserialize;
use serde_json::{Value, json};

use super::models::{ErrorResponse, Params, StreamEvent};
use super::threads::{found, graph_of};
use super::{App, Caller, Shared, sse};
use crate::auth::Verb;
use crate::error::ApiError;
use crate::runs::{LiveEvent, RunChannel};

/// How often the thread's runs are looked up while none is being followed and no run was
/// queued (a notice lost).
const POLL: Duration = Duration::from_secs(5);

/// What a thread stream sends.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum ThreadStreamMode {
    /// Each run's start (`metadata`) and end only.
    Lifecycle,
    /// Every event of every run (the default).
    RunModes,
    /// The thread's state each time it is written outside a run.
    StateUpdate,
}

/// `GET /threads/{thread_id}/stream` query.
#[derive(Debug, Clone, Default, Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
pub struct ThreadStreamQuery {
    /// What is sent (repeat for several; default `run_modes`). The python SDK names it
    /// `stream_mode`.
    #[serde(default, alias = "stream_mode")]
    pub stream_modes: Vec<ThreadStreamMode>,
}

/// Which of a run's events a stream sends.
#[derive(Clone, Copy)]
struct Modes {
    runs: bool,
    lifecycle: bool,
    state: bool,
}

impl Modes {
    fn of(asked: &[ThreadStreamMode]) -> Modes {
        if asked.is_empty() {
            return Modes {
                runs: true,
                lifecycle: true,
                state: false,
            };
        }
        let has = |m| asked.contains(&m);
        Modes {
            runs: has(ThreadStreamMode::RunModes),
            lifecycle: has(ThreadStreamMode::Lifecycle) || has(ThreadStreamMode::RunModes),
            state: has(ThreadStreamMode::StateUpdate),
        }
    }

    /// Whether a run's event (`first`: its opening `metadata`) is sent.
    fn sends(&self, first: bool) -> bool {
        self.runs || (self.lifecycle && first)
    }
}

/// Where a stream resumes, from `Last-Event-ID`.
enum Resume {
    /// Only runs not yet ended.
    Live,
    /// Every run kept.
    All,
    /// After this event of this run (`None`: after its end).
    After(String, Option<String>),
}

impl Resume {
    fn parse(last: Option<&str>) -> Resume {
        match last.map(str::trim) {
            None | Some("") => Resume::Live,
            Some("-") => Resume::All,
            Some(id) => match id.split_once('/') {
                Some((run, "done")) => Resume::After(run.to_owned(), None),
                Some((run, event)) if run != "state" => {
                    Resume::After(run.to_owned(), Some(event.to_owned()))
                }
                _ => Resume::Live,
            },
        }
    }
}

struct Follow {
    app: Arc<App>,
    thread_id: String,
    modes: Modes,
    seen: HashSet<String>,
    current: Option<Current>,
    /// A run to resume after one of its events, before the others.
    resume: Option<(String, Option<String>)>,
    /// The thread's state writes, when `state_update` was asked for.
    states: Option<tokio::sync::broadcast::Receiver<String>>,
    /// A state write seen while waiting, not sent yet.
    pending_state: bool,
}

/// The run being followed.
struct Current {
    run_id: String,
    events: BoxStream<'static, LiveEvent>,
    /// Whether its opening event is still to come.
    first: bool,
}

/// Join a thread's stream: every run of the thread as it runs.
#[utoipa::path(get, path = "/threads/{thread_id}/stream", tag = "Threads",
    params(("thread_id" = String, Path, format = Uuid), ThreadStreamQuery,
        ("Last-Event-ID" = Option<String>, Header,
            description = "Resume after this event (`-`: from the first run kept)")),
    responses((status = 200, content_type = "text/event-stream", body = StreamEvent),
        (status = 404, body = ErrorResponse), (status = 422, body = ErrorResponse)))]
pub(super) async fn stream(
    State(app): Shared,
    caller: Caller,
    Path(id): Path<String>,
    Params(q): Params<ThreadStreamQuery>,
    headers: HeaderMap,
) -> Result<Response, ApiError> {
    let doc = found(&app, &caller, &id, Verb::Read).await?;
    let permit = app.streams.open(&caller, app.limits.streams_per_user)?;
    let thread_id = doc["thread_id"].as_str().unwrap_or_default().to_owned();
    let modes = Modes::of(&q.stream_modes);
    let last = headers.get("last-event-id").and_then(|v| v.to_str().ok());
    let runs = app.store.runs_of(&thread_id).await?;
    let ids = runs
        .iter()
        .filter_map(|r| r["run_id"].as_str().map(str::to_owned));
    let (seen, resume) = match Resume::parse(last) {
        // Runs that ended before the client came are not replayed.
        Resume::Live => (
            runs.iter()
                .filter(|r| !matches!(r["status"].as_str(), Some("pending" | "running")))
                .filter_map(|r| r["run_id"].as_str().map(str::to_owned))
                .collect(),
            None,
        ),
        Resume::All => (HashSet::new(), None),
        // The runs up to the one named are behind the client; that one goes on after its
        // event (unless it was its end).
        Resume::After(run, event) => {
            let all: Vec<String> = ids.collect();
            match all.iter().position(|r| *r == run) {
                Some(i) => (
                    all[..=i].iter().cloned().collect(),
                    event.map(|e| (run, Some(e))),
                ),
                None => (all.into_iter().collect(), None),
            }
        }
    };
    let state = Follow {
        app: app.clone(),
        thread_id,
        modes,
        seen,
        current: None,
        resume,
        states: modes.state.then(|| app.runs.state_updates.subscribe()),
        pending_state: false,
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
                if let Some(event) = s.state_event().await {
                    return Some((event, s));
                }
                if let Some(cur) = &mut s.current {
                    match cur.events.next().await {
                        Some(e) => {
                            let first = std::mem::take(&mut cur.first);
                            if !s.modes.sends(first) {
                                continue;
                            }
                            let event = LiveEvent {
                                id: format!("{}/{}", cur.run_id, e.id),
                                ..e
                            };
                            return Some((event, s));
                        }
                        None => {
                            let run_id = cur.run_id.clone();
                            s.current = None;
                            if !s.modes.lifecycle {
                                continue;
                            }
                            let done = LiveEvent {
                                id: format!("{run_id}/done"),
                                name: "metadata".to_owned(),
                                data: json!({"status": "run_done", "run_id": run_id})
                                    .to_string()
                                    .into(),
                            };
                            return Some((done, s));
                        }
                    }
                }
                if let Some((run_id, after)) = s.resume.take() {
                    if let Some(channel) = s.app.runs.follow(&run_id).await {
                        let from = channel.position_after(after.as_deref());
                        s.current = Some(Current {
                            run_id,
                            events: channel.follow(from),
                            first: false,
                        });
                    }
                    continue;
                }
                if !(s.modes.runs || s.modes.lifecycle) {
                    s.wait_state(queued).await;
                    continue;
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
                            // From the start of what is kept (a replayed run's log may have
                            // been cut).
                            let from = channel.position_after(Some("-1"));
                            s.current = Some(Current {
                                run_id,
                                events: channel.follow(from),
                                first: true,
                            });
                        }
                    }
                    None => s.wait_state(queued).await,
                }
            }
        }
    });
    Ok(sse::sse(
        &app,
        // It reads the store: on a task of its own, whether the client reads or not.
        sse::detached(events.boxed(), 64),
        None,
        true,
        HeaderMap::new(),
        permit,
    ))
}

impl Follow {
    /// A `state_update` event if the thread's state was written since the last look.
    async fn state_event(&mut self) -> Option<LiveEvent> {
        let mut changed = std::mem::take(&mut self.pending_state);
        let rx = self.states.as_mut()?;
        loop {
            match rx.try_recv() {
                Ok(thread) if thread == self.thread_id => changed = true,
                Ok(_) => {}
                Err(tokio::sync::broadcast::error::TryRecvError::Lagged(_)) => changed = true,
                Err(_) => break,
            }
        }
        if !changed {
            return None;
        }
        state_update(self.app.clone(), self.thread_id.clone()).await
    }

    /// Waits for a run to be queued, a state write (when asked for), or the next look.
    async fn wait_state(&mut self, queued: std::pin::Pin<&mut tokio::sync::futures::Notified<'_>>) {
        match self.states.as_mut() {
            Some(rx) => {
                let thread = self.thread_id.clone();
                let written = async {
                    loop {
                        match rx.recv().await {
                            Ok(t) if t == thread => return,
                            Ok(_) => {}
                            Err(tokio::sync::broadcast::error::RecvError::Lagged(_)) => return,
                            Err(tokio::sync::broadcast::error::RecvError::Closed) => {
                                std::future::pending::<()>().await
                            }
                        }
                    }
                };
                tokio::select! {
                    _ = queued => {}
                    () = written => {
                        // Seen again by `state_event` on the next turn.
                        self.pending_state = true;
                    }
                    _ = tokio::time::sleep(POLL) => {}
                }
            }
            None => {
                let _ = tokio::time::timeout(POLL, queued).await;
            }
        }
    }
}

/// The thread's state now, as a `state_update` event.
async fn state_update(app: Arc<App>, thread_id: String) -> Option<LiveEvent> {
    let doc = app
        .store
        .get(crate::store::Kind::Thread, &thread_id)
        .await
        .ok()??;
    let graph = graph_of(&app, &doc)?;
    let state = graph.state(&thread_id, None, false).await.ok()??;
    let checkpoint = state["checkpoint"]["checkpoint_id"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    let data: Value = json!({"state": state, "thread_id": thread_id});
    Some(LiveEvent {
        id: format!("state/{checkpoint}"),
        name: "state_update".to_owned(),
        data: data.to_string().into(),
    })
}
