//! Runs on a thread (`/threads/{id}/runs/...`) and stateless runs (`/runs/...`): create
//! (queued), stream, wait, join, cancel. A stateless run gets a temporary thread that is
//! deleted when it ends (unless `on_completion: "keep"`).

use std::sync::Arc;

use axum::Router;
use axum::extract::{Path, RawQuery, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use serde_json::{Map, Value, json};

use super::assistants::resolve;
use super::body::{Fields, object};
use super::sse::{self, CancelOnDrop};
use super::threads::{found as thread_found, new_thread};
use super::{AUTH_USER, App, Caller, JsonBody, Shared, StreamPermit, refuse_auth_user, uuid_path};
use crate::auth::{Resource, Verb};
use crate::error::ApiError;
use crate::graph::ApiMode;
use crate::limits::too_many;
use crate::runs::{CancelAction, RunChannel};
use crate::store::{self, Kind};
use crate::time::now_iso;

pub(super) fn routes() -> Router<Arc<App>> {
    Router::new()
        .route("/threads/{t}/runs", post(create).get(list))
        .route("/threads/{t}/runs/stream", post(stream))
        .route("/threads/{t}/runs/wait", post(wait))
        .route("/threads/{t}/runs/{r}", get(read).delete(remove))
        .route("/threads/{t}/runs/{r}/join", get(join))
        .route("/threads/{t}/runs/{r}/stream", get(join_stream))
        .route("/threads/{t}/runs/{r}/cancel", post(cancel))
        .route("/runs", post(create_stateless))
        .route("/runs/stream", post(stream_stateless))
        .route("/runs/wait", post(wait_stateless))
        .route("/runs/batch", post(batch))
        .route("/runs/cancel", post(cancel_many))
}

/// A queued run and what its response needs.
struct Started {
    run: Value,
    channel: Arc<RunChannel>,
    thread_id: String,
    resumable: bool,
    cancel_on_disconnect: bool,
}

fn one_of(
    body: &Map<String, Value>,
    key: &str,
    allowed: &[&str],
    default: &str,
) -> Result<String, ApiError> {
    let v = body.opt_str(key)?.unwrap_or_else(|| default.to_owned());
    if allowed.contains(&v.as_str()) {
        Ok(v)
    } else {
        Err(ApiError::invalid(format!(
            "'{key}' must be one of: {} (got '{v}')",
            allowed.join(", ")
        )))
    }
}

/// `stream_mode` as a list, each checked.
fn modes(body: &Map<String, Value>) -> Result<Vec<String>, ApiError> {
    let names: Vec<String> = match body.get("stream_mode") {
        None | Some(Value::Null) => vec!["values".to_owned()],
        Some(Value::String(s)) => vec![s.clone()],
        Some(Value::Array(items)) => items
            .iter()
            .map(|i| {
                i.as_str()
                    .map(str::to_owned)
                    .ok_or_else(|| ApiError::invalid("'stream_mode' items must be strings"))
            })
            .collect::<Result<_, _>>()?,
        Some(_) => {
            return Err(ApiError::invalid(
                "'stream_mode' must be a string or a list of them",
            ));
        }
    };
    for n in &names {
        ApiMode::parse(n)?;
    }
    Ok(names)
}

fn node_list(body: &Map<String, Value>, key: &str) -> Result<Value, ApiError> {
    match body.get(key) {
        None | Some(Value::Null) => Ok(Value::Null),
        Some(Value::String(s)) if s == "*" => Ok(json!("*")),
        Some(Value::Array(a)) if a.iter().all(Value::is_string) => Ok(Value::Array(a.clone())),
        Some(_) => Err(ApiError::invalid(format!(
            "'{key}' must be \"*\" or a list of node names"
        ))),
    }
}

/// A run body's own fields, checked: what a run's creation and a cron's both accept.
struct RunFields {
    stream_mode: Vec<String>,
    strategy: String,
    if_not_exists: String,
    on_disconnect: String,
    on_completion: String,
    durability: String,
    not_before_ms: Option<i64>,
    interrupt_before: Value,
    interrupt_after: Value,
    resumable: bool,
    subgraphs: bool,
    command: Option<Map<String, Value>>,
    run_metadata: Map<String, Value>,
    config: Map<String, Value>,
    run_context: Option<Map<String, Value>>,
    checkpoint_id: Option<String>,
}

fn run_fields(app: &App, body: &Map<String, Value>) -> Result<RunFields, ApiError> {
    let stream_mode = modes(body)?;
    let strategy = one_of(
        body,
        "multitask_strategy",
        &["reject", "rollback", "interrupt", "enqueue"],
        "enqueue",
    )?;
    let if_not_exists = one_of(body, "if_not_exists", &["create", "reject"], "reject")?;
    let on_disconnect = one_of(body, "on_disconnect", &["cancel", "continue"], "continue")?;
    let on_completion = one_of(body, "on_completion", &["delete", "keep"], "delete")?;
    let durability = one_of(body, "durability", &["sync", "async", "exit"], "async")?;
    // `after_seconds`: the run waits in the queue until then.
    let not_before_ms = match body.get("after_seconds") {
        None | Some(Value::Null) => None,
        Some(v) => match v.as_f64() {
            Some(secs) if (0.0..=31_536_000.0).contains(&secs) => {
                Some(crate::time::now_ms() + (secs * 1000.0) as i64)
            }
            _ => {
                return Err(ApiError::invalid(
                    "'after_seconds' must be a number of seconds from 0 to a year",
                ));
            }
        },
    };
    let interrupt_before = node_list(body, "interrupt_before")?;
    let interrupt_after = node_list(body, "interrupt_after")?;
    let resumable = body.opt_bool("stream_resumable")?.unwrap_or(false);
    let subgraphs = body.opt_bool("stream_subgraphs")?.unwrap_or(false);
    let command = body.opt_object("command")?;
    let run_metadata = body.opt_object("metadata")?.unwrap_or_default();
    app.limits.metadata("run", &run_metadata)?;
    let config = body.opt_object("config")?.unwrap_or_default();
    if let Some(limit) = config.get("recursion_limit") {
        let asked = limit.as_u64().ok_or_else(|| {
            ApiError::invalid("'config.recursion_limit' must be a positive integer")
        })?;
        app.limits.recursion(asked)?;
    }
    if let Some(c) = config.get("configurable").and_then(Value::as_object) {
        refuse_auth_user(c, "config.configurable")?;
    }
    if let Some(m) = config.get("metadata").and_then(Value::as_object) {
        app.limits.metadata("run config", m)?;
    }
    let run_context = body.opt_object("context")?;
    if let Some(c) = &run_context {
        refuse_auth_user(c, "context")?;
    }
    let checkpoint_id = match body.opt_str("checkpoint_id")? {
        Some(id) => Some(id),
        None => body.opt_object("checkpoint")?.and_then(|c| {
            c.get("checkpoint_id")
                .and_then(Value::as_str)
                .map(str::to_owned)
        }),
    };
    Ok(RunFields {
        stream_mode,
        strategy,
        if_not_exists,
        on_disconnect,
        on_completion,
        durability,
        not_before_ms,
        interrupt_before,
        interrupt_after,
        resumable,
        subgraphs,
        command,
        run_metadata,
        config,
        run_context,
        checkpoint_id,
    })
}

/// Validates a run body, resolves its assistant and thread, applies the multitask strategy
/// and queues the run, for `caller`.
async fn start(
    app: &Arc<App>,
    caller: &Caller,
    thread: Option<&str>,
    body: Value,
) -> Result<Started, ApiError> {
    let body = object(body)?;
    let assistant_id = body
        .opt_str("assistant_id")?
        .ok_or_else(|| ApiError::invalid("'assistant_id' is a required property"))?;
    let mut f = run_fields(app, &body)?;
    if let Some(url) = body.opt_str("webhook")? {
        if app.runs.webhooks.in_flight() >= app.limits.webhooks_in_flight {
            return Err(too_many(
                "too many webhook deliveries are under way on this server; retry the run later",
            ));
        }
        crate::runs::webhook::check(&url, app.runs.webhooks.allow_private)
            .await
            .map_err(ApiError::invalid)?;
    }
    let grant = app
        .grant(
            caller,
            Resource::Threads,
            Verb::CreateRun,
            &Value::Object(body.clone()),
        )
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
        None if temporary || f.if_not_exists == "create" => {
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
    if queued >= app.limits.queued_runs_per_thread && f.strategy == "enqueue" {
        return Err(too_many(format!(
            "{queued} runs are waiting on this thread already; wait for them, or cancel some"
        )));
    }
    // `reject` is decided as the run is queued, in the queue's transaction: of two runs
    // asking at once on an idle thread, one is queued and the other refused.
    if !active.is_empty() {
        match f.strategy.as_str() {
            "interrupt" | "rollback" => {
                let action = if f.strategy == "rollback" {
                    CancelAction::Rollback
                } else {
                    CancelAction::Interrupt
                };
                for run in &active {
                    app.runs.cancel(run, action).await?;
                }
            }
            _ => {}
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
            "input": body.get("input").cloned().unwrap_or(Value::Null),
            "command": f.command,
            "config": f.config, "context": context, "stream_mode": f.stream_mode,
            "interrupt_before": f.interrupt_before, "interrupt_after": f.interrupt_after,
            "webhook": body.get("webhook").cloned().unwrap_or(Value::Null),
            "feedback_keys": body.get("feedback_keys").cloned().unwrap_or(Value::Null),
            "temporary": temporary, "subgraphs": f.subgraphs, "resumable": f.resumable,
            "checkpoint_id": f.checkpoint_id, "durability": f.durability,
            "on_completion": f.on_completion,
            "not_before_ms": f.not_before_ms,
        },
        "multitask_strategy": f.strategy, "created_at": now, "updated_at": now,
    });
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
        cancel_on_disconnect: f.on_disconnect == "cancel",
    })
}

/// Queues a run as `POST /threads/{t}/runs` (or `POST /runs` without a thread) does: a
/// cron's tick, for the cron's owner. The run as queued.
pub(super) async fn queue(
    app: &Arc<App>,
    caller: &Caller,
    thread: Option<&str>,
    body: Value,
) -> Result<Value, ApiError> {
    Ok(start(app, caller, thread, body).await?.run)
}

/// Checks the run fields of `body` (a cron's) as a run's creation does, queuing nothing.
pub(super) fn check_run_fields(app: &App, body: &Map<String, Value>) -> Result<(), ApiError> {
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
    body: Value,
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
    body: Value,
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

async fn stream(
    State(app): Shared,
    caller: Caller,
    Path(t): Path<String>,
    JsonBody(body): JsonBody,
) -> Result<Response, ApiError> {
    stream_run(&app, &caller, Some(&t), body).await
}

async fn stream_stateless(
    State(app): Shared,
    caller: Caller,
    JsonBody(body): JsonBody,
) -> Result<Response, ApiError> {
    stream_run(&app, &caller, None, body).await
}

async fn wait(
    State(app): Shared,
    caller: Caller,
    Path(t): Path<String>,
    JsonBody(body): JsonBody,
) -> Result<Response, ApiError> {
    wait_run(&app, &caller, Some(&t), body).await
}

async fn wait_stateless(
    State(app): Shared,
    caller: Caller,
    JsonBody(body): JsonBody,
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
    Ok(start(app, caller, None, body).await?.channel.result().await)
}

fn public(run: &Value) -> Value {
    let mut run = run.clone();
    if let Some(o) = run.as_object_mut() {
        o.remove("attempt");
        o.insert("langsmith_session_name".into(), Value::Null);
    }
    run
}

async fn create(
    State(app): Shared,
    caller: Caller,
    Path(t): Path<String>,
    JsonBody(body): JsonBody,
) -> Result<Response, ApiError> {
    let s = start(&app, &caller, Some(&t), body).await?;
    let (t, r) = (s.thread_id.clone(), run_id(&s));
    let headers = locations(None, format!("/threads/{t}/runs/{r}"));
    Ok((headers, axum::Json(public(&s.run))).into_response())
}

async fn create_stateless(
    State(app): Shared,
    caller: Caller,
    JsonBody(body): JsonBody,
) -> Result<Response, ApiError> {
    let s = start(&app, &caller, None, body).await?;
    let headers = locations(None, format!("/runs/{}", run_id(&s)));
    Ok((headers, axum::Json(public(&s.run))).into_response())
}

async fn batch(
    State(app): Shared,
    caller: Caller,
    JsonBody(body): JsonBody,
) -> Result<Response, ApiError> {
    let Value::Array(items) = body else {
        return Err(ApiError::invalid("the body must be a list of run bodies"));
    };
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
        runs.push(public(&start(&app, &caller, None, item).await?.run));
    }
    Ok(axum::Json(runs).into_response())
}

/// Query parameters, repeated keys kept, percent-decoded.
fn query_pairs(raw: Option<&str>) -> Vec<(String, String)> {
    fn decode(s: &str) -> String {
        let bytes = s.as_bytes();
        let mut out = Vec::with_capacity(bytes.len());
        let mut i = 0;
        while i < bytes.len() {
            match bytes[i] {
                b'+' => out.push(b' '),
                b'%' if i + 2 < bytes.len() => {
                    let hex = |b: u8| (b as char).to_digit(16);
                    match (hex(bytes[i + 1]), hex(bytes[i + 2])) {
                        (Some(h), Some(l)) => {
                            out.push((h * 16 + l) as u8);
                            i += 2;
                        }
                        _ => out.push(b'%'),
                    }
                }
                b => out.push(b),
            }
            i += 1;
        }
        String::from_utf8_lossy(&out).into_owned()
    }
    raw.unwrap_or_default()
        .split('&')
        .filter(|p| !p.is_empty())
        .map(|p| {
            let (k, v) = p.split_once('=').unwrap_or((p, ""));
            (decode(k), decode(v))
        })
        .collect()
}

fn param<'a>(pairs: &'a [(String, String)], key: &str) -> Option<&'a str> {
    pairs
        .iter()
        .find(|(k, _)| k == key)
        .map(|(_, v)| v.as_str())
}

fn truthy(v: Option<&str>) -> bool {
    matches!(v, Some("true" | "1" | "True" | "yes"))
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

async fn read(
    State(app): Shared,
    caller: Caller,
    Path((t, r)): Path<(String, String)>,
) -> Result<Response, ApiError> {
    Ok(axum::Json(public(&run_of(&app, &caller, &t, &r, Verb::Read).await?)).into_response())
}

async fn list(
    State(app): Shared,
    caller: Caller,
    Path(t): Path<String>,
    RawQuery(q): RawQuery,
) -> Result<Response, ApiError> {
    let doc = thread_found(&app, &caller, &t, Verb::Read).await?;
    let pairs = query_pairs(q.as_deref());
    let number = |key: &str, default: usize| -> Result<usize, ApiError> {
        match param(&pairs, key) {
            None | Some("") => Ok(default),
            Some(v) => v
                .parse()
                .map_err(|_| ApiError::invalid(format!("'{key}' must be a non-negative integer"))),
        }
    };
    let (limit, offset) = app
        .limits
        .page(number("limit", 10)?, number("offset", 0)?)?;
    let status = param(&pairs, "status").filter(|s| !s.is_empty());
    let select: Vec<&str> = pairs
        .iter()
        .filter(|(k, _)| k == "select")
        .map(|(_, v)| v.as_str())
        .collect();
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
    let page: Vec<Value> = runs
        .iter()
        .map(public)
        .map(|r| match (select.is_empty(), r) {
            (false, Value::Object(m)) => Value::Object(
                m.into_iter()
                    .filter(|(k, _)| select.contains(&k.as_str()))
                    .collect(),
            ),
            (_, r) => r,
        })
        .collect();
    Ok(axum::Json(page).into_response())
}

async fn remove(
    State(app): Shared,
    caller: Caller,
    Path((t, r)): Path<(String, String)>,
) -> Result<Response, ApiError> {
    let run = run_of(&app, &caller, &t, &r, Verb::CreateRun).await?;
    let thread = run["thread_id"].as_str().unwrap_or_default().to_owned();
    if matches!(run["status"].as_str(), Some("pending" | "running")) {
        app.runs.cancel(&run, CancelAction::Interrupt).await?;
    }
    app.store
        .delete(Kind::Run, run["run_id"].as_str().unwrap_or_default())
        .await?;
    app.runs.refresh_thread(&thread, None, false).await?;
    Ok(StatusCode::NO_CONTENT.into_response())
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

async fn join(
    State(app): Shared,
    caller: Caller,
    Path((t, r)): Path<(String, String)>,
    RawQuery(q): RawQuery,
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
            let pairs = query_pairs(q.as_deref());
            let guard = truthy(param(&pairs, "cancel_on_disconnect")).then(|| CancelOnDrop {
                runs: app.runs.clone(),
                channel: channel.clone(),
            });
            Ok(sse::wait(&app, channel, headers, guard))
        }
        Some(channel) => Ok((headers, axum::Json(channel.result().await)).into_response()),
        None => {
            let body = finished_body(&app, &caller, &run).await?;
            Ok((headers, axum::Json(body)).into_response())
        }
    }
}

/// `stream_mode` of a join: repeated, a JSON list as a string, or empty (everything).
fn join_modes(pairs: &[(String, String)]) -> Result<Option<Vec<String>>, ApiError> {
    let mut names = Vec::new();
    for (k, v) in pairs {
        if k != "stream_mode" || v.is_empty() {
            continue;
        }
        if v.starts_with('[') {
            let list: Vec<String> = serde_json::from_str(v).map_err(|_| {
                ApiError::invalid("'stream_mode' must be a mode or a JSON list of modes")
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

async fn join_stream(
    State(app): Shared,
    caller: Caller,
    Path((t, r)): Path<(String, String)>,
    RawQuery(q): RawQuery,
    request_headers: HeaderMap,
) -> Result<Response, ApiError> {
    let run = run_of(&app, &caller, &t, &r, Verb::Read).await?;
    let permit = permit(&app, &caller)?;
    let (t, r) = (
        run["thread_id"].as_str().unwrap_or_default().to_owned(),
        run["run_id"].as_str().unwrap_or_default().to_owned(),
    );
    let pairs = query_pairs(q.as_deref());
    let keep = join_modes(&pairs)?;
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
    let guard = truthy(param(&pairs, "cancel_on_disconnect")).then(|| CancelOnDrop {
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

async fn cancel(
    State(app): Shared,
    caller: Caller,
    Path((t, r)): Path<(String, String)>,
    RawQuery(q): RawQuery,
) -> Result<Response, ApiError> {
    let pairs = query_pairs(q.as_deref());
    let action = match param(&pairs, "action") {
        Some("rollback") => CancelAction::Rollback,
        _ => CancelAction::Interrupt,
    };
    let run = match run_of(&app, &caller, &t, &r, Verb::CreateRun).await {
        Ok(run) => run,
        Err(e) if e.status == StatusCode::FORBIDDEN => return Err(e),
        Err(_) => return Err(ApiError::not_found("No runs found to cancel.")),
    };
    if !app.runs.cancel(&run, action).await? {
        return Err(ApiError::not_found(
            "No matching runs to cancel. Please verify the thread ID and run IDs are correct, and the runs haven't been deleted or completed.",
        ));
    }
    if truthy(param(&pairs, "wait")) {
        if let Some(channel) = app
            .runs
            .follow(run["run_id"].as_str().unwrap_or_default())
            .await
        {
            channel.result().await;
        }
        return Ok(axum::Json(json!({})).into_response());
    }
    Ok(StatusCode::ACCEPTED.into_response())
}

async fn cancel_many(
    State(app): Shared,
    caller: Caller,
    RawQuery(q): RawQuery,
    JsonBody(body): JsonBody,
) -> Result<Response, ApiError> {
    let body = object(body)?;
    let grant = app
        .grant(
            &caller,
            Resource::Threads,
            Verb::CreateRun,
            &Value::Object(body.clone()),
        )
        .await?;
    let pairs = query_pairs(q.as_deref());
    let action = match param(&pairs, "action") {
        Some("rollback") => CancelAction::Rollback,
        _ => CancelAction::Interrupt,
    };
    let status = body.opt_str("status")?;
    let thread = body.opt_str("thread_id")?;
    let ids: Vec<String> = match body.get("run_ids") {
        Some(Value::Array(ids)) => ids
            .iter()
            .filter_map(|i| i.as_str().map(str::to_owned))
            .collect(),
        _ => Vec::new(),
    };
    if status.is_some() && (thread.is_some() || !ids.is_empty()) {
        return Err(ApiError::invalid(
            "Cannot specify both status and thread_id/run_ids: cancel by status, or by thread and run ids",
        ));
    }
    let candidates: Vec<Value> = match (&status, &thread) {
        (Some(s), _) => {
            let wanted: &[&str] = match s.as_str() {
                "pending" => &["pending"],
                "running" => &["running"],
                "all" => &["pending", "running"],
                other => {
                    return Err(ApiError::invalid(format!(
                        "'status' must be pending, running or all, not '{other}'"
                    )));
                }
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
    let mut cancelled = 0;
    for run in candidates {
        if app.runs.cancel(&run, action).await? {
            cancelled += 1;
        }
    }
    if cancelled == 0 {
        return Err(ApiError::not_found("No runs found to cancel."));
    }
    Ok(StatusCode::NO_CONTENT.into_response())
}
