//! `/threads`: conversations, their status and values, and their checkpoints (state,
//! history, update_state) read through the thread's graph.

use std::sync::Arc;

use agent_core::ListFilter;
use axum::Router;
use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use serde_json::{Map, Value, json};

use super::body::{Fields, object};
use super::retention::{self, ThreadTtl, TtlStrategy};
use super::{App, Caller, JsonBody, Page, Shared, uuid_path};
use crate::auth::{Resource, Verb};
use crate::error::ApiError;
use crate::graph::ServedGraph;
use crate::store::{self, Kind};
use crate::time::now_iso;

pub(super) fn routes() -> Router<Arc<App>> {
    Router::new()
        .route("/threads", post(create))
        .route("/threads/search", post(search))
        .route("/threads/count", post(count))
        .route("/threads/prune", post(prune))
        .route("/threads/{id}", get(read).patch(update).delete(remove))
        .route("/threads/{id}/copy", post(copy))
        .route("/threads/{id}/state", get(state).post(update_state))
        .route("/threads/{id}/state/checkpoint", post(state_at_body))
        .route("/threads/{id}/state/{checkpoint_id}", get(state_at))
        .route("/threads/{id}/history", get(history_get).post(history_post))
        .route("/threads/{id}/stream", get(super::thread_stream::stream))
}

/// A new thread document.
pub(crate) fn new_thread(id: &str, metadata: Map<String, Value>) -> Value {
    let now = now_iso();
    json!({
        "thread_id": id, "created_at": now, "updated_at": now, "state_updated_at": now,
        "metadata": metadata, "status": "idle", "config": {}, "values": null,
        "interrupts": {}, "error": null,
    })
}

/// The thread `id` if `caller` may `verb` it, or a 404 (another user's thread does not
/// exist for this caller).
pub(crate) async fn found(
    app: &App,
    caller: &Caller,
    id: &str,
    verb: Verb,
) -> Result<Value, ApiError> {
    let id = uuid_path("thread", id)?;
    let grant = app
        .grant(caller, Resource::Threads, verb, &json!({"thread_id": id}))
        .await?;
    app.store
        .get(Kind::Thread, &id)
        .await?
        .filter(|doc| grant.admits(&doc["metadata"]))
        .ok_or_else(|| ApiError::not_found(format!("Thread with ID {id} not found")))
}

/// The graph a thread's runs used (its `metadata.graph_id`).
pub(crate) fn graph_of(app: &App, thread: &Value) -> Option<Arc<dyn ServedGraph>> {
    app.graphs
        .get(thread["metadata"]["graph_id"].as_str()?)
        .cloned()
}

async fn create(
    State(app): Shared,
    caller: Caller,
    JsonBody(body): JsonBody,
) -> Result<Response, ApiError> {
    let body = object(body)?;
    let grant = app
        .grant(
            &caller,
            Resource::Threads,
            Verb::Create,
            &Value::Object(body.clone()),
        )
        .await?;
    let id = match body.opt_str("thread_id")? {
        Some(id) => uuid_path("thread", &id)?,
        None => uuid::Uuid::now_v7().to_string(),
    };
    let mut metadata = body.opt_object("metadata")?.unwrap_or_default();
    app.limits.metadata("thread", &metadata)?;
    if let Some(graph_id) = body.opt_str("graph_id")? {
        metadata.insert("graph_id".into(), graph_id.into());
    }
    grant.stamp(&mut metadata);
    let mut doc = new_thread(&id, metadata);
    let ttl = match body.get("ttl") {
        Some(v) => ThreadTtl::from_body(v)?,
        None => app.thread_ttl,
    };
    if let Some(ttl) = ttl {
        ttl.apply(&mut doc);
    }
    if !app.store.insert(Kind::Thread, &doc).await? {
        return match body.opt_str("if_exists")?.as_deref() {
            Some("do_nothing") => match app.store.get(Kind::Thread, &id).await? {
                Some(kept) if grant.admits(&kept["metadata"]) => {
                    Ok(axum::Json(retention::public(kept, false)).into_response())
                }
                _ => Err(ApiError::conflict(format!(
                    "Thread with ID {id} already exists"
                ))),
            },
            _ => Err(ApiError::conflict(format!(
                "Thread with ID {id} already exists"
            ))),
        };
    }
    // `supersteps`: state written as if nodes had run, one update after another.
    if let Some(Value::Array(steps)) = body.get("supersteps") {
        let graph = graph_of(&app, &doc).ok_or_else(|| {
            ApiError::bad_request("supersteps need the thread's graph: pass graph_id")
        })?;
        for step in steps {
            for u in step["updates"].as_array().into_iter().flatten() {
                graph
                    .update_state(&id, u["values"].clone(), u["as_node"].as_str(), None)
                    .await?;
            }
        }
        app.runs.refresh_thread(&id, None, false).await?;
    }
    let doc = app.store.get(Kind::Thread, &id).await?.unwrap_or(doc);
    Ok(axum::Json(retention::public(doc, false)).into_response())
}

#[derive(serde::Deserialize)]
struct ReadParams {
    include: Option<String>,
}

async fn read(
    State(app): Shared,
    caller: Caller,
    Path(id): Path<String>,
    Query(p): Query<ReadParams>,
) -> Result<Response, ApiError> {
    let include_ttl = p
        .include
        .as_deref()
        .is_some_and(|i| i.split(',').any(|f| f.trim() == "ttl"));
    let doc = found(&app, &caller, &id, Verb::Read).await?;
    Ok(axum::Json(retention::public(doc, include_ttl)).into_response())
}

async fn update(
    State(app): Shared,
    caller: Caller,
    Path(id): Path<String>,
    JsonBody(body): JsonBody,
) -> Result<Response, ApiError> {
    let body = object(body)?;
    let mut doc = found(&app, &caller, &id, Verb::Update).await?;
    if let Some(meta) = body.opt_object("metadata")?
        && let Some(existing) = doc["metadata"].as_object_mut()
    {
        existing.extend(meta);
        let grant = app
            .grant(
                &caller,
                Resource::Threads,
                Verb::Update,
                &Value::Object(body.clone()),
            )
            .await?;
        grant.stamp(existing);
        app.limits.metadata("thread", existing)?;
    }
    match body
        .get("ttl")
        .map(ThreadTtl::from_body)
        .transpose()?
        .flatten()
    {
        Some(ttl) => ttl.apply(&mut doc),
        None => retention::touch(&mut doc),
    }
    doc["updated_at"] = now_iso().into();
    if !app.store.update(Kind::Thread, &doc).await? {
        return Err(ApiError::not_found(format!(
            "Thread with ID {id} not found"
        )));
    }
    Ok(axum::Json(retention::public(doc, false)).into_response())
}

/// `POST /threads/prune`: the caller's threads named, deleted (`delete`) or cut to their
/// latest checkpoint (`keep_latest`) now.
async fn prune(
    State(app): Shared,
    caller: Caller,
    JsonBody(body): JsonBody,
) -> Result<Response, ApiError> {
    let body = object(body)?;
    let strategy = TtlStrategy::parse(body.opt_str("strategy")?.as_deref().unwrap_or("delete"))?;
    let ids: Vec<String> = match body.get("thread_ids") {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::Array(ids)) => ids
            .iter()
            .map(|i| {
                i.as_str()
                    .ok_or_else(|| ApiError::invalid("'thread_ids' must be a list of thread ids"))
                    .and_then(|i| uuid_path("thread", i))
            })
            .collect::<Result<_, _>>()?,
        Some(_) => {
            return Err(ApiError::invalid(
                "'thread_ids' must be a list of thread ids",
            ));
        }
    };
    let (_, _) = app.limits.page(ids.len(), 0)?;
    let verb = match strategy {
        TtlStrategy::Delete => Verb::Delete,
        TtlStrategy::KeepLatest => Verb::Update,
    };
    let mut pruned = 0;
    for id in ids {
        // Another user's thread, or none: not pruned, as if it did not exist.
        let Ok(doc) = found(&app, &caller, &id, verb).await else {
            continue;
        };
        if retention::prune(&app, &doc, strategy).await? {
            pruned += 1;
        }
    }
    Ok(axum::Json(json!({ "pruned_count": pruned })).into_response())
}

async fn remove(
    State(app): Shared,
    caller: Caller,
    Path(id): Path<String>,
) -> Result<Response, ApiError> {
    let doc = found(&app, &caller, &id, Verb::Delete).await?;
    let id = doc["thread_id"].as_str().unwrap_or_default().to_owned();
    // Its runs first: stopped, and writing nothing more (here or on another instance), so
    // nothing of the thread comes back after it is gone; then its runs and document, then
    // its checkpoints.
    app.runs.stop_thread(&id).await?;
    app.store.delete(Kind::Thread, &id).await?;
    if let Some(graph) = graph_of(&app, &doc) {
        graph.delete_thread(&id).await?;
    }
    Ok(StatusCode::NO_CONTENT.into_response())
}

/// What a search or count body asks for, within what the caller may see.
async fn matching(
    app: &App,
    caller: &Caller,
    body: &Map<String, Value>,
) -> Result<store::Query, ApiError> {
    let grant = app
        .grant(
            caller,
            Resource::Threads,
            Verb::Search,
            &Value::Object(body.clone()),
        )
        .await?;
    let ids: Option<Vec<String>> = match body.get("ids") {
        Some(Value::Array(ids)) => Some(
            ids.iter()
                .filter_map(|i| i.as_str().map(str::to_owned))
                .collect(),
        ),
        _ => None,
    };
    Ok(store::Query {
        metadata: body.opt_object("metadata")?.unwrap_or_default(),
        owner: grant.scope(),
        values: body.opt_object("values")?.unwrap_or_default(),
        status: body.opt_str("status")?,
        ids,
        ..store::Query::default()
    })
}

const SORTS: &[&str] = &[
    "thread_id",
    "status",
    "created_at",
    "updated_at",
    "state_updated_at",
];

async fn search(
    State(app): Shared,
    caller: Caller,
    JsonBody(body): JsonBody,
) -> Result<Response, ApiError> {
    let body = object(body)?;
    let query = matching(&app, &caller, &body).await?;
    let page = Page::of(&app.limits, &body, "created_at", SORTS)?;
    let paged = page.query(&query);
    let (found, total) = tokio::try_join!(
        app.store.search(Kind::Thread, &paged),
        app.store.count(Kind::Thread, &query),
    )?;
    let found = found.into_iter().map(|t| retention::public(t, false));
    Ok(page.respond(found.collect(), total))
}

async fn count(
    State(app): Shared,
    caller: Caller,
    JsonBody(body): JsonBody,
) -> Result<Response, ApiError> {
    let body = object(body)?;
    let query = matching(&app, &caller, &body).await?;
    Ok(axum::Json(app.store.count(Kind::Thread, &query).await?).into_response())
}

async fn copy(
    State(app): Shared,
    caller: Caller,
    Path(id): Path<String>,
) -> Result<Response, ApiError> {
    let doc = found(&app, &caller, &id, Verb::Read).await?;
    let grant = app
        .grant(&caller, Resource::Threads, Verb::Create, &doc)
        .await?;
    let from = doc["thread_id"].as_str().unwrap_or_default().to_owned();
    let to = uuid::Uuid::now_v7().to_string();
    let mut metadata = doc["metadata"].as_object().cloned().unwrap_or_default();
    grant.stamp(&mut metadata);
    let mut copy = new_thread(&to, metadata);
    if let Some(ttl) = app.thread_ttl {
        ttl.apply(&mut copy);
    }
    app.store.put(Kind::Thread, &copy).await?;
    if let Some(graph) = graph_of(&app, &doc) {
        graph.copy_thread(&from, &to).await?;
        app.runs.refresh_thread(&to, None, false).await?;
    }
    let doc = app.store.get(Kind::Thread, &to).await?.unwrap_or(copy);
    Ok(axum::Json(retention::public(doc, false)).into_response())
}

/// The ThreadState of a thread with no checkpoint.
fn empty_state() -> Value {
    json!({"values": {}, "next": [], "tasks": [], "metadata": null, "created_at": null,
        "checkpoint": null, "parent_checkpoint": null, "interrupts": [],
        "checkpoint_id": null, "parent_checkpoint_id": null})
}

async fn state_of(
    app: &App,
    caller: &Caller,
    id: &str,
    checkpoint_id: Option<&str>,
    subgraphs: bool,
) -> Result<Value, ApiError> {
    let doc = found(app, caller, id, Verb::Read).await?;
    let Some(graph) = graph_of(app, &doc) else {
        return Ok(empty_state());
    };
    let thread = doc["thread_id"].as_str().unwrap_or_default();
    match graph.state(thread, checkpoint_id, subgraphs).await? {
        Some(s) => Ok(s),
        None if checkpoint_id.is_some() => Err(ApiError::not_found(format!(
            "Checkpoint {} not found on thread {thread}",
            checkpoint_id.unwrap_or_default()
        ))),
        None => Ok(empty_state()),
    }
}

#[derive(serde::Deserialize)]
struct StateParams {
    subgraphs: Option<String>,
}

fn truthy(v: Option<&str>) -> bool {
    matches!(v, Some("true" | "1" | "True" | "yes"))
}

async fn state(
    State(app): Shared,
    caller: Caller,
    Path(id): Path<String>,
    Query(p): Query<StateParams>,
) -> Result<Response, ApiError> {
    let subgraphs = truthy(p.subgraphs.as_deref());
    Ok(axum::Json(state_of(&app, &caller, &id, None, subgraphs).await?).into_response())
}

async fn state_at(
    State(app): Shared,
    caller: Caller,
    Path((id, checkpoint_id)): Path<(String, String)>,
    Query(p): Query<StateParams>,
) -> Result<Response, ApiError> {
    let state = state_of(
        &app,
        &caller,
        &id,
        Some(&checkpoint_id),
        truthy(p.subgraphs.as_deref()),
    )
    .await?;
    Ok(axum::Json(state).into_response())
}

async fn state_at_body(
    State(app): Shared,
    caller: Caller,
    Path(id): Path<String>,
    JsonBody(body): JsonBody,
) -> Result<Response, ApiError> {
    let body = object(body)?;
    let checkpoint = body.opt_object("checkpoint")?.unwrap_or_default();
    let cp = checkpoint.opt_str("checkpoint_id")?;
    let subgraphs = body.opt_bool("subgraphs")?.unwrap_or(false);
    let state = state_of(&app, &caller, &id, cp.as_deref(), subgraphs).await?;
    Ok(axum::Json(state).into_response())
}

async fn update_state(
    State(app): Shared,
    caller: Caller,
    Path(id): Path<String>,
    JsonBody(body): JsonBody,
) -> Result<Response, ApiError> {
    let body = object(body)?;
    let doc = found(&app, &caller, &id, Verb::Update).await?;
    let thread = doc["thread_id"].as_str().unwrap_or_default().to_owned();
    let graph = graph_of(&app, &doc).ok_or_else(|| {
        ApiError::bad_request(format!(
            "Thread {thread} has no assigned graph ID. This usually means no runs have been made on it yet; run it first or create it with a graph_id."
        ))
    })?;
    if !app.runs.active_on(&thread).await?.is_empty() {
        return Err(ApiError::conflict(
            "Thread is busy with a run; wait for it to finish before updating its state.",
        ));
    }
    let as_node = body.opt_str("as_node")?;
    let checkpoint_id = match body.opt_str("checkpoint_id")? {
        Some(id) => Some(id),
        None => body.opt_object("checkpoint")?.and_then(|c| {
            c.get("checkpoint_id")
                .and_then(Value::as_str)
                .map(str::to_owned)
        }),
    };
    let values = body.get("values").cloned().unwrap_or(Value::Null);
    let written = graph
        .update_state(
            &thread,
            values,
            as_node.as_deref(),
            checkpoint_id.as_deref(),
        )
        .await?;
    app.runs.refresh_thread(&thread, None, false).await?;
    let checkpoint = json!({"thread_id": thread, "checkpoint_ns": "", "checkpoint_id": written});
    Ok(axum::Json(json!({
        "checkpoint": checkpoint, "configurable": checkpoint, "checkpoint_id": written,
    }))
    .into_response())
}

async fn history_of(
    app: &App,
    caller: &Caller,
    id: &str,
    body: &Map<String, Value>,
) -> Result<Response, ApiError> {
    let doc = found(app, caller, id, Verb::Read).await?;
    let Some(graph) = graph_of(app, &doc) else {
        return Ok(axum::Json(json!([])).into_response());
    };
    let before = match body.get("before") {
        Some(Value::String(id)) => Some(id.clone()),
        Some(Value::Object(b)) => b
            .get("configurable")
            .and_then(|c| c.get("checkpoint_id"))
            .or_else(|| b.get("checkpoint_id"))
            .and_then(Value::as_str)
            .map(str::to_owned),
        _ => None,
    };
    let metadata = body.opt_object("metadata")?.unwrap_or_default();
    let (limit, _) = app.limits.page(body.opt_usize("limit")?.unwrap_or(1), 0)?;
    let filter = ListFilter {
        before,
        limit: Some(limit),
        metadata: metadata.into_iter().collect(),
    };
    let thread = doc["thread_id"].as_str().unwrap_or_default();
    Ok(axum::Json(graph.history(thread, filter).await?).into_response())
}

#[derive(serde::Deserialize)]
struct HistoryParams {
    limit: Option<String>,
    before: Option<String>,
}

async fn history_get(
    State(app): Shared,
    caller: Caller,
    Path(id): Path<String>,
    Query(p): Query<HistoryParams>,
) -> Result<Response, ApiError> {
    let mut body = Map::new();
    if let Some(limit) = p.limit {
        let n: usize = limit
            .parse()
            .map_err(|_| ApiError::invalid("'limit' must be a non-negative integer"))?;
        body.insert("limit".into(), n.into());
    }
    if let Some(before) = p.before {
        body.insert("before".into(), before.into());
    }
    history_of(&app, &caller, &id, &body).await
}

async fn history_post(
    State(app): Shared,
    caller: Caller,
    Path(id): Path<String>,
    JsonBody(body): JsonBody,
) -> Result<Response, ApiError> {
    history_of(&app, &caller, &id, &object(body)?).await
}
