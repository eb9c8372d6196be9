//! `/openapi.json` and `/docs`: the API's contract, generated from the request and response
//! types the handlers read and answer with (utoipa), and a page that shows it.
//!
//! The page (`web/docs.html`) is ours and self-contained — no CDN, no bundled viewer — so a
//! server on a closed network documents itself. Both hold no data and are served without a
//! credential, as the web page's files are.

use std::sync::Arc;

use axum::Router;
use axum::http::header;
use axum::response::IntoResponse;
use axum::routing::get;
use utoipa::openapi::path::{HttpMethod, OperationBuilder};
use utoipa::openapi::security::{ApiKey, ApiKeyValue, HttpAuthScheme, HttpBuilder, SecurityScheme};
use utoipa::openapi::{InfoBuilder, OpenApi, PathItem, ResponseBuilder};

/// The document's title and version, and how a caller authenticates.
pub(crate) fn finish(mut doc: OpenApi) -> OpenApi {
    doc.info = InfoBuilder::new()
        .title("agentgraph server")
        .version(env!("CARGO_PKG_VERSION"))
        .description(Some(
            "LangGraph's server API (assistants, threads, runs, crons, store) over compiled \
             agentgraph graphs. Requests are checked against these schemas; a body that does \
             not fit is a 422 with a `detail` naming the field.",
        ))
        .build();
    // What is served outside the typed handlers: this description, and MCP.
    let op = |tag: &str, summary: &str, status: &str, answer: &str| {
        OperationBuilder::new()
            .tag(tag)
            .summary(Some(summary))
            .response(status, ResponseBuilder::new().description(answer).build())
            .build()
    };
    doc.paths.paths.insert(
        "/openapi.json".to_owned(),
        PathItem::new(
            HttpMethod::Get,
            op("System", "This document", "200", "The OpenAPI document"),
        ),
    );
    doc.paths.paths.insert(
        "/docs".to_owned(),
        PathItem::new(
            HttpMethod::Get,
            op(
                "System",
                "API Documentation",
                "200",
                "A page showing this document",
            ),
        ),
    );
    for path in ["/mcp", "/mcp/"] {
        let mut item = PathItem::new(
            HttpMethod::Post,
            op(
                "MCP",
                "MCP Post: JSON-RPC (initialize, tools/list, tools/call: each assistant a tool)",
                "200",
                "The JSON-RPC answer",
            ),
        );
        // JSON-RPC answers as JSON or as an event stream, as the client's Accept says.
        let accept = utoipa::openapi::path::ParameterBuilder::new()
            .name("Accept")
            .parameter_in(utoipa::openapi::path::ParameterIn::Header)
            .required(utoipa::openapi::Required::False)
            .build();
        if let Some(post) = item.post.as_mut() {
            post.parameters = Some(vec![utoipa::openapi::RefOr::T(accept)]);
        }
        item.get = Some(op(
            "MCP",
            "MCP Get (no sessions: 405)",
            "405",
            "Not allowed",
        ));
        item.delete = Some(op(
            "MCP",
            "Terminate Session (no sessions: 405)",
            "405",
            "Not allowed",
        ));
        doc.paths.paths.insert(path.to_owned(), item);
    }
    for (path, item) in doc.paths.paths.iter_mut() {
        for op in [
            &mut item.get,
            &mut item.post,
            &mut item.put,
            &mut item.patch,
            &mut item.delete,
        ]
        .into_iter()
        .flatten()
        {
            common_answers(path, op);
        }
    }
    let components = doc.components.get_or_insert_with(Default::default);
    components.add_security_scheme(
        "x-api-key",
        SecurityScheme::ApiKey(ApiKey::Header(ApiKeyValue::new("x-api-key"))),
    );
    components.add_security_scheme(
        "bearer",
        SecurityScheme::Http(
            HttpBuilder::new()
                .scheme(HttpAuthScheme::Bearer)
                .bearer_format("JWT")
                .build(),
        ),
    );
    doc
}

/// What any operation of the API may answer besides its own: the refusals every handler
/// shares (a body, query or path that does not fit, a credential missing or not enough, a
/// body too large, too many at once) and the database away — and a body, when an operation
/// takes one, that may be left out (it reads as `{}`).
fn common_answers(path: &str, op: &mut utoipa::openapi::path::Operation) {
    if matches!(path, "/openapi.json" | "/docs") {
        return;
    }
    let error = || {
        ResponseBuilder::new().content(
            "application/json",
            utoipa::openapi::ContentBuilder::new()
                .schema(Some(utoipa::openapi::Ref::from_schema_name(
                    "ErrorResponse",
                )))
                .build(),
        )
    };
    let mut shared = vec![
        ("401", "No credential, or one the server does not take"),
        ("403", "The credential does not allow it"),
        ("422", "The request does not fit: `detail` names the field"),
        ("429", "Too many at once for this user or server"),
        (
            "503",
            "The database is unavailable: try again (see Retry-After)",
        ),
    ];
    if path.contains('{') {
        shared.push(("404", "Not found (or not the caller's)"));
    }
    if let Some(body) = op.request_body.as_mut() {
        if let utoipa::openapi::RefOr::T(body) = body {
            body.required = Some(utoipa::openapi::Required::False);
        }
        shared.push(("413", "The body is larger than the server takes"));
    }
    for (status, why) in shared {
        op.responses
            .responses
            .entry(status.to_owned())
            .or_insert_with(|| error().description(why).build().into());
    }
}

/// `GET /openapi.json` and `GET /docs`.
pub(crate) fn routes<S: Clone + Send + Sync + 'static>(doc: &OpenApi) -> Router<S> {
    let json: Arc<str> = doc
        .to_pretty_json()
        .unwrap_or_else(|_| "{}".to_owned())
        .into();
    Router::new()
        .route(
            "/openapi.json",
            get(move || {
                let json = json.clone();
                async move {
                    (
                        [(header::CONTENT_TYPE, "application/json")],
                        json.to_string(),
                    )
                }
            }),
        )
        .route("/docs", get(page))
}

async fn page() -> impl IntoResponse {
    (
        [(header::CONTENT_TYPE, "text/html; charset=utf-8")],
        include_str!("../../web/docs.html"),
    )
}
