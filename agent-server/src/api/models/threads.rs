//! `/threads`: what a thread's create, patch, search, count, prune, state and history
//! requests carry, and the thread and thread state the API answers with.

use serde::{Deserialize, Serialize};
use serde_json::Value;
use utoipa::ToSchema;

use super::{IfExists, Object, Page, SortOrder};

/// What the server does when a thread's ttl runs out.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum TtlStrategyName {
    /// Delete the thread with its runs and checkpoints.
    Delete,
    /// Keep the thread and its latest checkpoint.
    KeepLatest,
}

/// A thread's ttl as the SDKs send it: minutes, or minutes with a strategy.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize, ToSchema)]
#[serde(untagged)]
pub enum TtlBody {
    /// Minutes; the thread is deleted when they run out.
    Minutes(f64),
    /// `{"ttl": minutes, "strategy": ...}`.
    Config {
        /// Minutes from the thread's last activity.
        ttl: f64,
        /// What happens then (default `delete`).
        #[serde(default)]
        strategy: Option<TtlStrategyName>,
    },
}

/// One update of a `supersteps` list.
#[derive(Debug, Clone, Deserialize, Serialize, ToSchema)]
pub struct SuperstepUpdate {
    /// The values written, as if `as_node` returned them.
    #[serde(default)]
    #[schema(value_type = Object)]
    pub values: Value,
    /// A command (not applied by this server: values only).
    #[serde(default)]
    #[schema(value_type = Option<Object>)]
    pub command: Option<Value>,
    /// The node the update is written as.
    pub as_node: Option<String>,
}

/// One super-step of a thread's `supersteps`: updates written one after another.
#[derive(Debug, Clone, Deserialize, Serialize, ToSchema)]
pub struct Superstep {
    /// The updates.
    #[serde(default)]
    pub updates: Vec<SuperstepUpdate>,
}

/// `POST /threads`.
#[derive(Debug, Clone, Default, Deserialize, Serialize, ToSchema)]
pub struct ThreadCreate {
    /// The thread's id (a UUID; default: a new one).
    #[schema(format = Uuid)]
    pub thread_id: Option<String>,
    /// Metadata kept with it.
    #[schema(value_type = Option<Object>)]
    pub metadata: Option<Object>,
    /// What to do when a thread with this id exists.
    pub if_exists: Option<IfExists>,
    /// Its time to live.
    pub ttl: Option<TtlBody>,
    /// State to write first, super-step by super-step (needs `graph_id`).
    pub supersteps: Option<Vec<Superstep>>,
    /// The graph whose state `supersteps` write (kept in `metadata.graph_id`).
    pub graph_id: Option<String>,
}

/// `PATCH /threads/{thread_id}`.
#[derive(Debug, Clone, Default, Deserialize, Serialize, ToSchema)]
pub struct ThreadPatch {
    /// Merged into the thread's metadata.
    #[schema(value_type = Option<Object>)]
    pub metadata: Option<Object>,
    /// A new time to live, counting from now.
    pub ttl: Option<TtlBody>,
}

/// A thread's status.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum ThreadStatus {
    /// Nothing runs; the last run ended.
    Idle,
    /// A run is pending or running.
    Busy,
    /// Paused at an interrupt, or its last run was cancelled.
    Interrupted,
    /// Its last run failed.
    Error,
}

impl ThreadStatus {
    /// As stored.
    pub fn as_str(self) -> &'static str {
        match self {
            ThreadStatus::Idle => "idle",
            ThreadStatus::Busy => "busy",
            ThreadStatus::Interrupted => "interrupted",
            ThreadStatus::Error => "error",
        }
    }
}

/// What thread searches sort by.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, Serialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum ThreadSortBy {
    /// The id.
    ThreadId,
    /// The status.
    Status,
    /// When it was made (the default).
    #[default]
    CreatedAt,
    /// When it last changed.
    UpdatedAt,
    /// When its state last changed.
    StateUpdatedAt,
}

impl ThreadSortBy {
    /// The field.
    pub fn field(self) -> &'static str {
        match self {
            ThreadSortBy::ThreadId => "thread_id",
            ThreadSortBy::Status => "status",
            ThreadSortBy::CreatedAt => "created_at",
            ThreadSortBy::UpdatedAt => "updated_at",
            ThreadSortBy::StateUpdatedAt => "state_updated_at",
        }
    }
}

/// A field of a thread a search may `select`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum ThreadField {
    /// Its id.
    ThreadId,
    /// When it was made.
    CreatedAt,
    /// When it last changed.
    UpdatedAt,
    /// When its state last changed.
    StateUpdatedAt,
    /// Its metadata.
    Metadata,
    /// Its last run's config.
    Config,
    /// Its status.
    Status,
    /// Its values.
    Values,
    /// Its pending interrupts.
    Interrupts,
}

/// `POST /threads/search`.
#[derive(Debug, Clone, Default, Deserialize, Serialize, ToSchema)]
pub struct ThreadSearchRequest {
    /// Only these threads.
    pub ids: Option<Vec<String>>,
    /// Threads whose metadata contains these entries.
    #[schema(value_type = Option<Object>)]
    pub metadata: Option<Object>,
    /// Threads whose values contain these entries.
    #[schema(value_type = Option<Object>)]
    pub values: Option<Object>,
    /// Threads in this status.
    pub status: Option<ThreadStatus>,
    /// The page.
    #[serde(flatten)]
    pub page: Page,
    /// The order.
    pub sort_by: Option<ThreadSortBy>,
    /// Ascending or descending.
    pub sort_order: Option<SortOrder>,
    /// Only these fields of each thread.
    pub select: Option<Vec<ThreadField>>,
    /// Values to extract from each thread, by name: a path (`values.messages`,
    /// `metadata.user`) per name, answered in `extracted`.
    #[schema(value_type = Option<Object>)]
    pub extract: Option<std::collections::BTreeMap<String, String>>,
}

/// `POST /threads/count`.
#[derive(Debug, Clone, Default, Deserialize, Serialize, ToSchema)]
pub struct ThreadCountRequest {
    /// Threads whose metadata contains these entries.
    #[schema(value_type = Option<Object>)]
    pub metadata: Option<Object>,
    /// Threads whose values contain these entries.
    #[schema(value_type = Option<Object>)]
    pub values: Option<Object>,
    /// Threads in this status.
    pub status: Option<ThreadStatus>,
}

/// `POST /threads/prune`.
#[derive(Debug, Clone, Default, Deserialize, Serialize, ToSchema)]
pub struct ThreadPruneRequest {
    /// The threads.
    #[serde(default)]
    pub thread_ids: Vec<String>,
    /// `delete` (default) or `keep_latest`.
    pub strategy: Option<TtlStrategyName>,
}

/// What `POST /threads/prune` did.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct ThreadPruneResponse {
    /// Threads pruned.
    pub pruned_count: u64,
}

/// A checkpoint named by its thread, namespace and id.
#[derive(Debug, Clone, Default, Deserialize, Serialize, ToSchema)]
pub struct CheckpointConfig {
    /// The thread.
    pub thread_id: Option<String>,
    /// The namespace (`""`: the root graph's).
    pub checkpoint_ns: Option<String>,
    /// The checkpoint.
    pub checkpoint_id: Option<String>,
    /// Subgraphs' checkpoints (kept as sent).
    #[schema(value_type = Option<Object>)]
    pub checkpoint_map: Option<Object>,
}

/// `POST /threads/{thread_id}/state/checkpoint`.
#[derive(Debug, Clone, Default, Deserialize, Serialize, ToSchema)]
pub struct ThreadStateCheckpointRequest {
    /// The checkpoint.
    pub checkpoint: Option<CheckpointConfig>,
    /// Subgraphs' states too.
    #[serde(default)]
    pub subgraphs: Option<bool>,
}

/// `before` of a history request: a checkpoint id, or a config naming one.
#[derive(Debug, Clone, Deserialize, Serialize, ToSchema)]
#[serde(untagged)]
pub enum Before {
    /// A checkpoint id.
    Id(String),
    /// `{"checkpoint_id": ...}` or `{"configurable": {"checkpoint_id": ...}}`.
    #[schema(value_type = Object)]
    Config(Object),
}

impl Before {
    /// The checkpoint id it names.
    pub fn checkpoint_id(&self) -> Option<String> {
        match self {
            Before::Id(id) => Some(id.clone()),
            Before::Config(c) => c
                .get("configurable")
                .and_then(|c| c.get("checkpoint_id"))
                .or_else(|| c.get("checkpoint_id"))
                .and_then(Value::as_str)
                .map(str::to_owned),
        }
    }
}

/// `POST /threads/{thread_id}/history`.
#[derive(Debug, Clone, Default, Deserialize, Serialize, ToSchema)]
pub struct ThreadStateSearch {
    /// Checkpoints at most (default 1).
    #[schema(minimum = 1, maximum = 1000, default = 1)]
    pub limit: Option<u64>,
    /// Only checkpoints before this one.
    pub before: Option<Before>,
    /// Checkpoints whose metadata contains these entries.
    #[schema(value_type = Option<Object>)]
    pub metadata: Option<Object>,
    /// Whose checkpoints: `checkpoint_ns` picks a subgraph's (default: the root graph's).
    pub checkpoint: Option<CheckpointConfig>,
}

/// `POST /threads/{thread_id}/state`.
#[derive(Debug, Clone, Default, Deserialize, Serialize, ToSchema)]
pub struct ThreadStateUpdate {
    /// The values written.
    #[serde(default)]
    #[schema(value_type = Object)]
    pub values: Value,
    /// The checkpoint written after (default: the latest).
    pub checkpoint: Option<CheckpointConfig>,
    /// The checkpoint written after, by id.
    pub checkpoint_id: Option<String>,
    /// Write as if this node had just run.
    pub as_node: Option<String>,
}

/// What an update of a thread's state wrote.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct ThreadStateUpdateResponse {
    /// The new checkpoint.
    pub checkpoint: CheckpointConfig,
    /// The same, as older clients read it.
    pub configurable: CheckpointConfig,
    /// The new checkpoint's id.
    pub checkpoint_id: String,
}

/// A thread.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct Thread {
    /// Its id.
    #[schema(format = Uuid)]
    pub thread_id: Option<String>,
    /// When it was made.
    #[schema(format = DateTime)]
    pub created_at: Option<String>,
    /// When it last changed.
    #[schema(format = DateTime)]
    pub updated_at: Option<String>,
    /// When its state last changed.
    #[schema(format = DateTime)]
    pub state_updated_at: Option<String>,
    /// Its metadata.
    #[schema(value_type = Option<Object>)]
    pub metadata: Option<Value>,
    /// The config of its last run.
    #[schema(value_type = Option<Object>)]
    pub config: Option<Value>,
    /// Its status.
    pub status: Option<ThreadStatus>,
    /// Its current state's values (`null`: no state yet).
    #[schema(value_type = Option<Object>)]
    pub values: Option<Value>,
    /// Pending interrupts, by task.
    #[schema(value_type = Option<Object>)]
    pub interrupts: Option<Value>,
    /// Its last run's error, when it failed.
    #[schema(value_type = Option<Object>)]
    pub error: Option<Value>,
    /// Its ttl (with `?include=ttl`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<Object>)]
    pub ttl: Option<Value>,
    /// What a search's `extract` asked for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<Object>)]
    pub extracted: Option<Value>,
}

/// A thread's state at a checkpoint.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct ThreadState {
    /// The values.
    #[schema(value_type = Object)]
    pub values: Value,
    /// Nodes that run next.
    pub next: Vec<String>,
    /// Tasks of the next step (with their interrupts, subgraph states, errors).
    #[schema(value_type = Vec<Object>)]
    pub tasks: Vec<Value>,
    /// The checkpoint.
    #[schema(value_type = Object, nullable)]
    pub checkpoint: Value,
    /// Its metadata.
    #[schema(value_type = Object, nullable)]
    pub metadata: Value,
    /// When it was written.
    #[schema(nullable)]
    pub created_at: Option<String>,
    /// The checkpoint before it.
    #[schema(value_type = Object, nullable)]
    pub parent_checkpoint: Value,
    /// Pending interrupts.
    #[schema(value_type = Vec<Object>)]
    pub interrupts: Vec<Value>,
    /// The checkpoint's id.
    #[serde(default)]
    pub checkpoint_id: Option<String>,
    /// The id of the checkpoint before it.
    #[serde(default)]
    pub parent_checkpoint_id: Option<String>,
}

/// `GET /threads/{thread_id}` query.
#[derive(Debug, Clone, Default, Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
pub struct ThreadReadQuery {
    /// Extra fields to include, comma-separated (`ttl`).
    pub include: Option<String>,
}

/// `GET /threads/{thread_id}/state` query.
#[derive(Debug, Clone, Default, Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
pub struct ThreadStateQuery {
    /// Whether to include subgraphs' states.
    #[serde(default, deserialize_with = "super::flag")]
    pub subgraphs: Option<bool>,
}

/// `GET /threads/{thread_id}/history` query.
#[derive(Debug, Clone, Default, Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
pub struct ThreadHistoryQuery {
    /// Checkpoints at most (default 10).
    #[param(minimum = 1, maximum = 1000)]
    pub limit: Option<u64>,
    /// Only checkpoints before this one.
    pub before: Option<String>,
}

/// Bytes a thread occupies in the checkpointer, as stored (`GET /threads/{thread_id}/storage`).
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct ThreadStorage {
    /// The thread.
    #[schema(format = Uuid)]
    pub thread_id: String,
    /// Sum of the three sections below.
    pub total_bytes: u64,
    /// Checkpoint rows: the checkpoint and its metadata.
    pub checkpoints: StoredCount,
    /// Stored channel values, one row per channel version.
    pub channel_values: ChannelValuesStorage,
    /// Task writes not yet folded into a checkpoint.
    pub pending_writes: StoredCount,
}

/// How many rows and their bytes.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct StoredCount {
    /// Rows.
    pub count: u64,
    /// Their bytes, as stored.
    pub bytes: u64,
}

/// The channel values' rows, in all and per channel.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct ChannelValuesStorage {
    /// Rows (one per channel version).
    pub count: u64,
    /// Their bytes, as stored.
    pub bytes: u64,
    /// Per channel.
    pub by_channel: std::collections::BTreeMap<String, ChannelStorage>,
}

/// One channel's stored versions.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct ChannelStorage {
    /// Versions stored.
    pub versions: u64,
    /// Their bytes.
    pub bytes: u64,
}
