//! `/assistants`: a graph with its settings (`context`, `config`, `metadata`), versioned.
//! Each served graph has a system assistant whose id is derived from the graph id, as
//! langgraph-api derives it, so ids stay the same across restarts and servers.

use std::collections::BTreeMap;
use std::sync::Arc;

use axum::Json;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};
use serde_json::{Map, Value, json};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::models::assistants::{
    Assistant, AssistantCountRequest, AssistantCreate, AssistantDeleteQuery, AssistantGraphQuery,
    AssistantPatch, AssistantSearchRequest, AssistantVersionChange, AssistantVersionsSearchRequest,
    GraphSchema, SubgraphsQuery,
};
use super::models::runs::ConfigBody;
use super::models::{Body, ErrorResponse, IfExists, Object, Params, as_value, typed};
use super::paging::{Paging, Searched, contains, field_names, select};
use super::{App, Caller, Grant, Shared, refuse_auth_user, uuid_path};
use crate::auth::{Resource, Verb};
use crate::error::ApiError;
use crate::store::{self, Kind};
use crate::time::now_iso;

pub(super) fn routes() -> OpenApiRouter<Arc<App>> {
    OpenApiRouter::new()
        .routes(routes!(create))
        .routes(routes!(search))
        .routes(routes!(count))
        .routes(routes!(read, update, remove))
        .routes(routes!(graph))
        .routes(routes!(schemas))
        .routes(routes!(subgraphs))
        .routes(routes!(subgraphs_ns))
        .routes(routes!(versions))
        .routes(routes!(latest))
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
fn settings(
    config: Option<&ConfigBody>,
    context: Option<&Object>,
) -> Result<(Value, Value), ApiError> {
    let config = match as_value(&config) {
        Value::Object(m) => m,
        _ => Map::new(),
    };
    let configurable = config.get("configurable").and_then(Value::as_object);
    if let (Some(_), Some(c)) = (context, configurable)
        && !c.is_empty()
    {
        return Err(ApiError::bad_request(
            "Cannot specify both configurable and context. Prefer setting context alone. Context was introduced in LangGraph 0.6.0 and is the long term planned replacement for configurable.",
        ));
    }
    let context = context
        .cloned()
        .unwrap_or_else(|| configurable.cloned().unwrap_or_default());
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

/// A stored assistant (or version) as the API answers with it.
fn assistant(doc: Value) -> Result<Json<Assistant>, ApiError> {
    typed(doc).map(Json)
}

/// Create an assistant.
#[utoipa::path(post, path = "/assistants", tag = "Assistants", request_body = AssistantCreate,
    responses((status = 200, body = Assistant), (status = 404, body = ErrorResponse),
        (status = 409, body = ErrorResponse), (status = 422, body = ErrorResponse)))]
async fn create(
    State(app): Shared,
    caller: Caller,
    Body(body): Body<AssistantCreate>,
) -> Result<Json<Assistant>, ApiError> {
    let grant = app
        .grant(
            &caller,
            Resource::Assistants,
            Verb::Create,
            &as_value(&body),
        )
        .await?;
    let graph_id = body
        .graph_id
        .clone()
        .ok_or_else(|| ApiError::invalid("graph_id: a required property"))?;
    if !app.graphs.contains_key(&graph_id) {
        let graphs: Vec<&str> = app.graphs.keys().map(String::as_str).collect();
        return Err(ApiError::not_found(format!(
            "Graph '{graph_id}' not found. Expected one of: {graphs:?}"
        )));
    }
    let id = match &body.assistant_id {
        Some(id) => uuid_path("assistant", id)?,
        None => uuid::Uuid::new_v4().to_string(),
    };
    let (config, context) = settings(body.config.as_ref(), body.context.as_ref())?;
    check_context(&app, &caller, &graph_id, &context)?;
    let mut metadata = body.metadata.clone().unwrap_or_default();
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
        "name": body.name.clone().unwrap_or_else(|| "Untitled".to_owned()),
        "created_at": now, "updated_at": now, "version": 1,
        "description": body.description,
    });
    if !app.store.insert(Kind::Assistant, &doc).await? {
        let exists = || ApiError::conflict(format!("Assistant {id} already exists"));
        return match body.if_exists.unwrap_or_default() {
            IfExists::DoNothing => match app.store.get(Kind::Assistant, &id).await? {
                Some(kept) if visible(&grant, &kept) => assistant(kept),
                _ => Err(exists()),
            },
            IfExists::Raise => Err(exists()),
        };
    }
    app.store.put_version(&id, 1, &version_doc(&doc)).await?;
    assistant(doc)
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

/// Get an assistant.
#[utoipa::path(get, path = "/assistants/{assistant_id}", tag = "Assistants",
    params(("assistant_id" = String, Path, format = Uuid)),
    responses((status = 200, body = Assistant), (status = 404, body = ErrorResponse),
        (status = 422, body = ErrorResponse)))]
async fn read(
    State(app): Shared,
    caller: Caller,
    Path(id): Path<String>,
) -> Result<Json<Assistant>, ApiError> {
    assistant(found(&app, &caller, &id, Verb::Read).await?)
}

/// Patch an assistant: a new version.
#[utoipa::path(patch, path = "/assistants/{assistant_id}", tag = "Assistants",
    params(("assistant_id" = String, Path, format = Uuid)), request_body = AssistantPatch,
    responses((status = 200, body = Assistant), (status = 403, body = ErrorResponse),
        (status = 404, body = ErrorResponse), (status = 422, body = ErrorResponse)))]
async fn update(
    State(app): Shared,
    caller: Caller,
    Path(id): Path<String>,
    Body(body): Body<AssistantPatch>,
) -> Result<Json<Assistant>, ApiError> {
    let mut doc = found(&app, &caller, &id, Verb::Update).await?;
    if let Some(graph_id) = &body.graph_id {
        if !app.graphs.contains_key(graph_id) {
            return Err(ApiError::not_found(format!("Graph '{graph_id}' not found")));
        }
        doc["graph_id"] = graph_id.as_str().into();
    }
    if body.config.is_some() || body.context.is_some() {
        let (config, context) = settings(body.config.as_ref(), body.context.as_ref())?;
        check_context(
            &app,
            &caller,
            doc["graph_id"].as_str().unwrap_or_default(),
            &context,
        )?;
        doc["config"] = config;
        doc["context"] = context;
    }
    if let Some(meta) = &body.metadata
        && let Some(existing) = doc["metadata"].as_object_mut()
    {
        existing.extend(meta.clone());
        let grant = app
            .grant(
                &caller,
                Resource::Assistants,
                Verb::Update,
                &as_value(&body),
            )
            .await?;
        grant.stamp(existing);
        app.limits.metadata("assistant", existing)?;
    }
    if let Some(name) = &body.name {
        doc["name"] = name.as_str().into();
    }
    if let Some(description) = &body.description {
        doc["description"] = description.as_str().into();
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
    assistant(doc)
}

/// Delete an assistant (and, asked, its threads).
#[utoipa::path(delete, path = "/assistants/{assistant_id}", tag = "Assistants",
    params(("assistant_id" = String, Path, format = Uuid), AssistantDeleteQuery),
    responses((status = 204), (status = 403, body = ErrorResponse),
        (status = 404, body = ErrorResponse), (status = 422, body = ErrorResponse)))]
async fn remove(
    State(app): Shared,
    caller: Caller,
    Path(id): Path<String>,
    Params(params): Params<AssistantDeleteQuery>,
) -> Result<StatusCode, ApiError> {
    let doc = found(&app, &caller, &id, Verb::Delete).await?;
    let id = doc["assistant_id"].as_str().unwrap_or_default().to_owned();
    if params.delete_threads.unwrap_or(false) {
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
            super::threads::delete_thread(&app, tid).await?;
        }
    }
    app.store.delete(Kind::Assistant, &id).await?;
    Ok(StatusCode::NO_CONTENT)
}

/// What a search or count filters assistants by.
struct Filter<'a> {
    graph_id: Option<&'a str>,
    name: Option<&'a str>,
    metadata: Option<&'a Object>,
}

/// What a search or count body asks for, within what the caller may see (the served
/// graphs' own assistants are everyone's).
async fn matching(
    app: &App,
    caller: &Caller,
    request: Value,
    filter: Filter<'_>,
) -> Result<store::Query, ApiError> {
    let grant = app
        .grant(caller, Resource::Assistants, Verb::Search, &request)
        .await?;
    let mut fields = Map::new();
    if let Some(graph_id) = filter.graph_id {
        fields.insert("graph_id".into(), graph_id.into());
    }
    Ok(store::Query {
        metadata: filter.metadata.cloned().unwrap_or_default(),
        owner: grant.scope(),
        or_system: true,
        fields,
        name: filter.name.map(str::to_owned),
        ..store::Query::default()
    })
}

/// Search assistants.
#[utoipa::path(post, path = "/assistants/search", tag = "Assistants",
    request_body = AssistantSearchRequest,
    responses((status = 200, body = Vec<Assistant>), (status = 422, body = ErrorResponse)))]
async fn search(
    State(app): Shared,
    caller: Caller,
    Body(body): Body<AssistantSearchRequest>,
) -> Result<(HeaderMap, Json<Vec<Value>>), ApiError> {
    let filter = Filter {
        graph_id: body.graph_id.as_deref(),
        name: body.name.as_deref(),
        metadata: body.metadata.as_ref(),
    };
    let query = matching(&app, &caller, as_value(&body), filter).await?;
    let fields = field_names(body.select.as_ref());
    let (docs, found) = Paging {
        page: body.page,
        sort_by: body.sort_by.unwrap_or_default().field(),
        order: body.sort_order.unwrap_or_default(),
    }
    .fetch(&app, Searched::Docs(Kind::Assistant), &query)
    .await?;
    let page = docs
        .into_iter()
        .map(|doc| {
            Ok(select(
                as_value(&typed::<Assistant>(doc)?),
                fields.as_deref(),
            ))
        })
        .collect::<Result<Vec<Value>, ApiError>>()?;
    Ok(found.respond(page))
}

/// Count assistants.
#[utoipa::path(post, path = "/assistants/count", tag = "Assistants",
    request_body = AssistantCountRequest,
    responses((status = 200, body = u64, content_type = "application/json"), (status = 422, body = ErrorResponse)))]
async fn count(
    State(app): Shared,
    caller: Caller,
    Body(body): Body<AssistantCountRequest>,
) -> Result<Json<u64>, ApiError> {
    let filter = Filter {
        graph_id: body.graph_id.as_deref(),
        name: body.name.as_deref(),
        metadata: body.metadata.as_ref(),
    };
    let query = matching(&app, &caller, as_value(&body), filter).await?;
    Ok(Json(app.store.count(Kind::Assistant, &query).await?))
}

fn served(app: &App, doc: &Value) -> Result<Arc<dyn crate::graph::ServedGraph>, ApiError> {
    let graph_id = doc["graph_id"].as_str().unwrap_or_default();
    app.graphs
        .get(graph_id)
        .cloned()
        .ok_or_else(|| ApiError::not_found(format!("Graph '{graph_id}' is no longer served")))
}

/// Get an assistant's graph drawing (nodes and edges).
#[utoipa::path(get, path = "/assistants/{assistant_id}/graph", tag = "Assistants",
    params(("assistant_id" = String, Path, format = Uuid), AssistantGraphQuery),
    responses((status = 200, body = Object), (status = 404, body = ErrorResponse),
        (status = 422, body = ErrorResponse)))]
async fn graph(
    State(app): Shared,
    caller: Caller,
    Path(id): Path<String>,
    Params(params): Params<AssistantGraphQuery>,
) -> Result<Json<Value>, ApiError> {
    let doc = found(&app, &caller, &id, Verb::Read).await?;
    // `xray=true` draws every level, a number that many, `false`/absent none.
    let xray = match params.xray.as_deref() {
        None | Some("false" | "False" | "0" | "") => 0,
        Some("true" | "True") => usize::MAX,
        Some(n) => n
            .parse()
            .map_err(|_| ApiError::invalid("xray: must be true, false or a depth"))?,
    };
    Ok(Json(served(&app, &doc)?.drawing(xray)))
}

/// Get an assistant's graph schemas.
#[utoipa::path(get, path = "/assistants/{assistant_id}/schemas", tag = "Assistants",
    params(("assistant_id" = String, Path, format = Uuid)),
    responses((status = 200, body = GraphSchema), (status = 404, body = ErrorResponse),
        (status = 422, body = ErrorResponse)))]
async fn schemas(
    State(app): Shared,
    caller: Caller,
    Path(id): Path<String>,
) -> Result<Json<GraphSchema>, ApiError> {
    let doc = found(&app, &caller, &id, Verb::Read).await?;
    let graph_id = doc["graph_id"].as_str().unwrap_or_default();
    typed(served(&app, &doc)?.schemas(graph_id)).map(Json)
}

/// Subgraphs by namespace with their schemas (LangGraph's `get_subgraphs`: all of them, or
/// the one at `namespace`; nested ones too with `recurse`).
async fn subgraphs_of(
    app: &App,
    caller: &Caller,
    id: &str,
    namespace: Option<&str>,
    recurse: bool,
) -> Result<Json<BTreeMap<String, Value>>, ApiError> {
    let doc = found(app, caller, id, Verb::Read).await?;
    let Value::Object(found) = served(app, &doc)?.subgraphs(namespace, recurse) else {
        return Ok(Json(BTreeMap::new()));
    };
    Ok(Json(found.into_iter().collect()))
}

/// Get an assistant's subgraphs, by namespace.
#[utoipa::path(get, path = "/assistants/{assistant_id}/subgraphs", tag = "Assistants",
    params(("assistant_id" = String, Path, format = Uuid), SubgraphsQuery),
    responses((status = 200, body = BTreeMap<String, Object>),
        (status = 404, body = ErrorResponse), (status = 422, body = ErrorResponse)))]
async fn subgraphs(
    State(app): Shared,
    caller: Caller,
    Path(id): Path<String>,
    Params(p): Params<SubgraphsQuery>,
) -> Result<Json<BTreeMap<String, Value>>, ApiError> {
    subgraphs_of(&app, &caller, &id, None, p.recurse.unwrap_or(false)).await
}

/// Get one of an assistant's subgraphs (and, with `recurse`, those under it).
#[utoipa::path(get, path = "/assistants/{assistant_id}/subgraphs/{namespace}",
    tag = "Assistants",
    params(("assistant_id" = String, Path, format = Uuid), ("namespace" = String, Path),
        SubgraphsQuery),
    responses((status = 200, body = BTreeMap<String, Object>),
        (status = 404, body = ErrorResponse), (status = 422, body = ErrorResponse)))]
async fn subgraphs_ns(
    State(app): Shared,
    caller: Caller,
    Path((id, ns)): Path<(String, String)>,
    Params(p): Params<SubgraphsQuery>,
) -> Result<Json<BTreeMap<String, Value>>, ApiError> {
    subgraphs_of(&app, &caller, &id, Some(&ns), p.recurse.unwrap_or(false)).await
}

/// List an assistant's versions, newest first.
#[utoipa::path(post, path = "/assistants/{assistant_id}/versions", tag = "Assistants",
    params(("assistant_id" = String, Path, format = Uuid)),
    request_body = AssistantVersionsSearchRequest,
    responses((status = 200, body = Vec<Assistant>), (status = 404, body = ErrorResponse),
        (status = 422, body = ErrorResponse)))]
async fn versions(
    State(app): Shared,
    caller: Caller,
    Path(id): Path<String>,
    Body(body): Body<AssistantVersionsSearchRequest>,
) -> Result<Json<Vec<Assistant>>, ApiError> {
    let doc = found(&app, &caller, &id, Verb::Read).await?;
    let (limit, offset) = app.limits.page(
        usize::try_from(body.page.limit).unwrap_or(usize::MAX),
        usize::try_from(body.page.offset).unwrap_or(usize::MAX),
    )?;
    app.store
        .versions(doc["assistant_id"].as_str().unwrap_or_default())
        .await?
        .into_iter()
        .filter(|v| {
            body.metadata
                .as_ref()
                .is_none_or(|m| contains(&v["metadata"], m))
        })
        .skip(offset)
        .take(limit)
        .map(typed)
        .collect::<Result<_, _>>()
        .map(Json)
}

/// Make one of an assistant's versions its latest.
#[utoipa::path(post, path = "/assistants/{assistant_id}/latest", tag = "Assistants",
    params(("assistant_id" = String, Path, format = Uuid), AssistantVersionChange),
    request_body = AssistantVersionChange,
    responses((status = 200, body = Assistant), (status = 404, body = ErrorResponse),
        (status = 422, body = ErrorResponse)))]
async fn latest(
    State(app): Shared,
    caller: Caller,
    Path(id): Path<String>,
    Params(query): Params<AssistantVersionChange>,
    Body(body): Body<AssistantVersionChange>,
) -> Result<Json<Assistant>, ApiError> {
    let doc = found(&app, &caller, &id, Verb::Update).await?;
    let version = body
        .version
        .or(query.version)
        .ok_or_else(|| ApiError::invalid("version: a required property"))?;
    let id = doc["assistant_id"].as_str().unwrap_or_default().to_owned();
    let chosen = app
        .store
        .versions(&id)
        .await?
        .into_iter()
        .find(|v| v["version"].as_u64() == Some(version))
        .ok_or_else(|| ApiError::not_found(format!("Assistant {id} has no version {version}")))?;
    let mut next = chosen;
    next["created_at"] = doc["created_at"].clone();
    next["updated_at"] = now_iso().into();
    app.store.put(Kind::Assistant, &next).await?;
    assistant(next)
}
