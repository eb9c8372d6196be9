//! `/store/*`: the long-term memory store (agent-core's [`Store`]) as langgraph-sdk's
//! `client.store.*` calls it — `PUT`/`GET`/`DELETE /store/items`, `POST /store/items/search`,
//! `POST /store/namespaces`. Namespaces travel as arrays of labels, except `GET`'s, which
//! is one dotted string in the query (labels cannot contain `.`). TTLs are in minutes.
//! The served graphs' nodes reach the same store (`ctx.store()`).

use std::sync::Arc;
use std::time::Duration;

use agent_core::store::{
    IndexChoice, Item, ListNamespacesOp, MatchCondition, PutOp, SearchItem, SearchOp, StoreError,
    Ttl,
};
use axum::Router;
use axum::extract::{Query, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::{post, put};
use serde::Deserialize;
use serde::de::DeserializeOwned;
use serde_json::{Map, Value, json};

use super::{App, Caller, Grant, JsonBody, Shared};
use crate::auth::{Resource, Verb};
use crate::error::ApiError;
use crate::time::iso_ms;

pub(super) fn routes() -> Router<Arc<App>> {
    Router::new()
        .route(
            "/store/items",
            put(put_item).get(get_item).delete(delete_item),
        )
        .route("/store/items/search", post(search))
        .route("/store/namespaces", post(namespaces))
}

fn parse<T: DeserializeOwned>(body: Value) -> Result<T, ApiError> {
    serde_path_to_error::deserialize(body).map_err(|e| {
        ApiError::invalid(match e.path().to_string().as_str() {
            "." => format!("invalid request body: {}", e.inner()),
            path => format!("{path}: {}", e.inner()),
        })
    })
}

fn store_error(e: StoreError) -> ApiError {
    match e {
        StoreError::Storage { .. } | StoreError::Embed { .. } => ApiError::internal(e.to_string()),
        _ => ApiError::invalid(e.to_string()),
    }
}

/// An item as the API returns it (ISO timestamps).
fn item_json(item: &Item) -> Value {
    json!({
        "namespace": item.namespace,
        "key": item.key,
        "value": item.value,
        "created_at": iso_ms(item.created_at_ms),
        "updated_at": iso_ms(item.updated_at_ms),
    })
}

fn search_item_json(item: &SearchItem) -> Value {
    let mut out = item_json(&item.item);
    out["score"] = json!(item.score);
    out
}

/// A TTL in minutes (`null`: the store's default).
fn ttl(minutes: Option<f64>) -> Result<Ttl, ApiError> {
    match minutes {
        None => Ok(Ttl::StoreDefault),
        Some(m) if m.is_finite() && m > 0.0 => Ok(Ttl::After(Duration::from_secs_f64(m * 60.0))),
        Some(m) => Err(ApiError::invalid(format!(
            "ttl: {m} is not a positive number of minutes"
        ))),
    }
}

#[derive(Deserialize)]
struct PutBody {
    namespace: Vec<String>,
    key: String,
    value: Map<String, Value>,
    /// `false`: not embedded; a list of paths; absent or `null`: the store's fields.
    #[serde(default)]
    index: Option<Value>,
    /// Minutes.
    #[serde(default)]
    ttl: Option<f64>,
}

/// What `caller` may do with `verb` on the store, for a request carrying `value`.
async fn grant(app: &App, caller: &Caller, verb: Verb, value: Value) -> Result<Grant, ApiError> {
    app.grant(caller, Resource::Store, verb, &value).await
}

async fn put_item(
    State(app): Shared,
    caller: Caller,
    JsonBody(body): JsonBody,
) -> Result<Response, ApiError> {
    let grant = grant(&app, &caller, Verb::Put, body.clone()).await?;
    let body: PutBody = parse(body)?;
    grant.namespace(&body.namespace)?;
    let index = match body.index {
        None | Some(Value::Null) => IndexChoice::StoreDefault,
        Some(Value::Bool(false)) => IndexChoice::Off,
        Some(Value::Array(paths)) => IndexChoice::Fields(
            paths
                .into_iter()
                .map(|p| match p {
                    Value::String(s) => Ok(s),
                    other => Err(ApiError::invalid(format!("index: `{other}` is not a path"))),
                })
                .collect::<Result<_, _>>()?,
        ),
        Some(other) => {
            return Err(ApiError::invalid(format!(
                "index: expected false or a list of paths, not {other}"
            )));
        }
    };
    let op = PutOp::new(body.namespace, body.key, body.value)
        .index(index)
        .ttl(ttl(body.ttl)?);
    app.memory.put_op(op).await.map_err(store_error)?;
    Ok(StatusCode::NO_CONTENT.into_response())
}

#[derive(Deserialize)]
struct GetQuery {
    namespace: Option<String>,
    key: String,
    refresh_ttl: Option<bool>,
}

async fn get_item(
    State(app): Shared,
    caller: Caller,
    Query(query): Query<GetQuery>,
) -> Result<Response, ApiError> {
    let namespace: Vec<String> = match query.namespace.as_deref() {
        None | Some("") => Vec::new(),
        Some(dotted) => dotted.split('.').map(str::to_owned).collect(),
    };
    let value = json!({"namespace": namespace, "key": query.key});
    grant(&app, &caller, Verb::Get, value)
        .await?
        .namespace(&namespace)?;
    let mut op = agent_core::store::GetOp::new(namespace, query.key);
    if let Some(refresh) = query.refresh_ttl {
        op = op.refresh_ttl(refresh);
    }
    let results = app
        .memory
        .batch(vec![op.into()])
        .await
        .map_err(store_error)?;
    match results.into_iter().next() {
        Some(agent_core::store::OpResult::Item(Some(item))) => {
            Ok(axum::Json(item_json(&item)).into_response())
        }
        // The SDKs read a missing item as `None` / `null`.
        Some(agent_core::store::OpResult::Item(None)) => {
            Ok(axum::Json(Value::Null).into_response())
        }
        _ => Err(ApiError::internal(
            "the store answered a get with another result",
        )),
    }
}

#[derive(Deserialize)]
struct DeleteBody {
    namespace: Vec<String>,
    key: String,
}

async fn delete_item(
    State(app): Shared,
    caller: Caller,
    JsonBody(body): JsonBody,
) -> Result<Response, ApiError> {
    let grant = grant(&app, &caller, Verb::Delete, body.clone()).await?;
    let body: DeleteBody = parse(body)?;
    grant.namespace(&body.namespace)?;
    app.memory
        .delete(&body.namespace, &body.key)
        .await
        .map_err(store_error)?;
    Ok(StatusCode::NO_CONTENT.into_response())
}

#[derive(Deserialize)]
struct SearchBody {
    #[serde(default)]
    namespace_prefix: Vec<String>,
    #[serde(default)]
    filter: Option<Map<String, Value>>,
    #[serde(default)]
    limit: Option<usize>,
    #[serde(default)]
    offset: Option<usize>,
    #[serde(default)]
    query: Option<String>,
    #[serde(default)]
    refresh_ttl: Option<bool>,
}

async fn search(
    State(app): Shared,
    caller: Caller,
    JsonBody(body): JsonBody,
) -> Result<Response, ApiError> {
    let grant = grant(&app, &caller, Verb::Search, body.clone()).await?;
    let body: SearchBody = parse(body)?;
    let (limit, offset) = app
        .limits
        .page(body.limit.unwrap_or(10), body.offset.unwrap_or(0))?;
    let mut op = SearchOp::new(grant.prefix(body.namespace_prefix)?)
        .limit(limit)
        .offset(offset);
    if let Some(filter) = body.filter {
        op = op.filter(Value::Object(filter));
    }
    if let Some(query) = body.query.filter(|q| !q.is_empty()) {
        op = op.query(query);
    }
    if let Some(refresh) = body.refresh_ttl {
        op = op.refresh_ttl(refresh);
    }
    let items = super::store_search::search(&*app.memory, op)
        .await
        .map_err(store_error)?;
    let items: Vec<Value> = items.iter().map(search_item_json).collect();
    Ok(axum::Json(json!({ "items": items })).into_response())
}

#[derive(Deserialize)]
struct NamespacesBody {
    #[serde(default)]
    prefix: Option<Vec<String>>,
    #[serde(default)]
    suffix: Option<Vec<String>>,
    #[serde(default)]
    max_depth: Option<usize>,
    #[serde(default)]
    limit: Option<usize>,
    #[serde(default)]
    offset: Option<usize>,
}

async fn namespaces(
    State(app): Shared,
    caller: Caller,
    JsonBody(body): JsonBody,
) -> Result<Response, ApiError> {
    let grant = grant(&app, &caller, Verb::ListNamespaces, body.clone()).await?;
    let body: NamespacesBody = parse(body)?;
    let (limit, offset) = app
        .limits
        .page(body.limit.unwrap_or(100), body.offset.unwrap_or(0))?;
    let mut op = ListNamespacesOp::new().limit(limit).offset(offset);
    let prefix = grant.prefix(body.prefix.unwrap_or_default())?;
    if !prefix.is_empty() {
        op.match_conditions.push(MatchCondition::prefix(prefix));
    }
    if let Some(suffix) = body.suffix.filter(|s| !s.is_empty()) {
        op.match_conditions.push(MatchCondition::suffix(suffix));
    }
    if let Some(depth) = body.max_depth {
        op = op.max_depth(depth);
    }
    let namespaces = app.memory.list_namespaces(op).await.map_err(store_error)?;
    Ok(axum::Json(json!({ "namespaces": namespaces })).into_response())
}
