//! `/ok` (and `/` for API clients: see `web`), `/info` and `/metrics`: what load balancers, Studio and Prometheus read.

use std::fmt::Write as _;
use std::sync::Arc;

use axum::extract::State;
use axum::http::header;
use axum::response::IntoResponse;
use serde_json::{Value, json};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::models::system::{MetricsQuery, Ok as OkResponse, OkQuery};
use super::{App, Shared};

pub(super) fn routes() -> OpenApiRouter<Arc<App>> {
    OpenApiRouter::new()
        .routes(routes!(ok))
        .routes(routes!(info))
        .routes(routes!(metrics))
}

/// Whether the server is up; with `check_db=1` whether its database answers too.
#[utoipa::path(get, path = "/ok", tag = "System", params(OkQuery),
    responses((status = 200, body = OkResponse), (status = 500, body = OkResponse),
        (status = 503, body = OkResponse)))]
async fn ok(
    State(app): Shared,
    super::models::Params(query): super::models::Params<OkQuery>,
) -> axum::response::Response {
    super::health::ok(&app, query.check_db.unwrap_or(0) != 0).await
}

/// The version Studio checks (a langgraph-api 0.16 it knows), and the features we have.
#[utoipa::path(get, path = "/info", tag = "System", responses((status = 200, body = Object)))]
async fn info() -> axum::Json<Value> {
    axum::Json(json!({
        "version": "0.16.7",
        "agentgraph_version": env!("CARGO_PKG_VERSION"),
        "flags": super::health::flags(),
        "host": {"kind": "self-hosted", "project_id": null, "host_revision_id": null, "revision_id": null, "tenant_id": null},
    }))
}

/// Runs by status, queue depth and run times, as Prometheus reads them (`format=json`: as
/// langgraph-api's JSON metrics).
#[utoipa::path(get, path = "/metrics", tag = "System", params(MetricsQuery),
    responses((status = 200, description = "The metrics",
        content((String = "text/plain"), (Object = "application/json")))))]
async fn metrics(
    State(app): Shared,
    super::models::Params(query): super::models::Params<MetricsQuery>,
) -> Result<axum::response::Response, crate::error::ApiError> {
    // langgraph-api: `json`, else (`prometheus`, absent or unknown) the text format.
    if query.format.as_deref() == Some("json") {
        return super::health::metrics_json(&app).await;
    }
    Ok(prometheus(&app).await.into_response())
}

async fn prometheus(app: &App) -> impl IntoResponse {
    let mut out = String::new();
    let by_status: std::collections::BTreeMap<String, u64> = app
        .store
        .run_counts()
        .await
        .unwrap_or_default()
        .into_iter()
        .collect();
    let _ = writeln!(out, "# HELP agentgraph_runs Runs in the store by status.");
    let _ = writeln!(out, "# TYPE agentgraph_runs gauge");
    for (status, n) in &by_status {
        let _ = writeln!(out, "agentgraph_runs{{status=\"{status}\"}} {n}");
    }
    let _ = writeln!(
        out,
        "# HELP agentgraph_queue_depth Runs waiting for a worker."
    );
    let _ = writeln!(out, "# TYPE agentgraph_queue_depth gauge");
    let _ = writeln!(
        out,
        "agentgraph_queue_depth {}",
        by_status.get("pending").copied().unwrap_or(0)
    );
    let _ = writeln!(
        out,
        "# HELP agentgraph_runs_finished_total Runs this instance finished, by status."
    );
    let _ = writeln!(out, "# TYPE agentgraph_runs_finished_total counter");
    if let Ok(m) = app.runs.metrics.finished.lock() {
        for (status, n) in m.iter() {
            let _ = writeln!(
                out,
                "agentgraph_runs_finished_total{{status=\"{status}\"}} {n}"
            );
        }
    }
    if let Ok(d) = app.runs.metrics.duration_ms.lock() {
        let _ = writeln!(
            out,
            "# HELP agentgraph_run_duration_seconds Time runs took, queue wait excluded."
        );
        let _ = writeln!(out, "# TYPE agentgraph_run_duration_seconds summary");
        let _ = writeln!(
            out,
            "agentgraph_run_duration_seconds_sum {}",
            d.0 as f64 / 1000.0
        );
        let _ = writeln!(out, "agentgraph_run_duration_seconds_count {}", d.1);
    }
    (
        [(
            header::CONTENT_TYPE,
            "text/plain; version=0.0.4; charset=utf-8",
        )],
        out,
    )
}
