//! What `/ok`, `/info` and `/metrics` answer beyond "up": the database checked on request
//! (`/ok?check_db=1`, for load balancers that should drop an instance whose database is
//! gone), the features this server has (`/info`'s flags, which Studio reads to show or hide
//! them), and the metrics as JSON (`/metrics?format=json`) in langgraph-api's shape, for
//! dashboards written against it. The handlers in `system` call these.

use std::time::Duration;

use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde_json::{Map, Value, json};

use super::App;
use crate::error::ApiError;
use crate::store::StoreErrorKind;

/// How long the database may take to answer a health check (langgraph-api's 3 s).
const CHECK_TIMEOUT: Duration = Duration::from_secs(3);

/// `/ok`: `{"ok": true, "services": {}}`, and with `check_db` the database asked too —
/// `services.database` `healthy`, or `unhealthy` with a 503 when it is away or too slow
/// (worth trying again) and a 500 when it answered with an error.
pub(super) async fn ok(app: &App, check_db: bool) -> Response {
    if !check_db {
        return axum::Json(json!({"ok": true, "services": {}})).into_response();
    }
    let status = match tokio::time::timeout(CHECK_TIMEOUT, app.store.ping()).await {
        Ok(Ok(())) => StatusCode::OK,
        Ok(Err(e)) => {
            tracing::warn!(error = %e, "health check: the database failed");
            if e.kind == StoreErrorKind::Unavailable {
                StatusCode::SERVICE_UNAVAILABLE
            } else {
                StatusCode::INTERNAL_SERVER_ERROR
            }
        }
        Err(_) => {
            tracing::warn!("health check: the database did not answer in time");
            StatusCode::SERVICE_UNAVAILABLE
        }
    };
    let healthy = status == StatusCode::OK;
    let body = json!({
        "ok": healthy,
        "services": {"database": if healthy { "healthy" } else { "unhealthy" }},
    });
    (status, axum::Json(body)).into_response()
}

/// `/info`'s `flags`: what this server does. Crons and assistants work; LangSmith tracing
/// (and its replicas and per-run sessions) is not wired.
pub(super) fn flags() -> Value {
    json!({
        "assistants": true,
        "crons": true,
        "langsmith": false,
        "langsmith_tracing_replicas": false,
        "langsmith_tracing_session_on_runs": false,
    })
}

/// `/metrics?format=json`: langgraph-api's keys — `queue` (runs pending and running in the
/// store; wait times are not measured: null), `workers` (this instance's), `postgres` (the
/// pool, on PostgreSQL) — and ours under `agentgraph` (runs by status, runs this instance
/// finished by status, their durations). langgraph-api's `api.http_requests_total` is left
/// out: requests are not counted here.
pub(super) async fn metrics_json(app: &App) -> Result<Response, ApiError> {
    let by_status: Map<String, Value> = app
        .store
        .run_counts()
        .await?
        .into_iter()
        .map(|(status, n)| (status, n.into()))
        .collect();
    let count = |status: &str| by_status.get(status).and_then(Value::as_u64).unwrap_or(0);
    let (max, active) = app.runs.workers();
    let mut out = Map::new();
    out.insert(
        "queue".into(),
        json!({
            "n_pending": count("pending"),
            "n_running": count("running"),
            "pending_runs_wait_time_max_secs": null,
            "pending_runs_wait_time_med_secs": null,
            "pending_unblocked_runs_wait_time_max_secs": null,
        }),
    );
    out.insert(
        "workers".into(),
        json!({"max": max, "active": active, "available": max - active}),
    );
    if let Some(saver) = &app.runs.postgres {
        let pool = saver.pool().status();
        out.insert(
            "postgres".into(),
            json!({
                "pool_max": pool.max_size,
                "pool_size": pool.size,
                "pool_available": pool.available,
                "requests_queued": pool.waiting,
            }),
        );
    }
    let finished: Map<String, Value> = app
        .runs
        .metrics
        .finished
        .lock()
        .map(|m| m.iter().map(|(k, v)| (k.clone(), (*v).into())).collect())
        .unwrap_or_default();
    let (sum_ms, runs) = app
        .runs
        .metrics
        .duration_ms
        .lock()
        .map(|d| *d)
        .unwrap_or_default();
    out.insert(
        "agentgraph".into(),
        json!({
            "runs": by_status,
            "runs_finished": finished,
            "run_duration_seconds": {"sum": sum_ms as f64 / 1000.0, "count": runs},
        }),
    );
    Ok(axum::Json(Value::Object(out)).into_response())
}
