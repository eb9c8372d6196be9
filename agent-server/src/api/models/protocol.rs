//! The thread-streaming protocol (langgraph-api's "v2"): the command envelope sent to
//! `POST /threads/{id}/commands` (or in-band on the WebSocket), its answers, the body of
//! `POST /threads/{id}/stream/events`, and the event envelope both transports carry.
//!
//! Bodies are read leniently, as langgraph-api reads them: a filter entry that does not fit
//! is dropped rather than refused, so these types describe the contract and the handlers
//! check the few things that are refused (an empty `channels`, an unknown channel).

use serde::{Deserialize, Serialize};
use serde_json::Value;
use utoipa::ToSchema;

/// A command: a client-chosen id, a method, its parameters.
#[derive(Debug, Clone, Deserialize, Serialize, ToSchema)]
pub struct ProtocolCommand {
    /// Echoed in the answer.
    #[schema(minimum = 0)]
    pub id: i64,
    /// `run.start`, `input.respond`, `agent.getTree`, `subscription.subscribe`,
    /// `subscription.unsubscribe`, `subscription.reconnect`.
    pub method: String,
    /// The method's parameters (`{}` when absent).
    #[serde(default)]
    #[schema(value_type = Option<Object>)]
    pub params: Option<Value>,
}

/// `meta` of a command's answer.
#[derive(Debug, Clone, Default, Deserialize, Serialize, ToSchema)]
pub struct ProtocolResponseMeta {
    /// The highest event `seq` the connection had seen (0 over HTTP: it has seen none).
    pub applied_through_seq: u64,
}

/// The kind of a `success` answer.
#[derive(Debug, Clone, Copy, Deserialize, Serialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum SuccessType {
    /// Always `success`.
    Success,
}

/// A command that was carried out.
#[derive(Debug, Clone, Deserialize, Serialize, ToSchema)]
pub struct ProtocolSuccess {
    /// `success`.
    #[serde(rename = "type")]
    pub kind: SuccessType,
    /// The command's id.
    pub id: i64,
    /// What the method answers (`run.start`: `{"run_id"}`).
    #[schema(value_type = Object)]
    pub result: Value,
    /// Where the connection stood.
    pub meta: ProtocolResponseMeta,
}

/// The kind of an `error` answer.
#[derive(Debug, Clone, Copy, Deserialize, Serialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum ErrorType {
    /// Always `error`.
    Error,
}

/// Why a command was not carried out.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum ProtocolErrorCode {
    /// A parameter is missing or malformed.
    InvalidArgument,
    /// A method this server does not carry out.
    UnknownCommand,
    /// The run could not be queued (the message says why).
    UnknownError,
    /// No run of this connection is there to act on.
    NoSuchRun,
    /// No subscription by that id on this connection.
    NoSuchSubscription,
    /// No such namespace.
    NoSuchNamespace,
    /// The thread has no pending interrupt by that id.
    NoSuchInterrupt,
    /// No such checkpoint.
    NoSuchCheckpoint,
    /// The caller may not do this.
    PermissionDenied,
    /// Not supported here.
    NotSupported,
    /// A reconnect's `since` is older than what the connection keeps.
    ResumeGap,
}

/// A command that was refused. Sent with HTTP 200 (400 for an envelope that is not one).
#[derive(Debug, Clone, Deserialize, Serialize, ToSchema)]
pub struct ProtocolError {
    /// `error`.
    #[serde(rename = "type")]
    pub kind: ErrorType,
    /// The command's id (`null` when the envelope had none).
    pub id: Option<i64>,
    /// The reason, as a code.
    pub error: ProtocolErrorCode,
    /// The reason, for people.
    pub message: String,
    /// Where the connection stood.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<ProtocolResponseMeta>,
}

/// A command's answer.
#[derive(Debug, Clone, Deserialize, Serialize, ToSchema)]
#[serde(untagged)]
pub enum ProtocolResponse {
    /// Carried out.
    Success(ProtocolSuccess),
    /// Refused.
    Error(ProtocolError),
}

/// `POST /threads/{id}/stream/events`: what the stream carries.
#[derive(Debug, Clone, Default, Deserialize, Serialize, ToSchema)]
pub struct ProtocolEventStreamRequest {
    /// `values`, `updates`, `messages`, `tools`, `custom`, `lifecycle`, `input`, `tasks`,
    /// `checkpoints` or `custom:<name>`; at least one.
    pub channels: Vec<String>,
    /// Namespace prefixes (`[]` is the root and everything under it; a segment without
    /// `:` matches any task of that node). Absent: every namespace.
    #[serde(default)]
    pub namespaces: Option<Vec<Vec<String>>>,
    /// How deep below a prefix an event may be (absent: any depth).
    #[serde(default)]
    #[schema(minimum = 0)]
    pub depth: Option<u64>,
    /// Only events with a greater `seq` (a reconnect).
    #[serde(default)]
    #[schema(minimum = 0)]
    pub since: Option<u64>,
}

/// Where an event comes from and what it carries.
#[derive(Debug, Clone, Deserialize, Serialize, ToSchema)]
pub struct ProtocolEventParams {
    /// The graph's namespace (`[]`: the root; `["sub:<task>"]`: a subgraph).
    pub namespace: Vec<String>,
    /// Milliseconds since the epoch.
    pub timestamp: i64,
    /// The channel's payload.
    #[schema(value_type = Object)]
    pub data: Value,
    /// The node that produced it, when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node: Option<String>,
}

/// The kind of an event.
#[derive(Debug, Clone, Copy, Deserialize, Serialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum EventType {
    /// Always `event`.
    Event,
}

/// One event of a thread's stream (an SSE frame's `data`, or a WebSocket text frame).
#[derive(Debug, Clone, Deserialize, Serialize, ToSchema)]
pub struct ProtocolEvent {
    /// `event`.
    #[serde(rename = "type")]
    pub kind: EventType,
    /// Stable across connections: clients drop an id seen twice.
    pub event_id: String,
    /// The event's place on this connection (the SSE `id:`); `since` counts in it.
    pub seq: u64,
    /// The channel: `lifecycle`, `values`, `updates`, `messages`, `tools`, `custom`,
    /// `input.requested`.
    pub method: String,
    /// Namespace, time, payload.
    pub params: ProtocolEventParams,
}
