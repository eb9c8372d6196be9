//! `/threads`: conversations, their status and values, and their checkpoints (state,
//! history, update_state) read through the thread's graph.

use std::collections::BTreeMap;
use std::sync::Arc;

use agent_core::ListFilter;
use axum::Json;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};
use serde_json::{Map, Value, json};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::models::threads::{
    CheckpointConfig, Thread, ThreadCountRequest, ThreadCreate, ThreadHistoryQuery, ThreadPatch,
    ThreadPruneRequest, ThreadPruneResponse, ThreadReadQuery, ThreadSearchRequest, ThreadState,
    ThreadStateCheckpointRequest, ThreadStateQuery, ThreadStateSearch, ThreadStateUpdate,
    ThreadStateUpdateResponse, TtlStrategyName,
};
use super::models::{Body, ErrorResponse, IfExists, Params, as_value, typed};
use super::paging::{Paging, Searched, field_names, select};
use super::retention::{self, ThreadTtl, TtlStrategy};
use super::{App, Caller, Shared, uuid_path};
use crate::auth::{Resource, Verb};
use crate::error::ApiError;
use crate::graph::ServedGraph;
use crate::store::{self, Kind};
use crate::time::now_iso;

pub(super) fn routes() -> OpenApiRouter<Arc<App>> {
    OpenApiRouter::new()
        .routes(routes!(create))
        .routes(routes!(search))
        .routes(routes!(count))
        .routes(routes!(prune))
        .routes(routes!(read, update, remove))
        .routes(routes!(copy))
        .routes(routes!(state, update_state))
        .routes(routes!(state_at_body))
        .routes(routes!(state_at))
        .routes(routes!(history_get, history_post))
        .routes(routes!(super::thread_stream::stream))
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

/// A stored thread as the API answers with it.
fn thread(doc: Value, include_ttl: bool) -> Result<Json<Thread>, ApiError> {
    typed(retention::public(doc, include_ttl)).map(Json)
}

/// Create a thread.
#[utoipa::path(post, path = "/threads", tag = "Threads", request_body = ThreadCreate,
    responses((status = 200, body = Thread), (status = 409, body = ErrorResponse),
        (status = 422, body = ErrorResponse)))]
async fn create(
    State(app): Shared,
    caller: Caller,
    Body(body): Body<ThreadCreate>,
) -> Result<Json<Thread>, ApiError> {
    let grant = app
        .grant(&caller, Resource::Threads, Verb::Create, &as_value(&body))
        .await?;
    let id = match &body.thread_id {
        Some(id) => uuid_path("thread", id)?,
        None => uuid::Uuid::now_v7().to_string(),
    };
    let mut metadata = body.metadata.unwrap_or_default();
    app.limits.metadata("thread", &metadata)?;
    if let Some(graph_id) = &body.graph_id {
        metadata.insert("graph_id".into(), graph_id.as_str().into());
    }
    grant.stamp(&mut metadata);
    let mut doc = new_thread(&id, metadata);
    let ttl = match &body.ttl {
        Some(ttl) => Some(ThreadTtl::from_typed(ttl)?),
        None => app.thread_ttl,
    };
    if let Some(ttl) = ttl {
        ttl.apply(&mut doc);
    }
    if !app.store.insert(Kind::Thread, &doc).await? {
        let exists = || ApiError::conflict(format!("Thread with ID {id} already exists"));
        return match body.if_exists.unwrap_or_default() {
            IfExists::DoNothing => match app.store.get(Kind::Thread, &id).await? {
                Some(kept) if grant.admits(&kept["metadata"]) => thread(kept, false),
                _ => Err(exists()),
            },
            IfExists::Raise => Err(exists()),
        };
    }
    // `supersteps`: state written as if nodes had run, one update after another.
    if let Some(steps) = body.supersteps.as_ref().filter(|s| !s.is_empty()) {
        let graph = graph_of(&app, &doc).ok_or_else(|| {
            ApiError::bad_request("supersteps need the thread's graph: pass graph_id")
        })?;
        for step in steps {
            for u in &step.updates {
                graph
                    .update_state(&id, u.values.clone(), u.as_node.as_deref(), None)
                    .await?;
            }
        }
        app.runs.refresh_thread(&id, None, false).await?;
        app.runs.state_written(&id).await;
    }
    let doc = app.store.get(Kind::Thread, &id).await?.unwrap_or(doc);
    thread(doc, false)
}

/// Get a thread.
#[utoipa::path(get, path = "/threads/{thread_id}", tag = "Threads",
    params(("thread_id" = String, Path, format = Uuid), ThreadReadQuery),
    responses((status = 200, body = Thread), (status = 404, body = ErrorResponse),
        (status = 422, body = ErrorResponse)))]
async fn read(
    State(app): Shared,
    caller: Caller,
    Path(id): Path<String>,
    Params(p): Params<ThreadReadQuery>,
) -> Result<Json<Thread>, ApiError> {
    let include_ttl = p
        .include
        .as_deref()
        .is_some_and(|i| i.split(',').any(|f| f.trim() == "ttl"));
    let doc = found(&app, &caller, &id, Verb::Read).await?;
    thread(doc, include_ttl)
}

/// Patch a thread: merge metadata, set a new ttl.
#[utoipa::path(patch, path = "/threads/{thread_id}", tag = "Threads",
    params(("thread_id" = String, Path, format = Uuid)), request_body = ThreadPatch,
    responses((status = 200, body = Thread), (status = 404, body = ErrorResponse),
        (status = 422, body = ErrorResponse)))]
async fn update(
    State(app): Shared,
    caller: Caller,
    Path(id): Path<String>,
    Body(body): Body<ThreadPatch>,
) -> Result<Json<Thread>, ApiError> {
    let mut doc = found(&app, &caller, &id, Verb::Update).await?;
    if let Some(meta) = &body.metadata
        && let Some(existing) = doc["metadata"].as_object_mut()
    {
        existing.extend(meta.clone());
        let grant = app
            .grant(&caller, Resource::Threads, Verb::Update, &as_value(&body))
            .await?;
        grant.stamp(existing);
        app.limits.metadata("thread", existing)?;
    }
    match body.ttl.as_ref().map(ThreadTtl::from_typed).transpose()? {
        Some(ttl) => ttl.apply(&mut doc),
        None => retention::touch(&mut doc),
    }
    doc["updated_at"] = now_iso().into();
    if !app.store.update(Kind::Thread, &doc).await? {
        return Err(ApiError::not_found(format!(
            "Thread with ID {id} not found"
        )));
    }
    thread(doc, false)
}

/// Prune threads now: the caller's threads named, deleted (`delete`) or cut to their
/// latest checkpoint (`keep_latest`).
#[utoipa::path(post, path = "/threads/prune", tag = "Threads", request_body = ThreadPruneRequest,
    responses((status = 200, body = ThreadPruneResponse), (status = 422, body = ErrorResponse)))]
async fn prune(
    State(app): Shared,
    caller: Caller,
    Body(body): Body<ThreadPruneRequest>,
) -> Result<Json<ThreadPruneResponse>, ApiError> {
    let strategy = match body.strategy {
        None | Some(TtlStrategyName::Delete) => TtlStrategy::Delete,
        Some(TtlStrategyName::KeepLatest) => TtlStrategy::KeepLatest,
    };
    let ids: Vec<String> = body
        .thread_ids
        .iter()
        .map(|i| uuid_path("thread", i))
        .collect::<Result<_, _>>()?;
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
    Ok(Json(ThreadPruneResponse {
        pruned_count: pruned,
    }))
}

/// Delete a thread with its runs and checkpoints.
#[utoipa::path(delete, path = "/threads/{thread_id}", tag = "Threads",
    params(("thread_id" = String, Path, format = Uuid)),
    responses((status = 204), (status = 404, body = ErrorResponse)))]
async fn remove(
    State(app): Shared,
    caller: Caller,
    Path(id): Path<String>,
) -> Result<StatusCode, ApiError> {
    let doc = found(&app, &caller, &id, Verb::Delete).await?;
    let id = doc["thread_id"].as_str().unwrap_or_default().to_owned();
    delete_thread(&app, &id).await?;
    Ok(StatusCode::NO_CONTENT)
}

/// Deletes a thread. Its runs first: stopped, and writing nothing more (here or on another
/// instance), so nothing of the thread comes back after it is gone; then its document, runs
/// and crons in one transaction, which also says which of its runs were claimed as it went
/// (queued after the first stop): those are stopped too; then its checkpoints, from the
/// saver every served graph shares (whatever graph, if any, the thread's metadata names).
pub(crate) async fn delete_thread(app: &App, id: &str) -> Result<(), ApiError> {
    app.runs.stop_thread(id).await?;
    let claimed = app.store.delete_thread(id).await?;
    app.runs.stop_claimed(&claimed).await;
    app.runs.delete_checkpoints(id).await
}

/// What a search or count filters threads by.
struct Filter<'a> {
    ids: Option<&'a [String]>,
    metadata: Option<&'a Map<String, Value>>,
    values: Option<&'a Map<String, Value>>,
    status: Option<&'static str>,
}

/// What a search or count body asks for, within what the caller may see.
async fn matching(
    app: &App,
    caller: &Caller,
    request: Value,
    filter: Filter<'_>,
) -> Result<store::Query, ApiError> {
    let grant = app
        .grant(caller, Resource::Threads, Verb::Search, &request)
        .await?;
    let ids: Option<Vec<String>> = filter
        .ids
        .map(|ids| ids.iter().map(|i| uuid_path("thread", i)).collect())
        .transpose()?;
    Ok(store::Query {
        metadata: filter.metadata.cloned().unwrap_or_default(),
        owner: grant.scope(),
        values: filter.values.cloned().unwrap_or_default(),
        status: filter.status.map(str::to_owned),
        ids,
        ..store::Query::default()
    })
}

/// Search threads.
#[utoipa::path(post, path = "/threads/search", tag = "Threads", request_body = ThreadSearchRequest,
    responses((status = 200, body = Vec<Thread>), (status = 422, body = ErrorResponse)))]
async fn search(
    State(app): Shared,
    caller: Caller,
    Body(body): Body<ThreadSearchRequest>,
) -> Result<(HeaderMap, Json<Vec<Value>>), ApiError> {
    let extract = body.extract.as_ref().map(Extract::new).transpose()?;
    let filter = Filter {
        ids: body.ids.as_deref(),
        metadata: body.metadata.as_ref(),
        values: body.values.as_ref(),
        status: body.status.map(|s| s.as_str()),
    };
    let query = matching(&app, &caller, as_value(&body), filter).await?;
    let fields = field_names(body.select.as_ref());
    let (docs, found) = Paging {
        page: body.page,
        sort_by: body.sort_by.unwrap_or_default().field(),
        order: body.sort_order.unwrap_or_default(),
    }
    .fetch(&app, Searched::Docs(Kind::Thread), &query)
    .await?;
    let page = docs
        .into_iter()
        .map(|doc| {
            let doc = retention::public(doc, false);
            let extracted = extract.as_ref().map(|e| e.of(&doc));
            let out = select(as_value(&typed::<Thread>(doc)?), fields.as_deref());
            // `extracted` is kept whatever `select` says: it was asked for.
            Ok(match (extracted, out) {
                (Some(x), Value::Object(mut m)) => {
                    m.insert("extracted".into(), x);
                    Value::Object(m)
                }
                (_, out) => out,
            })
        })
        .collect::<Result<Vec<Value>, ApiError>>()?;
    Ok(found.respond(page))
}

/// A search's `extract`: names, each with the path of a value in the thread.
struct Extract {
    paths: Vec<(String, Vec<Step>)>,
}

/// One step of an extract path: a field, or an index (negative: from the end).
enum Step {
    Field(String),
    Index(i64),
}

/// Extract names a search may ask for at most.
const MAX_EXTRACT: usize = 10;

impl Extract {
    fn new(asked: &BTreeMap<String, String>) -> Result<Extract, ApiError> {
        if asked.len() > MAX_EXTRACT {
            return Err(ApiError::invalid(format!(
                "extract: at most {MAX_EXTRACT} paths"
            )));
        }
        let paths = asked
            .iter()
            .map(|(name, path)| Ok((name.clone(), Extract::parse(path)?)))
            .collect::<Result<_, ApiError>>()?;
        Ok(Extract { paths })
    }

    /// `values.messages[-1].content` as steps; the first must be one of the thread's
    /// `values`, `metadata`, `config` or `interrupts`.
    fn parse(path: &str) -> Result<Vec<Step>, ApiError> {
        let bad = |why: &str| ApiError::invalid(format!("extract: path '{path}': {why}"));
        let mut steps = Vec::new();
        for part in path.split('.') {
            let (field, mut rest) = match part.find('[') {
                Some(i) => (&part[..i], &part[i..]),
                None => (part, ""),
            };
            if field.is_empty() {
                return Err(bad("an empty field name"));
            }
            steps.push(Step::Field(field.to_owned()));
            while let Some(inner) = rest.strip_prefix('[') {
                let end = inner.find(']').ok_or_else(|| bad("an unclosed '['"))?;
                let index: i64 = inner[..end]
                    .parse()
                    .map_err(|_| bad("an index must be an integer"))?;
                steps.push(Step::Index(index));
                rest = &inner[end + 1..];
            }
            if !rest.is_empty() {
                return Err(bad("text after an index"));
            }
        }
        match steps.first() {
            Some(Step::Field(f))
                if matches!(f.as_str(), "values" | "metadata" | "config" | "interrupts") => {}
            _ => {
                return Err(bad(
                    "it must start with values, metadata, config or interrupts",
                ));
            }
        }
        Ok(steps)
    }

    /// What the paths name in `thread` (`null` where a path leads nowhere).
    fn of(&self, thread: &Value) -> Value {
        let mut out = Map::new();
        for (name, steps) in &self.paths {
            let mut at = Some(thread);
            for step in steps {
                at = match (step, at) {
                    (Step::Field(f), Some(Value::Object(m))) => m.get(f),
                    (Step::Index(i), Some(Value::Array(a))) => {
                        let i = if *i < 0 {
                            i64::try_from(a.len()).ok().map(|n| n + i)
                        } else {
                            Some(*i)
                        };
                        i.and_then(|i| usize::try_from(i).ok())
                            .and_then(|i| a.get(i))
                    }
                    _ => None,
                };
            }
            out.insert(name.clone(), at.cloned().unwrap_or(Value::Null));
        }
        Value::Object(out)
    }
}

/// Count threads.
#[utoipa::path(post, path = "/threads/count", tag = "Threads", request_body = ThreadCountRequest,
    responses((status = 200, body = u64, content_type = "application/json"), (status = 422, body = ErrorResponse)))]
async fn count(
    State(app): Shared,
    caller: Caller,
    Body(body): Body<ThreadCountRequest>,
) -> Result<Json<u64>, ApiError> {
    let filter = Filter {
        ids: None,
        metadata: body.metadata.as_ref(),
        values: body.values.as_ref(),
        status: body.status.map(|s| s.as_str()),
    };
    let query = matching(&app, &caller, as_value(&body), filter).await?;
    Ok(Json(app.store.count(Kind::Thread, &query).await?))
}

/// Copy a thread: a new thread with its checkpoints.
#[utoipa::path(post, path = "/threads/{thread_id}/copy", tag = "Threads",
    params(("thread_id" = String, Path, format = Uuid)),
    responses((status = 200, body = Thread), (status = 404, body = ErrorResponse)))]
async fn copy(
    State(app): Shared,
    caller: Caller,
    Path(id): Path<String>,
) -> Result<Json<Thread>, ApiError> {
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
    thread(doc, false)
}

/// The ThreadState of a thread with no checkpoint.
fn empty_state() -> ThreadState {
    ThreadState {
        values: json!({}),
        next: Vec::new(),
        tasks: Vec::new(),
        checkpoint: Value::Null,
        metadata: Value::Null,
        created_at: None,
        parent_checkpoint: Value::Null,
        interrupts: Vec::new(),
        checkpoint_id: None,
        parent_checkpoint_id: None,
    }
}

async fn state_of(
    app: &App,
    caller: &Caller,
    id: &str,
    checkpoint_id: Option<&str>,
    subgraphs: bool,
) -> Result<Json<ThreadState>, ApiError> {
    let doc = found(app, caller, id, Verb::Read).await?;
    let checkpoint_id = checkpoint_id
        .map(|c| uuid_path("checkpoint", c))
        .transpose()?;
    let checkpoint_id = checkpoint_id.as_deref();
    let Some(graph) = graph_of(app, &doc) else {
        return Ok(Json(empty_state()));
    };
    let thread = doc["thread_id"].as_str().unwrap_or_default();
    match graph.state(thread, checkpoint_id, subgraphs).await? {
        Some(s) => typed(s).map(Json),
        None if checkpoint_id.is_some() => Err(ApiError::not_found(format!(
            "Checkpoint {} not found on thread {thread}",
            checkpoint_id.unwrap_or_default()
        ))),
        None => Ok(Json(empty_state())),
    }
}

/// Get a thread's latest state.
#[utoipa::path(get, path = "/threads/{thread_id}/state", tag = "Thread state",
    params(("thread_id" = String, Path, format = Uuid), ThreadStateQuery),
    responses((status = 200, body = ThreadState), (status = 404, body = ErrorResponse)))]
async fn state(
    State(app): Shared,
    caller: Caller,
    Path(id): Path<String>,
    Params(p): Params<ThreadStateQuery>,
) -> Result<Json<ThreadState>, ApiError> {
    state_of(&app, &caller, &id, None, p.subgraphs.unwrap_or(false)).await
}

/// Get a thread's state at a checkpoint.
#[utoipa::path(get, path = "/threads/{thread_id}/state/{checkpoint_id}", tag = "Thread state",
    params(("thread_id" = String, Path, format = Uuid), ("checkpoint_id" = String, Path),
        ThreadStateQuery),
    responses((status = 200, body = ThreadState), (status = 404, body = ErrorResponse)))]
async fn state_at(
    State(app): Shared,
    caller: Caller,
    Path((id, checkpoint_id)): Path<(String, String)>,
    Params(p): Params<ThreadStateQuery>,
) -> Result<Json<ThreadState>, ApiError> {
    let subgraphs = p.subgraphs.unwrap_or(false);
    state_of(&app, &caller, &id, Some(&checkpoint_id), subgraphs).await
}

/// Get a thread's state at a checkpoint named in the body.
#[utoipa::path(post, path = "/threads/{thread_id}/state/checkpoint", tag = "Thread state",
    params(("thread_id" = String, Path, format = Uuid)),
    request_body = ThreadStateCheckpointRequest,
    responses((status = 200, body = ThreadState), (status = 404, body = ErrorResponse)))]
async fn state_at_body(
    State(app): Shared,
    caller: Caller,
    Path(id): Path<String>,
    Body(body): Body<ThreadStateCheckpointRequest>,
) -> Result<Json<ThreadState>, ApiError> {
    let cp = body.checkpoint.and_then(|c| c.checkpoint_id);
    let subgraphs = body.subgraphs.unwrap_or(false);
    state_of(&app, &caller, &id, cp.as_deref(), subgraphs).await
}

/// Update a thread's state, as if a node had returned the values.
#[utoipa::path(post, path = "/threads/{thread_id}/state", tag = "Thread state",
    params(("thread_id" = String, Path, format = Uuid)), request_body = ThreadStateUpdate,
    responses((status = 200, body = ThreadStateUpdateResponse),
        (status = 400, body = ErrorResponse), (status = 404, body = ErrorResponse),
        (status = 409, body = ErrorResponse), (status = 422, body = ErrorResponse)))]
async fn update_state(
    State(app): Shared,
    caller: Caller,
    Path(id): Path<String>,
    Body(body): Body<ThreadStateUpdate>,
) -> Result<Json<ThreadStateUpdateResponse>, ApiError> {
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
    let checkpoint_id = body
        .checkpoint_id
        .or_else(|| body.checkpoint.and_then(|c| c.checkpoint_id))
        .map(|c| uuid_path("checkpoint", &c))
        .transpose()?;
    let written = graph
        .update_state(
            &thread,
            body.values,
            body.as_node.as_deref(),
            checkpoint_id.as_deref(),
        )
        .await?;
    app.runs.refresh_thread(&thread, None, false).await?;
    app.runs.state_written(&thread).await;
    let checkpoint = CheckpointConfig {
        thread_id: Some(thread),
        checkpoint_ns: Some(String::new()),
        checkpoint_id: Some(written.clone()),
        checkpoint_map: None,
    };
    Ok(Json(ThreadStateUpdateResponse {
        configurable: checkpoint.clone(),
        checkpoint,
        checkpoint_id: written,
    }))
}

/// What a history read asks.
struct HistoryAsk {
    limit: u64,
    before: Option<String>,
    metadata: Map<String, Value>,
    /// Whose checkpoints (`""`: the root graph's, else a subgraph's namespace).
    ns: String,
}

async fn history_of(
    app: &App,
    caller: &Caller,
    id: &str,
    ask: HistoryAsk,
) -> Result<Json<Vec<ThreadState>>, ApiError> {
    let (limit, _) = app
        .limits
        .page(usize::try_from(ask.limit).unwrap_or(usize::MAX), 0)?;
    let before = ask
        .before
        .map(|b| uuid_path("checkpoint", &b))
        .transpose()?;
    let doc = found(app, caller, id, Verb::Read).await?;
    let Some(graph) = graph_of(app, &doc) else {
        return Ok(Json(Vec::new()));
    };
    let filter = ListFilter {
        before,
        limit: Some(limit),
        metadata: ask.metadata.into_iter().collect(),
    };
    let thread = doc["thread_id"].as_str().unwrap_or_default();
    graph
        .history(thread, &ask.ns, filter)
        .await?
        .into_iter()
        .map(typed)
        .collect::<Result<_, _>>()
        .map(Json)
}

/// List a thread's past states, newest first.
#[utoipa::path(get, path = "/threads/{thread_id}/history", tag = "Thread state",
    params(("thread_id" = String, Path, format = Uuid), ThreadHistoryQuery),
    responses((status = 200, body = Vec<ThreadState>), (status = 404, body = ErrorResponse),
        (status = 422, body = ErrorResponse)))]
async fn history_get(
    State(app): Shared,
    caller: Caller,
    Path(id): Path<String>,
    Params(p): Params<ThreadHistoryQuery>,
) -> Result<Json<Vec<ThreadState>>, ApiError> {
    let ask = HistoryAsk {
        limit: p.limit.unwrap_or(10),
        before: p.before,
        metadata: Map::new(),
        ns: String::new(),
    };
    history_of(&app, &caller, &id, ask).await
}

/// Search a thread's past states, newest first.
#[utoipa::path(post, path = "/threads/{thread_id}/history", tag = "Thread state",
    params(("thread_id" = String, Path, format = Uuid)), request_body = ThreadStateSearch,
    responses((status = 200, body = Vec<ThreadState>), (status = 404, body = ErrorResponse),
        (status = 422, body = ErrorResponse)))]
async fn history_post(
    State(app): Shared,
    caller: Caller,
    Path(id): Path<String>,
    Body(body): Body<ThreadStateSearch>,
) -> Result<Json<Vec<ThreadState>>, ApiError> {
    let ask = HistoryAsk {
        limit: body.limit.unwrap_or(1),
        before: body.before.as_ref().and_then(|b| b.checkpoint_id()),
        metadata: body.metadata.unwrap_or_default(),
        ns: body
            .checkpoint
            .and_then(|c| c.checkpoint_ns)
            .unwrap_or_default(),
    };
    history_of(&app, &caller, &id, ask).await
}
