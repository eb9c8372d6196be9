//! `GET /threads/{thread_id}/storage`: what a thread's checkpoints occupy in the server's
//! saver, in langgraph-api's shape (`total_bytes`, `checkpoints`, `channel_values` by channel,
//! `pending_writes`), so an operator can tell which threads grow a database and whether
//! pruning them would help. Owner-scoped like every thread read: another user's thread is a
//! 404. The numbers come from the saver (agent-core's `Checkpointer::storage`), counted by
//! the database on SQLite and PostgreSQL; a saver that does not tell is a 501, as
//! langgraph-api answers for a custom checkpointer.

use std::sync::Arc;

use agent_core::GraphError;
use agent_core::checkpoint::StoredBytes;
use axum::Json;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::models::ErrorResponse;
use super::models::threads::{ChannelStorage, ChannelValuesStorage, StoredCount, ThreadStorage};
use super::{App, Caller, Shared};
use crate::auth::Verb;
use crate::error::ApiError;

pub(super) fn routes() -> OpenApiRouter<Arc<App>> {
    OpenApiRouter::new().routes(routes!(storage))
}

/// Bytes the thread's checkpoints occupy, as stored: checkpoints, channel values (per
/// channel) and pending writes. A 501 for a saver that does not tell.
#[utoipa::path(get, path = "/threads/{thread_id}/storage", tag = "Threads",
    params(("thread_id" = String, Path, format = Uuid)),
    responses((status = 200, body = ThreadStorage), (status = 404, body = ErrorResponse),
        (status = 422, body = ErrorResponse), (status = 501, body = ErrorResponse)))]
async fn storage(
    State(app): Shared,
    caller: Caller,
    Path(thread_id): Path<String>,
) -> Result<Json<ThreadStorage>, ApiError> {
    let doc = super::threads::found(&app, &caller, &thread_id, Verb::Read).await?;
    let thread = doc["thread_id"].as_str().unwrap_or_default();
    let told = app.runs.saver.storage(thread).await.map_err(|e| match e {
        // The database is down or restarting: worth trying again.
        e @ GraphError::Storage { .. } => ApiError::unavailable(e.to_string()),
        other => ApiError::internal(other.to_string()),
    })?;
    let Some(s) = told else {
        return Err(ApiError::new(
            StatusCode::NOT_IMPLEMENTED,
            "Checkpoint storage is only reported for the built-in checkpointer.",
        ));
    };
    let counted = |c: &StoredBytes| StoredCount {
        count: c.count,
        bytes: c.bytes,
    };
    Ok(Json(ThreadStorage {
        thread_id: thread.to_owned(),
        total_bytes: s.total_bytes(),
        checkpoints: counted(&s.checkpoints),
        channel_values: ChannelValuesStorage {
            count: s.values.count,
            bytes: s.values.bytes,
            by_channel: s
                .by_field
                .iter()
                .map(|(field, c)| {
                    let channel = ChannelStorage {
                        versions: c.count,
                        bytes: c.bytes,
                    };
                    (field.clone(), channel)
                })
                .collect(),
        },
        pending_writes: counted(&s.writes),
    }))
}
