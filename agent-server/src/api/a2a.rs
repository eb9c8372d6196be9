//! `/a2a/{assistant_id}`: every assistant as an agent of the Agent2Agent protocol, as
//! langgraph-api 0.16.7 serves it, so agents built on other stacks (Google ADK, CrewAI, the
//! official `a2a-sdk` clients) can call a graph served here.
//!
//! Why a second protocol beside the LangGraph API and `/mcp`: A2A is how agents of other
//! stacks find and talk to each other (a card to discover, conversations that last, tasks
//! that pause for input), which neither of the others gives them. It maps onto what the
//! server has without a new kind of state:
//!
//! - an A2A context is a thread (its id is the thread's UUID; a message without one starts a
//!   new thread), a task is a run on it: its id is `<contextId>:<run id>`, so `tasks/get`
//!   needs nothing else;
//! - `message/send` queues a run on the thread (through the same queue, checks, owner
//!   scoping and limits as `POST /threads/{id}/runs/wait`) with the message's text as a human
//!   message (its `messageId` as the message's id) and its data parts merged into the input,
//!   and answers with the task once the run ends (`configuration.blocking: false`: at once);
//! - `message/stream` queues the same run and answers with SSE: the task (`submitted`),
//!   `working`, the answer's tokens as they come from the run's `messages` stream
//!   (artifact updates appended to one artifact), then the whole answer (the same artifact
//!   replaced, `lastChunk`) and the final status;
//! - a run that pauses on an interrupt leaves its task `input-required` (the interrupt's
//!   value in an `Interrupt` artifact and as the status message); the next message naming
//!   the task resumes it (its text, or a data part's `resume`, is the resume value);
//! - `tasks/get` reads the task's latest run and its thread; `tasks/cancel` cancels the run
//!   (or, for a task waiting for input, records a cancelled run for it).
//!
//! The card (`GET /.well-known/agent-card.json?assistant_id=...`, `GET
//! /a2a/{id}/.well-known/agent-card.json`, `GET /a2a/{id}`) comes from the assistant's name,
//! description and schemas. Every route is behind the API's authentication, origin guard,
//! CORS and body limit; errors are JSON-RPC errors (in a 200, as JSON-RPC has it) whose
//! messages are the server's own words, never a file's or the environment's: a failure
//! inside the server is "Internal server error", logged, not quoted.

use std::sync::Arc;

use axum::Json;
use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use futures::StreamExt;
use serde::de::DeserializeOwned;
use serde_json::{Map, Value, json};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::assistants::resolve;
use super::models::a2a::{
    AgentCapabilities, AgentCard, AgentInterface, AgentSkill, Artifact, CardError, CardQuery,
    FileContent, JsonRpcRequest, JsonRpcResponse, Message, MessageSendParams, Part, Role, RpcError,
    Task, TaskArtifactUpdateEvent, TaskIdParams, TaskQueryParams, TaskState, TaskStatus,
    TaskStatusUpdateEvent,
};
use super::models::{ErrorResponse, Params};
use super::threads::found as thread_found;
use super::{App, Caller, Shared};
use crate::auth::Verb;
use crate::error::ApiError;
use crate::runs::{CancelAction, LiveEvent};
use crate::store::Kind;
use crate::time::now_iso;

/// JSON-RPC: the body is not JSON.
const PARSE_ERROR: i64 = -32700;
/// JSON-RPC: not a request.
const INVALID_REQUEST: i64 = -32600;
/// JSON-RPC: no such method.
const METHOD_NOT_FOUND: i64 = -32601;
/// JSON-RPC: the parameters do not fit.
const INVALID_PARAMS: i64 = -32602;
/// JSON-RPC: the server failed.
const INTERNAL_ERROR: i64 = -32603;
/// A2A: no such task (for this caller and assistant).
const TASK_NOT_FOUND: i64 = -32001;
/// A2A: the task has ended.
const TASK_NOT_CANCELABLE: i64 = -32002;
/// A2A: push notifications are not served.
const PUSH_NOT_SUPPORTED: i64 = -32003;
/// A2A: the operation does not apply.
const UNSUPPORTED_OPERATION: i64 = -32004;
/// A2A: a part this agent cannot take.
const CONTENT_TYPE_NOT_SUPPORTED: i64 = -32005;

/// The most messages `historyLength` may ask for (langgraph-api's bound).
const MAX_HISTORY: i64 = 10;

/// The A2A version spoken.
const PROTOCOL_VERSION: &str = "0.3.0";

/// What every assistant takes and answers with.
const MODES: [&str; 2] = ["application/json", "text/plain"];

pub(super) fn routes() -> OpenApiRouter<Arc<App>> {
    OpenApiRouter::new()
        .routes(routes!(rpc, card_at_endpoint))
        .routes(routes!(card_well_known))
        .routes(routes!(card_by_query))
        // The same, as langgraph-api also answers them (not in its document either).
        .route("/a2a/{assistant_id}/", post(rpc).get(card_at_endpoint))
        .route(
            "/a2a/{assistant_id}/.well-known/agent.json",
            get(card_well_known),
        )
}

/// A JSON-RPC error on its way to the client.
#[derive(Debug)]
struct Fail {
    code: i64,
    message: String,
}

impl Fail {
    fn new(code: i64, message: impl Into<String>) -> Fail {
        Fail {
            code,
            message: message.into(),
        }
    }

    fn params(message: impl Into<String>) -> Fail {
        Fail::new(INVALID_PARAMS, message)
    }

    /// The server failed: logged with its detail, told to the client without it.
    fn internal(detail: &str) -> Fail {
        tracing::error!(error = %detail, "an A2A request failed");
        Fail::new(INTERNAL_ERROR, "Internal server error")
    }

    fn task_not_found() -> Fail {
        Fail::new(TASK_NOT_FOUND, "Task not found")
    }
}

impl From<crate::store::StoreError> for Fail {
    fn from(e: crate::store::StoreError) -> Fail {
        Fail::internal(&e.to_string())
    }
}

impl From<ApiError> for Fail {
    /// The API's refusals keep their words (written by the server, scrubbed of the
    /// environment); its failures do not.
    fn from(e: ApiError) -> Fail {
        if e.status.is_server_error() {
            return Fail::internal(&e.detail);
        }
        Fail::params(crate::redact::scrub(&e.detail).into_owned())
    }
}

/// How a method's answer is written: A2A 0.3's names (`message/send`: lowercase roles and
/// states, the task as the result) or A2A 1.0's (`SendMessage`: `ROLE_AGENT`,
/// `TASK_STATE_COMPLETED`, a sent message's task under `task`), as langgraph-api writes
/// each.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Dialect {
    V03,
    V10,
}

/// The methods.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Method {
    Send,
    Stream,
    Get,
    Cancel,
    Card,
}

fn method(name: &str) -> Option<(Method, Dialect)> {
    Some(match name {
        "message/send" => (Method::Send, Dialect::V03),
        "message/stream" => (Method::Stream, Dialect::V03),
        "tasks/get" => (Method::Get, Dialect::V03),
        "tasks/cancel" => (Method::Cancel, Dialect::V03),
        "agent/getAuthenticatedExtendedCard" => (Method::Card, Dialect::V03),
        "SendMessage" => (Method::Send, Dialect::V10),
        "SendStreamingMessage" => (Method::Stream, Dialect::V10),
        "GetTask" => (Method::Get, Dialect::V10),
        "CancelTask" => (Method::Cancel, Dialect::V10),
        "GetExtendedAgentCard" => (Method::Card, Dialect::V10),
        _ => return None,
    })
}

/// A JSON-RPC response body.
fn reply(id: &Value, outcome: Result<Value, Fail>) -> Value {
    let body = match outcome {
        Ok(result) => JsonRpcResponse {
            jsonrpc: "2.0".into(),
            id: id.clone(),
            result: Some(result),
            error: None,
        },
        Err(f) => JsonRpcResponse {
            jsonrpc: "2.0".into(),
            id: id.clone(),
            result: None,
            error: Some(RpcError {
                code: f.code,
                message: f.message,
            }),
        },
    };
    serde_json::to_value(body).unwrap_or(Value::Null)
}

fn answer(id: &Value, outcome: Result<Value, Fail>) -> Response {
    Json(reply(id, outcome)).into_response()
}

/// Whether the `Accept` header lets `media` through (no header: anything).
fn accepts(headers: &HeaderMap, media: &str) -> bool {
    let Some(accept) = headers.get(header::ACCEPT).and_then(|v| v.to_str().ok()) else {
        return true;
    };
    let (kind, _) = media.split_once('/').unwrap_or((media, ""));
    accept.split(',').any(|range| {
        let range = range.split(';').next().unwrap_or_default().trim();
        range.is_empty()
            || range == "*/*"
            || range.eq_ignore_ascii_case(media)
            || range
                .strip_suffix("/*")
                .is_some_and(|t| t.eq_ignore_ascii_case(kind))
    })
}

/// At most `n` characters of a client's text quoted back.
fn quoted(text: &str, n: usize) -> String {
    let mut out: String = text.chars().take(n).collect();
    if text.chars().count() > n {
        out.push('…');
    }
    out
}

/// A2A JSON-RPC.
///
/// Talk to an assistant over the Agent2Agent protocol (JSON-RPC 2.0): `message/send` (a
/// run on the thread of `message.contextId`, answered with its task when it ends),
/// `message/stream` (the same, as Server-Sent Events of JSON-RPC responses: the task, its
/// status updates and the answer's tokens as artifact updates), `tasks/get`,
/// `tasks/cancel`. A task is `<contextId>:<run id>`; a run paused on an interrupt leaves it
/// `input-required`, and a message naming the task answers the interrupt. Errors are
/// JSON-RPC errors in a 200 body.
#[utoipa::path(post, path = "/a2a/{assistant_id}", tag = "A2A", operation_id = "post_a2a",
    params(("assistant_id" = String, Path, format = Uuid,
            description = "The assistant (its UUID, or a graph's name for its system assistant)"),
        ("Accept" = Option<String>, Header,
            description = "For `message/stream`, must allow `text/event-stream`; otherwise `application/json`.")),
    request_body = JsonRpcRequest,
    responses((status = 200, body = JsonRpcResponse,
            description = "A JSON-RPC response; for `message/stream`, an SSE stream of them"),
        (status = 400, body = ErrorResponse)))]
async fn rpc(
    State(app): Shared,
    caller: Caller,
    Path(assistant_id): Path<String>,
    headers: HeaderMap,
    body: Result<Bytes, axum::extract::rejection::BytesRejection>,
) -> Response {
    if !app.a2a {
        return ApiError::not_found("Not Found").into_response();
    }
    let body = match body {
        Ok(b) => b,
        Err(e) if e.status() == StatusCode::PAYLOAD_TOO_LARGE => {
            return ApiError::new(StatusCode::PAYLOAD_TOO_LARGE, "Request body too large")
                .into_response();
        }
        Err(e) => return ApiError::bad_request(e.body_text()).into_response(),
    };
    let Ok(request) = serde_json::from_slice::<Value>(&body) else {
        return answer(
            &Value::Null,
            Err(Fail::new(PARSE_ERROR, "Invalid JSON payload")),
        );
    };
    let Value::Object(mut request) = request else {
        return answer(
            &Value::Null,
            Err(Fail::new(
                INVALID_REQUEST,
                "Invalid message format: expected a JSON-RPC request object",
            )),
        );
    };
    let id = request.remove("id").unwrap_or(Value::Null);
    if !matches!(id, Value::Null | Value::String(_) | Value::Number(_)) {
        return answer(
            &Value::Null,
            Err(Fail::new(
                INVALID_REQUEST,
                "Invalid JSON-RPC request: 'id' must be a string, number, or null",
            )),
        );
    }
    if request.get("jsonrpc") != Some(&json!("2.0")) {
        return answer(
            &id,
            Err(Fail::new(
                INVALID_REQUEST,
                "Invalid JSON-RPC message: missing or invalid jsonrpc version",
            )),
        );
    }
    let (method, dialect) = match request.get("method") {
        Some(Value::String(name)) => match method(name) {
            Some(m) => m,
            None => {
                return answer(
                    &id,
                    Err(Fail::new(
                        METHOD_NOT_FOUND,
                        format!("Method not found: {}", quoted(name, 64)),
                    )),
                );
            }
        },
        Some(_) => {
            return answer(
                &id,
                Err(Fail::new(
                    METHOD_NOT_FOUND,
                    "Method not found: method must be a string",
                )),
            );
        }
        None => {
            return answer(
                &id,
                Err(Fail::new(
                    INVALID_REQUEST,
                    "Invalid JSON-RPC request: missing 'method' field",
                )),
            );
        }
    };
    if id.is_null() {
        return answer(
            &id,
            Err(Fail::new(
                INVALID_REQUEST,
                "Invalid JSON-RPC request: notifications are not served; give the request an id",
            )),
        );
    }
    let media = if method == Method::Stream {
        "text/event-stream"
    } else {
        "application/json"
    };
    if !accepts(&headers, media) {
        return (
            StatusCode::BAD_REQUEST,
            Json(json!({"error": format!("Accept header must include {media}")})),
        )
            .into_response();
    }
    let params = request.remove("params").unwrap_or_else(|| json!({}));
    let a2a = A2a {
        app: app.clone(),
        caller: caller.clone(),
        assistant_id: assistant_id.clone(),
    };
    let outcome = match method {
        Method::Stream => match a2a.stream(params, &id, dialect).await {
            Ok(response) => return response,
            Err(f) => Err(f),
        },
        Method::Send => {
            let stopping = app.shutdown.subscribe();
            return waiting(stopping, async move {
                let outcome = a2a.send(params).await;
                reply(&id, outcome.map(|v| in_dialect(v, dialect, true)))
            });
        }
        Method::Get => a2a.get(params).await,
        Method::Cancel => a2a.cancel(params).await,
        Method::Card => card(&app, &caller, &assistant_id, &headers)
            .await
            .map_err(Fail::from)
            .and_then(|c| serde_json::to_value(c).map_err(|e| Fail::internal(&e.to_string()))),
    };
    let outcome = outcome.map(|v| in_dialect(v, dialect, false));
    answer(&id, outcome)
}

/// How often a long answer says it is alive: a newline before a `message/send`'s JSON (JSON
/// allows leading whitespace), a comment in a stream. The official client's HTTP client
/// gives up on a read after 5 s by default.
const HEARTBEAT: std::time::Duration = std::time::Duration::from_secs(2);

/// A JSON answer that may take long (a `message/send` waiting for its run): a newline every
/// [`HEARTBEAT`] until `answer` is ready, then it; the server stopping first ends it with a
/// JSON-RPC error (the task goes on: `tasks/get` finds it).
fn waiting(
    mut stopping: tokio::sync::watch::Receiver<bool>,
    answer: impl std::future::Future<Output = Value> + Send + 'static,
) -> Response {
    let answer = Box::pin(async move {
        tokio::select! {
            v = answer => v,
            _ = stopping.wait_for(|stop| *stop) => json!({"jsonrpc": "2.0", "id": null, "error": {
                "code": INTERNAL_ERROR,
                "message": "The server is stopping; the task goes on: follow it with tasks/get",
            }}),
        }
    });
    let mut ticker = tokio::time::interval_at(tokio::time::Instant::now() + HEARTBEAT, HEARTBEAT);
    ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let body = futures::stream::unfold(Some((answer, ticker)), |state| async move {
        let (mut answer, mut ticker) = state?;
        tokio::select! {
            v = &mut answer => Some((Ok::<_, std::convert::Infallible>(Bytes::from(v.to_string())), None)),
            _ = ticker.tick() => Some((Ok(Bytes::from_static(b"\n")), Some((answer, ticker)))),
        }
    });
    (
        [(header::CONTENT_TYPE, "application/json")],
        axum::body::Body::from_stream(body),
    )
        .into_response()
}

/// An A2A 0.3 answer in `dialect` (see [`Dialect`]); `wrap`: a sent message's task, which
/// A2A 1.0 puts under `task`.
fn in_dialect(mut value: Value, dialect: Dialect, wrap: bool) -> Value {
    if dialect == Dialect::V03 {
        return value;
    }
    upper_case(&mut value);
    if wrap && value["kind"] == "task" {
        value = json!({"task": value});
    }
    value
}

/// Roles and task states as A2A 1.0 spells them (`ROLE_AGENT`, `TASK_STATE_INPUT_REQUIRED`),
/// leaving the content of data parts alone.
fn upper_case(value: &mut Value) {
    match value {
        Value::Object(map) => {
            for (key, v) in map.iter_mut() {
                match (key.as_str(), &*v) {
                    ("data", _) => {}
                    ("role", Value::String(role)) => {
                        *v = Value::String(format!("ROLE_{}", role.to_ascii_uppercase()));
                    }
                    ("state", Value::String(state)) => {
                        *v = Value::String(format!(
                            "TASK_STATE_{}",
                            state.replace('-', "_").to_ascii_uppercase()
                        ));
                    }
                    _ => upper_case(v),
                }
            }
        }
        Value::Array(items) => items.iter_mut().for_each(upper_case),
        _ => {}
    }
}

/// `params` as a `T`, or an invalid-params error naming the field.
fn params<T: DeserializeOwned>(params: Value) -> Result<T, Fail> {
    if !params.is_object() {
        return Err(Fail::params("Invalid params: must be an object"));
    }
    super::models::from_value(params)
        .map_err(|e| Fail::params(format!("Invalid params: {}", e.detail)))
}

/// One request's view of the server.
struct A2a {
    app: Arc<App>,
    caller: Caller,
    assistant_id: String,
}

/// A message made ready to run: the thread, the run's body, and the task it continues.
struct Prepared {
    context_id: String,
    /// The task it continues (`None`: a new one).
    task_id: Option<String>,
    body: Value,
    /// The request's message, as the task's history starts with it.
    message: Message,
    history_length: Option<i64>,
    blocking: bool,
}

/// A task found: its first run, the latest run that belongs to it, the thread, its state.
struct Found {
    task_id: String,
    context_id: String,
    anchor: Value,
    latest: Value,
    thread: Value,
    state: TaskState,
}

impl A2a {
    /// The assistant (if the caller may run it) and its served graph's schemas.
    async fn assistant(&self) -> Result<(Value, Value), Fail> {
        let assistant = resolve(&self.app, &self.caller, &self.assistant_id).await?;
        let graph_id = assistant["graph_id"].as_str().unwrap_or_default();
        let graph = self
            .app
            .graphs
            .get(graph_id)
            .ok_or_else(|| Fail::params("This assistant's graph is not served here"))?;
        let schemas = graph.schemas(graph_id);
        Ok((assistant, schemas))
    }

    /// Checks a `message/send` or `message/stream` and turns it into a run's body.
    async fn prepare(&self, params: Value) -> Result<Prepared, Fail> {
        let p: MessageSendParams = self::params(params)?;
        let config = p.configuration.clone().unwrap_or_default();
        if config
            .push_notification_config
            .as_ref()
            .is_some_and(|c| !c.is_null())
        {
            return Err(Fail::new(
                PUSH_NOT_SUPPORTED,
                "Push notifications are not supported: follow the task with message/stream or tasks/get",
            ));
        }
        history_length(config.history_length)?;
        let message = p.message;
        if message.message_id.trim().is_empty() {
            return Err(Fail::params("Missing required 'messageId' in message"));
        }
        if message.parts.is_empty() {
            return Err(Fail::params("Message must contain at least one part"));
        }
        let (assistant, schemas) = self.assistant().await?;
        let assistant_id = assistant["assistant_id"]
            .as_str()
            .unwrap_or_default()
            .to_owned();
        let parts = read_parts(&message.parts)?;
        let wants_messages = !parts.texts.is_empty() || !parts.blocks.is_empty();
        if wants_messages {
            let input = schemas
                .get("input_schema")
                .filter(|s| !s.is_null())
                .or_else(|| schemas.get("state_schema"));
            let fields: Vec<String> = input
                .and_then(|s| s["properties"].as_object())
                .map(|p| p.keys().cloned().collect())
                .unwrap_or_default();
            if !fields.iter().any(|f| f == "messages") {
                return Err(Fail::params(format!(
                    "This assistant's graph does not take A2A conversational messages: its input has no 'messages' field to put text or file parts in; send a data part with its input fields instead ({})",
                    fields.join(", ")
                )));
            }
        }

        let mut context_id = match &message.context_id {
            Some(c) => Some(context_uuid(c)?),
            None => None,
        };
        let mut task_id = None;
        let mut interrupted = false;
        if let Some(asked) = &message.task_id {
            let found = self
                .find(&assistant_id, asked, context_id.as_deref(), Verb::CreateRun)
                .await?
                .ok_or_else(Fail::task_not_found)?;
            if found.state.terminal() {
                return Err(Fail::new(
                    UNSUPPORTED_OPERATION,
                    "A terminal task cannot accept another message: send it without taskId to start a new task",
                ));
            }
            interrupted = found.state == TaskState::InputRequired;
            context_id = Some(found.context_id);
            task_id = Some(found.task_id);
        }

        // The input: the text (and files) as one human message under the message's id,
        // the data parts' fields beside it.
        let mut input = parts.data;
        let role = match message.role {
            Role::User => "human",
            Role::Agent => "ai",
        };
        let text = parts.texts.join("\n");
        if !parts.blocks.is_empty() {
            let mut blocks: Vec<Value> = parts
                .texts
                .iter()
                .map(|t| json!({"type": "text", "text": t}))
                .collect();
            blocks.extend(parts.blocks);
            input.insert(
                "messages".into(),
                json!([{"type": role, "content": blocks, "id": message.message_id}]),
            );
        } else if !parts.texts.is_empty() {
            input.insert(
                "messages".into(),
                json!([{"type": role, "content": text, "id": message.message_id}]),
            );
        }

        // A command: the client's own (langgraph-api's extension), or the answer to the
        // task's interrupt (a data part's `resume`, else the text).
        let mut command = message.command.clone().map(Value::Object);
        if command.as_ref().is_some_and(|c| c.get("resume").is_some()) && task_id.is_none() {
            return Err(Fail::params("taskId is required when resuming a task"));
        }
        if command.is_none() {
            if let Some(resume) = parts.resume {
                if task_id.is_none() {
                    return Err(Fail::params(
                        "contextId and taskId are required when resuming a task",
                    ));
                }
                if !interrupted {
                    return Err(Fail::params("Task is not awaiting input"));
                }
                command = Some(json!({"resume": resume}));
            } else if interrupted && !parts.texts.is_empty() {
                input.remove("messages");
                command = Some(json!({"resume": text}));
            }
        }
        let input = if command.is_some() && input.is_empty() {
            Value::Null
        } else {
            Value::Object(input)
        };

        let mut a2a = Map::new();
        a2a.insert("message_id".into(), message.message_id.clone().into());
        if let Some(t) = &task_id {
            a2a.insert("task_id".into(), t.clone().into());
        }
        let body = json!({
            "assistant_id": assistant_id,
            "input": input,
            "command": command,
            "context": p.context,
            "metadata": {"a2a": a2a},
            "if_not_exists": "create",
            "stream_mode": ["messages-tuple"],
        });
        Ok(Prepared {
            context_id: context_id.unwrap_or_else(|| uuid::Uuid::now_v7().to_string()),
            task_id,
            body,
            message,
            history_length: config.history_length,
            blocking: config.blocking.unwrap_or(true),
        })
    }

    /// `message/send`.
    async fn send(&self, params: Value) -> Result<Value, Fail> {
        let p = self.prepare(params).await?;
        let (run, channel) =
            super::runs::queued(&self.app, &self.caller, Some(&p.context_id), p.body).await?;
        let run_id = run["run_id"].as_str().unwrap_or_default().to_owned();
        let task_id = p
            .task_id
            .clone()
            .unwrap_or_else(|| format!("{}:{run_id}", p.context_id));
        if !p.blocking {
            let task = Task {
                kind: "task".into(),
                id: task_id.clone(),
                context_id: p.context_id.clone(),
                status: status(TaskState::Submitted, None),
                history: Some(vec![echoed(&p.message, &task_id, &p.context_id)]),
                artifacts: None,
            };
            return to_value(&task);
        }
        let result = channel.result().await;
        let status = self.run_status(&run_id).await?;
        let end = End::of(&result, &status);
        let task = end.task(
            &task_id,
            &p.context_id,
            &result["messages"],
            &result,
            Some(&p.message.message_id),
            p.history_length,
        );
        to_value(&task)
    }

    /// A run's stored status now.
    async fn run_status(&self, run_id: &str) -> Result<String, Fail> {
        Ok(self
            .app
            .store
            .get(Kind::Run, run_id)
            .await?
            .and_then(|r| r["status"].as_str().map(str::to_owned))
            .unwrap_or_else(|| "success".to_owned()))
    }

    /// `message/stream`: the run's events as A2A events, over SSE.
    async fn stream(
        &self,
        params: Value,
        rpc_id: &Value,
        dialect: Dialect,
    ) -> Result<Response, Fail> {
        let p = self.prepare(params).await?;
        let permit = self
            .app
            .streams
            .open(&self.caller, self.app.limits.streams_per_user)?;
        let (run, channel) =
            super::runs::queued(&self.app, &self.caller, Some(&p.context_id), p.body).await?;
        let run_id = run["run_id"].as_str().unwrap_or_default().to_owned();
        let task_id = p
            .task_id
            .clone()
            .unwrap_or_else(|| format!("{}:{run_id}", p.context_id));
        let (tx, rx) = tokio::sync::mpsc::channel::<Value>(64);
        let context_id = p.context_id.clone();
        let app = self.app.clone();
        let first = Task {
            kind: "task".into(),
            id: task_id.clone(),
            context_id: context_id.clone(),
            status: status(TaskState::Submitted, None),
            history: Some(vec![echoed(&p.message, &task_id, &context_id)]),
            artifacts: None,
        };
        let message_id = p.message.message_id.clone();
        let history_length = p.history_length;
        tokio::spawn(async move {
            let send = |v: Value| {
                let tx = tx.clone();
                async move { tx.send(v).await.is_ok() }
            };
            let mut first = serde_json::to_value(&first).unwrap_or_default();
            if dialect == Dialect::V10 {
                first = json!({"task": first});
            }
            if !send(first).await {
                return;
            }
            let working = TaskStatusUpdateEvent {
                kind: "status-update".into(),
                task_id: task_id.clone(),
                context_id: context_id.clone(),
                status: status(TaskState::Working, None),
                last: false,
            };
            if !send(serde_json::to_value(&working).unwrap_or_default()).await {
                return;
            }
            let artifact_id = uuid::Uuid::new_v4().to_string();
            let mut started = false;
            let mut last_message: Option<String> = None;
            let mut events = channel.follow(0);
            while let Some(event) = events.next().await {
                if event.name != "messages" {
                    continue;
                }
                let Ok(Value::Array(pair)) = serde_json::from_str::<Value>(&event.data) else {
                    continue;
                };
                let Some(chunk) = pair.first() else { continue };
                if !matches!(chunk["type"].as_str(), Some("AIMessageChunk" | "ai")) {
                    continue;
                }
                let mut piece = content_text(&chunk["content"]);
                if piece.is_empty() {
                    continue;
                }
                let id = chunk["id"].as_str().map(str::to_owned);
                if started && id != last_message {
                    piece.insert_str(0, "\n\n");
                }
                last_message = id;
                let update = TaskArtifactUpdateEvent {
                    kind: "artifact-update".into(),
                    task_id: task_id.clone(),
                    context_id: context_id.clone(),
                    artifact: response_artifact(&artifact_id, vec![Part::text(piece)]),
                    append: started,
                    last_chunk: false,
                };
                started = true;
                if !send(serde_json::to_value(&update).unwrap_or_default()).await {
                    return;
                }
            }
            let result = channel.result().await;
            let status = match app.store.get(Kind::Run, &run_id).await {
                Ok(Some(r)) => r["status"].as_str().unwrap_or("success").to_owned(),
                _ => "success".to_owned(),
            };
            let end = End::of(&result, &status);
            let task = end.task(
                &task_id,
                &context_id,
                &result["messages"],
                &result,
                Some(&message_id),
                history_length,
            );
            for mut artifact in task.artifacts.clone().unwrap_or_default() {
                let answer = artifact.name.as_deref() == Some(RESPONSE);
                if answer {
                    artifact.artifact_id = artifact_id.clone();
                }
                let update = TaskArtifactUpdateEvent {
                    kind: "artifact-update".into(),
                    task_id: task_id.clone(),
                    context_id: context_id.clone(),
                    artifact,
                    append: false,
                    last_chunk: true,
                };
                if !send(serde_json::to_value(&update).unwrap_or_default()).await {
                    return;
                }
            }
            let last = TaskStatusUpdateEvent {
                kind: "status-update".into(),
                task_id,
                context_id,
                status: task.status,
                last: true,
            };
            send(serde_json::to_value(&last).unwrap_or_default()).await;
        });
        let rpc_id = rpc_id.clone();
        let events =
            futures::stream::unfold(rx, |mut rx| async move { rx.recv().await.map(|v| (v, rx)) })
                .map(move |result| {
                    let result = in_dialect(result, dialect, false);
                    let data = reply(&rpc_id, Ok(result)).to_string();
                    LiveEvent {
                        id: String::new(),
                        name: "message".to_owned(),
                        data: sse_safe(data).into(),
                    }
                })
                .boxed();
        Ok(super::sse::sse_every(
            &self.app,
            events,
            None,
            false,
            HeaderMap::new(),
            permit,
            HEARTBEAT,
        ))
    }

    /// The task `task_id` of this assistant, if the caller may `verb` its thread.
    async fn find(
        &self,
        assistant_id: &str,
        task_id: &str,
        context_id: Option<&str>,
        verb: Verb,
    ) -> Result<Option<Found>, Fail> {
        let Some((context, run_id)) = task_id.split_once(':') else {
            return Ok(None);
        };
        let (Ok(context), Ok(run_id)) = (
            uuid::Uuid::parse_str(context),
            uuid::Uuid::parse_str(run_id),
        ) else {
            return Ok(None);
        };
        let (context, run_id) = (context.to_string(), run_id.to_string());
        if let Some(c) = context_id
            && c != context
        {
            return Ok(None);
        }
        let thread = match thread_found(&self.app, &self.caller, &context, verb).await {
            Ok(t) => t,
            Err(e) if e.status.is_server_error() => return Err(e.into()),
            Err(e) if e.status == StatusCode::FORBIDDEN => return Err(e.into()),
            Err(_) => return Ok(None),
        };
        let runs = self.app.store.runs_of(&context).await?;
        let Some(anchor) = runs
            .iter()
            .find(|r| r["run_id"] == run_id.as_str() && r["assistant_id"] == assistant_id)
            .cloned()
        else {
            return Ok(None);
        };
        let canonical = format!("{context}:{run_id}");
        let of_task = |r: &&Value| {
            r["assistant_id"] == assistant_id
                && (r["run_id"] == run_id.as_str()
                    || r["metadata"]["a2a"]["task_id"] == canonical.as_str())
        };
        let created = |r: &Value| r["created_at"].as_str().unwrap_or_default().to_owned();
        let latest = runs
            .iter()
            .filter(of_task)
            .max_by_key(|r| {
                (
                    created(r),
                    r["run_id"].as_str().unwrap_or_default().to_owned(),
                )
            })
            .cloned()
            .unwrap_or_else(|| anchor.clone());
        let newest = runs
            .iter()
            .max_by_key(|r| {
                (
                    created(r),
                    r["run_id"].as_str().unwrap_or_default().to_owned(),
                )
            })
            .map(|r| r["run_id"].clone());
        let mut state = match latest["status"].as_str() {
            Some("pending") => TaskState::Submitted,
            Some("running") => TaskState::Working,
            Some("success") => TaskState::Completed,
            Some("interrupted") => TaskState::Canceled,
            Some("error" | "timeout") => TaskState::Failed,
            _ => TaskState::Unknown,
        };
        if state == TaskState::Completed
            && thread["status"] == "interrupted"
            && newest.as_ref() == Some(&latest["run_id"])
        {
            state = TaskState::InputRequired;
        }
        Ok(Some(Found {
            task_id: canonical,
            context_id: context,
            anchor,
            latest,
            thread,
            state,
        }))
    }

    /// `tasks/get`.
    async fn get(&self, params: Value) -> Result<Value, Fail> {
        let p: TaskQueryParams = self::params(params)?;
        history_length(p.history_length)?;
        let (assistant, _) = self.assistant().await?;
        let assistant_id = assistant["assistant_id"].as_str().unwrap_or_default();
        let found = self
            .find(assistant_id, &p.id, p.context_id.as_deref(), Verb::Read)
            .await?
            .ok_or_else(Fail::task_not_found)?;
        let values = &found.thread["values"];
        let first_message = found.anchor["kwargs"]["input"]["messages"][0]["id"].as_str();
        let end = match found.state {
            TaskState::InputRequired => End::Paused(thread_interrupts(&found.thread)),
            TaskState::Completed => End::Completed,
            TaskState::Failed => End::Failed(failure_text(&found.thread["error"])),
            other => End::Other(other),
        };
        let mut task = end.task(
            &found.task_id,
            &found.context_id,
            &values["messages"],
            values,
            first_message,
            p.history_length,
        );
        task.status.timestamp = found.latest["updated_at"]
            .as_str()
            .map(str::to_owned)
            .or(task.status.timestamp);
        to_value(&task)
    }

    /// `tasks/cancel`.
    async fn cancel(&self, params: Value) -> Result<Value, Fail> {
        let p: TaskIdParams = self::params(params)?;
        let (assistant, _) = self.assistant().await?;
        let assistant_id = assistant["assistant_id"]
            .as_str()
            .unwrap_or_default()
            .to_owned();
        let found = self
            .find(
                &assistant_id,
                &p.id,
                p.context_id.as_deref(),
                Verb::CreateRun,
            )
            .await?
            .ok_or_else(Fail::task_not_found)?;
        if found.state.terminal() {
            return Err(Fail::new(
                TASK_NOT_CANCELABLE,
                "Task is not cancelable in its current state",
            ));
        }
        if found.state == TaskState::InputRequired {
            // Nothing runs: a run is recorded for the task, cancelled before it could start,
            // so the task reads `canceled` from now on (langgraph-api's marker run).
            let body = json!({
                "assistant_id": assistant_id,
                "input": null,
                "after_seconds": 3600,
                "metadata": {"a2a": {"task_id": found.task_id}},
            });
            let (marker, _) =
                super::runs::queued(&self.app, &self.caller, Some(&found.context_id), body).await?;
            self.app
                .runs
                .cancel(&marker, CancelAction::Interrupt)
                .await?;
        } else {
            let run_id = found.latest["run_id"].as_str().unwrap_or_default();
            let channel = self.app.runs.follow(run_id).await;
            self.app
                .runs
                .cancel(&found.latest, CancelAction::Interrupt)
                .await?;
            if let Some(channel) = channel {
                channel.result().await;
            }
        }
        let mut canceled = status(TaskState::Canceled, None);
        canceled.message = Some(agent_message(
            vec![Part::text("Task was canceled")],
            &found.task_id,
            &found.context_id,
        ));
        to_value(&Task {
            kind: "task".into(),
            id: found.task_id,
            context_id: found.context_id,
            status: canceled,
            history: None,
            artifacts: None,
        })
    }
}

/// A context id: a thread's UUID.
fn context_uuid(id: &str) -> Result<String, Fail> {
    uuid::Uuid::parse_str(id)
        .map(|u| u.to_string())
        .map_err(|_| {
            Fail::params(
                "contextId must be a UUID (a thread of this server); leave it out to start a new context",
            )
        })
}

fn history_length(n: Option<i64>) -> Result<(), Fail> {
    match n {
        Some(n) if n < 0 => Err(Fail::params("historyLength must be a non-negative integer")),
        Some(n) if n > MAX_HISTORY => Err(Fail::params(format!(
            "historyLength cannot exceed {MAX_HISTORY}"
        ))),
        _ => Ok(()),
    }
}

fn to_value<T: serde::Serialize>(v: &T) -> Result<Value, Fail> {
    serde_json::to_value(v).map_err(|e| Fail::internal(&e.to_string()))
}

/// What a message's parts carry for the graph.
#[derive(Default)]
struct ReadParts {
    texts: Vec<String>,
    /// File parts as LangChain content blocks.
    blocks: Vec<Value>,
    /// The data parts' fields (a `resume` key taken out).
    data: Map<String, Value>,
    resume: Option<Value>,
}

fn read_parts(parts: &[Part]) -> Result<ReadParts, Fail> {
    let mut out = ReadParts::default();
    let unsupported = |m: &str| Fail::new(CONTENT_TYPE_NOT_SUPPORTED, m);
    for part in parts {
        let present = [
            part.text.is_some(),
            part.data.is_some(),
            part.file.is_some(),
        ]
        .iter()
        .filter(|p| **p)
        .count();
        if present != 1 {
            return Err(unsupported(
                "Each message part must contain exactly one of 'text', 'file', or 'data'",
            ));
        }
        if let Some(text) = &part.text {
            out.texts.push(text.clone());
        } else if let Some(data) = &part.data {
            let Value::Object(map) = data else {
                return Err(unsupported(
                    "DataPart must contain a JSON object in the 'data' field",
                ));
            };
            for (k, v) in map {
                if k == "resume" {
                    if out.resume.is_some() {
                        return Err(Fail::params(
                            "Only one resume value is allowed in data parts",
                        ));
                    }
                    out.resume = Some(v.clone());
                } else {
                    out.data.insert(k.clone(), v.clone());
                }
            }
        } else if let Some(file) = &part.file {
            out.blocks.push(file_block(file)?);
        }
    }
    Ok(out)
}

/// A file part as a LangChain content block (a URI is passed on, never fetched).
fn file_block(file: &FileContent) -> Result<Value, Fail> {
    let kind = match file
        .mime_type
        .as_deref()
        .and_then(|m| m.split('/').next())
        .map(str::to_ascii_lowercase)
        .as_deref()
    {
        Some(t @ ("image" | "audio" | "video")) => t.to_owned(),
        _ => "file".to_owned(),
    };
    let mut block = json!({"type": kind});
    match (&file.bytes, &file.uri) {
        (Some(b), None) => block["base64"] = b.clone().into(),
        (None, Some(u)) => block["url"] = u.clone().into(),
        _ => {
            return Err(Fail::new(
                CONTENT_TYPE_NOT_SUPPORTED,
                "FilePart 'file' must contain exactly one of 'bytes' or 'uri'",
            ));
        }
    }
    if let Some(m) = &file.mime_type {
        block["mime_type"] = m.clone().into();
    }
    if let Some(n) = &file.name {
        block["extras"] = json!({"filename": n});
    }
    Ok(block)
}

/// The request's message as the task's history shows it.
fn echoed(message: &Message, task_id: &str, context_id: &str) -> Message {
    let mut m = message.clone();
    m.kind = "message".into();
    m.task_id = Some(task_id.to_owned());
    m.context_id = Some(context_id.to_owned());
    m.command = None;
    m
}

fn status(state: TaskState, message: Option<Message>) -> TaskStatus {
    TaskStatus {
        state,
        message,
        timestamp: Some(now_iso()),
    }
}

fn agent_message(parts: Vec<Part>, task_id: &str, context_id: &str) -> Message {
    Message {
        kind: "message".into(),
        role: Role::Agent,
        parts,
        message_id: uuid::Uuid::new_v4().to_string(),
        context_id: Some(context_id.to_owned()),
        task_id: Some(task_id.to_owned()),
        metadata: None,
        reference_task_ids: None,
        extensions: None,
        command: None,
    }
}

/// The answer artifact's name.
const RESPONSE: &str = "Assistant Response";

fn response_artifact(id: &str, parts: Vec<Part>) -> Artifact {
    Artifact {
        artifact_id: id.to_owned(),
        name: Some(RESPONSE.to_owned()),
        description: Some("The assistant's answer".to_owned()),
        parts,
    }
}

/// The text of a LangChain message's content (a string, or text blocks).
fn content_text(content: &Value) -> String {
    match content {
        Value::String(s) => s.clone(),
        Value::Array(blocks) => blocks
            .iter()
            .filter_map(|b| match b {
                Value::String(s) => Some(s.as_str()),
                Value::Object(o) if o.get("type") == Some(&json!("text")) => {
                    o.get("text").and_then(Value::as_str)
                }
                _ => None,
            })
            .collect(),
        _ => String::new(),
    }
}

/// A LangChain message dict's A2A role: human and AI messages only (system prompts and
/// tool output are the graph's own business).
fn role_of(m: &Value) -> Option<Role> {
    let label = m["type"]
        .as_str()
        .or_else(|| m["role"].as_str())
        .unwrap_or_default()
        .to_ascii_lowercase();
    match label.as_str() {
        "human" | "user" | "humanmessage" | "humanmessagechunk" => Some(Role::User),
        "ai" | "assistant" | "aimessage" | "aimessagechunk" => Some(Role::Agent),
        _ => None,
    }
}

/// The messages of one task: from the one with id `first` (else the last human message)
/// up to the next human message.
fn turn(messages: &Value, first: Option<&str>) -> Vec<Value> {
    let Some(list) = messages.as_array() else {
        return Vec::new();
    };
    let start = first
        .and_then(|id| list.iter().position(|m| m["id"] == id))
        .or_else(|| list.iter().rposition(|m| role_of(m) == Some(Role::User)))
        .unwrap_or(0);
    let mut out = vec![];
    for (i, m) in list.iter().enumerate().skip(start) {
        if i > start && role_of(m) == Some(Role::User) {
            break;
        }
        out.push(m.clone());
    }
    out
}

/// How a task's run ended (or where it is).
enum End {
    Completed,
    /// Paused: the interrupts (`{"id", "value"}`).
    Paused(Vec<Value>),
    /// Failed: what clients read of the error.
    Failed(String),
    Other(TaskState),
}

impl End {
    /// From a run's `/wait` body and its stored status.
    fn of(result: &Value, status: &str) -> End {
        if let Some(error) = result.get("__error__") {
            return End::Failed(failure_text(error));
        }
        if let Some(Value::Array(list)) = result.get("__interrupt__") {
            return End::Paused(list.clone());
        }
        match status {
            "interrupted" => End::Other(TaskState::Canceled),
            "error" | "timeout" => End::Failed(format!("the run ended with status {status}")),
            _ => End::Completed,
        }
    }

    /// The task: its status, the turn's messages as its history, and its artifacts (the
    /// answer, or what the interrupt asks).
    fn task(
        &self,
        task_id: &str,
        context_id: &str,
        messages: &Value,
        values: &Value,
        first: Option<&str>,
        history_length: Option<i64>,
    ) -> Task {
        let turn = turn(messages, first);
        let mut history: Vec<Message> = turn
            .iter()
            .filter_map(|m| {
                let role = role_of(m)?;
                let text = content_text(&m["content"]);
                if role == Role::Agent && text.is_empty() {
                    return None;
                }
                let mut msg = agent_message(vec![Part::text(text)], task_id, context_id);
                msg.role = role;
                if let Some(id) = m["id"].as_str() {
                    msg.message_id = id.to_owned();
                }
                Some(msg)
            })
            .collect();
        if let Some(n) = history_length {
            let keep = usize::try_from(n).unwrap_or(0);
            let drop = history.len().saturating_sub(keep);
            history.drain(..drop);
        }
        let answer: Option<String> = turn
            .iter()
            .skip(1)
            .rev()
            .filter(|m| role_of(m) == Some(Role::Agent))
            .map(|m| content_text(&m["content"]))
            .find(|t| !t.is_empty());
        let (status, artifacts) = match self {
            End::Completed => {
                let parts = match (&answer, messages.is_array()) {
                    (Some(text), _) => vec![Part::text(text.clone())],
                    (None, true) => vec![Part::text("")],
                    // A graph without messages answers with its state.
                    (None, false) => vec![Part::data(public_values(values))],
                };
                let artifact = response_artifact(&uuid::Uuid::new_v4().to_string(), parts);
                (status(TaskState::Completed, None), Some(vec![artifact]))
            }
            End::Paused(interrupts) => {
                let asked: Vec<Part> = interrupts
                    .iter()
                    .map(|i| match &i["value"] {
                        Value::String(s) => Part::text(s.clone()),
                        other => Part::text(other.to_string()),
                    })
                    .collect();
                let data: Vec<Part> = interrupts
                    .iter()
                    .map(|i| Part::data(json!({"id": i["id"], "value": i["value"]})))
                    .collect();
                let artifact = Artifact {
                    artifact_id: uuid::Uuid::new_v4().to_string(),
                    name: Some("Interrupt".to_owned()),
                    description: Some("Agent requires input to continue".to_owned()),
                    parts: data,
                };
                let message = agent_message(asked, task_id, context_id);
                (
                    status(TaskState::InputRequired, Some(message)),
                    Some(vec![artifact]),
                )
            }
            End::Failed(text) => {
                let message = agent_message(
                    vec![Part::text(format!("Error executing assistant: {text}"))],
                    task_id,
                    context_id,
                );
                (status(TaskState::Failed, Some(message)), None)
            }
            End::Other(state) => {
                let message = (*state == TaskState::Canceled).then(|| {
                    agent_message(vec![Part::text("Task was canceled")], task_id, context_id)
                });
                (status(*state, message), None)
            }
        };
        Task {
            kind: "task".into(),
            id: task_id.to_owned(),
            context_id: context_id.to_owned(),
            status,
            history: (history_length != Some(0)).then_some(history),
            artifacts,
        }
    }
}

/// A run's values without the server's markers.
fn public_values(values: &Value) -> Value {
    match values {
        Value::Object(map) => Value::Object(
            map.iter()
                .filter(|(k, _)| !k.starts_with("__"))
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect(),
        ),
        Value::Null => json!({}),
        other => json!({"value": other}),
    }
}

/// What clients read of a failure (`{"error": kind, "message": text}`), scrubbed again.
fn failure_text(error: &Value) -> String {
    let text = match (error["error"].as_str(), error["message"].as_str()) {
        (Some(kind), Some(message)) => format!("{kind}: {message}"),
        (Some(kind), None) => kind.to_owned(),
        (None, Some(message)) => message.to_owned(),
        _ => "the run failed".to_owned(),
    };
    crate::redact::scrub(&text).into_owned()
}

/// A paused thread's interrupts (`{"id", "value"}` each).
fn thread_interrupts(thread: &Value) -> Vec<Value> {
    thread["interrupts"]
        .as_object()
        .into_iter()
        .flat_map(|m| m.values())
        .filter_map(Value::as_array)
        .flatten()
        .map(|i| json!({"id": i["id"], "value": i["value"]}))
        .collect()
}

/// JSON as one SSE data line that no parser splits: the Unicode line separators some
/// split on (NEL, LS, PS) escaped, as langgraph-api escapes them. They can only appear
/// inside JSON strings, where the escape means the same.
fn sse_safe(data: String) -> String {
    if !data.contains(['\u{85}', '\u{2028}', '\u{2029}']) {
        return data;
    }
    data.replace('\u{85}', "\\u0085")
        .replace('\u{2028}', "\\u2028")
        .replace('\u{2029}', "\\u2029")
}

/// The card of an assistant the caller may see.
async fn card(
    app: &Arc<App>,
    caller: &Caller,
    assistant_id: &str,
    headers: &HeaderMap,
) -> Result<AgentCard, ApiError> {
    let assistant = resolve(app, caller, assistant_id).await?;
    let graph_id = assistant["graph_id"].as_str().unwrap_or_default();
    let schemas = app
        .graphs
        .get(graph_id)
        .map(|g| g.schemas(graph_id))
        .unwrap_or(Value::Null);
    let input = schemas
        .get("input_schema")
        .filter(|s| !s.is_null())
        .or_else(|| schemas.get("state_schema"))
        .cloned()
        .unwrap_or(Value::Null);
    let mut properties: Vec<String> = input["properties"]
        .as_object()
        .map(|p| p.keys().cloned().collect())
        .unwrap_or_default();
    properties.sort();
    let supports = properties.iter().any(|p| p == "messages");
    let required = input.get("required").cloned().unwrap_or_else(|| json!([]));
    let id = assistant["assistant_id"].as_str().unwrap_or_default();
    let name = assistant["name"].as_str().unwrap_or(graph_id).to_owned();
    let description = assistant["description"]
        .as_str()
        .filter(|d| !d.trim().is_empty())
        .map_or_else(|| format!("{name} assistant"), str::to_owned);
    let url = format!("{}/a2a/{id}", base_url(headers));
    let modes: Vec<String> = MODES.iter().map(|m| (*m).to_owned()).collect();
    Ok(AgentCard {
        name: name.clone(),
        description: description.clone(),
        url: url.clone(),
        protocol_version: PROTOCOL_VERSION.to_owned(),
        preferred_transport: "JSONRPC".to_owned(),
        supported_interfaces: vec![AgentInterface {
            url,
            protocol_binding: "JSONRPC".to_owned(),
            protocol_version: PROTOCOL_VERSION.to_owned(),
        }],
        capabilities: AgentCapabilities {
            streaming: true,
            push_notifications: false,
            state_transition_history: false,
        },
        default_input_modes: modes.clone(),
        default_output_modes: modes.clone(),
        skills: vec![AgentSkill {
            id: format!("{id}-main"),
            name: format!("{name} Capabilities"),
            description,
            tags: vec!["assistant".to_owned(), "langgraph".to_owned()],
            examples: Vec::new(),
            input_modes: modes.clone(),
            output_modes: modes,
            metadata: json!({
                "inputSchema": {
                    "required": required,
                    "properties": properties,
                    "supportsA2A": supports,
                },
                "contextSchema": schemas.get("context_schema").cloned().unwrap_or(Value::Null),
            }),
        }],
        version: env!("CARGO_PKG_VERSION").to_owned(),
    })
}

/// The server's URL as the client reached it: `X-Forwarded-Proto` (http or https) and the
/// `Host` (which the origin guard has checked on a server without auth).
fn base_url(headers: &HeaderMap) -> String {
    let scheme = headers
        .get("x-forwarded-proto")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.split(',').next())
        .map(str::trim)
        .filter(|s| matches!(*s, "http" | "https"))
        .unwrap_or("http");
    let host = headers
        .get(header::HOST)
        .and_then(|v| v.to_str().ok())
        .filter(|h| {
            !h.is_empty()
                && h.chars()
                    .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | ':' | '[' | ']'))
        })
        .unwrap_or("localhost");
    format!("{scheme}://{host}")
}

/// A card, or a refusal in langgraph-api's shape.
async fn card_response(
    app: &Arc<App>,
    caller: &Caller,
    assistant_id: &str,
    headers: &HeaderMap,
) -> Response {
    if !app.a2a {
        return ApiError::not_found("Not Found").into_response();
    }
    match card(app, caller, assistant_id, headers).await {
        Ok(card) => Json(card).into_response(),
        Err(e) => {
            let fail = Fail::from(e.clone());
            let status = if e.status.is_server_error() {
                StatusCode::INTERNAL_SERVER_ERROR
            } else if e.status == StatusCode::NOT_FOUND || e.status == StatusCode::FORBIDDEN {
                e.status
            } else {
                StatusCode::BAD_REQUEST
            };
            (
                status,
                Json(CardError {
                    error: RpcError {
                        code: fail.code,
                        message: fail.message,
                    },
                }),
            )
                .into_response()
        }
    }
}

/// An assistant's A2A agent card (at its endpoint, as the protocol allows).
#[utoipa::path(get, path = "/a2a/{assistant_id}", tag = "A2A",
    params(("assistant_id" = String, Path, format = Uuid)),
    responses((status = 200, body = AgentCard), (status = 400, body = CardError),
        (status = 404, body = CardError)))]
async fn card_at_endpoint(
    State(app): Shared,
    caller: Caller,
    Path(assistant_id): Path<String>,
    headers: HeaderMap,
) -> Response {
    card_response(&app, &caller, &assistant_id, &headers).await
}

/// An assistant's A2A agent card (its well-known path under its endpoint).
#[utoipa::path(get, path = "/a2a/{assistant_id}/.well-known/agent-card.json", tag = "A2A",
    params(("assistant_id" = String, Path, format = Uuid)),
    responses((status = 200, body = AgentCard), (status = 400, body = CardError),
        (status = 404, body = CardError)))]
async fn card_well_known(
    State(app): Shared,
    caller: Caller,
    Path(assistant_id): Path<String>,
    headers: HeaderMap,
) -> Response {
    card_response(&app, &caller, &assistant_id, &headers).await
}

/// An assistant's A2A agent card, the assistant named by the query.
#[utoipa::path(get, path = "/.well-known/agent-card.json", tag = "A2A", params(CardQuery),
    responses((status = 200, body = AgentCard), (status = 400, body = CardError),
        (status = 404, body = CardError), (status = 422, body = ErrorResponse)))]
async fn card_by_query(
    State(app): Shared,
    caller: Caller,
    Params(q): Params<CardQuery>,
    headers: HeaderMap,
) -> Response {
    if !app.a2a {
        return ApiError::not_found("Not Found").into_response();
    }
    let Some(id) = q.assistant_id.filter(|a| !a.is_empty()) else {
        return (
            StatusCode::BAD_REQUEST,
            Json(CardError {
                error: RpcError {
                    code: INVALID_PARAMS,
                    message: "Missing required query parameter: assistant_id".to_owned(),
                },
            }),
        )
            .into_response();
    };
    card_response(&app, &caller, &id, &headers).await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accept_headers() {
        let mut h = HeaderMap::new();
        assert!(accepts(&h, "application/json"), "no header: anything");
        h.insert(header::ACCEPT, "text/event-stream".parse().unwrap());
        assert!(!accepts(&h, "application/json"));
        assert!(accepts(&h, "text/event-stream"));
        h.insert(header::ACCEPT, "application/*, text/plain".parse().unwrap());
        assert!(accepts(&h, "application/json"));
        h.insert(header::ACCEPT, "*/*;q=0.1".parse().unwrap());
        assert!(accepts(&h, "text/event-stream"));
    }

    #[test]
    fn the_1_0_dialect_spells_roles_and_states_in_capitals_but_not_in_data() {
        let v = json!({"kind": "task", "status": {"state": "input-required",
            "message": {"role": "agent", "parts": [{"kind": "data", "data": {"state": "x", "role": "y"}}]}}});
        let out = in_dialect(v, Dialect::V10, true);
        assert_eq!(out["task"]["status"]["state"], "TASK_STATE_INPUT_REQUIRED");
        assert_eq!(out["task"]["status"]["message"]["role"], "ROLE_AGENT");
        assert_eq!(
            out["task"]["status"]["message"]["parts"][0]["data"],
            json!({"state": "x", "role": "y"})
        );
    }

    #[test]
    fn a_turn_runs_from_its_message_to_the_next_human_one() {
        let messages = json!([
            {"type": "human", "id": "a", "content": "one"},
            {"type": "ai", "id": "b", "content": "echo: one"},
            {"type": "human", "id": "c", "content": "two"},
            {"type": "ai", "id": "d", "content": [{"type": "text", "text": "echo: two"}]},
        ]);
        let ids = |t: Vec<Value>| t.iter().map(|m| m["id"].clone()).collect::<Vec<_>>();
        assert_eq!(ids(turn(&messages, Some("a"))), [json!("a"), json!("b")]);
        assert_eq!(ids(turn(&messages, None)), [json!("c"), json!("d")]);
        let task = End::Completed.task("t", "c", &messages, &Value::Null, Some("c"), None);
        let artifact = &task.artifacts.unwrap()[0];
        assert_eq!(artifact.parts[0].text.as_deref(), Some("echo: two"));
        assert_eq!(task.history.unwrap().len(), 2);
    }

    #[test]
    fn sse_data_escapes_unicode_line_separators() {
        assert_eq!(sse_safe("\"a\u{2028}b\"".into()), "\"a\\u2028b\"");
        assert_eq!(
            serde_json::from_str::<String>(&sse_safe("\"a\u{2029}\u{85}\"".into())).unwrap(),
            "a\u{2029}\u{85}"
        );
    }
}
