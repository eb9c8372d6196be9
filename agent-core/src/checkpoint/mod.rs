//! Checkpoints: the [`Checkpointer`] trait and what it stores.
//!
//! A checkpoint is written for each input and after every super-step. Storage grows with what
//! changed, not with the whole state: a checkpoint records the *version* of every field, and a
//! field's value is stored as a [`FieldBlob`] only when that version is new. Sequence fields
//! (message histories) that only grew are stored as a delta on their previous version — the new
//! elements only — so a 500-turn chat does not store 500 copies of its history; a value that
//! keeps most of its previous version's bytes (a text that grew) is stored as a byte splice.
//!
//! Savers store opaque bytes; encoding (MessagePack, versioned) lives in the executor. Three
//! savers ship: [`InMemorySaver`], [`SqliteSaver`] (the embedded default) and
//! [`PostgresSaver`].

/// Serializer methods that refuse their value with `$error`: the partial serializers of
/// `codec` (a sequence's tail), `msgpack_ext` (an extension's tuple) and `msgpack_chars` (one
/// char) each accept one shape and list the rest here.
macro_rules! refuse_serialize {
    ($error:expr; $($name:ident($($arg:ty),*) -> $ret:ty;)*) => {
        $(#[inline]
        fn $name(self, $(_: $arg),*) -> Result<$ret, Self::Error> {
            Err($error)
        })*
    };
}

pub(crate) mod codec;
pub(crate) mod compress;
#[cfg(any(feature = "sqlite", feature = "postgres"))]
mod group;
pub(crate) mod interning;
mod memory;
mod metadata;
pub(crate) mod msgpack;
mod msgpack_chars;
mod msgpack_ext;
pub(crate) mod nesting;
#[cfg(feature = "postgres")]
pub(crate) mod postgres;
#[cfg(feature = "postgres")]
mod postgres_connect;
#[cfg(feature = "postgres")]
mod postgres_listen;
#[cfg(feature = "postgres")]
pub(crate) mod postgres_migrate;
mod reparent;
mod splice;
#[cfg(feature = "sqlite")]
mod sqlite;
#[cfg(feature = "sqlite")]
mod sqlite_log;
#[cfg(feature = "sqlite")]
mod sqlite_rows;
#[cfg(feature = "testkit")]
pub mod testkit;
mod versions;

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::sync::Arc;

pub use memory::InMemorySaver;
pub use metadata::CheckpointMetadata;
#[cfg(feature = "postgres")]
pub use postgres::{Fence, PostgresSaver};
#[cfg(feature = "postgres")]
pub use postgres_listen::{PgListener, PgNotification};
#[cfg(feature = "sqlite")]
pub use sqlite::SqliteSaver;
pub(crate) use versions::FieldNames;
pub use versions::Versions;

use crate::error::GraphError;

/// Why a checkpoint was written (LangGraph's `metadata.source`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Source {
    /// A new input arrived (before it is applied).
    Input,
    /// A super-step finished (the input step included).
    Loop,
    /// `update_state` on the latest checkpoint.
    Update,
    /// `update_state` on an older checkpoint: a new branch.
    Fork,
}

impl Source {
    /// The lowercase name stored in metadata.
    pub fn as_str(self) -> &'static str {
        match self {
            Source::Input => "input",
            Source::Loop => "loop",
            Source::Update => "update",
            Source::Fork => "fork",
        }
    }
}

/// One checkpoint row: everything but the field values.
///
/// Its strings are shared (`Arc<str>`): a run writes a checkpoint every super-step with the
/// same thread and namespace, and its id is also the version of every blob it writes and
/// the next one's parent, so a checkpoint costs one string (its id), not five.
#[derive(Debug, Clone, PartialEq)]
pub struct CheckpointRecord {
    /// The conversation thread.
    pub thread_id: Arc<str>,
    /// The namespace (empty for the root graph).
    pub ns: Arc<str>,
    /// Time-ordered id (uuid v7).
    pub id: Arc<str>,
    /// The checkpoint this one follows, if any.
    pub parent_id: Option<Arc<str>>,
    /// The super-step (-1 for a thread's first input).
    pub step: i64,
    /// Milliseconds since the Unix epoch.
    pub created_at_ms: i64,
    /// Metadata: `source`, `step`, `run_id`, `writes`, `parents` and the run's own entries;
    /// stored as one JSON object ([`CheckpointMetadata::to_json`]).
    pub metadata: CheckpointMetadata,
    /// The version of every field that has a value: field name -> version (blob key).
    pub versions: Versions,
    /// The executor's encoded body (field versions, next tasks, pending sends, joins).
    pub body: Vec<u8>,
}

impl CheckpointRecord {
    /// The `source` metadata entry.
    pub fn source(&self) -> Option<Source> {
        self.metadata.source
    }
}

/// One stored version of one field.
///
/// The names are shared, not owned: a blob the executor writes names its field with the
/// state's own `&'static str` and its versions with the `Arc<str>` the run already holds, so
/// a checkpoint's blobs cost no string allocations (they were three of a checkpoint's ~19).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FieldBlob {
    /// The field's name.
    pub field: Cow<'static, str>,
    /// The version (the id of the checkpoint that wrote it).
    pub version: Arc<str>,
    /// For a delta: the version it extends, and a count the executor's codec reads (how many
    /// of the base's elements it keeps, or with the top bit set, a byte splice of the base).
    /// Savers store both as they are (the count fits a signed 64-bit column bit for bit).
    pub base: Option<(Arc<str>, u64)>,
    /// Encoded value (full) or encoded new elements (delta).
    pub data: Vec<u8>,
}

/// What a finished, failed or interrupted task left for its step (kept across a crash).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum WriteKind {
    /// The task's output.
    Output,
    /// The task paused with `interrupt()`.
    Interrupt,
    /// Resume values for the task's interrupts.
    Resume,
    /// The task failed (kept for inspection).
    Error,
}

impl WriteKind {
    /// Stable code for storage.
    pub fn code(self) -> i16 {
        match self {
            WriteKind::Output => 0,
            WriteKind::Interrupt => 1,
            WriteKind::Resume => 2,
            WriteKind::Error => 3,
        }
    }

    /// Parses a stored code.
    pub fn from_code(code: i64) -> Option<Self> {
        Some(match code {
            0 => WriteKind::Output,
            1 => WriteKind::Interrupt,
            2 => WriteKind::Resume,
            3 => WriteKind::Error,
            _ => return None,
        })
    }
}

/// A pending write of one task, attached to the checkpoint its step started from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PendingWrite {
    /// Deterministic task id: the checkpoint id plus the task's path.
    pub task_id: String,
    /// The node the task ran.
    pub node: String,
    /// What the write holds.
    pub kind: WriteKind,
    /// Encoded payload.
    pub data: Vec<u8>,
}

/// A checkpoint as loaded: the record, every blob its field versions need (delta chains
/// included), and its pending writes.
#[derive(Debug, Clone, Default)]
pub struct LoadedCheckpoint {
    /// The record.
    pub record: Option<CheckpointRecord>,
    /// Blobs of the record's field versions and their delta bases.
    pub blobs: Vec<FieldBlob>,
    /// Pending writes of the record's next step.
    pub writes: Vec<PendingWrite>,
}

/// One operation of [`Checkpointer::put_batch`].
// A checkpoint is a few hundred bytes moved into its batch once; boxing it would cost an
// allocation per checkpoint to save a copy.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Clone, PartialEq)]
pub enum StoreOp {
    /// A checkpoint and the new blobs it references ([`Checkpointer::put`]).
    Checkpoint {
        /// The record.
        record: CheckpointRecord,
        /// Blobs of the field versions it introduces.
        blobs: Vec<FieldBlob>,
    },
    /// Pending writes of tasks of the step that starts at `checkpoint_id`
    /// ([`Checkpointer::put_writes`]).
    Writes {
        /// The thread (shared, as [`CheckpointRecord`]'s strings are).
        thread_id: Arc<str>,
        /// The namespace.
        ns: Arc<str>,
        /// The checkpoint the step starts from.
        checkpoint_id: Arc<str>,
        /// The writes.
        writes: Vec<PendingWrite>,
    },
}

/// Which checkpoints `list` returns.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ListFilter {
    /// Only checkpoints older than this id.
    pub before: Option<String>,
    /// At most this many, newest first.
    pub limit: Option<usize>,
    /// Only checkpoints whose metadata has these top-level entries.
    pub metadata: BTreeMap<String, serde_json::Value>,
}

impl ListFilter {
    /// Whether a record's metadata matches the filter's entries.
    pub fn matches_metadata(&self, metadata: &CheckpointMetadata) -> bool {
        if self.metadata.is_empty() {
            return true;
        }
        let stored = metadata.to_json();
        self.metadata.iter().all(|(k, v)| stored.get(k) == Some(v))
    }
}

/// What a thread occupies in a saver, as stored, every namespace (its subgraphs' too):
/// LangGraph's `thread_storage`, for an operator who asks why a database grows. Bytes are
/// the stored payloads' lengths (encoded bodies, metadata, values, writes), not the
/// database's own overhead (row headers, indexes, free pages) nor its compression.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ThreadStorage {
    /// Checkpoint rows: the encoded checkpoint, its field versions and metadata.
    pub checkpoints: StoredBytes,
    /// Stored field values: one per stored version (a delta counts as one).
    pub values: StoredBytes,
    /// [`values`](Self::values) by field (LangGraph's channel), `count` its versions.
    pub by_field: BTreeMap<String, StoredBytes>,
    /// Pending writes of tasks (kept for resumes and failed steps).
    pub writes: StoredBytes,
}

impl ThreadStorage {
    /// Checkpoints, values and writes together.
    pub fn total_bytes(&self) -> u64 {
        self.checkpoints.bytes + self.values.bytes + self.writes.bytes
    }

    /// Adds one stored value of `field`.
    pub fn add_value(&mut self, field: &str, bytes: u64) {
        self.values.add(1, bytes);
        match self.by_field.get_mut(field) {
            Some(f) => f.add(1, bytes),
            None => {
                self.by_field
                    .insert(field.to_owned(), StoredBytes { count: 1, bytes });
            }
        }
    }
}

/// How many of something are stored, and their bytes.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct StoredBytes {
    /// How many.
    pub count: u64,
    /// Their bytes.
    pub bytes: u64,
}

impl StoredBytes {
    /// Counts `count` more of `bytes` together.
    pub fn add(&mut self, count: u64, bytes: u64) {
        self.count += count;
        self.bytes += bytes;
    }
}

/// Where checkpoints are stored. Object-safe: share one as `Arc<dyn Checkpointer>`.
///
/// Every method is about one thread; `ns` separates subgraphs of a run.
#[async_trait::async_trait]
pub trait Checkpointer: Send + Sync + 'static {
    /// A short name for errors and traces ("sqlite", "postgres", "memory").
    fn backend(&self) -> &'static str;

    /// Stores `ops` in order on the caller's thread when this store never waits on I/O (an
    /// in-memory store): takes them out of `ops` and returns the result. The default, `None`,
    /// leaves `ops` for [`put_batch`](Self::put_batch).
    ///
    /// A run asks once, with no ops, whether the store works in place; if it does, every
    /// checkpoint and per-task write is stored through this as it comes, on the run's thread
    /// (sibling subgraph runs on other threads call it at once; the store orders them): no
    /// queue, no task, no future, no allocation per store. A store that waits on I/O gets
    /// them through `put_batch`, in the background and batched.
    fn put_batch_now(&self, ops: &mut Vec<StoreOp>) -> Option<Result<(), GraphError>> {
        let _ = ops;
        None
    }

    /// Stores a checkpoint and the new blobs it references, atomically.
    async fn put(&self, record: &CheckpointRecord, blobs: &[FieldBlob]) -> Result<(), GraphError>;

    /// Stores pending writes of tasks of the step that starts at `checkpoint_id`. A write with
    /// the same task id and kind replaces the earlier one.
    async fn put_writes(
        &self,
        thread_id: &str,
        ns: &str,
        checkpoint_id: &str,
        writes: &[PendingWrite],
    ) -> Result<(), GraphError>;

    /// Stores `ops` in order. A store with transactions writes them in one (a run hands it a
    /// super-step's pending writes and checkpoint at once); the default calls
    /// [`put_writes`](Self::put_writes) and [`put`](Self::put) one by one.
    async fn put_batch(&self, ops: Vec<StoreOp>) -> Result<(), GraphError> {
        for op in ops {
            match op {
                StoreOp::Checkpoint { record, blobs } => self.put(&record, &blobs).await?,
                StoreOp::Writes {
                    thread_id,
                    ns,
                    checkpoint_id,
                    writes,
                } => {
                    self.put_writes(&thread_id, &ns, &checkpoint_id, &writes)
                        .await?
                }
            }
        }
        Ok(())
    }

    /// Loads a checkpoint (the latest when `checkpoint_id` is `None`) with its blobs and writes.
    async fn get(
        &self,
        thread_id: &str,
        ns: &str,
        checkpoint_id: Option<&str>,
    ) -> Result<LoadedCheckpoint, GraphError>;

    /// Lists checkpoint records, newest first.
    async fn list(
        &self,
        thread_id: &str,
        ns: &str,
        filter: &ListFilter,
    ) -> Result<Vec<CheckpointRecord>, GraphError>;

    /// Deletes everything stored for a thread (all namespaces).
    async fn delete_thread(&self, thread_id: &str) -> Result<(), GraphError>;

    /// Keeps the newest `keep_last` checkpoints of a thread's namespace and deletes the rest
    /// with their writes and the blobs no kept checkpoint needs; the oldest kept one's parent
    /// is cleared (no history names a checkpoint that is gone). Returns how many checkpoints
    /// were deleted.
    async fn prune(&self, thread_id: &str, ns: &str, keep_last: usize)
    -> Result<usize, GraphError>;

    /// Keeps the newest checkpoint of each of a thread's namespaces (the root's and every
    /// subgraph's) and deletes the rest as [`prune`](Self::prune) does, in one transaction
    /// where the store has them: LangGraph's `prune(strategy="keep_latest")`. Returns how
    /// many checkpoints were deleted.
    async fn keep_latest(&self, thread_id: &str) -> Result<usize, GraphError>;

    /// Sets the pending writes of one checkpoint to exactly `writes` (those it has and
    /// `writes` does not name go); nothing when the checkpoint is not stored. What a rollback
    /// needs to give a checkpoint back the writes it had before the rolled back run resumed
    /// from it.
    async fn replace_writes(
        &self,
        thread_id: &str,
        ns: &str,
        checkpoint_id: &str,
        writes: &[PendingWrite],
    ) -> Result<(), GraphError>;

    /// Deletes the checkpoints of a thread, in every namespace (its subgraphs' too), whose
    /// metadata `run_id` is one of `run_ids` (LangGraph's `delete_for_runs`, for one thread),
    /// with their pending writes and every blob no remaining checkpoint needs (a remaining
    /// checkpoint's delta chain keeps the blobs it builds on, whichever checkpoint wrote
    /// them). Returns how many checkpoints were deleted. A store with transactions does it in
    /// one.
    ///
    /// Every remaining checkpoint still loads, a remaining checkpoint whose parent went names
    /// its nearest remaining ancestor, and the thread's next run goes on from the latest
    /// remaining one: what rolling a run back needs. Pending writes the deleted runs attached
    /// to a remaining checkpoint (the resume values and task outputs of a run that resumed
    /// from it) are not told apart from the ones its own run left there, and stay: the caller
    /// puts back what it had with [`replace_writes`](Self::replace_writes).
    async fn delete_for_runs(&self, thread_id: &str, run_ids: &[&str])
    -> Result<usize, GraphError>;

    /// What the thread occupies as stored, every namespace ([`ThreadStorage`]); a thread with
    /// nothing stored is all zeros. `None` (the default): this saver does not tell.
    async fn storage(&self, thread_id: &str) -> Result<Option<ThreadStorage>, GraphError> {
        let _ = thread_id;
        Ok(None)
    }
}

/// The whole encoding of `field` at `version`, rebuilt from `blobs` (its blob and the delta
/// bases it builds on, compressed or not): what the executor's state decodes that field from.
///
/// For a saver that hands values to a store keeping every checkpoint's values whole (an
/// adapter to another framework's saver): it decodes the field with the state's own
/// `deserialize_field`, as a load would.
pub fn field_value_bytes(
    field: &str,
    version: &str,
    blobs: &[FieldBlob],
) -> Result<Vec<u8>, String> {
    codec::reconstruct(field, version, &codec::blob_index(blobs)).map(|(bytes, _)| bytes)
}

/// Blobs that a set of checkpoints needs: their versions plus the delta bases, transitively.
/// (Only the PostgreSQL saver prunes by it.)
#[cfg(feature = "postgres")]
pub(crate) fn needed_blobs<'a>(
    wanted: impl IntoIterator<Item = (String, String)>,
    base_of: impl Fn(&str, &str) -> Option<&'a (String, u64)>,
) -> std::collections::HashSet<(String, String)> {
    let mut needed = std::collections::HashSet::new();
    let mut stack: Vec<(String, String)> = wanted.into_iter().collect();
    while let Some(key) = stack.pop() {
        if needed.contains(&key) {
            continue;
        }
        if let Some((base, _)) = base_of(&key.0, &key.1) {
            stack.push((key.0.clone(), base.clone()));
        }
        needed.insert(key);
    }
    needed
}
