//! Runs on a thread (`/threads/{id}/runs/...`) and stateless runs (`/runs/...`): create
//! (queued), stream, wait, join, cancel. A stateless run gets a temporary thread that is
//! deleted when it ends (unless `on_completion: "keep"`).

use std::sync::Arc;

use axum::Json;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use serde_json::{Map, Value, json};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::assistants::resolve;
use super::models::runs::{
    CancelActionName, CancelManyQuery, CancelQuery, CancelStatus, IfNotExists, JoinQuery,
    JoinStreamQuery, MultitaskStrategy, Nodes, OnCompletion, OnDisconnect, Run, RunCreate,
    RunListQuery, RunTrace, RunsCancel,
};
use super::models::{
    Body, ErrorResponse, ListBody, Params, StreamEvent, as_value, from_value, typed,
};
use super::paging::select;
use super::sse::{self, CancelOnDrop};
use super::threads::{found as thread_found, new_thread};
use super::{AUTH_USER, App, Caller, Shared, StreamPermit, refuse_auth_user, uuid_path};
use crate::auth::{Resource, Verb};
use crate::error::ApiError;
use crate::graph::{ApiMode, ServedGraph};
use crate::limits::too_many;
use crate::runs::{CancelAction, RunChannel};
use crate::store::{self, Kind};
use crate::time::now_iso;

pub(super) fn routes() -> OpenApiRouter<Arc<App>> {
    OpenApiRouter::new()
        .routes(routes!(create, list))
        .routes(routes!(stream))
        .routes(routes!(wait))
        .routes(routes!(read, remove))
        .routes(routes!(trace))
        .routes(routes!(join))
        .routes(routes!(join_stream))
        .routes(routes!(cancel))
        .routes(routes!(create_stateless))
        .routes(routes!(stream_stateless))
        .routes(routes!(wait_stateless))
        .routes(routes!(batch))
        .routes(routes!(cancel_many))
}

/// A queued run and what its response needs.
struct Started {
    run: Value,
    channel: Arc<RunChannel>,
    thread_id: String,
    resumable: bool,
    cancel_on_disconnect: bool,
}

/// `interrupt_before` / `interrupt_after` as kept: `"*"`, a list of names, or null.
fn node_list(nodes: Option<&Nodes>, key: &str) -> Result<Value, ApiError> {
    match nodes {
        None => Ok(Value::Null),
        Some(Nodes::All(s)) if s == "*" => Ok(json!("*")),
        Some(Nodes::All(_)) => Err(ApiError::invalid(format!(
            "{key}: must be \"*\" or a list of node names"
        ))),
        Some(Nodes::Some(names)) => Ok(json!(names)),
    }
}

/// A run body's own fields, checked: what a run's creation and a cron's both accept.
struct RunFields {
    stream_mode: Vec<String>,
    strategy: MultitaskStrategy,
    if_not_exists: IfNotExists,
    on_disconnect: OnDisconnect,
    on_completion: OnCompletion,
    durability: &'static str,
    not_before_ms: Option<i64>,
    interrupt_before: Value,
    interrupt_after: Value,
    resumable: bool,
    subgraphs: bool,
    command: Option<Value>,
    run_metadata: Map<String, Value>,
    config: Map<String, Value>,
    run_context: Option<Map<String, Value>>,
    checkpoint_id: Option<String>,
}

fn run_fields(app: &App, body: &RunCreate) -> Result<RunFields, ApiError> {
    let stream_mode = match &body.stream_mode {
        None => vec!["values".to_owned()],
        Some(modes) => modes.names(),
    };
    for n in &stream_mode {
        ApiMode::parse(n)?;
    }
    // `checkpoint_during` is what older clients send: `false` checkpoints only at the end.
    let durability = match (body.durability, body.checkpoint_during) {
        (Some(d), _) => d.as_str(),
        (None, Some(false)) => "exit",
        (None, _) => "async",
    };
    // `after_seconds`: the run waits in the queue until then.
    let not_before_ms = match body.after_seconds {
        None => None,
        Some(secs) if (0.0..=31_536_000.0).contains(&secs) => {
            Some(crate::time::now_ms() + (secs * 1000.0) as i64)
        }
        Some(_) => {
            return Err(ApiError::invalid(
                "after_seconds: must be a number of seconds from 0 to a year",
            ));
        }
    };
    let interrupt_before = node_list(body.interrupt_before.as_ref(), "interrupt_before")?;
    let interrupt_after = node_list(body.interrupt_after.as_ref(), "interrupt_after")?;
    let run_metadata = body.metadata.clone().unwrap_or_default();
    app.limits.metadata("run", &run_metadata)?;
    let config = match as_value(&body.config) {
        Value::Object(m) => m,
        _ => Map::new(),
    };
    if let Some(limit) = body.config.as_ref().and_then(|c| c.recursion_limit) {
        app.limits.recursion(limit)?;
    }
    if let Some(c) = body.config.as_ref().and_then(|c| c.configurable.as_ref()) {
        refuse_auth_user(c, "config.configurable")?;
    }
    if let Some(m) = body.config.as_ref().and_then(|c| c.metadata.as_ref()) {
        app.limits.metadata("run config", m)?;
    }
    if let Some(c) = &body.context {
        refuse_auth_user(c, "context")?;
    }
    let checkpoint_id = body
        .checkpoint_id
        .clone()
        .or_else(|| {
            body.checkpoint
                .as_ref()
                .and_then(|c| c.checkpoint_id.clone())
        })
        .map(|c| uuid_path("checkpoint", &c))
        .transpose()?;
    Ok(RunFields {
        stream_mode,
        strategy: body.multitask_strategy.unwrap_or_default(),
        if_not_exists: body.if_not_exists.unwrap_or_default(),
        on_disconnect: body.on_disconnect.unwrap_or_default(),
        on_completion: body.on_completion.unwrap_or_default(),
        durability,
        not_before_ms,
        interrupt_before,
        interrupt_after,
        resumable: body.stream_resumable.unwrap_or(false),
        subgraphs: body.stream_subgraphs.unwrap_or(false),
        command: body.command.as_ref().map(as_value),
        run_metadata,
        config,
        run_context: body.context.clone(),
        checkpoint_id,
    })
}

/// Whether the state a run writes (its input, its command's `update`) is one its graph takes
/// from a client (a 422 before the run is queued, not a run that fails).
pub(crate) fn check_writes(graph: &dyn ServedGraph, run: &RunCreate) -> Result<(), ApiError> {
    let update = run.command.as_ref().and_then(|c| c.update.as_ref());
    for values in [run.input.as_ref(), update].into_iter().flatten() {
        if !values.is_null() {
            graph.check_write(values)?;
        }
    }
    Ok(())
}

/// Validates a run body, resolves its assistant and thread, applies the multitask strategy
/// and queues the run, for `caller`.
async fn start(
    app: &Arc<App>,
    caller: &Caller,
    thread: Option<&str>,
    body: RunCreate,
) -> Result<Started, ApiError> {
    let assistant_id = body
        .assistant_id
        .clone()
        .ok_or_else(|| ApiError::invalid("assistant_id: a required property"))?;
    let mut f = run_fields(app, &body)?;
    if let Some(url) = &body.webhook {
        if app.runs.webhooks.in_flight() >= app.limits.webhooks_in_flight {
            return Err(too_many(
                "too many webhook deliveries are under way on this server; retry the run later",
            ));
        }
        crate::runs::webhook::check(url, app.runs.webhooks.allow_private)
            .await
            .map_err(ApiError::invalid)?;
    }
    let grant = app
        .grant(caller, Resource::Threads, Verb::CreateRun, &as_value(&body))
        .await?;

    let assistant = resolve(app, caller, &assistant_id).await?;
    let graph_id = assistant["graph_id"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    let assistant_id = assistant["assistant_id"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    // The context: the assistant's, overlaid by the run's (or its `configurable`).
    let mut context = assistant["context"]
        .as_object()
        .cloned()
        .unwrap_or_default();
    let configurable = f
        .config
        .get("configurable")
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default();
    match &f.run_context {
        Some(c) => context.extend(c.clone()),
        None => context.extend(
            configurable
                .iter()
                .filter(|(k, _)| {
                    !k.starts_with("__")
                        && !["thread_id", "checkpoint_id", "checkpoint_ns"].contains(&k.as_str())
                })
                .map(|(k, v)| (k.clone(), v.clone())),
        ),
    }

    // The caller reaches the graph as langgraph-api hands it over: `langgraph_auth_user`
    // in the context it is built from (and in `config.configurable`), set here only.
    let user = caller.user_json();
    if let Some(graph) = app.graphs.get(&graph_id) {
        let mut checked = context.clone();
        if let Some(u) = &user {
            checked.insert(AUTH_USER.into(), u.clone());
        }
        graph.check_context(&Value::Object(checked))?;
        check_writes(graph.as_ref(), &body)?;
    }
    let temporary = thread.is_none();
    let thread_id = match thread {
        Some(t) => uuid_path("thread", t)?,
        None => uuid::Uuid::now_v7().to_string(),
    };
    let run_id = uuid::Uuid::now_v7().to_string();
    // A stateless run's thread is new (a fresh id): nothing to read, nothing running on it.
    let existing = if temporary {
        None
    } else {
        app.store.get(Kind::Thread, &thread_id).await?
    };
    let made_now = existing.is_none();
    let mut thread_doc = match existing {
        Some(doc) if grant.admits(&doc["metadata"]) => doc,
        // Another user's thread: as if it did not exist, and not taken over.
        Some(_) => return Err(ApiError::not_found("Thread or assistant not found.")),
        None if temporary || f.if_not_exists == IfNotExists::Create => {
            let mut metadata = Map::new();
            grant.stamp(&mut metadata);
            new_thread(&thread_id, metadata)
        }
        None => return Err(ApiError::not_found("Thread or assistant not found.")),
    };
    if let Some(g) = thread_doc["metadata"]["graph_id"].as_str()
        && g != graph_id
    {
        return Err(ApiError::conflict(format!(
            "Thread {thread_id} belongs to graph '{g}'; assistant {assistant_id} runs graph '{graph_id}'"
        )));
    }
    let active = if temporary {
        Vec::new()
    } else {
        app.runs.active_on(&thread_id).await?
    };
    let queued = active.iter().filter(|r| r["status"] == "pending").count();
    if queued >= app.limits.queued_runs_per_thread && f.strategy == MultitaskStrategy::Enqueue {
        return Err(too_many(format!(
            "{queued} runs are waiting on this thread already; wait for them, or cancel some"
        )));
    }
    // `reject` is decided as the run is queued, in the queue's transaction: of two runs
    // asking at once on an idle thread, one is queued and the other refused.
    let stop = match f.strategy {
        MultitaskStrategy::Rollback => Some(CancelAction::Rollback),
        MultitaskStrategy::Interrupt => Some(CancelAction::Interrupt),
        MultitaskStrategy::Reject | MultitaskStrategy::Enqueue => None,
    };
    if let Some(action) = stop {
        for run in &active {
            app.runs.cancel(run, action).await?;
        }
    }

    configurable_insert(
        &mut f.config,
        &run_id,
        &thread_id,
        &graph_id,
        &assistant_id,
        &context,
    );
    if let (Some(u), Some(c)) = (
        user,
        f.config
            .get_mut("configurable")
            .and_then(Value::as_object_mut),
    ) {
        c.insert(AUTH_USER.into(), u);
    }
    let mut metadata = f.run_metadata.clone();
    grant.stamp(&mut metadata);
    metadata.insert("graph_id".into(), graph_id.clone().into());
    metadata.insert("assistant_id".into(), assistant_id.clone().into());
    let mut config_metadata = f
        .config
        .get("metadata")
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default();
    config_metadata.extend(f.run_metadata);
    f.config
        .insert("metadata".into(), Value::Object(config_metadata));
    let now = now_iso();
    let run = json!({
        "run_id": run_id, "thread_id": thread_id, "assistant_id": assistant_id,
        "metadata": metadata, "status": "pending", "attempt": 1,
        "kwargs": {
            "input": body.input.clone().unwrap_or(Value::Null),
            "command": f.command,
            "config": f.config, "context": context, "stream_mode": f.stream_mode,
            "interrupt_before": f.interrupt_before, "interrupt_after": f.interrupt_after,
            "webhook": body.webhook,
            "feedback_keys": body.feedback_keys,
            "temporary": temporary, "subgraphs": f.subgraphs, "resumable": f.resumable,
            "checkpoint_id": f.checkpoint_id, "durability": f.durability,
            "on_completion": f.on_completion,
            "not_before_ms": f.not_before_ms,
        },
        "multitask_strategy": f.strategy.as_str(), "created_at": now, "updated_at": now,
    });
    // The trace it was created in, for whichever instance executes it (never shown).
    let mut run = run;
    if let (Some(trace), Some(doc)) = (
        crate::trace::Carrier::current().to_json(),
        run.as_object_mut(),
    ) {
        doc.insert(crate::trace::FIELD.into(), trace);
    }
    // The thread is busy from the moment a run is queued on it.
    let meta = thread_doc["metadata"].as_object_mut();
    if let Some(meta) = meta {
        meta.insert("graph_id".into(), graph_id.into());
        meta.insert("assistant_id".into(), assistant_id.into());
    }
    thread_doc["status"] = "busy".into();
    thread_doc["config"] = json!({"configurable": run["kwargs"]["config"]["configurable"]});
    thread_doc["updated_at"] = now.into();
    let channel = app.runs.enqueue(&thread_doc, &run, made_now).await?;
    Ok(Started {
        run,
        channel,
        thread_id,
        resumable: f.resumable,
        cancel_on_disconnect: f.on_disconnect == OnDisconnect::Cancel,
    })
}

/// Queues a run as `POST /threads/{t}/runs` (or `POST /runs` without a thread) does: a
/// cron's tick, for the cron's owner. The run as queued.
pub(super) async fn queue(
    app: &Arc<App>,
    caller: &Caller,
    thread: Option<&str>,
    body: RunCreate,
) -> Result<Value, ApiError> {
    Ok(start(app, caller, thread, body).await?.run)
}

/// Checks the run fields of `body` (a cron's) as a run's creation does, queuing nothing.
pub(super) fn check_run_fields(app: &App, body: &RunCreate) -> Result<(), ApiError> {
    run_fields(app, body).map(drop)
}

fn configurable_insert(
    config: &mut Map<String, Value>,
    run_id: &str,
    thread_id: &str,
    graph_id: &str,
    assistant_id: &str,
    context: &Map<String, Value>,
) {
    let mut c = config
        .get("configurable")
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default();
    c.extend(context.clone());
    c.insert("run_id".into(), run_id.into());
    c.insert("thread_id".into(), thread_id.into());
    c.insert("graph_id".into(), graph_id.into());
    c.insert("assistant_id".into(), assistant_id.into());
    config.insert("configurable".into(), Value::Object(c));
}

fn location(headers: &mut HeaderMap, name: &'static str, path: String) {
    if let Ok(v) = HeaderValue::from_str(&path) {
        headers.insert(name, v);
    }
}

/// A place among the caller's open streams, or a 429.
fn permit(app: &App, caller: &Caller) -> Result<StreamPermit, ApiError> {
    app.streams.open(caller, app.limits.streams_per_user)
}

fn guard(app: &Arc<App>, s: &Started) -> Option<CancelOnDrop> {
    s.cancel_on_disconnect.then(|| CancelOnDrop {
        runs: app.runs.clone(),
        channel: s.channel.clone(),
    })
}

fn run_id(s: &Started) -> String {
    s.run["run_id"].as_str().unwrap_or_default().to_owned()
}

/// `Location` and `Content-Location` of a response about a run.
fn locations(location: Option<String>, content_location: String) -> HeaderMap {
    let mut headers = HeaderMap::new();
    if let Some(l) = location {
        self::location(&mut headers, "location", l);
    }
    self::location(&mut headers, "content-location", content_location);
    headers
}

/// A streamed run: on a thread, or stateless (whose `Location` langgraph-api points at
/// `/runs/{r}/stream`).
async fn stream_run(
    app: &Arc<App>,
    caller: &Caller,
    thread: Option<&str>,
    body: RunCreate,
) -> Result<Response, ApiError> {
    let permit = permit(app, caller)?;
    let s = start(app, caller, thread, body).await?;
    let r = run_id(&s);
    let headers = match thread {
        Some(_) => {
            let t = &s.thread_id;
            locations(
                Some(format!("/threads/{t}/runs/{r}/stream")),
                format!("/threads/{t}/runs/{r}"),
            )
        }
        None => locations(Some(format!("/runs/{r}/stream")), format!("/runs/{r}")),
    };
    let guard = guard(app, &s);
    Ok(sse::sse(
        app,
        s.channel.follow(0),
        None,
        s.resumable,
        headers,
        (guard, permit),
    ))
}

/// A run answered when it ends (`/wait`), on a thread or stateless.
async fn wait_run(
    app: &Arc<App>,
    caller: &Caller,
    thread: Option<&str>,
    body: RunCreate,
) -> Result<Response, ApiError> {
    let s = start(app, caller, thread, body).await?;
    let (t, r) = (&s.thread_id, run_id(&s));
    let headers = locations(
        Some(format!("/threads/{t}/runs/{r}/join")),
        format!("/threads/{t}/runs/{r}"),
    );
    let guard = guard(app, &s);
    Ok(sse::wait(app, s.channel, headers, guard))
}

/// Create a run on a thread and stream its output.
#[utoipa::path(post, path = "/threads/{thread_id}/runs/stream", tag = "Thread runs",
    params(("thread_id" = String, Path, format = Uuid)), request_body = RunCreate,
    responses((status = 200, content_type = "text/event-stream", body = StreamEvent),
        (status = 404, body = ErrorResponse), (status = 409, body = ErrorResponse),
        (status = 422, body = ErrorResponse)))]
async fn stream(
    State(app): Shared,
    caller: Caller,
    Path(t): Path<String>,
    Body(body): Body<RunCreate>,
) -> Result<Response, ApiError> {
    stream_run(&app, &caller, Some(&t), body).await
}

/// Create a stateless run and stream its output.
#[utoipa::path(post, path = "/runs/stream", tag = "Stateless runs", request_body = RunCreate,
    responses((status = 200, content_type = "text/event-stream", body = StreamEvent),
        (status = 404, body = ErrorResponse), (status = 422, body = ErrorResponse)))]
async fn stream_stateless(
    State(app): Shared,
    caller: Caller,
    Body(body): Body<RunCreate>,
) -> Result<Response, ApiError> {
    stream_run(&app, &caller, None, body).await
}

/// Create a run on a thread and wait for its output.
#[utoipa::path(post, path = "/threads/{thread_id}/runs/wait", tag = "Thread runs",
    params(("thread_id" = String, Path, format = Uuid)), request_body = RunCreate,
    responses((status = 200, body = Object), (status = 404, body = ErrorResponse),
        (status = 409, body = ErrorResponse), (status = 422, body = ErrorResponse)))]
async fn wait(
    State(app): Shared,
    caller: Caller,
    Path(t): Path<String>,
    Body(body): Body<RunCreate>,
) -> Result<Response, ApiError> {
    wait_run(&app, &caller, Some(&t), body).await
}

/// Create a stateless run and wait for its output.
#[utoipa::path(post, path = "/runs/wait", tag = "Stateless runs", request_body = RunCreate,
    responses((status = 200, body = Object), (status = 404, body = ErrorResponse),
        (status = 422, body = ErrorResponse)))]
async fn wait_stateless(
    State(app): Shared,
    caller: Caller,
    Body(body): Body<RunCreate>,
) -> Result<Response, ApiError> {
    wait_run(&app, &caller, None, body).await
}

/// What `/runs/wait` answers for `body`, for `/mcp`'s tool calls: the run goes through the
/// same checks and queue, for the same caller.
pub(super) async fn stateless_result(
    app: &Arc<App>,
    caller: &Caller,
    body: Value,
) -> Result<Value, ApiError> {
    let body: RunCreate = from_value(body)?;
    Ok(start(app, caller, None, body).await?.channel.result().await)
}

/// Queues a run as `POST /threads/{t}/runs` (or `POST /runs`) does, for `caller`: the run
/// as queued and its live channel, which A2A's methods follow.
pub(super) async fn queued(
    app: &Arc<App>,
    caller: &Caller,
    thread: Option<&str>,
    body: Value,
) -> Result<(Value, Arc<RunChannel>), ApiError> {
    let body: RunCreate = from_value(body)?;
    let s = start(app, caller, thread, body).await?;
    Ok((s.run, s.channel))
}

/// A stored run as the API answers with it.
fn public(run: &Value) -> Result<Run, ApiError> {
    let mut run = run.clone();
    if let Some(o) = run.as_object_mut() {
        o.insert("langsmith_session_name".into(), Value::Null);
    }
    typed(run)
}

/// Create a run on a thread (queued).
#[utoipa::path(post, path = "/threads/{thread_id}/runs", tag = "Thread runs",
    params(("thread_id" = String, Path, format = Uuid)), request_body = RunCreate,
    responses((status = 200, body = Run), (status = 404, body = ErrorResponse),
        (status = 409, body = ErrorResponse), (status = 422, body = ErrorResponse)))]
async fn create(
    State(app): Shared,
    caller: Caller,
    Path(t): Path<String>,
    Body(body): Body<RunCreate>,
) -> Result<(HeaderMap, Json<Run>), ApiError> {
    let s = start(&app, &caller, Some(&t), body).await?;
    let (t, r) = (s.thread_id.clone(), run_id(&s));
    let headers = locations(None, format!("/threads/{t}/runs/{r}"));
    Ok((headers, Json(public(&s.run)?)))
}

/// Create a stateless run (queued).
#[utoipa::path(post, path = "/runs", tag = "Stateless runs", request_body = RunCreate,
    responses((status = 200, body = Run), (status = 404, body = ErrorResponse),
        (status = 422, body = ErrorResponse)))]
async fn create_stateless(
    State(app): Shared,
    caller: Caller,
    Body(body): Body<RunCreate>,
) -> Result<(HeaderMap, Json<Run>), ApiError> {
    let s = start(&app, &caller, None, body).await?;
    let headers = locations(None, format!("/runs/{}", run_id(&s)));
    Ok((headers, Json(public(&s.run)?)))
}

/// Create stateless runs in a batch.
#[utoipa::path(post, path = "/runs/batch", tag = "Stateless runs", request_body = Vec<RunCreate>,
    responses((status = 200, body = Vec<Run>), (status = 404, body = ErrorResponse),
        (status = 422, body = ErrorResponse)))]
async fn batch(
    State(app): Shared,
    caller: Caller,
    ListBody(items): ListBody<RunCreate>,
) -> Result<Json<Vec<Run>>, ApiError> {
    if items.is_empty() {
        return Err(ApiError::invalid(
            "[] has less than 1 item: send at least one run",
        ));
    }
    if items.len() > app.limits.batch_runs {
        return Err(ApiError::invalid(format!(
            "a batch holds at most {} runs; this one has {}",
            app.limits.batch_runs,
            items.len()
        )));
    }
    let mut runs = Vec::with_capacity(items.len());
    for item in items {
        runs.push(public(&start(&app, &caller, None, item).await?.run)?);
    }
    Ok(Json(runs))
}

/// The run `r` of thread `t`, if `caller` may `verb` the thread (its runs are its own).
async fn run_of(
    app: &App,
    caller: &Caller,
    t: &str,
    r: &str,
    verb: Verb,
) -> Result<Value, ApiError> {
    let thread = thread_found(app, caller, t, verb).await?;
    let t = thread["thread_id"].as_str().unwrap_or_default().to_owned();
    let r = uuid_path("run", r)?;
    match app.store.get(Kind::Run, &r).await? {
        Some(run) if run["thread_id"] == t.as_str() => Ok(run),
        _ => Err(ApiError::not_found(format!(
            "Run {r} not found on thread {t}"
        ))),
    }
}

/// Get a run.
#[utoipa::path(get, path = "/threads/{thread_id}/runs/{run_id}", tag = "Thread runs",
    params(("thread_id" = String, Path, format = Uuid), ("run_id" = String, Path, format = Uuid)),
    responses((status = 200, body = Run), (status = 404, body = ErrorResponse),
        (status = 422, body = ErrorResponse)))]
async fn read(
    State(app): Shared,
    caller: Caller,
    Path((t, r)): Path<(String, String)>,
) -> Result<Json<Run>, ApiError> {
    Ok(Json(public(
        &run_of(&app, &caller, &t, &r, Verb::Read).await?,
    )?))
}

/// What a run did: its spans as the server that executed it recorded them (agentgraph's
/// own route, for the web page's trace view). A 404 when this server keeps no record of it
/// (it ran on another instance, before a restart, long ago, or the server keeps none).
#[utoipa::path(get, path = "/threads/{thread_id}/runs/{run_id}/trace", tag = "Thread runs",
    params(("thread_id" = String, Path, format = Uuid), ("run_id" = String, Path, format = Uuid)),
    responses((status = 200, body = RunTrace), (status = 404, body = ErrorResponse),
        (status = 422, body = ErrorResponse)))]
async fn trace(
    State(app): Shared,
    caller: Caller,
    Path((t, r)): Path<(String, String)>,
) -> Result<Json<RunTrace>, ApiError> {
    let run = run_of(&app, &caller, &t, &r, Verb::Read).await?;
    let run_id = run["run_id"].as_str().unwrap_or_default().to_owned();
    let Some(recorder) = &app.recorder else {
        return Err(ApiError::not_found(
            "This server keeps no record of its runs' spans (Server::builder().span_recorder(...) turns it on; agent serve does).",
        ));
    };
    match recorder.run(&run_id) {
        Some(record) => Ok(Json(RunTrace {
            run_id,
            spans: record.spans,
            truncated: record.truncated,
        })),
        None => Err(ApiError::not_found(format!(
            "No trace of run {run_id} is kept here: it ran on another instance, before this server started, or among the oldest."
        ))),
    }
}

/// List a thread's runs, newest first.
#[utoipa::path(get, path = "/threads/{thread_id}/runs", tag = "Thread runs",
    params(("thread_id" = String, Path, format = Uuid), RunListQuery),
    responses((status = 200, body = Vec<Run>), (status = 404, body = ErrorResponse),
        (status = 422, body = ErrorResponse)))]
async fn list(
    State(app): Shared,
    caller: Caller,
    Path(t): Path<String>,
    Params(q): Params<RunListQuery>,
) -> Result<Json<Vec<Value>>, ApiError> {
    let doc = thread_found(&app, &caller, &t, Verb::Read).await?;
    let (limit, offset) = app.limits.page(
        usize::try_from(q.limit).unwrap_or(usize::MAX),
        usize::try_from(q.offset).unwrap_or(usize::MAX),
    )?;
    let status = q.status.as_deref().filter(|s| !s.is_empty());
    let wanted: Vec<String> = q.select.into_iter().filter(|f| !f.is_empty()).collect();
    let fields = (!wanted.is_empty()).then_some(wanted.as_slice());
    let mut of_thread = serde_json::Map::new();
    of_thread.insert("thread_id".into(), doc["thread_id"].clone());
    let runs = app
        .store
        .search(
            Kind::Run,
            &store::Query {
                fields: of_thread,
                status: status.map(str::to_owned),
                descending: true,
                limit: Some(limit),
                offset,
                ..store::Query::default()
            },
        )
        .await?;
    runs.iter()
        .map(|r| Ok(select(as_value(&public(r)?), fields)))
        .collect::<Result<_, _>>()
        .map(Json)
}

/// Delete a run (cancelled first if it has not ended).
#[utoipa::path(delete, path = "/threads/{thread_id}/runs/{run_id}", tag = "Thread runs",
    params(("thread_id" = String, Path, format = Uuid), ("run_id" = String, Path, format = Uuid)),
    responses((status = 204), (status = 404, body = ErrorResponse),
        (status = 422, body = ErrorResponse)))]
async fn remove(
    State(app): Shared,
    caller: Caller,
    Path((t, r)): Path<(String, String)>,
) -> Result<StatusCode, ApiError> {
    let run = run_of(&app, &caller, &t, &r, Verb::CreateRun).await?;
    let thread = run["thread_id"].as_str().unwrap_or_default().to_owned();
    if matches!(run["status"].as_str(), Some("pending" | "running")) {
        app.runs.cancel(&run, CancelAction::Interrupt).await?;
    }
    app.store
        .delete(Kind::Run, run["run_id"].as_str().unwrap_or_default())
        .await?;
    app.runs.refresh_thread(&thread, None, false).await?;
    Ok(StatusCode::NO_CONTENT)
}

/// The body of a join on a run that is no longer live: the thread's values now.
async fn finished_body(app: &App, caller: &Caller, run: &Value) -> Result<Value, ApiError> {
    let thread_id = run["thread_id"].as_str().unwrap_or_default();
    let thread = thread_found(app, caller, thread_id, Verb::Read).await?;
    if thread["status"] == "error" && !thread["error"].is_null() {
        return Ok(json!({"__error__": thread["error"]}));
    }
    let mut values = if thread["values"].is_null() {
        json!({})
    } else {
        thread["values"].clone()
    };
    let interrupts: Vec<Value> = thread["interrupts"]
        .as_object()
        .into_iter()
        .flat_map(|m| m.values())
        .filter_map(Value::as_array)
        .flatten()
        .map(|i| json!({"value": i["value"], "id": i["id"], "response_schema": null}))
        .collect();
    if !interrupts.is_empty()
        && let Some(o) = values.as_object_mut()
    {
        o.insert("__interrupt__".into(), Value::Array(interrupts));
    }
    Ok(values)
}

/// Wait for a run to end and answer with its output.
#[utoipa::path(get, path = "/threads/{thread_id}/runs/{run_id}/join", tag = "Thread runs",
    params(("thread_id" = String, Path, format = Uuid), ("run_id" = String, Path, format = Uuid),
        JoinQuery),
    responses((status = 200, body = Object), (status = 404, body = ErrorResponse),
        (status = 422, body = ErrorResponse)))]
async fn join(
    State(app): Shared,
    caller: Caller,
    Path((t, r)): Path<(String, String)>,
    Params(q): Params<JoinQuery>,
) -> Result<Response, ApiError> {
    let run = run_of(&app, &caller, &t, &r, Verb::Read).await?;
    let (t, r) = (
        run["thread_id"].as_str().unwrap_or_default().to_owned(),
        run["run_id"].as_str().unwrap_or_default().to_owned(),
    );
    let headers = locations(
        Some(format!("/threads/{t}/runs/{r}/join")),
        format!("/threads/{t}/runs/{r}"),
    );
    let live = app.runs.follow(&r).await;
    match live {
        Some(channel)
            if !channel.finished()
                || matches!(run["status"].as_str(), Some("pending" | "running")) =>
        {
            let guard = q
                .cancel_on_disconnect
                .unwrap_or(false)
                .then(|| CancelOnDrop {
                    runs: app.runs.clone(),
                    channel: channel.clone(),
                });
            Ok(sse::wait(&app, channel, headers, guard))
        }
        Some(channel) => Ok((headers, Json(channel.result().await)).into_response()),
        None => {
            let body = finished_body(&app, &caller, &run).await?;
            Ok((headers, Json(body)).into_response())
        }
    }
}

/// `stream_mode` of a join: repeated, a JSON list as a string, or none (everything). The
/// event names they keep.
fn join_modes(asked: &[String]) -> Result<Option<Vec<String>>, ApiError> {
    let mut names = Vec::new();
    for v in asked.iter().filter(|v| !v.is_empty()) {
        if v.starts_with('[') {
            let list: Vec<String> = serde_json::from_str(v).map_err(|_| {
                ApiError::invalid("stream_mode: must be a mode or a JSON list of modes")
            })?;
            names.extend(list);
        } else {
            names.push(v.clone());
        }
    }
    if names.is_empty() {
        return Ok(None);
    }
    let mut events = Vec::new();
    for n in names {
        events.extend(
            ApiMode::parse(&n)?
                .event_names()
                .iter()
                .map(|e| (*e).to_owned()),
        );
    }
    Ok(Some(events))
}

/// Join a run's stream (from `Last-Event-ID` when the run keeps its events).
#[utoipa::path(get, path = "/threads/{thread_id}/runs/{run_id}/stream", tag = "Thread runs",
    params(("thread_id" = String, Path, format = Uuid), ("run_id" = String, Path, format = Uuid),
        JoinStreamQuery, ("Last-Event-ID" = Option<String>, Header)),
    responses((status = 200, content_type = "text/event-stream", body = StreamEvent),
        (status = 404, body = ErrorResponse), (status = 422, body = ErrorResponse)))]
async fn join_stream(
    State(app): Shared,
    caller: Caller,
    Path((t, r)): Path<(String, String)>,
    Params(q): Params<JoinStreamQuery>,
    request_headers: HeaderMap,
) -> Result<Response, ApiError> {
    let run = run_of(&app, &caller, &t, &r, Verb::Read).await?;
    let permit = permit(&app, &caller)?;
    let (t, r) = (
        run["thread_id"].as_str().unwrap_or_default().to_owned(),
        run["run_id"].as_str().unwrap_or_default().to_owned(),
    );
    let keep = join_modes(&q.stream_mode)?;
    let headers = locations(
        Some(format!("/threads/{t}/runs/{r}/stream")),
        format!("/threads/{t}/runs/{r}"),
    );
    let resumable = run["kwargs"]["resumable"] == true;
    let last = request_headers
        .get("last-event-id")
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    let Some(channel) = app.runs.follow(&r).await else {
        let nothing = futures::StreamExt::boxed(futures::stream::empty());
        return Ok(sse::sse(&app, nothing, keep, resumable, headers, permit));
    };
    let from = if channel.finished() && last.is_none() {
        usize::MAX
    } else {
        channel.position_after(last.as_deref())
    };
    let guard = q
        .cancel_on_disconnect
        .unwrap_or(false)
        .then(|| CancelOnDrop {
            runs: app.runs.clone(),
            channel: channel.clone(),
        });
    Ok(sse::sse(
        &app,
        channel.follow(from),
        keep,
        resumable,
        headers,
        (guard, permit),
    ))
}

fn action(name: Option<CancelActionName>) -> CancelAction {
    match name.unwrap_or_default() {
        CancelActionName::Interrupt => CancelAction::Interrupt,
        CancelActionName::Rollback => CancelAction::Rollback,
    }
}

/// Cancel a run.
#[utoipa::path(post, path = "/threads/{thread_id}/runs/{run_id}/cancel", tag = "Thread runs",
    params(("thread_id" = String, Path, format = Uuid), ("run_id" = String, Path, format = Uuid),
        CancelQuery),
    responses((status = 202), (status = 200, body = Object),
        (status = 404, body = ErrorResponse), (status = 422, body = ErrorResponse)))]
async fn cancel(
    State(app): Shared,
    caller: Caller,
    Path((t, r)): Path<(String, String)>,
    Params(q): Params<CancelQuery>,
) -> Result<Response, ApiError> {
    let run = match run_of(&app, &caller, &t, &r, Verb::CreateRun).await {
        Ok(run) => run,
        Err(e) if e.status == StatusCode::FORBIDDEN => return Err(e),
        Err(_) => return Err(ApiError::not_found("No runs found to cancel.")),
    };
    if !app.runs.cancel(&run, action(q.action)).await? {
        return Err(ApiError::not_found(
            "No matching runs to cancel. Please verify the thread ID and run IDs are correct, and the runs haven't been deleted or completed.",
        ));
    }
    if q.wait.unwrap_or(false) {
        if let Some(channel) = app
            .runs
            .follow(run["run_id"].as_str().unwrap_or_default())
            .await
        {
            channel.result().await;
        }
        return Ok(Json(json!({})).into_response());
    }
    Ok(StatusCode::ACCEPTED.into_response())
}

/// Cancel runs: by status, or a thread's (some of them).
#[utoipa::path(post, path = "/runs/cancel", tag = "Thread runs", params(CancelManyQuery),
    request_body = RunsCancel,
    responses((status = 204), (status = 404, body = ErrorResponse),
        (status = 422, body = ErrorResponse)))]
async fn cancel_many(
    State(app): Shared,
    caller: Caller,
    Params(q): Params<CancelManyQuery>,
    Body(body): Body<RunsCancel>,
) -> Result<StatusCode, ApiError> {
    let grant = app
        .grant(
            &caller,
            Resource::Threads,
            Verb::CreateRun,
            &as_value(&body),
        )
        .await?;
    let ids = body.run_ids.clone().unwrap_or_default();
    if body.status.is_some() && (body.thread_id.is_some() || !ids.is_empty()) {
        return Err(ApiError::invalid(
            "Cannot specify both status and thread_id/run_ids: cancel by status, or by thread and run ids",
        ));
    }
    let candidates: Vec<Value> = match (body.status, &body.thread_id) {
        (Some(s), _) => {
            let wanted: &[&str] = match s {
                CancelStatus::Pending => &["pending"],
                CancelStatus::Running => &["running"],
                CancelStatus::All => &["pending", "running"],
            };
            let mut found = Vec::new();
            for status in wanted {
                let query = store::Query {
                    status: Some((*status).to_owned()),
                    owner: grant.scope(),
                    ..store::Query::default()
                };
                found.extend(app.store.search(Kind::Run, &query).await?);
            }
            found
        }
        (None, Some(t)) => app
            .store
            .runs_of(
                thread_found(&app, &caller, t, Verb::CreateRun).await?["thread_id"]
                    .as_str()
                    .unwrap_or_default(),
            )
            .await?
            .into_iter()
            .filter(|r| ids.is_empty() || ids.iter().any(|i| r["run_id"] == i.as_str()))
            .collect(),
        (None, None) => {
            return Err(ApiError::invalid(
                "give a status, or a thread_id with run_ids",
            ));
        }
    };
    let action = action(q.action);
    let mut cancelled = 0;
    for run in candidates {
        if app.runs.cancel(&run, action).await? {
            cancelled += 1;
        }
    }
    if cancelled == 0 {
        return Err(ApiError::not_found("No runs found to cancel."));
    }
    Ok(StatusCode::NO_CONTENT)
}
