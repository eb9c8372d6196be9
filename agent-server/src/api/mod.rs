//! The HTTP API: one router, LangGraph's paths, JSON in and out.
//!
//! Handlers are small: they validate what the client sent (every refusal a 4xx with a
//! `detail`), then call the run store, the runs and the served graphs. What the API adds
//! around them — CORS for Studio, the body limit, the API key — is layered here once.

mod assistants;
mod body;
mod crons;
mod mcp;
mod memory;
mod runs;
mod sse;
mod system;
mod thread_stream;
mod threads;
mod web;

use std::collections::BTreeMap;
use std::sync::Arc;

use axum::Router;
use axum::extract::{Request, State};
use axum::http::{HeaderName, HeaderValue, Method, StatusCode};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use tower_http::cors::{AllowHeaders, AllowOrigin, CorsLayer};

use crate::error::ApiError;
use crate::graph::ServedGraph;
use crate::runs::Runs;
use crate::store::RunStore;

pub(crate) use assistants::system_assistant;
pub(crate) use body::{JsonBody, paged, uuid_path};
pub(crate) use crons::{Scheduling, spawn_scheduler};

/// What every handler reaches.
pub(crate) struct App {
    pub(crate) store: Arc<dyn RunStore>,
    pub(crate) graphs: Arc<BTreeMap<String, Arc<dyn ServedGraph>>>,
    pub(crate) runs: Arc<Runs>,
    pub(crate) api_key: Option<String>,
    /// Whether the web page is served (`/` for browsers, `/ui/`).
    pub(crate) web_page: bool,
    /// Whether the assistants are served as MCP tools at `/mcp`.
    pub(crate) mcp: bool,
    /// The long-term memory store (`/store/*`), the one the served graphs' nodes reach.
    pub(crate) memory: Arc<dyn agent_core::store::Store>,
    /// The crons' clock and how often the scheduler looks.
    pub(crate) scheduling: Scheduling,
}

pub(crate) type Shared = State<Arc<App>>;

/// The router with every endpoint and layer.
pub(crate) fn router(app: Arc<App>, body_limit: usize) -> Router {
    let mut routes = Router::new()
        .merge(system::routes())
        .merge(assistants::routes())
        .merge(threads::routes())
        .merge(runs::routes())
        .merge(crons::routes())
        .merge(memory::routes())
        .fallback(not_found)
        .method_not_allowed_fallback(not_found);
    if app.mcp {
        routes = routes.merge(mcp::routes(app.clone(), body_limit));
    }
    let cors = CorsLayer::new()
        .allow_origin(AllowOrigin::mirror_request())
        .allow_methods([
            Method::DELETE,
            Method::GET,
            Method::HEAD,
            Method::OPTIONS,
            Method::PATCH,
            Method::POST,
            Method::PUT,
        ])
        .allow_headers(AllowHeaders::mirror_request())
        .expose_headers([
            HeaderName::from_static("x-pagination-total"),
            HeaderName::from_static("x-pagination-next"),
            HeaderName::from_static("content-location"),
            HeaderName::from_static("location"),
        ])
        .allow_private_network(true)
        .max_age(std::time::Duration::from_secs(600));
    routes
        .layer(middleware::from_fn_with_state(app.clone(), api_key))
        // The page's files (and `/`, like `/ok`) need no key: they hold no data.
        .merge(web::routes())
        .layer(axum::extract::DefaultBodyLimit::max(body_limit))
        .layer(cors)
        .with_state(app)
}

async fn not_found() -> ApiError {
    ApiError::not_found("Not Found")
}

/// With a key configured, every request but `/ok` and preflights carries it in `x-api-key`.
async fn api_key(State(app): Shared, request: Request, next: Next) -> Response {
    if let Some(key) = &app.api_key
        && request.method() != Method::OPTIONS
        && request.uri().path() != "/ok"
    {
        let sent = request
            .headers()
            .get("x-api-key")
            .map(HeaderValue::as_bytes);
        if sent != Some(key.as_bytes()) {
            return ApiError::new(
                StatusCode::UNAUTHORIZED,
                "Missing or wrong API key: send it in the x-api-key header",
            )
            .into_response();
        }
    }
    next.run(request).await
}
