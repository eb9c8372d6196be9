//! The API's one error shape: a status and `{"detail": "..."}`, as langgraph-api answers.
//! Every handler returns [`ApiError`] for what it refuses, so no request ends in a 500 it
//! did not mean.

use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde_json::json;

/// A refused request: its status and the message clients show.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{status}: {detail}")]
pub struct ApiError {
    /// The HTTP status.
    pub status: StatusCode,
    /// What went wrong and, where it helps, what to do.
    pub detail: String,
    /// Seconds after which the request may pass (a 503's `Retry-After`).
    pub retry_after: Option<u64>,
}

impl ApiError {
    /// An error with `status` and `detail`.
    pub fn new(status: StatusCode, detail: impl Into<String>) -> Self {
        ApiError {
            status,
            detail: detail.into(),
            retry_after: None,
        }
    }

    /// 404.
    pub fn not_found(detail: impl Into<String>) -> Self {
        Self::new(StatusCode::NOT_FOUND, detail)
    }

    /// 409.
    pub fn conflict(detail: impl Into<String>) -> Self {
        Self::new(StatusCode::CONFLICT, detail)
    }

    /// 422: the request is well-formed HTTP but its content is not acceptable.
    pub fn invalid(detail: impl Into<String>) -> Self {
        Self::new(StatusCode::UNPROCESSABLE_ENTITY, detail)
    }

    /// 400.
    pub fn bad_request(detail: impl Into<String>) -> Self {
        Self::new(StatusCode::BAD_REQUEST, detail)
    }

    /// 500: the server's own storage failed; the detail says which operation.
    pub fn internal(detail: impl Into<String>) -> Self {
        Self::new(StatusCode::INTERNAL_SERVER_ERROR, detail)
    }

    /// 503 with `Retry-After`: the database is down, restarting or full; try again soon.
    pub fn unavailable(detail: impl Into<String>) -> Self {
        ApiError {
            retry_after: Some(RETRY_AFTER_SECS),
            ..Self::new(StatusCode::SERVICE_UNAVAILABLE, detail)
        }
    }
}

/// How long a client is asked to wait before trying again while the database is away.
const RETRY_AFTER_SECS: u64 = 2;

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let detail = crate::redact::scrub(&self.detail);
        let mut response = (self.status, axum::Json(json!({ "detail": detail }))).into_response();
        if let Some(secs) = self.retry_after {
            response
                .headers_mut()
                .insert(axum::http::header::RETRY_AFTER, secs.into());
        }
        response
    }
}

impl From<crate::store::StoreError> for ApiError {
    fn from(e: crate::store::StoreError) -> Self {
        match e.kind {
            crate::store::StoreErrorKind::Unavailable => ApiError::unavailable(format!(
                "{e}; the database is unavailable, try again shortly"
            )),
            crate::store::StoreErrorKind::Fenced | crate::store::StoreErrorKind::StopAsked => {
                ApiError::conflict(e.to_string())
            }
            crate::store::StoreErrorKind::Failed => ApiError::internal(e.to_string()),
        }
    }
}
