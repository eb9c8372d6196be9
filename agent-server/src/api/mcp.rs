//! `/mcp`: the served assistants as MCP tools, as LangGraph server exposes them, so any MCP
//! client (an IDE, a chat app, another agent) can call a graph.
//!
//! The Model Context Protocol over streamable HTTP, served by the official SDK (`rmcp`)
//! statelessly with JSON answers, as langgraph-api does: no sessions, every POST stands
//! alone. `tools/list` names one tool per assistant (its name made a valid tool name, its
//! description, the graph's input schema with message lists asked as one string);
//! `tools/call` is a stateless run (`/runs/wait`) with the arguments as input and
//! `params.context` (or `params._meta.context`) as the run's context, through the same
//! queue and workers as any run; its answer is the final state as JSON text (and as
//! `structuredContent`). A run that fails answers `isError` with its error; an unknown tool
//! is a JSON-RPC error. The API key, CORS and the body limit are the rest of the API's.

use std::sync::Arc;

use axum::Router;
use axum::body::Body;
use axum::extract::Request;
use axum::http::{Method, StatusCode};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, ErrorData,
    Implementation, JsonObject, ListToolsResult, PaginatedRequestParams, ServerCapabilities,
    ServerConfig, Tool, ToolAnnotations,
};
use rmcp::service::{RequestContext, RoleServer};
use rmcp::transport::streamable_http_server::session::never::NeverSessionManager;
use rmcp::transport::{StreamableHttpServerConfig, StreamableHttpService};
use serde_json::{Map, Value, json};

use super::{App, Caller};
use crate::auth::{Resource, Verb};
use crate::error::ApiError;
use crate::store::Kind;

/// Tools per `tools/list` page (langgraph-api's page size).
const PAGE: usize = 100;

/// The message types whose lists an input schema asks for as one string: an LLM calling
/// the tool writes the user's message, not LangChain message dicts.
const MESSAGE_DEFS: [&str; 4] = ["HumanMessage", "AIMessage", "ToolMessage", "SystemMessage"];

/// The routes: `/mcp` (POST for JSON-RPC; GET and DELETE answer 405 without sessions).
pub(super) fn routes(app: Arc<App>, body_limit: usize) -> Router<Arc<App>> {
    let config = StreamableHttpServerConfig::default()
        .with_legacy_session_mode(false)
        .with_json_response(true)
        .with_max_request_body_bytes(body_limit);
    // The API's guard has checked the Host and the origin before a request gets here, as
    // for every route; the SDK checks the Host again with the same names where the server
    // answers to loopback names only (DNS rebinding).
    let config = match &app.guard.hosts {
        super::guard::Hosts::Any => config.disable_allowed_hosts(),
        super::guard::Hosts::Loopback(extra) => config.with_allowed_hosts(
            ["localhost", "127.0.0.1", "::1"]
                .into_iter()
                .map(str::to_owned)
                .chain(extra.iter().cloned()),
        ),
    };
    let service = StreamableHttpService::new(
        move || Ok(Tools { app: app.clone() }),
        Arc::new(NeverSessionManager::default()),
        config,
    );
    Router::new()
        .route_service("/mcp", service.clone())
        .route_service("/mcp/", service)
        .layer(middleware::from_fn(move |request: Request, next: Next| {
            read_context(body_limit, request, next)
        }))
}

/// A `tools/call`'s `params.context`, read before the SDK parses the request (its typed
/// parameters drop fields MCP does not define).
#[derive(Clone)]
struct CallContext(Value);

/// Reads the body (within the limit) and keeps a `tools/call`'s `params.context` in the
/// request's extensions, where the tool call finds it.
async fn read_context(limit: usize, request: Request, next: Next) -> Response {
    if request.method() != Method::POST {
        return next.run(request).await;
    }
    let (mut parts, body) = request.into_parts();
    let Ok(bytes) = axum::body::to_bytes(body, limit).await else {
        return ApiError::new(
            StatusCode::PAYLOAD_TOO_LARGE,
            format!("Request body too large (the limit is {limit} bytes)"),
        )
        .into_response();
    };
    if let Ok(message) = serde_json::from_slice::<Value>(&bytes)
        && message["method"] == "tools/call"
        && let Some(context) = message["params"].get("context").filter(|c| !c.is_null())
    {
        parts.extensions.insert(CallContext(context.clone()));
    }
    next.run(Request::from_parts(parts, Body::from(bytes)))
        .await
}

/// The MCP server of one request: the assistants as tools.
struct Tools {
    app: Arc<App>,
}

impl Tools {
    /// Every assistant with a served graph that `caller` may see, newest first (as
    /// `/assistants/search` lists them), under its tool name; of two with one tool name,
    /// the first is listed.
    async fn assistants(&self, caller: &Caller) -> Result<Vec<(String, Value)>, ErrorData> {
        let grant = self
            .app
            .grant(caller, Resource::Assistants, Verb::Search, &Value::Null)
            .await
            .map_err(|e| ErrorData::invalid_request(e.detail, None))?;
        let visible = crate::store::Query {
            owner: grant.scope(),
            or_system: true,
            sort_by: Some("created_at".into()),
            descending: true,
            ..crate::store::Query::default()
        };
        let all = self
            .app
            .store
            .search(Kind::Assistant, &visible)
            .await
            .map_err(|e| ErrorData::internal_error(e.to_string(), None))?;
        Ok(all
            .into_iter()
            .filter(|a| {
                a["graph_id"]
                    .as_str()
                    .is_some_and(|g| self.app.graphs.contains_key(g))
            })
            .map(|a| (tool_name(a["name"].as_str().unwrap_or_default()), a))
            .filter(|(name, _)| !name.is_empty())
            .collect())
    }

    fn tool(&self, name: String, assistant: &Value) -> Option<Tool> {
        let graph_id = assistant["graph_id"].as_str()?;
        let graph = self.app.graphs.get(graph_id)?;
        let title = assistant["name"].as_str().unwrap_or(graph_id).to_owned();
        let description = match assistant["description"].as_str() {
            Some(d) if !d.trim().is_empty() => d.to_owned(),
            _ => format!("Tool based on the {title} assistant"),
        };
        let schema = input_schema(graph.schemas(graph_id)["input_schema"].clone());
        Some(
            Tool::new(name, description, Arc::new(schema))
                .with_title(title)
                .with_annotations(
                    ToolAnnotations::new()
                        .read_only(false)
                        .destructive(false)
                        .idempotent(false)
                        .open_world(true),
                ),
        )
    }

    async fn call(
        &self,
        caller: &Caller,
        request: CallToolRequestParams,
        context: Option<Value>,
    ) -> Result<CallToolResult, ErrorData> {
        let name = request.name.as_ref();
        let unknown = || ErrorData::invalid_params(format!("Unknown tool: {name}"), None);
        let matching: Vec<Value> = self
            .assistants(caller)
            .await?
            .into_iter()
            .filter(|(tool, _)| tool == name)
            .map(|(_, a)| a)
            .collect();
        let assistant = match matching.as_slice() {
            [] => return Err(unknown()),
            [one] => one,
            _ => {
                return Err(ErrorData::invalid_params(
                    format!("Multiple tools found with the same name: {name}"),
                    None,
                ));
            }
        };
        let mut body = json!({
            "assistant_id": assistant["assistant_id"],
            "input": request.arguments.unwrap_or_default(),
        });
        if let Some(context) = context {
            body["context"] = context;
        }
        let value = match super::runs::stateless_result(&self.app, caller, body).await {
            Ok(value) => value,
            Err(e) if e.status.is_server_error() => {
                let detail = crate::redact::scrub(&e.detail).into_owned();
                return Err(ErrorData::internal_error(detail, None));
            }
            // Refused before it ran (a context that does not fit, ...): the caller's to fix.
            Err(e) => {
                let detail = crate::redact::scrub(&e.detail).into_owned();
                return Ok(CallToolResult::error(vec![ContentBlock::text(detail)]));
            }
        };
        if let Some(error) = value.get("__error__") {
            let text = match (error["error"].as_str(), error["message"].as_str()) {
                (Some(kind), Some(message)) => format!("{kind}: {message}"),
                (_, Some(message)) => message.to_owned(),
                _ => error.to_string(),
            };
            return Ok(CallToolResult::error(vec![ContentBlock::text(text)]));
        }
        Ok(if value.is_object() {
            CallToolResult::structured(value)
        } else {
            CallToolResult::success(vec![ContentBlock::text(value.to_string())])
        })
    }
}

impl rmcp::ServerHandler for Tools {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new(
                "agent-server",
                env!("CARGO_PKG_VERSION"),
            ))
            .with_instructions(
                "Each tool runs one of this server's graphs once, on a fresh thread: the \
                 arguments are the graph's input, the result its final state.",
            )
    }

    async fn list_tools(
        &self,
        request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        let caller = caller_of(&context)?;
        let offset = request
            .and_then(|r| r.cursor)
            .and_then(|c| c.parse::<usize>().ok())
            .unwrap_or(0);
        let mut seen = std::collections::HashSet::new();
        let unique: Vec<(String, Value)> = self
            .assistants(&caller)
            .await?
            .into_iter()
            .filter(|(name, _)| seen.insert(name.clone()))
            .collect();
        // A cursor is the client's text: past the end is an empty page, not an overflow.
        let next = offset.saturating_add(PAGE);
        let more = unique.len() > next;
        let tools = unique
            .into_iter()
            .skip(offset)
            .take(PAGE)
            .filter_map(|(name, a)| self.tool(name, &a))
            .collect();
        let mut result = ListToolsResult::with_all_items(tools);
        result.next_cursor = more.then(|| next.to_string());
        Ok(result)
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let from_params = context
            .extensions
            .get::<axum::http::request::Parts>()
            .and_then(|parts| parts.extensions.get::<CallContext>())
            .map(|c| c.0.clone());
        // The SDK moves `_meta` from the parameters to the request's context.
        let from_meta = request
            .meta
            .as_ref()
            .and_then(|m| m.0.0.get("context"))
            .or_else(|| context.meta.0.0.get("context"))
            .filter(|c| !c.is_null())
            .cloned();
        let run_context = from_params.or(from_meta);
        let caller = caller_of(&context)?;
        // The caller's trace: in `_meta` (where MCP clients put it, SEP-414), else in the
        // HTTP request's headers.
        let meta = request
            .meta
            .as_ref()
            .map(|m| &m.0.0)
            .filter(|m| m.contains_key("traceparent"))
            .or(Some(&context.meta.0.0).filter(|m| m.contains_key("traceparent")));
        let carrier = match meta {
            Some(meta) => crate::trace::Carrier::from_map(meta),
            None => context
                .extensions
                .get::<axum::http::request::Parts>()
                .map(|parts| crate::trace::Carrier::from_headers(&parts.headers))
                .unwrap_or_default(),
        };
        let span = crate::trace::mcp_span(&request.name, &carrier);
        crate::trace::serve_in(&carrier, span, self.call(&caller, request, run_context))
            .await
            .map(Into::into)
    }
}

/// The caller the API's authentication found for this MCP request.
fn caller_of(context: &RequestContext<RoleServer>) -> Result<Caller, ErrorData> {
    context
        .extensions
        .get::<axum::http::request::Parts>()
        .and_then(|parts| parts.extensions.get::<Caller>())
        .cloned()
        .ok_or_else(|| ErrorData::invalid_request("This request is not authenticated", None))
}

/// An assistant's name as an MCP tool name (`[A-Za-z0-9_.-]{1,128}`): whitespace runs
/// become `_`, other characters go.
fn tool_name(name: &str) -> String {
    name.split_whitespace()
        .collect::<Vec<_>>()
        .join("_")
        .chars()
        .filter(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.'))
        .take(128)
        .collect()
}

/// The graph's input schema as a tool's: an object, whose message lists are one string
/// (the user's message, which the server makes a human message).
fn input_schema(schema: Value) -> JsonObject {
    let Value::Object(mut schema) = schema else {
        return Map::from_iter([("type".to_owned(), json!("object"))]);
    };
    let has_messages = schema
        .get("$defs")
        .and_then(Value::as_object)
        .is_some_and(|defs| MESSAGE_DEFS.iter().any(|m| defs.contains_key(*m)));
    if has_messages {
        if let Some(Value::Object(defs)) = schema.get_mut("$defs") {
            for m in MESSAGE_DEFS {
                defs.remove(m);
            }
            if defs.is_empty() {
                schema.remove("$defs");
            }
        }
        if let Some(Value::Object(props)) = schema.get_mut("properties") {
            for (key, prop) in props.iter_mut() {
                if holds_messages(prop) {
                    let title = prop.get("title").cloned().unwrap_or_else(|| json!(key));
                    *prop = json!({
                        "type": "string",
                        "title": title,
                        "description": "The user message to send to the agent.",
                    });
                }
            }
        }
    }
    schema
        .entry("type")
        .or_insert_with(|| Value::String("object".to_owned()));
    schema
}

/// A list whose items reference the message types.
fn holds_messages(prop: &Value) -> bool {
    if prop["type"] != "array" {
        return false;
    }
    let items = &prop["items"];
    let choices = items["oneOf"].as_array().or(items["anyOf"].as_array());
    choices.into_iter().flatten().any(|c| {
        c["$ref"]
            .as_str()
            .and_then(|r| r.strip_prefix("#/$defs/"))
            .is_some_and(|name| MESSAGE_DEFS.contains(&name))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_become_valid_tool_names() {
        assert_eq!(tool_name("  my  agent v2 "), "my_agent_v2");
        assert_eq!(tool_name("tool-router"), "tool-router");
        assert_eq!(tool_name("résumé/bot!"), "rsumbot");
        assert_eq!(tool_name(&"x".repeat(200)).len(), 128);
    }

    #[test]
    fn message_lists_are_asked_as_one_string() {
        let schema = json!({
            "$defs": crate::schema::message_defs(),
            "properties": {
                "messages": {"type": "array", "title": "Messages", "items": {"oneOf": [{"$ref": "#/$defs/HumanMessage"}]}},
                "topic": {"title": "Topic"},
            },
            "title": "State", "type": "object",
        });
        let out = Value::Object(input_schema(schema));
        assert_eq!(out["properties"]["messages"]["type"], "string");
        assert_eq!(out["properties"]["topic"], json!({"title": "Topic"}));
        assert!(out.get("$defs").is_none(), "{out}");
        assert_eq!(
            Value::Object(input_schema(Value::Null)),
            json!({"type": "object"})
        );
    }
}
