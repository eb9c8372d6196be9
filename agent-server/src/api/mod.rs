//! The HTTP API: one router, LangGraph's paths, JSON in and out.
//!
//! Handlers are small: they validate what the client sent (every refusal a 4xx with a
//! `detail`), ask what the caller may do ([`access`]), then call the run store, the runs and
//! the served graphs. What the API adds around them — the origin and host guard, CORS from
//! the allow-list, the body limit, authentication — is layered here once.

mod a2a;
mod access;
mod assistants;
mod crons;
mod docs;
pub(crate) mod guard;
mod health;
mod mcp;
mod memory;
pub(crate) mod models;
mod paging;
mod protocol;
pub(crate) mod retention;
mod runs;
mod sse;
mod store_search;
mod system;
mod thread_storage;
mod thread_stream;
mod threads;
mod web;

use std::collections::BTreeMap;
use std::sync::Arc;

use axum::Router;
use axum::extract::State;
use axum::http::{HeaderName, Method};
use axum::middleware;
use tower_http::cors::{AllowHeaders, AllowOrigin, CorsLayer};

use crate::auth::SharedAuth;
use crate::error::ApiError;
use crate::graph::ServedGraph;
use crate::limits::Limits;
use crate::runs::Runs;
use crate::store::RunStore;

pub(crate) use access::{AUTH_USER, Caller, Grant, StreamPermit, Streams, refuse_auth_user};

pub(crate) use assistants::system_assistant;
pub(crate) use crons::{Scheduling, spawn_scheduler};
pub(crate) use paging::uuid_path;

/// What every handler reaches.
pub(crate) struct App {
    pub(crate) store: Arc<dyn RunStore>,
    pub(crate) graphs: Arc<BTreeMap<String, Arc<dyn ServedGraph>>>,
    pub(crate) runs: Arc<Runs>,
    /// Who may call (`None`: one trusted person on loopback).
    pub(crate) auth: Option<SharedAuth>,
    /// What requests, users and runs may ask.
    pub(crate) limits: Limits,
    /// Open SSE streams per user.
    pub(crate) streams: Arc<Streams>,
    /// Origins and hosts.
    pub(crate) guard: Arc<guard::Guard>,
    /// Whether the web page is served (`/` for browsers, `/ui/`).
    pub(crate) web_page: bool,
    /// Whether the assistants are served as MCP tools at `/mcp`.
    pub(crate) mcp: bool,
    /// Whether the assistants are served as A2A agents (`/a2a/{id}`, their cards).
    pub(crate) a2a: bool,
    /// The long-term memory store (`/store/*`), the one the served graphs' nodes reach.
    pub(crate) memory: Arc<dyn agent_core::store::Store>,
    /// The crons' clock and how often the scheduler looks.
    pub(crate) scheduling: Scheduling,
    /// Set as the server stops (after its runs drained): open streams end with a last event.
    pub(crate) shutdown: tokio::sync::watch::Sender<bool>,
    /// The ttl of threads created without one (`None`: kept until deleted).
    pub(crate) thread_ttl: Option<retention::ThreadTtl>,
    /// The record of this process's runs' spans (the trace view), when the program keeps one.
    pub(crate) recorder: Option<crate::recorder::SpanRecorder>,
    /// The largest request body (and WebSocket message) taken.
    pub(crate) body_limit: usize,
}

pub(crate) type Shared = State<Arc<App>>;

/// The router with every endpoint and layer.
pub(crate) fn router(app: Arc<App>, body_limit: usize) -> Router {
    let (routes, doc) = api().split_for_parts();
    let doc = docs::finish(doc);
    let mut routes = routes
        .fallback(not_found)
        .method_not_allowed_fallback(not_found);
    if app.mcp {
        routes = routes.merge(mcp::routes(app.clone(), body_limit));
    }
    let policy = app.guard.clone();
    let cors = CorsLayer::new()
        .allow_origin(AllowOrigin::predicate(move |origin, parts| {
            guard::cors_allows(&policy, origin, parts)
        }))
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
        .layer(middleware::from_fn_with_state(
            app.clone(),
            access::authenticate,
        ))
        // The page's files (and `/`, like `/ok`) and the API's description need no
        // credential: they hold no data.
        .merge(web::routes())
        .merge(docs::routes(&doc))
        .layer(axum::extract::DefaultBodyLimit::max(body_limit))
        .layer(middleware::from_fn_with_state(
            app.guard.clone(),
            guard::check,
        ))
        .layer(cors)
        // Outermost: every request's span, whatever the layers inside answer (a 401, a 403
        // from the host guard, a 413) — the route is known here, as routing came first.
        .layer(middleware::from_fn(crate::trace::http_span))
        .with_state(app)
}

/// Every route of the API with its OpenAPI operation.
fn api() -> utoipa_axum::router::OpenApiRouter<Arc<App>> {
    utoipa_axum::router::OpenApiRouter::new()
        .merge(system::routes())
        .merge(assistants::routes())
        .merge(threads::routes())
        .merge(thread_storage::routes())
        .merge(runs::routes())
        .merge(crons::routes())
        .merge(memory::routes())
        .merge(a2a::routes())
        .merge(protocol::routes())
}

/// The API's OpenAPI document, as `/openapi.json` serves it.
pub fn openapi() -> utoipa::openapi::OpenApi {
    docs::finish(api().split_for_parts().1)
}

async fn not_found() -> ApiError {
    ApiError::not_found("Not Found")
}
