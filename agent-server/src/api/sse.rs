//! What long requests send: SSE as langgraph-api frames it (`\r\n` line ends, a
//! `: heartbeat` comment every 5 s, ids only on resumable runs, no `end` event), and the
//! `/wait` body (a newline every 5 s while the run goes on, then the result).

use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;

use axum::body::{Body, Bytes};
use axum::http::{HeaderMap, HeaderValue, header};
use axum::response::{IntoResponse, Response};
use futures::StreamExt;
use futures::stream::BoxStream;

use tokio::sync::watch;

use super::App;
use crate::runs::{CancelAction, LiveEvent, RunChannel, Runs};

/// How often an idle stream says it is alive.
pub(super) const HEARTBEAT: Duration = Duration::from_secs(5);

/// `events` driven on a task of its own, handed over a bounded channel. A stream whose
/// items come from the store must not be polled only by a response body: a client that
/// stops reading stops the body's polling, and a store lock granted meanwhile to the
/// stream's pending call would be held by a future nobody polls, stopping every request.
/// The task ends when the reader goes away (or the stream ends).
pub(super) fn detached<T: Send + 'static>(
    mut events: BoxStream<'static, T>,
    buffer: usize,
) -> BoxStream<'static, T> {
    let (tx, mut rx) = tokio::sync::mpsc::channel::<T>(buffer);
    tokio::spawn(async move {
        loop {
            let next = tokio::select! {
                e = events.next() => e,
                () = tx.closed() => return,
            };
            let Some(e) = next else { return };
            if tx.send(e).await.is_err() {
                return;
            }
        }
    });
    futures::stream::poll_fn(move |cx| rx.poll_recv(cx)).boxed()
}

/// Cancels the run when the client goes away before it ended (`on_disconnect: cancel`).
pub(super) struct CancelOnDrop {
    pub(super) runs: Arc<Runs>,
    pub(super) channel: Arc<RunChannel>,
}

impl Drop for CancelOnDrop {
    fn drop(&mut self) {
        if self.channel.finished() {
            return;
        }
        let runs = self.runs.clone();
        let run_id = self.channel.run_id.clone();
        if let Ok(handle) = tokio::runtime::Handle::try_current() {
            handle.spawn(async move {
                if let Ok(Some(run)) = runs.store.get(crate::store::Kind::Run, &run_id).await {
                    let _ = runs.cancel(&run, CancelAction::Interrupt).await;
                }
            });
        }
    }
}

fn frame(e: &LiveEvent, with_id: bool) -> Bytes {
    let mut s = String::with_capacity(e.name.len() + e.data.len() + 32);
    s.push_str("event: ");
    s.push_str(&e.name);
    s.push_str("\r\ndata: ");
    s.push_str(&e.data);
    s.push_str("\r\n");
    if with_id {
        s.push_str("id: ");
        s.push_str(&e.id);
        s.push_str("\r\n");
    }
    s.push_str("\r\n");
    Bytes::from(s)
}

/// An SSE response following `events`; `keep` filters by event name (its mode part).
/// `hold` lives as long as the response body (a cancel on disconnect, the stream's place
/// in its user's count).
/// The last event of a stream the server ends as it stops.
fn shutting_down() -> LiveEvent {
    LiveEvent {
        id: format!("{}-shutdown", crate::time::now_ms()),
        name: "error".to_owned(),
        data: serde_json::json!({
            "error": "ServerShutdown",
            "message": "the server is stopping; reconnect to follow the run (a resumable run's stream picks up at its Last-Event-ID)",
        })
        .to_string()
        .into(),
    }
}

/// A stream's state between frames.
struct Sse<H> {
    events: BoxStream<'static, LiveEvent>,
    ticker: tokio::time::Interval,
    keep: Option<Vec<String>>,
    stopping: watch::Receiver<bool>,
    ended: bool,
    _hold: H,
}

pub(super) fn sse<H: Send + Sync + 'static>(
    app: &App,
    events: BoxStream<'static, LiveEvent>,
    keep: Option<Vec<String>>,
    with_ids: bool,
    headers: HeaderMap,
    hold: H,
) -> Response {
    sse_every(app, events, keep, with_ids, headers, hold, HEARTBEAT)
}

/// [`sse`] with a heartbeat every `heartbeat` (A2A's: its official client gives up on a read
/// after 5 s by default).
pub(super) fn sse_every<H: Send + Sync + 'static>(
    app: &App,
    events: BoxStream<'static, LiveEvent>,
    keep: Option<Vec<String>>,
    with_ids: bool,
    headers: HeaderMap,
    hold: H,
    heartbeat: Duration,
) -> Response {
    let mut ticker = tokio::time::interval_at(tokio::time::Instant::now() + heartbeat, heartbeat);
    ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let state = Sse {
        events,
        ticker,
        keep,
        stopping: app.shutdown.subscribe(),
        ended: false,
        _hold: hold,
    };
    let body = futures::stream::unfold(state, move |mut s| async move {
        if s.ended {
            return None;
        }
        loop {
            let next = tokio::select! {
                e = s.events.next() => match e {
                    Some(e) => {
                        let base = e.name.split('|').next().unwrap_or_default();
                        let wanted = e.name == "metadata" || e.name == "error"
                            || s.keep.as_ref().is_none_or(|k| k.iter().any(|n| n == base));
                        if !wanted {
                            continue;
                        }
                        frame(&e, with_ids)
                    }
                    None => return None,
                },
                _ = s.ticker.tick() => Bytes::from_static(b": heartbeat\r\n\r\n"),
                _ = s.stopping.wait_for(|stop| *stop) => {
                    s.ended = true;
                    frame(&shutting_down(), with_ids)
                }
            };
            return Some((Ok::<_, Infallible>(next), s));
        }
    });
    let mut response = Body::from_stream(body).into_response();
    let h = response.headers_mut();
    h.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/event-stream; charset=utf-8"),
    );
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    h.insert("x-accel-buffering", HeaderValue::from_static("no"));
    h.extend(headers);
    response
}

/// The `/wait` and `/join` body: a newline every 5 s until the run ends, then its result.
pub(super) fn wait(
    app: &App,
    channel: Arc<RunChannel>,
    headers: HeaderMap,
    guard: Option<CancelOnDrop>,
) -> Response {
    let mut stopping = app.shutdown.subscribe();
    // The result, or (the server stopping first) an error body that says so.
    let result = Box::pin(async move {
        tokio::select! {
            r = channel.result() => r,
            _ = stopping.wait_for(|stop| *stop) => {
                serde_json::json!({"__error__": serde_json::from_str::<serde_json::Value>(&shutting_down().data).unwrap_or_default()})
            }
        }
    });
    let mut ticker = tokio::time::interval_at(tokio::time::Instant::now() + HEARTBEAT, HEARTBEAT);
    ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let body = futures::stream::unfold(
        (Some(result), ticker, guard),
        |(result, mut ticker, guard)| async move {
            let mut result = result?;
            tokio::select! {
                value = &mut result => {
                    drop(guard);
                    Some((Ok::<_, Infallible>(Bytes::from(value.to_string())), (None, ticker, None)))
                }
                _ = ticker.tick() => Some((Ok(Bytes::from_static(b"\n")), (Some(result), ticker, guard))),
            }
        },
    );
    let mut response = Body::from_stream(body).into_response();
    let h = response.headers_mut();
    h.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    h.extend(headers);
    response
}
