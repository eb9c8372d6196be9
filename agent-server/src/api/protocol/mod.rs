//! LangGraph's thread-streaming protocol ("v2", langgraph-api 0.16.7; the SDKs'
//! `client.threads.stream(...)`): commands to `POST /threads/{id}/commands`, a thread's
//! events from `POST /threads/{id}/stream/events` (SSE), and both in-band on a WebSocket at
//! that path.
//!
//! Nothing new executes runs: a command queues a run on the one queue, and a stream reads
//! the thread's runs as every other reader does (their channels here, or their events in the
//! store when another instance runs them), converting them on the way out
//! ([`convert`], [`tape`]). The routes sit behind the API's auth, origin and host guard,
//! body limit and per-user stream count, and see only the caller's threads.

mod commands;
mod convert;
mod filter;
mod socket;
mod tape;

use std::sync::Arc;

use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use futures::StreamExt;
use serde_json::{Value, json};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::models::protocol::{
    EventType, ProtocolCommand, ProtocolError, ProtocolErrorCode, ProtocolEvent,
    ProtocolEventParams, ProtocolEventStreamRequest, ProtocolResponse,
};
use super::models::{ErrorResponse, RawBody};
use super::{App, Caller, Grant, Shared, sse, uuid_path};
use crate::auth::{Resource, Verb};
use crate::error::ApiError;
use crate::runs::LiveEvent;
use filter::{Filter, Refused};
use tape::Placed;

pub(super) fn routes() -> OpenApiRouter<Arc<App>> {
    OpenApiRouter::new()
        .routes(routes!(command))
        .routes(routes!(events))
        .route(
            "/threads/{thread_id}/stream/events",
            axum::routing::get(socket::upgrade),
        )
}

/// What the caller may see of a thread: refused at once when it exists and is not theirs.
async fn readable(app: &App, caller: &Caller, id: &str) -> Result<(String, Grant), ApiError> {
    let id = uuid_path("thread", id)?;
    let grant = app
        .grant(
            caller,
            Resource::Threads,
            Verb::Read,
            &json!({"thread_id": id}),
        )
        .await?;
    if let Some(doc) = app.store.get(crate::store::Kind::Thread, &id).await?
        && !grant.admits(&doc["metadata"])
    {
        return Err(ApiError::not_found(format!(
            "Thread with ID {id} not found"
        )));
    }
    Ok((id, grant))
}

/// An event as the protocol sends it.
fn envelope(p: &Placed) -> ProtocolEvent {
    ProtocolEvent {
        kind: EventType::Event,
        event_id: p.raw.event_id.clone(),
        seq: p.seq,
        method: p.raw.method.to_owned(),
        params: ProtocolEventParams {
            namespace: p.raw.namespace.clone(),
            timestamp: p.raw.timestamp,
            data: p.raw.data.clone(),
            node: p.raw.node.clone(),
        },
    }
}

fn refused(r: Refused) -> ApiError {
    match r {
        Refused::Empty => {
            ApiError::bad_request("channels is required and must be a non-empty array")
        }
        Refused::Unknown(list) => ApiError::bad_request(format!(
            "channels contains unsupported entries: {}. Allowed: values, updates, messages, tools, custom, lifecycle, input, tasks, or any `custom:<name>`.",
            list.join(", ")
        )),
    }
}

/// Send one protocol command.
///
/// `run.start` and `input.respond` queue a run (answered with `{"run_id"}` and `{}`); a
/// protocol error is an `error` answer with HTTP 200. The subscription commands and
/// `agent.getTree` belong to a WebSocket connection.
#[utoipa::path(post, path = "/threads/{thread_id}/commands", tag = "Streaming",
    operation_id = "protocol_thread_command_post",
    params(("thread_id" = String, Path, format = Uuid, description = "The thread the command applies to.")),
    request_body = ProtocolCommand,
    responses((status = 200, body = ProtocolResponse),
        (status = 400, body = ProtocolError), (status = 404, body = ErrorResponse),
        (status = 422, body = ErrorResponse)))]
async fn command(
    State(app): Shared,
    caller: Caller,
    Path(id): Path<String>,
    RawBody(body): RawBody,
) -> Result<Response, ApiError> {
    let thread_id = uuid_path("thread", &id)?;
    let Ok(value) = serde_json::from_slice::<Value>(&body) else {
        return Err(ApiError::bad_request("Invalid JSON body"));
    };
    let (id, method) = match envelope_of(&value) {
        Ok(c) => c,
        Err(e) => return Ok((StatusCode::BAD_REQUEST, axum::Json(e)).into_response()),
    };
    let params = value
        .get("params")
        .filter(|p| p.is_object())
        .cloned()
        .unwrap_or(json!({}));
    let answer =
        match commands::run_command(&app, &caller, &thread_id, id, &method, &params, 0).await {
            Some(a) => a,
            None => http_only(id, &method),
        };
    Ok(axum::Json(answer).into_response())
}

/// A command's id and method, or the error answer to an envelope that is not one.
fn envelope_of(value: &Value) -> Result<(i64, String), ProtocolResponse> {
    let id = value.get("id").and_then(Value::as_i64);
    match (
        value.is_object(),
        id,
        value.get("method").and_then(Value::as_str),
    ) {
        (true, Some(id), Some(m)) if value["id"].is_i64() || value["id"].is_u64() => {
            Ok((id, m.to_owned()))
        }
        _ => Err(commands::error(
            id,
            ProtocolErrorCode::InvalidArgument,
            "Protocol commands must include an integer id and string method.",
        )),
    }
}

/// The answer over HTTP (no connection) to a command that needs one.
fn http_only(id: i64, method: &str) -> ProtocolResponse {
    match method {
        // Accepted and forgotten: the connection it would filter is this request's.
        "subscription.subscribe" => commands::success(
            id,
            json!({"subscription_id": uuid::Uuid::new_v4().to_string(), "replayed_events": 0}),
            0,
        ),
        "subscription.unsubscribe" => commands::success(id, json!({}), 0),
        _ => commands::error(
            Some(id),
            ProtocolErrorCode::NoSuchRun,
            "No active run is bound to this thread.",
        ),
    }
}

/// Stream a thread's events (SSE).
///
/// Every run of the thread the server keeps, then the runs to come, as protocol events
/// filtered by channel and namespace; `id:` is the event's `seq`, and `since` skips what a
/// client already has. A thread that does not exist yet is waited for. The stream stays
/// open (a `: heartbeat` every 5 s) until the client leaves.
#[utoipa::path(post, path = "/threads/{thread_id}/stream/events", tag = "Streaming",
    operation_id = "protocol_thread_events_post",
    params(("thread_id" = String, Path, format = Uuid, description = "The thread to observe.")),
    request_body = ProtocolEventStreamRequest,
    responses((status = 200, content_type = "text/event-stream", body = ProtocolEvent),
        (status = 400, body = ErrorResponse), (status = 404, body = ErrorResponse),
        (status = 422, body = ErrorResponse)))]
async fn events(
    State(app): Shared,
    caller: Caller,
    Path(id): Path<String>,
    RawBody(body): RawBody,
) -> Result<Response, ApiError> {
    let Ok(body) = serde_json::from_slice::<Value>(&body) else {
        return Err(ApiError::bad_request("Invalid JSON body"));
    };
    let filter = Filter::read(&body).map_err(refused)?;
    let since = body.get("since").and_then(Value::as_u64).unwrap_or(0);
    let (thread_id, grant) = readable(&app, &caller, &id).await?;
    let permit = app.streams.open(&caller, app.limits.streams_per_user)?;
    let events = tape::follow(app.clone(), thread_id, grant)
        .filter(move |p| {
            let keep = p.seq > since && filter.wants(p.raw.method, &p.raw.namespace, &p.raw.data);
            std::future::ready(keep)
        })
        .map(|p| {
            let data = serde_json::to_string(&envelope(&p)).unwrap_or_default();
            LiveEvent {
                id: p.seq.to_string(),
                name: p.raw.method.to_owned(),
                data: data.into(),
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
