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
}

impl ApiError {
    /// An error with `status` and `detail`.
    pub fn new(status: StatusCode, detail: impl Into<String>) -> Self {
        ApiError {
            status,
            detail: detail.into(),
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
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let detail = crate::redact::scrub(&self.detail);
        (self.status, axum::Json(json!({ "detail": detail }))).into_response()
    }
}

impl From<crate::store::StoreError> for ApiError {
    fn from(e: crate::store::StoreError) -> Self {
        ApiError::internal(e.to_string())
    }
}
