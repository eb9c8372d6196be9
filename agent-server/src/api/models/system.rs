//! `/ok`, `/info` and `/metrics`: what load balancers, Studio and monitoring read.

use serde::{Deserialize, Serialize};
use serde_json::Value;
use utoipa::ToSchema;

/// `GET /ok` (query parameters).
#[derive(Debug, Clone, Default, Deserialize, Serialize, ToSchema, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
pub struct OkQuery {
    /// Also check that the database answers (a 503 when it does not).
    pub check_db: Option<u8>,
}

/// What `/ok` answers.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct Ok {
    /// Always true (a failing check answers 503).
    pub ok: bool,
    /// The services checked (empty).
    #[schema(value_type = Object)]
    pub services: Value,
}

/// `GET /metrics` (query parameters).
#[derive(Debug, Clone, Default, Deserialize, Serialize, ToSchema, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
pub struct MetricsQuery {
    /// `prometheus` (the default) or `json`.
    pub format: Option<String>,
}
