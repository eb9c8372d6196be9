//! `GET /threads/{id}/storage`: what a thread's checkpoints occupy in the server's saver, in
//! langgraph-api's shape (`total_bytes`, `checkpoints`, `channel_values` by channel,
//! `pending_writes`), so an operator can tell which threads grow a database and whether
//! pruning them would help. Owner-scoped like every thread read: another user's thread is a
//! 404. The numbers come from the saver (agent-core's `Checkpointer::storage`), counted by
//! the database on SQLite and PostgreSQL; a saver that does not tell is a 501, as
//! langgraph-api answers for a custom checkpointer.

use std::sync::Arc;

use agent_core::GraphError;
use agent_core::checkpoint::{StoredBytes, ThreadStorage};
use axum::Router;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use serde_json::{Map, Value, json};

use super::{App, Caller, Shared};
use crate::auth::Verb;
use crate::error::ApiError;

pub(super) fn routes() -> Router<Arc<App>> {
    Router::new().route("/threads/{id}/storage", get(storage))
}

async fn storage(
    State(app): Shared,
    caller: Caller,
    Path(id): Path<String>,
) -> Result<Response, ApiError> {
    let doc = super::threads::found(&app, &caller, &id, Verb::Read).await?;
    let thread = doc["thread_id"].as_str().unwrap_or_default();
    let told = app.runs.saver.storage(thread).await.map_err(|e| match e {
        // The database is down or restarting: worth trying again.
        e @ GraphError::Storage { .. } => ApiError::unavailable(e.to_string()),
        other => ApiError::internal(other.to_string()),
    })?;
    match told {
        Some(storage) => Ok(axum::Json(storage_json(thread, &storage)).into_response()),
        None => Err(ApiError::new(
            StatusCode::NOT_IMPLEMENTED,
            "Checkpoint storage is only reported for the built-in checkpointer.",
        )),
    }
}

/// langgraph-api's `ThreadStorage`.
fn storage_json(thread: &str, s: &ThreadStorage) -> Value {
    let counted = |c: &StoredBytes| json!({"count": c.count, "bytes": c.bytes});
    let by_channel: Map<String, Value> = s
        .by_field
        .iter()
        .map(|(field, c)| {
            (
                field.clone(),
                json!({"versions": c.count, "bytes": c.bytes}),
            )
        })
        .collect();
    let mut values = counted(&s.values);
    values["by_channel"] = Value::Object(by_channel);
    json!({
        "thread_id": thread,
        "total_bytes": s.total_bytes(),
        "checkpoints": counted(&s.checkpoints),
        "channel_values": values,
        "pending_writes": counted(&s.writes),
    })
}
