//! Run configuration: limits, ids, tags and metadata for one invocation (LangGraph's `config`).

use std::sync::Arc;

/// LangGraph 1.2's default: a run may take this many super-steps.
pub const DEFAULT_RECURSION_LIMIT: usize = 10_000;

/// When a run with a checkpointer writes its checkpoints (LangGraph's `durability`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Durability {
    /// After every super-step, stored before the next starts, and each finished task's output
    /// as it lands: a crash loses at most the tasks still running.
    #[default]
    Sync,
    /// After every super-step, stored in the background while the next one runs (LangGraph's
    /// default `async`). Writes are stored in order, all of them before the run returns,
    /// reports an interrupt, or fails.
    ///
    /// A store that fails stops the run before its next step starts tasks (no more node or
    /// model calls), with the store's error; what was stored before it stays, what was queued
    /// after it is not stored. A store slower than the steps holds the run back while 16
    /// writes (checkpoints, batches of pending writes; shared with the run's subgraphs) wait,
    /// so the run neither races ahead of its store nor piles up memory for it.
    ///
    /// What a crash may lose: the checkpoints queued and not stored yet — usually the last
    /// step's, about 16 at most when the store fell behind — and the step running (its
    /// finished tasks' outputs are kept only when one of its tasks fails or pauses). What is
    /// stored is always a prefix of what was queued: the thread resumes from its last stored
    /// checkpoint and runs the lost steps again.
    Async,
    /// Once, when the run ends (finished, paused or failed): fastest; a crash loses the
    /// whole run, and outputs of a failed step's finished siblings are not kept (a paused
    /// step's are).
    Exit,
}

/// Settings for one run. Cheap to clone.
#[derive(Clone)]
pub struct RunConfig {
    /// The most super-steps a run may take (input excluded).
    pub recursion_limit: usize,
    /// The run's id; generated when absent.
    pub run_id: Option<String>,
    /// Free-form tags, passed to nodes and tracing.
    pub tags: Vec<String>,
    /// Free-form metadata, passed to nodes.
    pub metadata: serde_json::Map<String, serde_json::Value>,
    /// The conversation thread, for checkpointers.
    pub thread_id: Option<String>,
    /// A checkpoint to resume or replay from.
    pub checkpoint_id: Option<String>,
    /// The checkpoint namespace (subgraphs run in their parent's namespace plus their name).
    pub checkpoint_ns: String,
    /// The most tasks of one super-step that run at the same time; `None` is no limit.
    pub max_concurrency: Option<usize>,
    /// Pause before these nodes in this run (besides the graph's own list).
    pub interrupt_before: Vec<String>,
    /// Pause after these nodes in this run (besides the graph's own list).
    pub interrupt_after: Vec<String>,
    /// When checkpoints are written.
    pub durability: Durability,
    /// Whether checkpoint metadata records each step's updates as JSON (`writes`, as
    /// LangGraph 0.x did). Off by default: it costs a JSON encoding of every update.
    pub writes_metadata: bool,
    /// The long-term memory nodes reach with `ctx.store()` in this run (over the compiled
    /// graph's [`with_store`](crate::CompiledGraph::with_store)); subgraphs inherit it.
    pub store: Option<std::sync::Arc<dyn crate::store::Store>>,
    /// The checkpointer this run stores its checkpoints through (see
    /// [`checkpointer`](Self::checkpointer)), over the compiled graph's own.
    pub checkpointer: Option<Arc<dyn crate::checkpoint::Checkpointer>>,
    /// For a run that travels to an older checkpoint (`checkpoint_id`): the checkpoint each
    /// per-thread subgraph namespace goes to on its first call (LangGraph's `checkpoint_map`,
    /// as a subgraph's snapshot config gives it), continued from there instead of given its
    /// input. Namespaces not named load what they had before `checkpoint_id`.
    pub checkpoint_map: std::collections::BTreeMap<String, String>,
}

impl std::fmt::Debug for RunConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Every field named (no `..`): a new field is a compile error here until it is shown.
        let RunConfig {
            recursion_limit,
            run_id,
            tags,
            metadata,
            thread_id,
            checkpoint_id,
            checkpoint_ns,
            max_concurrency,
            interrupt_before,
            interrupt_after,
            durability,
            writes_metadata,
            store,
            checkpointer,
            checkpoint_map,
        } = self;
        f.debug_struct("RunConfig")
            .field("recursion_limit", recursion_limit)
            .field("run_id", run_id)
            .field("tags", tags)
            .field("metadata", metadata)
            .field("thread_id", thread_id)
            .field("checkpoint_id", checkpoint_id)
            .field("checkpoint_ns", checkpoint_ns)
            .field("max_concurrency", max_concurrency)
            .field("interrupt_before", interrupt_before)
            .field("interrupt_after", interrupt_after)
            .field("durability", durability)
            .field("writes_metadata", writes_metadata)
            .field("store", store)
            // A checkpointer is not `Debug`: its backend's name stands for it.
            .field("checkpointer", &checkpointer.as_ref().map(|c| c.backend()))
            .field("checkpoint_map", checkpoint_map)
            .finish()
    }
}

impl Default for RunConfig {
    fn default() -> Self {
        RunConfig {
            recursion_limit: DEFAULT_RECURSION_LIMIT,
            run_id: None,
            tags: Vec::new(),
            metadata: serde_json::Map::new(),
            thread_id: None,
            checkpoint_id: None,
            checkpoint_ns: String::new(),
            max_concurrency: None,
            interrupt_before: Vec::new(),
            interrupt_after: Vec::new(),
            durability: Durability::Sync,
            writes_metadata: false,
            store: None,
            checkpointer: None,
            checkpoint_map: std::collections::BTreeMap::new(),
        }
    }
}

impl RunConfig {
    /// The default configuration.
    pub fn new() -> Self {
        RunConfig::default()
    }

    /// Gives this run's nodes `store` (LangGraph's `invoke(.., store=..)` through the config).
    pub fn store(mut self, store: std::sync::Arc<dyn crate::store::Store>) -> Self {
        self.store = Some(store);
        self
    }

    /// Stores this run's checkpoints through `saver` instead of the compiled graph's own
    /// checkpointer: usually a wrapper over the same storage that adds a condition to every
    /// write (one that refuses writes once the run is cancelled, a
    /// `PostgresSaver::fenced` clone that refuses them once another worker took the run
    /// over). A write it refuses fails the run with its error (see
    /// [`Durability`] for when a store's failure stops a run); nothing more of the run is
    /// written after it.
    ///
    /// - The run reads the checkpoint it starts from through it too, and every subgraph run
    ///   under it stores through the same saver (subgraphs share their parent's writer).
    /// - A graph compiled without a checkpointer persists through it: with a thread id, the
    ///   run checkpoints (and can pause and resume) as if the graph had been compiled with
    ///   `saver`.
    /// - The thread API ([`get_state`](crate::CompiledGraph::get_state),
    ///   [`get_state_history`](crate::CompiledGraph::get_state_history),
    ///   [`update_state`](crate::CompiledGraph::update_state)) given this config reads and
    ///   writes through it as well.
    ///
    /// Without it a run uses the graph's checkpointer, as before.
    pub fn checkpointer(mut self, saver: Arc<dyn crate::checkpoint::Checkpointer>) -> Self {
        self.checkpointer = Some(saver);
        self
    }

    /// Sets the recursion limit (super-steps).
    pub fn recursion_limit(mut self, limit: usize) -> Self {
        self.recursion_limit = limit;
        self
    }

    /// Sets the run id.
    pub fn run_id(mut self, id: impl Into<String>) -> Self {
        self.run_id = Some(id.into());
        self
    }

    /// Adds a tag.
    pub fn tag(mut self, tag: impl Into<String>) -> Self {
        self.tags.push(tag.into());
        self
    }

    /// Adds a metadata entry.
    pub fn metadata(mut self, key: impl Into<String>, value: impl Into<serde_json::Value>) -> Self {
        self.metadata.insert(key.into(), value.into());
        self
    }

    /// Sets the thread id.
    pub fn thread_id(mut self, id: impl Into<String>) -> Self {
        self.thread_id = Some(id.into());
        self
    }

    /// Sets the checkpoint to start from.
    pub fn checkpoint_id(mut self, id: impl Into<String>) -> Self {
        self.checkpoint_id = Some(id.into());
        self
    }

    /// Sets the checkpoint namespace.
    pub fn checkpoint_ns(mut self, ns: impl Into<String>) -> Self {
        self.checkpoint_ns = ns.into();
        self
    }

    /// Sends the per-thread subgraph of namespace `ns` to checkpoint `id` when this run
    /// travels to an older checkpoint (see [`checkpoint_map`](Self::checkpoint_map)).
    pub fn checkpoint_map(mut self, ns: impl Into<String>, id: impl Into<String>) -> Self {
        self.checkpoint_map.insert(ns.into(), id.into());
        self
    }

    /// Pauses before these nodes in this run.
    pub fn interrupt_before<N: Into<String>>(mut self, nodes: impl IntoIterator<Item = N>) -> Self {
        self.interrupt_before
            .extend(nodes.into_iter().map(Into::into));
        self
    }

    /// Pauses after these nodes in this run.
    pub fn interrupt_after<N: Into<String>>(mut self, nodes: impl IntoIterator<Item = N>) -> Self {
        self.interrupt_after
            .extend(nodes.into_iter().map(Into::into));
        self
    }

    /// Sets when checkpoints are written.
    pub fn durability(mut self, durability: Durability) -> Self {
        self.durability = durability;
        self
    }

    /// Records each step's updates in its checkpoint's metadata (`writes`).
    pub fn writes_metadata(mut self, on: bool) -> Self {
        self.writes_metadata = on;
        self
    }

    /// Limits how many tasks of a step run at once.
    pub fn max_concurrency(mut self, n: usize) -> Self {
        self.max_concurrency = Some(n.max(1));
        self
    }
}

/// A run id when the caller gave none: time-ordered and unique within the process.
pub(crate) fn new_run_id() -> Arc<str> {
    use std::hash::{BuildHasher, Hasher};
    use std::sync::atomic::{AtomicU64, Ordering};
    use std::time::{SystemTime, UNIX_EPOCH};
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let millis = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis())
        .unwrap_or_default();
    let mut hasher = std::collections::hash_map::RandomState::new().build_hasher();
    hasher.write_u64(COUNTER.fetch_add(1, Ordering::Relaxed));
    format!("{millis:012x}-{:016x}", hasher.finish()).into()
}
