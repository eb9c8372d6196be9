//! The web page: chat with a graph, watch it run, draw it, time-travel its threads.
//!
//! Hand-written HTML, CSS and JS modules (`agent-server/web/`, no build step) compiled into
//! the binary, so every server has it and it needs nothing from the network. It talks to the
//! server through the public API only, like any other client. Browsers asking for `/` get the
//! page; API clients asking for JSON get `{"ok": true}` as before. The page's files are
//! outside the API key check (they hold no data): the page asks for the key itself.

use std::sync::Arc;

use axum::Router;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use serde_json::json;

use super::{App, Shared};

/// One file of the page.
struct Asset {
    name: &'static str,
    content_type: &'static str,
    body: &'static str,
}

/// An asset from `web/`, its content type from its extension.
macro_rules! asset {
    ($name:literal, html) => {
        asset!($name, "text/html; charset=utf-8")
    };
    ($name:literal, css) => {
        asset!($name, "text/css; charset=utf-8")
    };
    ($name:literal, js) => {
        asset!($name, "text/javascript; charset=utf-8")
    };
    ($name:literal, $content_type:literal) => {
        Asset {
            name: $name,
            content_type: $content_type,
            body: include_str!(concat!("../../web/", $name)),
        }
    };
}

const INDEX: Asset = asset!("index.html", html);

const ASSETS: &[Asset] = &[
    INDEX,
    asset!("style.css", css),
    asset!("app.js", js),
    asset!("api.js", js),
    asset!("draw.js", js),
    asset!("chat.js", js),
    asset!("threads.js", js),
    asset!("dom.js", js),
    asset!("trace.js", js),
];

pub(super) fn routes() -> Router<Arc<App>> {
    Router::new()
        .route("/", get(root))
        .route("/ui", get(index))
        .route("/ui/", get(index))
        .route("/ui/{file}", get(asset))
}

/// `/`: the page for a browser (when served), `{"ok": true}` for everyone else.
async fn root(State(app): Shared, headers: HeaderMap) -> Response {
    let html = headers
        .get(header::ACCEPT)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.contains("text/html"));
    if app.web_page && html {
        send(&INDEX, &headers)
    } else {
        axum::Json(json!({"ok": true, "services": {}})).into_response()
    }
}

async fn index(State(app): Shared, headers: HeaderMap) -> Response {
    if !app.web_page {
        return missing();
    }
    send(&INDEX, &headers)
}

async fn asset(State(app): Shared, Path(file): Path<String>, headers: HeaderMap) -> Response {
    match ASSETS.iter().find(|a| a.name == file) {
        Some(a) if app.web_page => send(a, &headers),
        _ => missing(),
    }
}

fn missing() -> Response {
    crate::error::ApiError::not_found("Not Found").into_response()
}

/// The file with its type and an ETag; browsers revalidate each load (`no-cache`) and get a
/// 304 while the binary is the same, so a new build's page is never mixed with an old one.
fn send(asset: &Asset, headers: &HeaderMap) -> Response {
    let etag = format!("\"{:016x}\"", fnv1a(asset.body.as_bytes()));
    let fresh = headers
        .get(header::IF_NONE_MATCH)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.split(',').any(|t| t.trim() == etag));
    let status = if fresh {
        StatusCode::NOT_MODIFIED
    } else {
        StatusCode::OK
    };
    let mut response = if fresh {
        status.into_response()
    } else {
        (status, asset.body).into_response()
    };
    let h = response.headers_mut();
    h.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static(asset.content_type),
    );
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    h.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    // The page loads nothing but its own files and talks to nothing but this server.
    h.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(
            "default-src 'self'; img-src 'self' data:; style-src 'self'; script-src 'self'; connect-src 'self'; frame-ancestors 'none'",
        ),
    );
    if let Ok(v) = HeaderValue::from_str(&etag) {
        h.insert(header::ETAG, v);
    }
    response
}

/// FNV-1a, 64 bits: a stable fingerprint of a file for its ETag.
fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ u64::from(*b)).wrapping_mul(0x0100_0000_01b3)
    })
}
