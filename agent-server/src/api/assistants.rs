//! `/assistants`: a graph with its settings (`context`, `config`, `metadata`), versioned.
//! Each served graph has a system assistant whose id is derived from the graph id, as
//! langgraph-api derives it, so ids stay the same across restarts and servers.

use std::sync::Arc;

use axum::Router;
use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use serde_json::{Map, Value, json};

use super::body::{Fields, contains, object};
use super::{App, Caller, Grant, JsonBody, Page, Shared, refuse_auth_user, uuid_path};
use crate::auth::{Resource, Verb};
use crate::error::ApiError;
use crate::store::{self, Kind};
use crate::time::now_iso;

pub(super) fn routes() -> Router<Arc<App>> {
    Router::new()
        .route("/assistants", post(create))
        .route("/assistants/search", post(search))
        .route("/assistants/count", post(count))
        .route("/assistants/{id}", get(read).patch(update).delete(remove))
        .route("/assistants/{id}/graph", get(graph))
        .route("/assistants/{id}/schemas", get(schemas))
        .route("/assistants/{id}/subgraphs", get(subgraphs))
        .route("/assistants/{id}/subgraphs/{ns}", get(subgraphs_ns))
        .route("/assistants/{id}/versions", post(versions))
        .route("/assistants/{id}/latest", post(latest))
}

/// The namespace langgraph-api derives system assistant ids in.
const GRAPH_NAMESPACE: uuid::Uuid = uuid::Uuid::from_u128(0x6ba7b821_9dad_11d1_80b4_00c04fd430c8);

/// The system assistant id of `graph_id`.
pub(crate) fn system_id(graph_id: &str) -> String {
    uuid::Uuid::new_v5(&GRAPH_NAMESPACE, graph_id.as_bytes()).to_string()
}

/// The system assistant of `graph_id`, with the graph's description when it has one.
pub(crate) fn system_assistant(graph_id: &str, description: Option<&str>) -> Value {
    let now = now_iso();
    json!({
        "assistant_id": system_id(graph_id), "graph_id": graph_id,
        "config": {}, "context": {}, "metadata": {"created_by": "system"},
        "name": graph_id, "created_at": now, "updated_at": now, "version": 1, "description": description,
    })
}

/// Whether `doc` is one of the served graphs' own assistants (visible to everyone).
fn is_system(doc: &Value) -> bool {
    doc["metadata"]["created_by"] == "system"
}

/// Whether `grant` lets its caller see the assistant `doc`.
pub(super) fn visible(grant: &Grant, doc: &Value) -> bool {
    is_system(doc) || grant.admits(&doc["metadata"])
}

/// An assistant named by a run body, if `caller` may run it: its UUID, or a graph id (its
/// system assistant).
pub(crate) async fn resolve(app: &App, caller: &Caller, id: &str) -> Result<Value, ApiError> {
    let grant = app
        .grant(
            caller,
            Resource::Assistants,
            Verb::Read,
            &json!({"assistant_id": id}),
        )
        .await?;
    let key = if uuid::Uuid::parse_str(id).is_ok() {
        id.to_owned()
    } else if app.graphs.contains_key(id) {
        system_id(id)
    } else {
        let graphs: Vec<&str> = app.graphs.keys().map(String::as_str).collect();
        return Err(ApiError::invalid(format!(
            "Invalid assistant: '{id}'. Must be either:\n- A valid assistant UUID, or\n- One of the registered graphs: {}",
            graphs.join(", ")
        )));
    };
    app.store
        .get(Kind::Assistant, &key)
        .await?
        .filter(|doc| visible(&grant, doc))
        .ok_or_else(|| ApiError::not_found("Thread or assistant not found."))
}

/// `config` and `context` as langgraph-api keeps them: the context mirrored into
/// `config.configurable`, and both given at once refused.
fn settings(body: &Map<String, Value>) -> Result<(Value, Value), ApiError> {
    let config = body.opt_object("config")?.unwrap_or_default();
    let context = body.opt_object("context")?;
    let configurable = config.get("configurable").and_then(Value::as_object);
    if let (Some(_), Some(c)) = (&context, configurable)
        && !c.is_empty()
    {
        return Err(ApiError::bad_request(
            "Cannot specify both configurable and context. Prefer setting context alone. Context was introduced in LangGraph 0.6.0 and is the long term planned replacement for configurable.",
        ));
    }
    let context = context.unwrap_or_else(|| configurable.cloned().unwrap_or_default());
    refuse_auth_user(&context, "context")?;
    let mut config = config;
    config.insert("configurable".into(), Value::Object(context.clone()));
    Ok((Value::Object(config), Value::Object(context)))
}

/// Checks an assistant's `context` against its graph as a run of `caller` would use it.
fn check_context(
    app: &App,
    caller: &Caller,
    graph_id: &str,
    context: &Value,
) -> Result<(), ApiError> {
    if let Some(graph) = app.graphs.get(graph_id) {
        let mut context = context.as_object().cloned().unwrap_or_default();
        if let Some(user) = caller.user_json() {
            context.insert(super::AUTH_USER.into(), user);
        }
        graph.check_context(&Value::Object(context))?;
    }
    Ok(())
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
            Resource::Assistants,
            Verb::Create,
            &Value::Object(body.clone()),
        )
        .await?;
    let graph_id = body
        .opt_str("graph_id")?
        .ok_or_else(|| ApiError::invalid("'graph_id' is a required property"))?;
    if !app.graphs.contains_key(&graph_id) {
        let graphs: Vec<&str> = app.graphs.keys().map(String::as_str).collect();
        return Err(ApiError::not_found(format!(
            "Graph '{graph_id}' not found. Expected one of: {graphs:?}"
        )));
    }
    let id = match body.opt_str("assistant_id")? {
        Some(id) => uuid_path("assistant", &id)?,
        None => uuid::Uuid::new_v4().to_string(),
    };
    let (config, context) = settings(&body)?;
    check_context(&app, &caller, &graph_id, &context)?;
    let mut metadata = body.opt_object("metadata")?.unwrap_or_default();
    app.limits.metadata("assistant", &metadata)?;
    if caller.user.is_some() {
        // `created_by: system` marks the graphs' own assistants, visible to everyone.
        metadata.remove("created_by");
    }
    grant.stamp(&mut metadata);
    let now = now_iso();
    let doc = json!({
        "assistant_id": id, "graph_id": graph_id, "config": config, "context": context,
        "metadata": metadata,
        "name": body.opt_str("name")?.unwrap_or_else(|| "Untitled".to_owned()),
        "created_at": now, "updated_at": now, "version": 1,
        "description": body.opt_str("description")?,
    });
    if !app.store.insert(Kind::Assistant, &doc).await? {
        return match body.opt_str("if_exists")?.as_deref() {
            Some("do_nothing") => match app.store.get(Kind::Assistant, &id).await? {
                Some(kept) if visible(&grant, &kept) => Ok(axum::Json(kept).into_response()),
                _ => Err(ApiError::conflict(format!("Assistant {id} already exists"))),
            },
            _ => Err(ApiError::conflict(format!("Assistant {id} already exists"))),
        };
    }
    app.store.put_version(&id, 1, &version_doc(&doc)).await?;
    Ok(axum::Json(doc).into_response())
}

fn version_doc(doc: &Value) -> Value {
    let mut v = doc.clone();
    if let Some(o) = v.as_object_mut() {
        o.remove("updated_at");
    }
    v
}

/// The assistant `id` if `caller` may `verb` it: another user's is a 404, and the graphs'
/// own assistants are read by everyone and changed only with all access (a 403).
async fn found(app: &App, caller: &Caller, id: &str, verb: Verb) -> Result<Value, ApiError> {
    let id = uuid_path("assistant", id)?;
    let grant = app
        .grant(
            caller,
            Resource::Assistants,
            verb,
            &json!({"assistant_id": id}),
        )
        .await?;
    let missing = || ApiError::not_found(format!("Assistant with ID {id} not found"));
    let doc = app
        .store
        .get(Kind::Assistant, &id)
        .await?
        .ok_or_else(missing)?;
    match verb {
        Verb::Read if visible(&grant, &doc) => Ok(doc),
        _ if matches!(grant, Grant::All)
            || (!is_system(&doc) && grant.admits(&doc["metadata"])) =>
        {
            Ok(doc)
        }
        _ if is_system(&doc) => Err(ApiError::new(
            StatusCode::FORBIDDEN,
            format!("Assistant {id} is a served graph's own; only the operator may change it"),
        )),
        _ => Err(missing()),
    }
}

async fn read(
    State(app): Shared,
    caller: Caller,
    Path(id): Path<String>,
) -> Result<Response, ApiError> {
    Ok(axum::Json(found(&app, &caller, &id, Verb::Read).await?).into_response())
}

async fn update(
    State(app): Shared,
    caller: Caller,
    Path(id): Path<String>,
    JsonBody(body): JsonBody,
) -> Result<Response, ApiError> {
    let body = object(body)?;
    let mut doc = found(&app, &caller, &id, Verb::Update).await?;
    if let Some(graph_id) = body.opt_str("graph_id")? {
        if !app.graphs.contains_key(&graph_id) {
            return Err(ApiError::not_found(format!("Graph '{graph_id}' not found")));
        }
        doc["graph_id"] = graph_id.into();
    }
    if body.contains_key("config") || body.contains_key("context") {
        let (config, context) = settings(&body)?;
        check_context(
            &app,
            &caller,
            doc["graph_id"].as_str().unwrap_or_default(),
            &context,
        )?;
        doc["config"] = config;
        doc["context"] = context;
    }
    if let Some(meta) = body.opt_object("metadata")?
        && let Some(existing) = doc["metadata"].as_object_mut()
    {
        existing.extend(meta);
        let grant = app
            .grant(
                &caller,
                Resource::Assistants,
                Verb::Update,
                &Value::Object(body.clone()),
            )
            .await?;
        grant.stamp(existing);
        app.limits.metadata("assistant", existing)?;
    }
    for key in ["name", "description"] {
        if let Some(v) = body.opt_str(key)? {
            doc[key] = v.into();
        }
    }
    let versions = app
        .store
        .versions(doc["assistant_id"].as_str().unwrap_or_default())
        .await?;
    let version = versions
        .iter()
        .filter_map(|v| v["version"].as_i64())
        .max()
        .unwrap_or(1)
        + 1;
    doc["version"] = version.into();
    doc["updated_at"] = now_iso().into();
    let id = doc["assistant_id"].as_str().unwrap_or_default().to_owned();
    app.store.put(Kind::Assistant, &doc).await?;
    app.store
        .put_version(&id, version, &version_doc(&doc))
        .await?;
    Ok(axum::Json(doc).into_response())
}

#[derive(serde::Deserialize)]
struct DeleteParams {
    delete_threads: Option<String>,
}

async fn remove(
    State(app): Shared,
    caller: Caller,
    Path(id): Path<String>,
    Query(params): Query<DeleteParams>,
) -> Result<Response, ApiError> {
    let doc = found(&app, &caller, &id, Verb::Delete).await?;
    let id = doc["assistant_id"].as_str().unwrap_or_default().to_owned();
    if matches!(params.delete_threads.as_deref(), Some("true" | "1")) {
        let threads = app
            .grant(&caller, Resource::Threads, Verb::Delete, &doc)
            .await?;
        let mut metadata = Map::new();
        metadata.insert("assistant_id".into(), id.clone().into());
        let query = store::Query {
            metadata,
            owner: threads.scope(),
            ..store::Query::default()
        };
        for thread in app.store.search(Kind::Thread, &query).await? {
            let tid = thread["thread_id"].as_str().unwrap_or_default();
            if let Some(g) = app.graphs.get(doc["graph_id"].as_str().unwrap_or_default()) {
                g.delete_thread(tid).await?;
            }
            app.store.delete(Kind::Thread, tid).await?;
        }
    }
    app.store.delete(Kind::Assistant, &id).await?;
    Ok(StatusCode::NO_CONTENT.into_response())
}

/// What a search or count body asks for, within what the caller may see (the served
/// graphs' own assistants are everyone's).
async fn matching(
    app: &App,
    caller: &Caller,
    body: &Map<String, Value>,
) -> Result<store::Query, ApiError> {
    let grant = app
        .grant(
            caller,
            Resource::Assistants,
            Verb::Search,
            &Value::Object(body.clone()),
        )
        .await?;
    let mut fields = Map::new();
    if let Some(graph_id) = body.opt_str("graph_id")? {
        fields.insert("graph_id".into(), graph_id.into());
    }
    Ok(store::Query {
        metadata: body.opt_object("metadata")?.unwrap_or_default(),
        owner: grant.scope(),
        or_system: true,
        fields,
        name: body.opt_str("name")?,
        ..store::Query::default()
    })
}

const SORTS: &[&str] = &[
    "assistant_id",
    "created_at",
    "updated_at",
    "name",
    "graph_id",
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
        app.store.search(Kind::Assistant, &paged),
        app.store.count(Kind::Assistant, &query),
    )?;
    Ok(page.respond(found, total))
}

async fn count(
    State(app): Shared,
    caller: Caller,
    JsonBody(body): JsonBody,
) -> Result<Response, ApiError> {
    let body = object(body)?;
    let query = matching(&app, &caller, &body).await?;
    Ok(axum::Json(app.store.count(Kind::Assistant, &query).await?).into_response())
}

fn served(app: &App, doc: &Value) -> Result<Arc<dyn crate::graph::ServedGraph>, ApiError> {
    let graph_id = doc["graph_id"].as_str().unwrap_or_default();
    app.graphs
        .get(graph_id)
        .cloned()
        .ok_or_else(|| ApiError::not_found(format!("Graph '{graph_id}' is no longer served")))
}

#[derive(serde::Deserialize)]
struct GraphParams {
    xray: Option<String>,
}

async fn graph(
    State(app): Shared,
    caller: Caller,
    Path(id): Path<String>,
    Query(params): Query<GraphParams>,
) -> Result<Response, ApiError> {
    let doc = found(&app, &caller, &id, Verb::Read).await?;
    // `xray=true` draws every level, a number that many, `false`/absent none.
    let xray = match params.xray.as_deref() {
        None | Some("false" | "False" | "0" | "") => 0,
        Some("true" | "True") => usize::MAX,
        Some(n) => n
            .parse()
            .map_err(|_| ApiError::invalid("'xray' must be true, false or a depth"))?,
    };
    Ok(axum::Json(served(&app, &doc)?.drawing(xray)).into_response())
}

async fn schemas(
    State(app): Shared,
    caller: Caller,
    Path(id): Path<String>,
) -> Result<Response, ApiError> {
    let doc = found(&app, &caller, &id, Verb::Read).await?;
    let graph_id = doc["graph_id"].as_str().unwrap_or_default();
    Ok(axum::Json(served(&app, &doc)?.schemas(graph_id)).into_response())
}

#[derive(serde::Deserialize)]
struct SubgraphParams {
    recurse: Option<String>,
}

/// Subgraphs by namespace. Their schemas are not known apart from the parent's (a
/// subgraph's state type is erased in its node), so each entry's schemas are null.
async fn subgraphs_of(
    app: &App,
    caller: &Caller,
    id: &str,
    namespace: Option<&str>,
    recurse: bool,
) -> Result<Response, ApiError> {
    let doc = found(app, caller, id, Verb::Read).await?;
    let names = served(app, &doc)?.subgraphs(recurse || namespace.is_some());
    let mut out = Map::new();
    for name in names {
        if namespace.is_none_or(|ns| name == ns || (recurse && name.starts_with(&format!("{ns}|"))))
        {
            out.insert(
                name,
                json!({"input_schema": null, "output_schema": null, "state_schema": null, "config_schema": null, "context_schema": null}),
            );
        }
    }
    Ok(axum::Json(Value::Object(out)).into_response())
}

fn truthy(v: Option<&str>) -> bool {
    matches!(v, Some("true" | "True" | "1"))
}

async fn subgraphs(
    State(app): Shared,
    caller: Caller,
    Path(id): Path<String>,
    Query(p): Query<SubgraphParams>,
) -> Result<Response, ApiError> {
    subgraphs_of(&app, &caller, &id, None, truthy(p.recurse.as_deref())).await
}

async fn subgraphs_ns(
    State(app): Shared,
    caller: Caller,
    Path((id, ns)): Path<(String, String)>,
    Query(p): Query<SubgraphParams>,
) -> Result<Response, ApiError> {
    subgraphs_of(&app, &caller, &id, Some(&ns), truthy(p.recurse.as_deref())).await
}

async fn versions(
    State(app): Shared,
    caller: Caller,
    Path(id): Path<String>,
    JsonBody(body): JsonBody,
) -> Result<Response, ApiError> {
    let body = object(body)?;
    let doc = found(&app, &caller, &id, Verb::Read).await?;
    let metadata = body.opt_object("metadata")?.unwrap_or_default();
    let (limit, offset) = app.limits.page(
        body.opt_usize("limit")?.unwrap_or(10),
        body.opt_usize("offset")?.unwrap_or(0),
    )?;
    let list: Vec<Value> = app
        .store
        .versions(doc["assistant_id"].as_str().unwrap_or_default())
        .await?
        .into_iter()
        .filter(|v| contains(&v["metadata"], &metadata))
        .skip(offset)
        .take(limit)
        .collect();
    Ok(axum::Json(list).into_response())
}

async fn latest(
    State(app): Shared,
    caller: Caller,
    Path(id): Path<String>,
    JsonBody(body): JsonBody,
) -> Result<Response, ApiError> {
    let body = object(body)?;
    let doc = found(&app, &caller, &id, Verb::Update).await?;
    let version = body
        .opt_usize("version")?
        .ok_or_else(|| ApiError::invalid("'version' is a required property"))?;
    let id = doc["assistant_id"].as_str().unwrap_or_default().to_owned();
    let chosen = app
        .store
        .versions(&id)
        .await?
        .into_iter()
        .find(|v| v["version"].as_u64() == Some(version as u64))
        .ok_or_else(|| ApiError::not_found(format!("Assistant {id} has no version {version}")))?;
    let mut next = chosen;
    next["created_at"] = doc["created_at"].clone();
    next["updated_at"] = now_iso().into();
    app.store.put(Kind::Assistant, &next).await?;
    Ok(axum::Json(next).into_response())
}
