//! `/ok` (and `/` for API clients: see `web`), `/info` and `/metrics`: what load balancers, Studio and Prometheus read.

use std::fmt::Write as _;
use std::sync::Arc;

use axum::Router;
use axum::extract::{Query, State};
use axum::http::header;
use axum::response::IntoResponse;
use axum::routing::get;
use serde_json::{Value, json};

use super::{App, Shared};

pub(super) fn routes() -> Router<Arc<App>> {
    Router::new()
        .route("/ok", get(ok))
        .route("/info", get(info))
        .route("/metrics", get(metrics))
}

#[derive(serde::Deserialize)]
struct OkParams {
    check_db: Option<String>,
}

async fn ok(
    State(app): Shared,
    Query(p): Query<OkParams>,
) -> Result<axum::response::Response, crate::error::ApiError> {
    let check_db = super::health::flag("check_db", p.check_db.as_deref())?;
    Ok(super::health::ok(&app, check_db).await)
}

/// The version Studio checks (a langgraph-api 0.16 it knows), and the features we have.
async fn info() -> axum::Json<Value> {
    axum::Json(json!({
        "version": "0.16.7",
        "agentgraph_version": env!("CARGO_PKG_VERSION"),
        "flags": super::health::flags(),
        "host": {"kind": "self-hosted", "project_id": null, "host_revision_id": null, "revision_id": null, "tenant_id": null},
    }))
}

#[derive(serde::Deserialize)]
struct MetricsParams {
    format: Option<String>,
}

async fn metrics(
    State(app): Shared,
    Query(p): Query<MetricsParams>,
) -> Result<axum::response::Response, crate::error::ApiError> {
    // langgraph-api: `json`, else (`prometheus`, absent or unknown) the text format.
    if p.format.as_deref() == Some("json") {
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
