//! A2A (the Agent2Agent protocol, version 0.3 as the official `a2a-sdk` 0.3 clients speak it
//! and langgraph-api 0.16.7 serves it): the JSON-RPC envelope `POST /a2a/{assistant_id}`
//! reads, the parameters of its methods, and the tasks, messages, artifacts, stream events
//! and agent card it answers with.
//!
//! Why typed here like every other resource: the OpenAPI document describes `/a2a` from
//! these very types, and the handler reads `params` through them, so a message that does not
//! fit is a JSON-RPC "invalid params" error naming the field (JSON-RPC answers its errors in
//! a 200 body, not with a 422). Field names are the protocol's camelCase; unknown fields are
//! ignored, as the protocol's own models ignore them.

use serde::{Deserialize, Serialize};
use serde_json::Value;
use utoipa::ToSchema;

use super::Object;

/// A JSON-RPC 2.0 request to an assistant's A2A endpoint.
#[derive(Debug, Clone, Deserialize, Serialize, ToSchema)]
pub struct JsonRpcRequest {
    /// `"2.0"`.
    pub jsonrpc: String,
    /// The request's id (a string or a number), echoed in the response.
    #[schema(value_type = Option<String>)]
    pub id: Option<Value>,
    /// `message/send`, `message/stream`, `tasks/get` or `tasks/cancel` (also
    /// `agent/getAuthenticatedExtendedCard`, and A2A 1.0's `SendMessage`,
    /// `SendStreamingMessage`, `GetTask`, `CancelTask`, `GetExtendedAgentCard`).
    pub method: String,
    /// The method's parameters.
    pub params: Option<RpcParams>,
}

/// The parameters of one of the methods.
#[derive(Debug, Clone, Deserialize, Serialize, ToSchema)]
#[serde(untagged)]
pub enum RpcParams {
    /// `message/send` and `message/stream`.
    Send(Box<MessageSendParams>),
    /// `tasks/get`.
    Query(TaskQueryParams),
    /// `tasks/cancel`.
    Id(TaskIdParams),
}

/// `message/send` and `message/stream`: a message to the agent, and how to answer.
#[derive(Debug, Clone, Deserialize, Serialize, ToSchema)]
pub struct MessageSendParams {
    /// The message.
    pub message: Message,
    /// How the answer is given.
    pub configuration: Option<SendConfiguration>,
    /// The request's metadata (kept with the run).
    pub metadata: Option<Object>,
    /// The run's context (a LangGraph extension, as langgraph-api reads it): what the
    /// assistant's graph is configured with, checked as a run's `context` is.
    pub context: Option<Object>,
}

/// `message/send`'s `configuration`.
#[derive(Debug, Clone, Default, Deserialize, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct SendConfiguration {
    /// The output media types the client takes (every answer is text or JSON).
    pub accepted_output_modes: Option<Vec<String>>,
    /// `false`: answer as soon as the task is queued (`submitted`), without waiting for it
    /// to end; `tasks/get` follows it. Default: wait.
    pub blocking: Option<bool>,
    /// How many of the task's messages `history` holds (0 to 10; default all).
    pub history_length: Option<i64>,
    /// Push notifications are not supported: a request that asks for them is refused.
    #[schema(value_type = Option<Object>)]
    pub push_notification_config: Option<Value>,
}

/// `tasks/get`.
#[derive(Debug, Clone, Deserialize, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct TaskQueryParams {
    /// The task's id (`<contextId>:<run id>`, as `message/send` gave it).
    pub id: String,
    /// The task's context (optional: the task id holds it).
    pub context_id: Option<String>,
    /// How many of the task's messages `history` holds (0 to 10; default all).
    pub history_length: Option<i64>,
    /// The request's metadata (unused).
    pub metadata: Option<Object>,
}

/// `tasks/cancel`.
#[derive(Debug, Clone, Deserialize, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct TaskIdParams {
    /// The task's id.
    pub id: String,
    /// The task's context (optional: the task id holds it).
    pub context_id: Option<String>,
    /// The request's metadata (unused).
    pub metadata: Option<Object>,
}

/// Who wrote a message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize, ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    /// The client (A2A 1.0 spells it `ROLE_USER`).
    #[serde(alias = "ROLE_USER")]
    User,
    /// The agent (`ROLE_AGENT`).
    #[serde(alias = "ROLE_AGENT")]
    Agent,
}

/// A message of a conversation.
#[derive(Debug, Clone, Deserialize, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Message {
    /// `"message"`.
    #[serde(default = "message_kind")]
    pub kind: String,
    /// Who wrote it.
    pub role: Role,
    /// Its content: text, data and file parts.
    pub parts: Vec<Part>,
    /// The sender's id for it.
    pub message_id: String,
    /// The conversation (a thread of the server's: a UUID). Absent: a new one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub context_id: Option<String>,
    /// The task it continues (one waiting for input: the message answers it).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub task_id: Option<String>,
    /// Its metadata.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Object>,
    /// Tasks it refers to.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reference_task_ids: Option<Vec<String>>,
    /// Extensions it uses.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub extensions: Option<Vec<String>>,
    /// A LangGraph command (langgraph-api's extension), such as `{"resume": ...}` for a
    /// task waiting for input.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub command: Option<Object>,
}

fn message_kind() -> String {
    "message".to_owned()
}

/// One part of a message or an artifact: exactly one of `text`, `data` or `file`.
#[derive(Debug, Clone, Default, PartialEq, Deserialize, Serialize, ToSchema)]
pub struct Part {
    /// `text`, `data` or `file` (optional on input: the field present says which).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub kind: Option<String>,
    /// Text.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
    /// Structured data (a JSON object). On input, merged into the graph's input; a
    /// `resume` key answers a task waiting for input.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<Object>)]
    pub data: Option<Value>,
    /// A file, inline (`bytes`, base64) or by `uri` (passed to the graph, never fetched).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub file: Option<FileContent>,
    /// The part's metadata.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Object>,
}

impl Part {
    /// A text part.
    pub fn text(text: impl Into<String>) -> Part {
        Part {
            kind: Some("text".to_owned()),
            text: Some(text.into()),
            ..Part::default()
        }
    }

    /// A data part.
    pub fn data(data: Value) -> Part {
        Part {
            kind: Some("data".to_owned()),
            data: Some(data),
            ..Part::default()
        }
    }
}

/// A file part's file.
#[derive(Debug, Clone, Default, PartialEq, Deserialize, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct FileContent {
    /// Its content, base64.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub bytes: Option<String>,
    /// Where it is.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub uri: Option<String>,
    /// Its media type.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mime_type: Option<String>,
    /// Its name.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
}

/// Where a task is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize, ToSchema)]
#[serde(rename_all = "kebab-case")]
pub enum TaskState {
    /// Queued (the run is pending).
    Submitted,
    /// Running.
    Working,
    /// Paused on an interrupt: the next message with the task's id answers it.
    InputRequired,
    /// Ended with an answer.
    Completed,
    /// Cancelled.
    Canceled,
    /// Failed.
    Failed,
    /// Refused.
    Rejected,
    /// Waiting for credentials (never, here).
    AuthRequired,
    /// Unknown.
    Unknown,
}

impl TaskState {
    /// Whether nothing more happens to the task.
    pub fn terminal(self) -> bool {
        matches!(
            self,
            TaskState::Completed | TaskState::Canceled | TaskState::Failed | TaskState::Rejected
        )
    }
}

/// A task's status.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct TaskStatus {
    /// The state.
    pub state: TaskState,
    /// What the agent says about it (the question of a task waiting for input, the error of
    /// a failed one).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub message: Option<Message>,
    /// When it got there (ISO 8601).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub timestamp: Option<String>,
}

/// What a task produced: the answer (`Assistant Response`), or what an interrupt asks
/// (`Interrupt`).
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Artifact {
    /// Its id (stream updates with the same id add to it or replace it).
    pub artifact_id: String,
    /// Its name.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// What it is.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Its content.
    pub parts: Vec<Part>,
}

/// A task: one run of the assistant on the context's thread (and the runs that answered
/// its interrupts).
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Task {
    /// `"task"`.
    pub kind: String,
    /// `<contextId>:<run id>`.
    pub id: String,
    /// The conversation: the thread's id.
    pub context_id: String,
    /// Where it is.
    pub status: TaskStatus,
    /// Its messages.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub history: Option<Vec<Message>>,
    /// What it produced.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub artifacts: Option<Vec<Artifact>>,
}

/// A `message/stream` event: the task's status changed.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct TaskStatusUpdateEvent {
    /// `"status-update"`.
    pub kind: String,
    /// The task.
    pub task_id: String,
    /// Its context.
    pub context_id: String,
    /// The new status.
    pub status: TaskStatus,
    /// Whether it is the stream's last event.
    #[serde(rename = "final")]
    pub last: bool,
}

/// A `message/stream` event: an artifact grew (`append`) or is whole (`lastChunk`).
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct TaskArtifactUpdateEvent {
    /// `"artifact-update"`.
    pub kind: String,
    /// The task.
    pub task_id: String,
    /// Its context.
    pub context_id: String,
    /// The artifact, or the parts to add to it.
    pub artifact: Artifact,
    /// `true`: add these parts to the artifact with this id; `false`: (re)place it whole.
    pub append: bool,
    /// Whether the artifact is complete.
    pub last_chunk: bool,
}

/// A JSON-RPC error.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct RpcError {
    /// -32700 parse error, -32600 invalid request, -32601 no such method, -32602 invalid
    /// params, -32603 internal error, -32001 no such task, -32002 task not cancelable,
    /// -32003 push notifications not supported, -32005 content type not supported.
    pub code: i64,
    /// What went wrong.
    pub message: String,
}

/// A JSON-RPC response (also each `message/stream` event's data): `result` or `error`.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct JsonRpcResponse {
    /// `"2.0"`.
    pub jsonrpc: String,
    /// The request's id.
    #[schema(value_type = Option<String>)]
    pub id: Value,
    /// A `Task`, a stream event or an agent card.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<Object>)]
    pub result: Option<Value>,
    /// The error.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<RpcError>,
}

/// `GET /.well-known/agent-card.json` (query parameters).
#[derive(Debug, Clone, Default, Deserialize, Serialize, ToSchema, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
pub struct CardQuery {
    /// The assistant (its UUID, or a graph's name for its system assistant).
    pub assistant_id: Option<String>,
}

/// What an agent can do beyond the basics.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct AgentCapabilities {
    /// `message/stream` is served.
    pub streaming: bool,
    /// Push notifications are not.
    pub push_notifications: bool,
    /// Nor is a task's history of states.
    pub state_transition_history: bool,
}

/// A skill of an agent: each assistant has one, itself.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct AgentSkill {
    /// `<assistant_id>-main`.
    pub id: String,
    /// `<name> Capabilities`.
    pub name: String,
    /// The assistant's description.
    pub description: String,
    /// `assistant`, `langgraph`.
    pub tags: Vec<String>,
    /// None.
    pub examples: Vec<String>,
    /// What it takes.
    pub input_modes: Vec<String>,
    /// What it answers with.
    pub output_modes: Vec<String>,
    /// `inputSchema` (the graph's input fields: `required`, `properties`, `supportsA2A`:
    /// whether it takes text, having `messages`) and `contextSchema` (the JSON schema of
    /// what `params.context` may set).
    #[schema(value_type = Object)]
    pub metadata: Value,
}

/// How to reach the agent.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct AgentInterface {
    /// The endpoint.
    pub url: String,
    /// `JSONRPC`.
    pub protocol_binding: String,
    /// The A2A version spoken there.
    pub protocol_version: String,
}

/// An assistant as an A2A agent: what clients discover before they send.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct AgentCard {
    /// The assistant's name.
    pub name: String,
    /// Its description (or `<name> assistant`).
    pub description: String,
    /// Its endpoint, `<server>/a2a/<assistant_id>`.
    pub url: String,
    /// `0.3.0`.
    pub protocol_version: String,
    /// `JSONRPC`.
    pub preferred_transport: String,
    /// The endpoint again, as A2A 1.0 lists it.
    pub supported_interfaces: Vec<AgentInterface>,
    /// Streaming yes, push notifications no.
    pub capabilities: AgentCapabilities,
    /// `application/json`, `text/plain`.
    pub default_input_modes: Vec<String>,
    /// `application/json`, `text/plain`.
    pub default_output_modes: Vec<String>,
    /// One: the assistant.
    pub skills: Vec<AgentSkill>,
    /// The server's version.
    pub version: String,
}

/// A refused card request (langgraph-api's shape).
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct CardError {
    /// The JSON-RPC style error.
    pub error: RpcError,
}
