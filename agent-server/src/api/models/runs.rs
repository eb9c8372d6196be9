//! Runs: what creating one carries (on a thread or stateless, and a cron's runs), the
//! cancel of many, and the run the API answers with.

use serde::{Deserialize, Serialize};
use serde_json::Value;
use utoipa::ToSchema;

use super::Object;
use super::threads::CheckpointConfig;

/// What a run does when its thread is busy.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, Serialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum MultitaskStrategy {
    /// Refused (409) while a run is pending or running.
    Reject,
    /// The runs before it are stopped, and deleted with their checkpoints.
    Rollback,
    /// The runs before it are stopped; what they checkpointed stays.
    Interrupt,
    /// Waits its turn (the default).
    #[default]
    Enqueue,
}

impl MultitaskStrategy {
    /// As stored.
    pub fn as_str(self) -> &'static str {
        match self {
            MultitaskStrategy::Reject => "reject",
            MultitaskStrategy::Rollback => "rollback",
            MultitaskStrategy::Interrupt => "interrupt",
            MultitaskStrategy::Enqueue => "enqueue",
        }
    }
}

/// What a run on a thread that does not exist does.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, Serialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum IfNotExists {
    /// The thread is made.
    Create,
    /// A 404 (the default).
    #[default]
    Reject,
}

/// What a streamed or waited run does when its client goes away.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, Serialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum OnDisconnect {
    /// It is cancelled.
    Cancel,
    /// It goes on (the default).
    #[default]
    Continue,
}

/// What becomes of a stateless run's thread.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, Serialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum OnCompletion {
    /// Deleted with the run's end (the default).
    #[default]
    Delete,
    /// Kept.
    Keep,
}

/// How a run's checkpoints are written.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum DurabilityName {
    /// Each before the next step.
    Sync,
    /// Each while the next step runs (the default).
    Async,
    /// Once, as the run ends.
    Exit,
}

impl DurabilityName {
    /// As stored.
    pub fn as_str(self) -> &'static str {
        match self {
            DurabilityName::Sync => "sync",
            DurabilityName::Async => "async",
            DurabilityName::Exit => "exit",
        }
    }
}

/// One stream mode, or a list of them.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize, ToSchema)]
#[serde(untagged)]
pub enum StreamModes {
    /// One (`values`, `updates`, `messages`, `messages-tuple`, `custom`, `events`, `debug`,
    /// `tasks`, `checkpoints`).
    One(String),
    /// Several.
    Many(Vec<String>),
}

impl StreamModes {
    /// The modes named.
    pub fn names(&self) -> Vec<String> {
        match self {
            StreamModes::One(m) => vec![m.clone()],
            StreamModes::Many(m) => m.clone(),
        }
    }
}

/// `"*"` (every node) or a list of node names.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize, ToSchema)]
#[serde(untagged)]
pub enum Nodes {
    /// `"*"`: every node.
    All(String),
    /// These nodes.
    Some(Vec<String>),
}

/// A run's command: resume an interrupt, write an update, go to nodes.
#[derive(Debug, Clone, Default, Deserialize, Serialize, ToSchema)]
pub struct CommandBody {
    /// A partial state written first.
    #[schema(value_type = Option<Object>)]
    pub update: Option<Value>,
    /// What `interrupt()` returns.
    #[schema(value_type = Option<Object>)]
    pub resume: Option<Value>,
    /// Node names (a name, a list, or `Send`s).
    #[schema(value_type = Option<Object>)]
    pub goto: Option<Value>,
}

/// `config` of a run, an assistant or a cron.
#[derive(Debug, Clone, Default, Deserialize, Serialize, ToSchema)]
pub struct ConfigBody {
    /// Tags.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tags: Option<Vec<String>>,
    /// Super-steps at most (1 to the server's ceiling).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub recursion_limit: Option<u64>,
    /// Settings (the context of graphs written before `context` existed).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<Object>)]
    pub configurable: Option<Object>,
    /// Metadata of the run's checkpoints.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<Object>)]
    pub metadata: Option<Object>,
    /// Anything else, kept as sent.
    #[serde(flatten)]
    #[schema(value_type = Object)]
    pub other: Object,
}

/// A run's fields, as a run's creation (on a thread or stateless) and a cron's runs take
/// them.
#[derive(Debug, Clone, Default, Deserialize, Serialize, ToSchema)]
pub struct RunCreate {
    /// The assistant: its UUID, or a graph id (its system assistant).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub assistant_id: Option<String>,
    /// Start from (fork at) this checkpoint.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub checkpoint: Option<CheckpointConfig>,
    /// Start from this checkpoint id.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub checkpoint_id: Option<String>,
    /// The graph's input.
    #[schema(value_type = Option<Object>)]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub input: Option<Value>,
    /// A command instead of input.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub command: Option<CommandBody>,
    /// Metadata of the run (and of its checkpoints).
    #[schema(value_type = Option<Object>)]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Object>,
    /// The run's config.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub config: Option<ConfigBody>,
    /// The run's context (over its assistant's).
    #[schema(value_type = Option<Object>)]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub context: Option<Object>,
    /// Where its result is POSTed when it ends.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub webhook: Option<String>,
    /// Pause before these nodes.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub interrupt_before: Option<Nodes>,
    /// Pause after these nodes.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub interrupt_after: Option<Nodes>,
    /// What is streamed (default `values`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stream_mode: Option<StreamModes>,
    /// Subgraphs' events too.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stream_subgraphs: Option<bool>,
    /// Events kept for `Last-Event-ID` replays.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stream_resumable: Option<bool>,
    /// Feedback keys (kept with the run).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub feedback_keys: Option<Vec<String>>,
    /// When its thread is busy.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub multitask_strategy: Option<MultitaskStrategy>,
    /// When its thread does not exist.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub if_not_exists: Option<IfNotExists>,
    /// When its client goes away.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub on_disconnect: Option<OnDisconnect>,
    /// A stateless run's thread after it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub on_completion: Option<OnCompletion>,
    /// Waits this long in the queue first (seconds, up to a year).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub after_seconds: Option<f64>,
    /// Checkpoints during the run (`true`: `async` durability; `false`: `exit`), as older
    /// clients ask; `durability` wins.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub checkpoint_during: Option<bool>,
    /// How its checkpoints are written.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub durability: Option<DurabilityName>,
}

/// What runs `POST /runs/cancel` stops: by status, or a thread's (some of them).
#[derive(Debug, Clone, Default, Deserialize, Serialize, ToSchema)]
pub struct RunsCancel {
    /// `pending`, `running` or `all`.
    pub status: Option<CancelStatus>,
    /// A thread's runs.
    pub thread_id: Option<String>,
    /// Only these runs of the thread.
    pub run_ids: Option<Vec<String>>,
}

/// Which runs a cancel by status stops.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum CancelStatus {
    /// Pending runs.
    Pending,
    /// Running runs.
    Running,
    /// Both.
    All,
}

/// A run.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct Run {
    /// Its id.
    #[schema(format = Uuid)]
    pub run_id: Option<String>,
    /// Its thread.
    #[schema(format = Uuid)]
    pub thread_id: Option<String>,
    /// Its assistant.
    pub assistant_id: Option<String>,
    /// When it was made.
    #[schema(format = DateTime)]
    pub created_at: Option<String>,
    /// When it last changed.
    #[schema(format = DateTime)]
    pub updated_at: Option<String>,
    /// `pending`, `running`, `success`, `error`, `timeout` or `interrupted`.
    pub status: Option<String>,
    /// Its metadata.
    #[schema(value_type = Option<Object>)]
    pub metadata: Option<Value>,
    /// What it was made with.
    #[schema(value_type = Option<Object>)]
    pub kwargs: Option<Value>,
    /// When its thread was busy.
    pub multitask_strategy: Option<String>,
    /// LangSmith's project (always null here).
    #[schema(nullable)]
    pub langsmith_session_name: Option<String>,
}

/// How a cancel stops a run.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, Serialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum CancelActionName {
    /// Stop it; what it checkpointed stays (the default).
    #[default]
    Interrupt,
    /// Stop it and delete it with its checkpoints.
    Rollback,
}

/// `POST /threads/{thread_id}/runs/{run_id}/cancel` query.
#[derive(Debug, Clone, Default, Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
pub struct CancelQuery {
    /// Answer when the run has stopped.
    #[serde(default, deserialize_with = "super::flag")]
    pub wait: Option<bool>,
    /// `interrupt` or `rollback`.
    #[param(inline)]
    pub action: Option<CancelActionName>,
}

/// `POST /runs/cancel` query.
#[derive(Debug, Clone, Default, Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
pub struct CancelManyQuery {
    /// `interrupt` or `rollback`.
    #[param(inline)]
    pub action: Option<CancelActionName>,
}

/// `GET /threads/{thread_id}/runs` query.
#[derive(Debug, Clone, Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
pub struct RunListQuery {
    /// How many (default 10).
    #[serde(default = "super::ten")]
    #[param(minimum = 1, maximum = 1000)]
    pub limit: u64,
    /// How many to skip.
    #[serde(default)]
    pub offset: u64,
    /// Only runs in this status.
    pub status: Option<String>,
    /// Only these fields of each run (repeat the parameter for several).
    #[serde(default)]
    pub select: Vec<String>,
}

/// `GET .../join` query.
#[derive(Debug, Clone, Default, Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
pub struct JoinQuery {
    /// Cancel the run when this client goes away.
    #[serde(default, deserialize_with = "super::flag")]
    pub cancel_on_disconnect: Option<bool>,
}

/// `GET .../stream` (join a run's stream) query.
#[derive(Debug, Clone, Default, Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
pub struct JoinStreamQuery {
    /// Cancel the run when this client goes away.
    #[serde(default, deserialize_with = "super::flag")]
    pub cancel_on_disconnect: Option<bool>,
    /// Only these modes' events (repeat the parameter, or a JSON list; default: all).
    #[serde(default)]
    pub stream_mode: Vec<String>,
}

/// What a run did, as the server that executed it recorded it: agentgraph's own route (the
/// web page's trace view), not langgraph-api's.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct RunTrace {
    /// The run.
    #[schema(format = Uuid)]
    pub run_id: String,
    /// Its spans (the run, its graph, steps, nodes, model and tool calls, checkpoint
    /// writes), in the order they ended; `parent` links them into a tree.
    pub spans: Vec<crate::recorder::RecordedSpan>,
    /// Whether spans were left out (a run of more than 5,000).
    pub truncated: bool,
}
