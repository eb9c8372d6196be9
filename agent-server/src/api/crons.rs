//! Scheduled runs (`/runs/crons`, `/threads/{id}/runs/crons`) and the scheduler that fires
//! them.
//!
//! A cron made on a thread queues a run on that thread at each tick; a cron made at
//! `/runs/crons` queues a stateless run (a fresh thread each tick, deleted when the run
//! ends unless `on_run_completed: "keep"`). Each instance runs a scheduler that claims the
//! due crons from the store — a claim moves a cron's next time on in the same
//! transaction, so on PostgreSQL each tick fires on exactly one instance — and queues
//! their runs through the normal queue, as `POST .../runs` would.

use std::sync::Arc;
use std::time::Duration;

use axum::Json;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};
use serde_json::{Map, Value, json};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::assistants::resolve;
use super::models::crons::{
    Cron, CronCountRequest, CronCreate, CronPatch, CronSearch, OnRunCompleted,
};
use super::models::runs::RunCreate;
use super::models::{Body, ErrorResponse, Object, as_value, from_value, typed};
use super::paging::{Paging, Searched, select};
use super::runs::{check_run_fields, queue};
use super::threads::found as thread_found;
use super::{App, Caller, Shared, uuid_path};
use crate::auth::{Resource, User, Verb};
use crate::error::ApiError;
use crate::limits::too_many;
use crate::runs::cron::{Schedule, advance, next_run};
use crate::runs::webhook;
use crate::store;
use crate::time::{Clock, iso_ms, now_iso, parse_ms};

/// When the scheduler looks for due crons, and by which clock.
pub(crate) struct Scheduling {
    /// The time crons are due by.
    pub(crate) clock: Arc<dyn Clock>,
    /// How often the scheduler looks (a tick fires at most this late).
    pub(crate) poll: Duration,
}

pub(super) fn routes() -> OpenApiRouter<Arc<App>> {
    OpenApiRouter::new()
        .routes(routes!(create_for_thread))
        .routes(routes!(create))
        .routes(routes!(search))
        .routes(routes!(count))
        .routes(routes!(read, update, remove))
}

/// Settings of a cron that are not the run's.
const CRON_KEYS: &[&str] = &[
    "schedule",
    "end_time",
    "enabled",
    "timezone",
    "on_run_completed",
];

/// `end_time` as kept: an ISO time, normalized.
fn end_time(end: &str) -> Result<Value, ApiError> {
    parse_ms(end).map(|ms| iso_ms(ms).into()).ok_or_else(|| {
        ApiError::invalid(format!(
            "end_time: must be an ISO-8601 date-time, not '{end}'"
        ))
    })
}

fn on_run_completed(v: OnRunCompleted) -> &'static str {
    match v {
        OnRunCompleted::Delete => "delete",
        OnRunCompleted::Keep => "keep",
    }
}

/// Where a cron keeps the user it runs for (its creator): never shown to clients, who see
/// its `user_id`.
const AUTH_USER_KEY: &str = "auth_user";

/// A cron as clients see it.
fn public(doc: Value) -> Result<Cron, ApiError> {
    typed(doc)
}

/// Checks what a cron body carries for its runs: the fields a run takes, the context
/// against the assistant's graph, the webhook.
async fn check_payload(
    app: &App,
    caller: &Caller,
    run: &RunCreate,
    assistant: &Value,
) -> Result<(), ApiError> {
    check_run_fields(app, run)?;
    if let Some(url) = &run.webhook {
        webhook::check(url, app.runs.webhooks.allow_private)
            .await
            .map_err(ApiError::invalid)?;
    }
    let graph_id = assistant["graph_id"].as_str().unwrap_or_default();
    if let Some(graph) = app.graphs.get(graph_id) {
        super::runs::check_writes(graph.as_ref(), run)?;
    }
    if let (Some(graph), Some(context)) = (app.graphs.get(graph_id), &run.context) {
        let mut merged = assistant["context"]
            .as_object()
            .cloned()
            .unwrap_or_default();
        super::refuse_auth_user(context, "context")?;
        merged.extend(context.clone());
        if let Some(user) = caller.user_json() {
            merged.insert(super::AUTH_USER.into(), user);
        }
        graph.check_context(&Value::Object(merged))?;
    }
    Ok(())
}

/// Makes a cron (on `thread`, or stateless) from a create body.
async fn make(
    app: &App,
    caller: &Caller,
    thread: Option<String>,
    body: CronCreate,
) -> Result<Cron, ApiError> {
    let grant = app
        .grant(caller, Resource::Crons, Verb::Create, &as_value(&body))
        .await?;
    let mut mine = Map::new();
    mine.insert(
        "user_id".into(),
        caller
            .user
            .as_ref()
            .map_or(Value::Null, |u| u.identity.clone().into()),
    );
    let owned = app
        .store
        .count_crons(&store::Query {
            fields: mine,
            ..store::Query::default()
        })
        .await?;
    if owned >= app.limits.crons_per_user as u64 {
        return Err(too_many(format!(
            "this user has {owned} crons, the most this server keeps per user; delete one first"
        )));
    }
    let schedule = body
        .schedule
        .clone()
        .ok_or_else(|| ApiError::invalid("schedule: a required property"))?;
    let timezone = body.timezone.clone().flatten();
    Schedule::parse(&schedule, timezone.as_deref()).map_err(ApiError::invalid)?;
    let assistant_id = body
        .run
        .assistant_id
        .clone()
        .ok_or_else(|| ApiError::invalid("assistant_id: a required property"))?;
    let assistant = resolve(app, caller, &assistant_id).await?;
    let end = match body.end_time.clone().flatten() {
        Some(end) => end_time(&end)?,
        None => Value::Null,
    };
    check_payload(app, caller, &body.run, &assistant).await?;
    if let Some(t) = &thread {
        thread_found(app, caller, t, Verb::CreateRun).await?;
    }
    let mut metadata = body.run.metadata.clone().unwrap_or_default();
    app.limits.metadata("cron", &metadata)?;
    grant.stamp(&mut metadata);
    // As langgraph-api keeps it: the assistant resolved (a graph name becomes its UUID).
    let mut payload = as_value(&body.run);
    payload["assistant_id"] = assistant["assistant_id"].clone();
    let now = now_iso();
    let mut doc = json!({
        "cron_id": uuid::Uuid::now_v7().to_string(),
        "assistant_id": assistant["assistant_id"],
        "thread_id": thread,
        "on_run_completed": match &thread {
            Some(_) => Value::Null,
            None => on_run_completed(body.on_run_completed.unwrap_or(OnRunCompleted::Delete)).into(),
        },
        "end_time": end,
        "schedule": schedule,
        "timezone": timezone,
        "created_at": now, "updated_at": now,
        "user_id": caller.user.as_ref().map(|u| u.identity.clone()),
        "payload": payload,
        "next_run_date": null,
        "metadata": metadata,
        "enabled": body.enabled.unwrap_or(true),
        AUTH_USER_KEY: caller.user_json(),
    });
    let next = next_run(&doc, app.scheduling.clock.now_ms());
    if let Some(n) = next {
        doc["next_run_date"] = iso_ms(n).into();
    }
    app.store.put_cron(&doc, next).await?;
    public(doc)
}

/// Create a cron on a thread: each tick queues a run on it.
#[utoipa::path(post, path = "/threads/{thread_id}/runs/crons", tag = "Crons",
    params(("thread_id" = String, Path, format = Uuid)), request_body = CronCreate,
    responses((status = 200, body = Cron), (status = 404, body = ErrorResponse),
        (status = 422, body = ErrorResponse)))]
async fn create_for_thread(
    State(app): Shared,
    caller: Caller,
    Path(t): Path<String>,
    Body(body): Body<CronCreate>,
) -> Result<Json<Cron>, ApiError> {
    let thread = uuid_path("thread", &t)?;
    Ok(Json(make(&app, &caller, Some(thread), body).await?))
}

/// Create a stateless cron: each tick queues a run on a new thread.
#[utoipa::path(post, path = "/runs/crons", tag = "Crons", request_body = CronCreate,
    responses((status = 200, body = Cron), (status = 404, body = ErrorResponse),
        (status = 422, body = ErrorResponse)))]
async fn create(
    State(app): Shared,
    caller: Caller,
    Body(body): Body<CronCreate>,
) -> Result<Json<Cron>, ApiError> {
    Ok(Json(make(&app, &caller, None, body).await?))
}

/// The cron `id` if `caller` may `verb` it (another user's is a 404), as stored.
async fn found(app: &App, caller: &Caller, id: &str, verb: Verb) -> Result<Value, ApiError> {
    let id = uuid_path("cron", id)?;
    let grant = app
        .grant(caller, Resource::Crons, verb, &json!({"cron_id": id}))
        .await?;
    app.store
        .get_cron(&id)
        .await?
        .filter(|doc| grant.admits(&doc["metadata"]))
        .ok_or_else(|| ApiError::not_found(format!("Cron {id} not found")))
}

/// Get a cron.
#[utoipa::path(get, path = "/runs/crons/{cron_id}", tag = "Crons",
    params(("cron_id" = String, Path, format = Uuid)),
    responses((status = 200, body = Cron), (status = 404, body = ErrorResponse),
        (status = 422, body = ErrorResponse)))]
async fn read(
    State(app): Shared,
    caller: Caller,
    Path(c): Path<String>,
) -> Result<Json<Cron>, ApiError> {
    Ok(Json(public(found(&app, &caller, &c, Verb::Read).await?)?))
}

/// Delete a cron.
#[utoipa::path(delete, path = "/runs/crons/{cron_id}", tag = "Crons",
    params(("cron_id" = String, Path, format = Uuid)),
    responses((status = 204), (status = 404, body = ErrorResponse),
        (status = 422, body = ErrorResponse)))]
async fn remove(
    State(app): Shared,
    caller: Caller,
    Path(c): Path<String>,
) -> Result<StatusCode, ApiError> {
    let doc = found(&app, &caller, &c, Verb::Delete).await?;
    let id = doc["cron_id"].as_str().unwrap_or_default();
    if !app.store.delete_cron(id).await? {
        return Err(ApiError::not_found(format!("Cron {id} not found")));
    }
    Ok(StatusCode::NO_CONTENT)
}

/// Patch a cron: its settings and its runs' fields, merged over what it had; its next time
/// counted again from now.
#[utoipa::path(patch, path = "/runs/crons/{cron_id}", tag = "Crons",
    params(("cron_id" = String, Path, format = Uuid)), request_body = CronPatch,
    responses((status = 200, body = Cron), (status = 400, body = ErrorResponse),
        (status = 404, body = ErrorResponse), (status = 422, body = ErrorResponse)))]
async fn update(
    State(app): Shared,
    caller: Caller,
    Path(c): Path<String>,
    Body(body): Body<CronPatch>,
) -> Result<Json<Cron>, ApiError> {
    let mut doc = found(&app, &caller, &c, Verb::Update).await?;
    let sent = match as_value(&body) {
        Value::Object(m) => m,
        _ => Map::new(),
    };
    if sent.is_empty() {
        return Err(ApiError::bad_request("Request body cannot be empty"));
    }
    let schedule = match &body.schedule {
        Some(s) => s.clone(),
        None => doc["schedule"].as_str().unwrap_or_default().to_owned(),
    };
    let timezone = match &body.timezone {
        Some(tz) => tz.clone(),
        None => doc["timezone"].as_str().map(str::to_owned),
    };
    Schedule::parse(&schedule, timezone.as_deref()).map_err(ApiError::invalid)?;
    let assistant_id = doc["assistant_id"].as_str().unwrap_or_default().to_owned();
    let assistant = resolve(&app, &caller, &assistant_id).await?;
    check_payload(&app, &caller, &body.run, &assistant).await?;
    match &body.end_time {
        Some(Some(end)) => doc["end_time"] = end_time(end)?,
        Some(None) => doc["end_time"] = Value::Null,
        None => {}
    }
    if let Some(enabled) = body.enabled {
        doc["enabled"] = enabled.into();
    }
    if let Some(v) = body.on_run_completed
        && doc["thread_id"].is_null()
    {
        doc["on_run_completed"] = on_run_completed(v).into();
    }
    if let Some(m) = &body.run.metadata {
        let mut m = m.clone();
        app.limits.metadata("cron", &m)?;
        app.grant(&caller, Resource::Crons, Verb::Update, &as_value(&body))
            .await?
            .stamp(&mut m);
        doc["metadata"] = Value::Object(m);
    }
    doc["schedule"] = schedule.into();
    doc["timezone"] = timezone.map_or(Value::Null, Value::from);
    let mut payload = doc["payload"].as_object().cloned().unwrap_or_default();
    if let Value::Object(run) = as_value(&body.run) {
        payload.extend(run);
    }
    doc["payload"] = Value::Object(payload);
    doc["updated_at"] = now_iso().into();
    let next = next_run(&doc, app.scheduling.clock.now_ms());
    doc["next_run_date"] = next.map_or(Value::Null, |n| iso_ms(n).into());
    app.store.put_cron(&doc, next).await?;
    Ok(Json(public(doc)?))
}

/// What a search or count filters crons by.
struct Filter<'a> {
    assistant_id: Option<&'a str>,
    thread_id: Option<&'a str>,
    enabled: Option<bool>,
    metadata: Option<&'a Object>,
}

/// The crons a search or count asks for.
async fn matching(
    app: &App,
    caller: &Caller,
    request: Value,
    filter: Filter<'_>,
) -> Result<store::Query, ApiError> {
    let grant = app
        .grant(caller, Resource::Crons, Verb::Search, &request)
        .await?;
    let assistant = match filter.assistant_id {
        Some(id) if !id.is_empty() => Some(match app.graphs.contains_key(id) {
            true => resolve(app, caller, id).await?["assistant_id"]
                .as_str()
                .unwrap_or_default()
                .to_owned(),
            false => id.to_owned(),
        }),
        _ => None,
    };
    let mut fields = Map::new();
    if let Some(assistant) = assistant {
        fields.insert("assistant_id".into(), assistant.into());
    }
    if let Some(thread) = filter.thread_id.filter(|t| !t.is_empty()) {
        fields.insert("thread_id".into(), thread.into());
    }
    if let Some(enabled) = filter.enabled {
        fields.insert("enabled".into(), enabled.into());
    }
    Ok(store::Query {
        metadata: filter.metadata.cloned().unwrap_or_default(),
        owner: grant.scope(),
        fields,
        ..store::Query::default()
    })
}

/// Search crons.
#[utoipa::path(post, path = "/runs/crons/search", tag = "Crons", request_body = CronSearch,
    responses((status = 200, body = Vec<Cron>), (status = 422, body = ErrorResponse)))]
async fn search(
    State(app): Shared,
    caller: Caller,
    Body(body): Body<CronSearch>,
) -> Result<(HeaderMap, Json<Vec<Value>>), ApiError> {
    let filter = Filter {
        assistant_id: body.assistant_id.as_deref(),
        thread_id: body.thread_id.as_deref(),
        enabled: body.enabled,
        metadata: body.metadata.as_ref(),
    };
    let query = matching(&app, &caller, as_value(&body), filter).await?;
    let (docs, found) = Paging {
        page: body.page,
        sort_by: body.sort_by.unwrap_or_default().field(),
        order: body.sort_order.unwrap_or_default(),
    }
    .fetch(&app, Searched::Crons, &query)
    .await?;
    let page = docs
        .into_iter()
        .map(|doc| Ok(select(as_value(&public(doc)?), body.select.as_deref())))
        .collect::<Result<Vec<Value>, ApiError>>()?;
    Ok(found.respond(page))
}

/// Count crons.
#[utoipa::path(post, path = "/runs/crons/count", tag = "Crons", request_body = CronCountRequest,
    responses((status = 200, body = u64, content_type = "application/json"), (status = 422, body = ErrorResponse)))]
async fn count(
    State(app): Shared,
    caller: Caller,
    Body(body): Body<CronCountRequest>,
) -> Result<Json<u64>, ApiError> {
    let filter = Filter {
        assistant_id: body.assistant_id.as_deref(),
        thread_id: body.thread_id.as_deref(),
        enabled: body.enabled,
        metadata: body.metadata.as_ref(),
    };
    let query = matching(&app, &caller, as_value(&body), filter).await?;
    Ok(Json(app.store.count_crons(&query).await?))
}

/// The run body of a tick of `cron`: its payload without the cron's own settings, its
/// assistant, its metadata, and `on_completion: "keep"` for a stateless cron that keeps
/// its threads.
fn run_body(cron: &Value) -> Value {
    let mut body = cron["payload"].as_object().cloned().unwrap_or_default();
    for k in CRON_KEYS {
        body.remove(*k);
    }
    body.insert("assistant_id".into(), cron["assistant_id"].clone());
    let mut metadata = cron["metadata"].as_object().cloned().unwrap_or_default();
    if let Some(m) = body.get("metadata").and_then(Value::as_object) {
        metadata.extend(m.clone());
    }
    body.insert("metadata".into(), Value::Object(metadata));
    if cron["thread_id"].is_null() && cron["on_run_completed"] == "keep" {
        body.entry("on_completion").or_insert_with(|| "keep".into());
    }
    Value::Object(body)
}

/// Starts this instance's scheduler: every `poll`, the due crons are claimed and their
/// runs queued.
pub(crate) fn spawn_scheduler(app: Arc<App>) {
    tokio::spawn(async move {
        loop {
            let now = app.scheduling.clock.now_ms();
            let full = match app.store.claim_crons(now, advance).await {
                Ok(due) => {
                    let full = due.len() >= 100;
                    for cron in due {
                        fire(&app, &cron).await;
                    }
                    full
                }
                Err(e) => {
                    tracing::warn!(error = %e, "claiming due crons failed");
                    false
                }
            };
            if !full {
                tokio::time::sleep(app.scheduling.poll).await;
            }
        }
    });
}

/// Queues the run of one tick, for the cron's owner; a failure (the thread or assistant
/// gone, a context the graph no longer takes) is logged and the cron goes on.
async fn fire(app: &Arc<App>, cron: &Value) {
    let thread = cron["thread_id"].as_str();
    // A cron made without auth runs without a user; one made by a user, as that user.
    let owner = Caller::of(User::from_json(&cron[AUTH_USER_KEY]));
    if app.auth.is_some() && owner.user.is_none() {
        tracing::warn!(cron_id = %cron["cron_id"], "a cron made before auth was on has no owner; not fired");
        return;
    }
    let body = match from_value::<RunCreate>(run_body(cron)) {
        Ok(body) => body,
        Err(e) => {
            tracing::warn!(cron_id = %cron["cron_id"], error = %e.detail, "a cron's run does not fit a run's body");
            return;
        }
    };
    match queue(app, &owner, thread, body).await {
        Ok(run) => {
            tracing::info!(cron_id = %cron["cron_id"], run_id = %run["run_id"], "cron fired")
        }
        Err(e) => {
            tracing::warn!(cron_id = %cron["cron_id"], error = %e.detail, "a cron's run was not queued")
        }
    }
}
