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

use axum::Router;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use serde_json::{Map, Value, json};

use super::assistants::resolve;
use super::body::{Fields, Page, object};
use super::runs::{check_run_fields, queue};
use super::threads::found as thread_found;
use super::{App, Caller, JsonBody, Shared, uuid_path};
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

pub(super) fn routes() -> Router<Arc<App>> {
    Router::new()
        .route("/threads/{t}/runs/crons", post(create_for_thread))
        .route("/runs/crons", post(create))
        .route("/runs/crons/search", post(search))
        .route("/runs/crons/count", post(count))
        .route("/runs/crons/{c}", get(read).patch(update).delete(remove))
}

const SORTS: &[&str] = &[
    "cron_id",
    "assistant_id",
    "thread_id",
    "next_run_date",
    "end_time",
    "created_at",
    "updated_at",
];

/// Settings of a cron that are not the run's.
const CRON_KEYS: &[&str] = &[
    "schedule",
    "end_time",
    "enabled",
    "timezone",
    "on_run_completed",
];

/// `end_time` of a body: an ISO time (normalized), `null`, or absent (`None`).
fn end_time(body: &Map<String, Value>) -> Result<Option<Value>, ApiError> {
    match body.get("end_time") {
        None => Ok(None),
        Some(Value::Null) => Ok(Some(Value::Null)),
        Some(Value::String(s)) => parse_ms(s)
            .map(|ms| Some(iso_ms(ms).into()))
            .ok_or_else(|| {
                ApiError::invalid(format!(
                    "'end_time' must be an ISO-8601 date-time, not '{s}'"
                ))
            }),
        Some(_) => Err(ApiError::invalid(
            "'end_time' must be an ISO-8601 date-time",
        )),
    }
}

fn on_run_completed(body: &Map<String, Value>) -> Result<Option<String>, ApiError> {
    match body.opt_str("on_run_completed")?.as_deref() {
        None => Ok(None),
        Some(v @ ("delete" | "keep")) => Ok(Some(v.to_owned())),
        Some(other) => Err(ApiError::invalid(format!(
            "'on_run_completed' must be delete or keep, not '{other}'"
        ))),
    }
}

/// Where a cron keeps the user it runs for (its creator): never shown to clients, who see
/// its `user_id`.
const AUTH_USER_KEY: &str = "auth_user";

/// A cron as clients see it.
fn public(mut doc: Value) -> Value {
    if let Some(o) = doc.as_object_mut() {
        o.remove(AUTH_USER_KEY);
    }
    doc
}

/// Checks what a cron body carries for its runs: the fields a run takes, the context
/// against the assistant's graph, the webhook.
async fn check_payload(
    app: &App,
    caller: &Caller,
    body: &Map<String, Value>,
    assistant: &Value,
) -> Result<(), ApiError> {
    check_run_fields(app, body)?;
    if let Some(url) = body.opt_str("webhook")? {
        webhook::check(&url, app.runs.webhooks.allow_private)
            .await
            .map_err(ApiError::invalid)?;
    }
    let graph_id = assistant["graph_id"].as_str().unwrap_or_default();
    if let (Some(graph), Some(context)) = (app.graphs.get(graph_id), body.get("context")) {
        let mut merged = assistant["context"]
            .as_object()
            .cloned()
            .unwrap_or_default();
        if let Some(c) = context.as_object() {
            super::refuse_auth_user(c, "context")?;
            merged.extend(c.clone());
        }
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
    body: Value,
) -> Result<Value, ApiError> {
    let body = object(body)?;
    let grant = app
        .grant(
            caller,
            Resource::Crons,
            Verb::Create,
            &Value::Object(body.clone()),
        )
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
        .opt_str("schedule")?
        .ok_or_else(|| ApiError::invalid("'schedule' is a required property"))?;
    let timezone = body.opt_str("timezone")?;
    Schedule::parse(&schedule, timezone.as_deref()).map_err(ApiError::invalid)?;
    let assistant_id = body
        .opt_str("assistant_id")?
        .ok_or_else(|| ApiError::invalid("'assistant_id' is a required property"))?;
    let assistant = resolve(app, caller, &assistant_id).await?;
    let end = end_time(&body)?.unwrap_or(Value::Null);
    let enabled = body.opt_bool("enabled")?.unwrap_or(true);
    let on_completed = on_run_completed(&body)?;
    check_payload(app, caller, &body, &assistant).await?;
    if let Some(t) = &thread {
        thread_found(app, caller, t, Verb::CreateRun).await?;
    }
    let mut metadata = body.opt_object("metadata")?.unwrap_or_default();
    app.limits.metadata("cron", &metadata)?;
    grant.stamp(&mut metadata);
    // As langgraph-api keeps it: the assistant resolved (a graph name becomes its UUID).
    let mut payload = body.clone();
    payload.insert("assistant_id".into(), assistant["assistant_id"].clone());
    let now = now_iso();
    let mut doc = json!({
        "cron_id": uuid::Uuid::now_v7().to_string(),
        "assistant_id": assistant["assistant_id"],
        "thread_id": thread,
        "on_run_completed": match &thread {
            Some(_) => Value::Null,
            None => on_completed.unwrap_or_else(|| "delete".to_owned()).into(),
        },
        "end_time": end,
        "schedule": schedule,
        "timezone": timezone,
        "created_at": now, "updated_at": now,
        "user_id": caller.user.as_ref().map(|u| u.identity.clone()),
        "payload": Value::Object(payload),
        "next_run_date": null,
        "metadata": metadata,
        "enabled": enabled,
        AUTH_USER_KEY: caller.user_json(),
    });
    let next = next_run(&doc, app.scheduling.clock.now_ms());
    if let Some(n) = next {
        doc["next_run_date"] = iso_ms(n).into();
    }
    app.store.put_cron(&doc, next).await?;
    Ok(public(doc))
}

async fn create_for_thread(
    State(app): Shared,
    caller: Caller,
    Path(t): Path<String>,
    JsonBody(body): JsonBody,
) -> Result<Response, ApiError> {
    let thread = uuid_path("thread", &t)?;
    Ok(axum::Json(make(&app, &caller, Some(thread), body).await?).into_response())
}

async fn create(
    State(app): Shared,
    caller: Caller,
    JsonBody(body): JsonBody,
) -> Result<Response, ApiError> {
    Ok(axum::Json(make(&app, &caller, None, body).await?).into_response())
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

async fn read(
    State(app): Shared,
    caller: Caller,
    Path(c): Path<String>,
) -> Result<Response, ApiError> {
    Ok(axum::Json(public(found(&app, &caller, &c, Verb::Read).await?)).into_response())
}

async fn remove(
    State(app): Shared,
    caller: Caller,
    Path(c): Path<String>,
) -> Result<Response, ApiError> {
    let doc = found(&app, &caller, &c, Verb::Delete).await?;
    let id = doc["cron_id"].as_str().unwrap_or_default();
    if !app.store.delete_cron(id).await? {
        return Err(ApiError::not_found(format!("Cron {id} not found")));
    }
    Ok(StatusCode::NO_CONTENT.into_response())
}

/// `PATCH`: the cron's settings and its runs' fields, merged over what it had; its next
/// time recomputed from now.
async fn update(
    State(app): Shared,
    caller: Caller,
    Path(c): Path<String>,
    JsonBody(body): JsonBody,
) -> Result<Response, ApiError> {
    let mut doc = found(&app, &caller, &c, Verb::Update).await?;
    let body = object(body)?;
    if body.is_empty() {
        return Err(ApiError::bad_request("Request body cannot be empty"));
    }
    let schedule = match body.opt_str("schedule")? {
        Some(s) => s,
        None => doc["schedule"].as_str().unwrap_or_default().to_owned(),
    };
    let timezone = match body.get("timezone") {
        Some(_) => body.opt_str("timezone")?,
        None => doc["timezone"].as_str().map(str::to_owned),
    };
    Schedule::parse(&schedule, timezone.as_deref()).map_err(ApiError::invalid)?;
    let assistant_id = doc["assistant_id"].as_str().unwrap_or_default().to_owned();
    let assistant = resolve(&app, &caller, &assistant_id).await?;
    check_payload(&app, &caller, &body, &assistant).await?;
    if let Some(end) = end_time(&body)? {
        doc["end_time"] = end;
    }
    if let Some(enabled) = body.opt_bool("enabled")? {
        doc["enabled"] = enabled.into();
    }
    if let Some(v) = on_run_completed(&body)?
        && doc["thread_id"].is_null()
    {
        doc["on_run_completed"] = v.into();
    }
    if let Some(mut m) = body.opt_object("metadata")? {
        app.limits.metadata("cron", &m)?;
        app.grant(
            &caller,
            Resource::Crons,
            Verb::Update,
            &Value::Object(body.clone()),
        )
        .await?
        .stamp(&mut m);
        doc["metadata"] = Value::Object(m);
    }
    doc["schedule"] = schedule.into();
    doc["timezone"] = timezone.map_or(Value::Null, Value::from);
    let mut payload = doc["payload"].as_object().cloned().unwrap_or_default();
    for (k, v) in &body {
        payload.insert(k.clone(), v.clone());
    }
    doc["payload"] = Value::Object(payload);
    doc["updated_at"] = now_iso().into();
    let next = next_run(&doc, app.scheduling.clock.now_ms());
    doc["next_run_date"] = next.map_or(Value::Null, |n| iso_ms(n).into());
    app.store.put_cron(&doc, next).await?;
    Ok(axum::Json(public(doc)).into_response())
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
            Resource::Crons,
            Verb::Search,
            &Value::Object(body.clone()),
        )
        .await?;
    let assistant = match body.opt_str("assistant_id")? {
        Some(id) if !id.is_empty() => Some(match app.graphs.contains_key(&id) {
            true => resolve(app, caller, &id).await?["assistant_id"]
                .as_str()
                .unwrap_or_default()
                .to_owned(),
            false => id,
        }),
        _ => None,
    };
    let mut fields = Map::new();
    if let Some(assistant) = assistant {
        fields.insert("assistant_id".into(), assistant.into());
    }
    if let Some(thread) = body.opt_str("thread_id")?.filter(|t| !t.is_empty()) {
        fields.insert("thread_id".into(), thread.into());
    }
    if let Some(enabled) = body.opt_bool("enabled")? {
        fields.insert("enabled".into(), enabled.into());
    }
    Ok(store::Query {
        metadata: body.opt_object("metadata")?.unwrap_or_default(),
        owner: grant.scope(),
        fields,
        ..store::Query::default()
    })
}

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
        app.store.search_crons(&paged),
        app.store.count_crons(&query),
    )?;
    Ok(page.respond(found.into_iter().map(public).collect(), total))
}

async fn count(
    State(app): Shared,
    caller: Caller,
    JsonBody(body): JsonBody,
) -> Result<Response, ApiError> {
    let body = object(body)?;
    let query = matching(&app, &caller, &body).await?;
    Ok(axum::Json(app.store.count_crons(&query).await?).into_response())
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
    match queue(app, &owner, thread, run_body(cron)).await {
        Ok(run) => {
            tracing::info!(cron_id = %cron["cron_id"], run_id = %run["run_id"], "cron fired")
        }
        Err(e) => {
            tracing::warn!(cron_id = %cron["cron_id"], error = %e.detail, "a cron's run was not queued")
        }
    }
}
