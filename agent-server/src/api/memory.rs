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
use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;
use serde_json::{Value, json};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::models::store::{
    Item as ApiItem, ListNamespacesResponse, SearchItem as ApiSearchItem, SearchItemsResponse,
    StoreDeleteRequest, StoreGetQuery, StoreListNamespacesRequest, StorePutRequest,
    StoreSearchRequest,
};
use super::models::{Body, ErrorResponse, Params, as_value};
use super::{App, Caller, Grant, Shared};
use crate::auth::{Resource, Verb};
use crate::error::ApiError;
use crate::time::iso_ms;

pub(super) fn routes() -> OpenApiRouter<Arc<App>> {
    OpenApiRouter::new()
        .routes(routes!(put_item, get_item, delete_item))
        .routes(routes!(search))
        .routes(routes!(namespaces))
}

fn store_error(e: StoreError) -> ApiError {
    match e {
        StoreError::Storage { .. } | StoreError::Embed { .. } => ApiError::internal(e.to_string()),
        _ => ApiError::invalid(e.to_string()),
    }
}

/// An item as the API returns it (ISO timestamps).
fn item_json(item: &Item) -> ApiItem {
    ApiItem {
        namespace: item.namespace.clone(),
        key: item.key.clone(),
        value: Value::Object(item.value.clone()),
        created_at: iso_ms(item.created_at_ms),
        updated_at: iso_ms(item.updated_at_ms),
    }
}

fn search_item_json(item: &SearchItem) -> ApiSearchItem {
    ApiSearchItem {
        item: item_json(&item.item),
        score: item.score.map(f64::from),
    }
}

/// The longest ttl an item may ask (100 years, in minutes).
const MAX_TTL_MINUTES: f64 = 525_600.0 * 100.0;

/// A TTL in minutes (`null`: the store's default).
fn ttl(minutes: Option<f64>) -> Result<Ttl, ApiError> {
    match minutes {
        None => Ok(Ttl::StoreDefault),
        Some(m) if m.is_finite() && m > 0.0 && m <= MAX_TTL_MINUTES => {
            Ok(Ttl::After(Duration::from_secs_f64(m * 60.0)))
        }
        Some(m) => Err(ApiError::invalid(format!(
            "ttl: {m} is not a positive number of minutes up to 100 years"
        ))),
    }
}

/// What `caller` may do with `verb` on the store, for a request carrying `value`.
async fn grant(app: &App, caller: &Caller, verb: Verb, value: Value) -> Result<Grant, ApiError> {
    app.grant(caller, Resource::Store, verb, &value).await
}

/// Put an item in the store.
#[utoipa::path(put, path = "/store/items", tag = "Store", request_body = StorePutRequest,
    responses((status = 204), (status = 403, body = ErrorResponse),
        (status = 422, body = ErrorResponse)))]
async fn put_item(
    State(app): Shared,
    caller: Caller,
    Body(body): Body<StorePutRequest>,
) -> Result<StatusCode, ApiError> {
    let grant = grant(&app, &caller, Verb::Put, as_value(&body)).await?;
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
    Ok(StatusCode::NO_CONTENT)
}

/// Get an item (`null` when there is none).
#[utoipa::path(get, path = "/store/items", tag = "Store", params(StoreGetQuery),
    responses((status = 200, body = Option<ApiItem>), (status = 403, body = ErrorResponse),
        (status = 422, body = ErrorResponse)))]
async fn get_item(
    State(app): Shared,
    caller: Caller,
    Params(query): Params<StoreGetQuery>,
) -> Result<Json<Option<ApiItem>>, ApiError> {
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
        Some(agent_core::store::OpResult::Item(Some(item))) => Ok(Json(Some(item_json(&item)))),
        // The SDKs read a missing item as `None` / `null`.
        Some(agent_core::store::OpResult::Item(None)) => Ok(Json(None)),
        _ => Err(ApiError::internal(
            "the store answered a get with another result",
        )),
    }
}

/// Delete an item.
#[utoipa::path(delete, path = "/store/items", tag = "Store", request_body = StoreDeleteRequest,
    responses((status = 204), (status = 403, body = ErrorResponse),
        (status = 422, body = ErrorResponse)))]
async fn delete_item(
    State(app): Shared,
    caller: Caller,
    Body(body): Body<StoreDeleteRequest>,
) -> Result<StatusCode, ApiError> {
    let grant = grant(&app, &caller, Verb::Delete, as_value(&body)).await?;
    grant.namespace(&body.namespace)?;
    app.memory
        .delete(&body.namespace, &body.key)
        .await
        .map_err(store_error)?;
    Ok(StatusCode::NO_CONTENT)
}

/// `n` as a count the server's limits judge (a huge number stays huge).
fn count(n: Option<u64>, default: usize) -> usize {
    n.map_or(default, |n| usize::try_from(n).unwrap_or(usize::MAX))
}

/// Search items: under a namespace prefix, filtered by value, ranked by a query when the
/// store has an index.
#[utoipa::path(post, path = "/store/items/search", tag = "Store",
    request_body = StoreSearchRequest,
    responses((status = 200, body = SearchItemsResponse), (status = 403, body = ErrorResponse),
        (status = 422, body = ErrorResponse)))]
async fn search(
    State(app): Shared,
    caller: Caller,
    Body(body): Body<StoreSearchRequest>,
) -> Result<Json<SearchItemsResponse>, ApiError> {
    let grant = grant(&app, &caller, Verb::Search, as_value(&body)).await?;
    let (limit, offset) = app
        .limits
        .page(count(body.limit, 10), count(body.offset, 0))?;
    let mut op = SearchOp::new(grant.prefix(body.namespace_prefix.unwrap_or_default())?)
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
    Ok(Json(SearchItemsResponse {
        items: items.iter().map(search_item_json).collect(),
    }))
}

/// List namespaces.
#[utoipa::path(post, path = "/store/namespaces", tag = "Store",
    request_body = StoreListNamespacesRequest,
    responses((status = 200, body = ListNamespacesResponse), (status = 403, body = ErrorResponse),
        (status = 422, body = ErrorResponse)))]
async fn namespaces(
    State(app): Shared,
    caller: Caller,
    Body(body): Body<StoreListNamespacesRequest>,
) -> Result<Json<ListNamespacesResponse>, ApiError> {
    let grant = grant(&app, &caller, Verb::ListNamespaces, as_value(&body)).await?;
    let (limit, offset) = app
        .limits
        .page(count(body.limit, 100), count(body.offset, 0))?;
    let mut op = ListNamespacesOp::new().limit(limit).offset(offset);
    let prefix = grant.prefix(body.prefix.unwrap_or_default())?;
    if !prefix.is_empty() {
        op.match_conditions.push(MatchCondition::prefix(prefix));
    }
    if let Some(suffix) = body.suffix.filter(|s| !s.is_empty()) {
        op.match_conditions.push(MatchCondition::suffix(suffix));
    }
    if let Some(depth) = body.max_depth {
        op = op.max_depth(usize::try_from(depth).unwrap_or(usize::MAX));
    }
    let namespaces = app.memory.list_namespaces(op).await.map_err(store_error)?;
    Ok(Json(ListNamespacesResponse { namespaces }))
}
