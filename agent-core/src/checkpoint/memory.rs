//! `InMemorySaver`: checkpoints in a process-local map. For tests, notebooks, servers that keep
//! threads in memory and short-lived programs; everything is lost when the process ends.
//!
//! A stored checkpoint is packed: its record (less the thread, namespace and id, which are its
//! keys) and the small blobs it wrote go into one MessagePack encoding; large blobs are kept
//! beside it, so listing history does not copy them. A record as Rust values is some thirty
//! allocations (metadata map, versions map, strings) and about 3 KiB; packed it is one heap
//! allocation of its bytes, so a long-running process that keeps many threads grows by what
//! it stores, not by allocator overhead. Pending writes' bytes (a subgraph's input write, a
//! failed step's kept outputs) are kept as they came, each in one allocation of its length.
//! Reads (a run's start, `get_state`, history) unpack.
//!
//! One lock (a plain `Mutex`) guards the maps, and a fan-out's subgraphs store at once from
//! both workers, so it is held only for what needs it: checkpoints are packed and their
//! bytes copied before it is taken, and the ops are dropped after it.

use std::collections::{HashMap, HashSet};
use std::mem::take;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use serde::{Deserialize, Serialize};

use super::codec::serde_bytes_vec::Bytes;
use super::{
    CheckpointMetadata, CheckpointRecord, Checkpointer, FieldBlob, ListFilter, LoadedCheckpoint,
    PendingWrite, StoreOp, ThreadStorage, Versions, WriteKind, msgpack,
};
use crate::error::GraphError;

/// Threads by id, then namespace (looked up by `&str`, no key to allocate).
#[derive(Default)]
struct Threads {
    /// By thread id, then namespace; a seeded fast hash (every put looks a thread up).
    map: FastMap<Arc<str>, FastMap<Arc<str>, Thread>>,
}

/// A map with a seeded fast hasher (foldhash): SipHash's cost on a 36-byte id was a tenth of
/// a small checkpoint's store.
type FastMap<K, V> = HashMap<K, V, foldhash::fast::RandomState>;

impl Threads {
    fn get(&self, thread_id: &str, ns: &str) -> Option<&Thread> {
        self.map.get(thread_id)?.get(ns)
    }

    /// Bytes kept: packed checkpoints, large blobs and pending writes.
    #[cfg(test)]
    fn kept_bytes(&self) -> usize {
        let threads = self.map.values().flat_map(|spaces| spaces.values());
        threads
            .map(|thread| {
                let stored = thread
                    .checkpoints
                    .values()
                    .map(|s| s.packed.len() + s.large.iter().map(|l| l.data.len()).sum::<usize>());
                let writes = thread
                    .writes
                    .values()
                    .flat_map(|w| &w.list)
                    .map(|w| w.data.len());
                stored.sum::<usize>() + writes.sum::<usize>()
            })
            .sum()
    }

    /// The thread, created when new (keyed by the record's shared strings).
    fn at(&mut self, thread_id: Arc<str>, ns: Arc<str>) -> &mut Thread {
        self.map
            .entry(thread_id)
            .or_default()
            .entry(ns)
            .or_default()
    }
}

#[derive(Default)]
struct Thread {
    /// By checkpoint id; ids are time-ordered, so the list is oldest first.
    checkpoints: Checkpoints,
    /// Blobs not packed with the checkpoint that wrote them (a version that is no checkpoint
    /// of this thread and namespace, or one pruned while later checkpoints need its blobs),
    /// by (field, version).
    loose: HashMap<(String, String), FieldBlob>,
    /// Pending writes by checkpoint id.
    writes: ById<Writes>,
}

/// A thread's entries by checkpoint id (its checkpoints, their pending writes), sorted. Ids
/// are time-ordered, so a new entry is almost always the last: kept in a vector, it is
/// appended (a tree paid a search of 36-byte keys and node splits for every put; a hash map
/// a table and a key of its own per checkpoint), and found by binary search. The key is the
/// id the executor made, shared.
struct ById<V>(Vec<(Arc<str>, V)>);

/// A thread's checkpoints by id.
type Checkpoints = ById<Stored>;

impl<V> Default for ById<V> {
    fn default() -> Self {
        ById(Vec::new())
    }
}

impl<V> ById<V> {
    /// Where `id` is (`Ok`) or would go (`Err`): the last entry is looked at first (a new
    /// id is almost always the last), then a binary search.
    fn position(&self, id: &str) -> Result<usize, usize> {
        let Some((last, _)) = self.0.last() else {
            return Err(0);
        };
        match (**last).cmp(id) {
            std::cmp::Ordering::Equal => Ok(self.0.len() - 1),
            std::cmp::Ordering::Less => Err(self.0.len()),
            std::cmp::Ordering::Greater => self.0.binary_search_by(|(k, _)| (**k).cmp(id)),
        }
    }

    /// Stores `value` under `id`; returns the one it replaces.
    fn insert(&mut self, id: Arc<str>, value: V) -> Option<V> {
        match self.position(&id) {
            Ok(at) => Some(std::mem::replace(&mut self.0[at].1, value)),
            Err(at) => {
                self.0.insert(at, (id, value));
                None
            }
        }
    }

    /// The entry of `id`, made with `make` (its key with `key`) when there is none.
    fn get_or_insert_with(
        &mut self,
        id: &str,
        key: impl FnOnce() -> Arc<str>,
        make: impl FnOnce() -> V,
    ) -> &mut V {
        let at = match self.position(id) {
            Ok(at) => at,
            Err(at) => {
                self.0.insert(at, (key(), make()));
                at
            }
        };
        &mut self.0[at].1
    }

    fn get(&self, id: &str) -> Option<&V> {
        self.position(id).ok().map(|at| &self.0[at].1)
    }

    #[cfg(test)]
    fn get_mut(&mut self, id: &str) -> Option<&mut V> {
        self.position(id).ok().map(|at| &mut self.0[at].1)
    }

    fn get_key_value(&self, id: &str) -> Option<(&str, &V)> {
        self.position(id)
            .ok()
            .map(|at| (&*self.0[at].0, &self.0[at].1))
    }

    fn last(&self) -> Option<(&str, &V)> {
        self.0.last().map(|(k, v)| (&**k, v))
    }

    fn remove(&mut self, id: &str) -> Option<V> {
        self.position(id).ok().map(|at| self.0.remove(at).1)
    }

    fn len(&self) -> usize {
        self.0.len()
    }

    /// Oldest first.
    fn iter(&self) -> impl DoubleEndedIterator<Item = (&str, &V)> {
        self.0.iter().map(|(k, v)| (&**k, v))
    }

    fn values(&self) -> impl Iterator<Item = &V> {
        self.0.iter().map(|(_, v)| v)
    }
}

/// A checkpoint's pending writes, in the order stored; one per (task id, kind).
#[derive(Default)]
struct Writes {
    list: Vec<KeptWrite>,
    /// Positions by (task id, kind), once the list is long enough for a scan to cost more.
    index: Option<HashMap<(String, WriteKind), usize>>,
}

/// A pending write as kept.
struct KeptWrite {
    task_id: String,
    node: String,
    kind: WriteKind,
    data: Box<[u8]>,
}

/// Lists up to this long are searched by a scan.
const SCAN: usize = 16;

impl Writes {
    /// Room for `n` writes (a checkpoint's come in one batch, most often one).
    fn with_capacity(n: usize) -> Self {
        Writes {
            list: Vec::with_capacity(n),
            index: None,
        }
    }

    /// Keeps `write`, replacing the one of its task and kind.
    fn put(&mut self, write: KeptWrite) {
        let at = match &self.index {
            Some(index) => index.get(&(write.task_id.clone(), write.kind)).copied(),
            None => self
                .list
                .iter()
                .position(|w| w.kind == write.kind && w.task_id == write.task_id),
        };
        match at {
            Some(at) => self.list[at] = write,
            None => {
                if let Some(index) = &mut self.index {
                    index.insert((write.task_id.clone(), write.kind), self.list.len());
                }
                self.list.push(write);
                if self.index.is_none() && self.list.len() > SCAN {
                    self.index = Some(
                        self.list
                            .iter()
                            .enumerate()
                            .map(|(i, w)| ((w.task_id.clone(), w.kind), i))
                            .collect(),
                    );
                }
            }
        }
    }

    /// The writes, their bytes copied.
    fn read(&self) -> Vec<PendingWrite> {
        self.list
            .iter()
            .map(|w| PendingWrite {
                task_id: w.task_id.clone(),
                node: w.node.clone(),
                kind: w.kind,
                data: w.data.to_vec(),
            })
            .collect()
    }
}

/// A stored checkpoint: the packed record with its small blobs, and its large blobs beside it.
struct Stored {
    packed: Box<[u8]>,
    large: Box<[Large]>,
}

/// A large blob a checkpoint wrote (its version is the checkpoint's id).
struct Large {
    field: std::borrow::Cow<'static, str>,
    base: Base,
    data: Box<[u8]>,
}

/// Blobs up to this size are packed with their record; larger ones are kept as they are.
const PACK_UP_TO: usize = 2048;

/// Bytes borrowed for encoding as one MessagePack binary.
struct RawBytes<'a>(&'a [u8]);

impl Serialize for RawBytes<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_bytes(self.0)
    }
}

/// A delta blob's base: the version it extends and the codec's count (elements kept, or a
/// splice).
type Base = Option<(Arc<str>, u64)>;

/// A checkpoint as packed (fields in order; the record's thread, namespace and id are keys).
#[derive(Serialize)]
struct PackRef<'a> {
    parent_id: &'a Option<Arc<str>>,
    step: i64,
    created_at_ms: i64,
    metadata: &'a CheckpointMetadata,
    versions: &'a Versions,
    body: RawBytes<'a>,
    /// The blobs it wrote: field, delta base, data.
    blobs: OwnBlobs<'a>,
}

#[derive(Deserialize)]
struct Packed {
    parent_id: Option<Arc<str>>,
    step: i64,
    created_at_ms: i64,
    metadata: CheckpointMetadata,
    versions: Versions,
    body: Bytes,
    blobs: Vec<(String, Base, Bytes)>,
}

/// A packed checkpoint read for its blobs' fields and sizes only (a storage report): the
/// rest is skipped, nothing copied.
#[derive(Deserialize)]
struct PackedSizes {
    #[serde(rename = "parent_id")]
    _parent_id: serde::de::IgnoredAny,
    #[serde(rename = "step")]
    _step: serde::de::IgnoredAny,
    #[serde(rename = "created_at_ms")]
    _created_at_ms: serde::de::IgnoredAny,
    #[serde(rename = "metadata")]
    _metadata: serde::de::IgnoredAny,
    #[serde(rename = "versions")]
    _versions: serde::de::IgnoredAny,
    #[serde(rename = "body")]
    _body: serde::de::IgnoredAny,
    blobs: Vec<(String, serde::de::IgnoredAny, ByteCount)>,
}

/// The length of a MessagePack binary, read without copying it.
struct ByteCount(usize);

impl<'de> Deserialize<'de> for ByteCount {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl serde::de::Visitor<'_> for V {
            type Value = ByteCount;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("bytes")
            }
            fn visit_bytes<E: serde::de::Error>(self, v: &[u8]) -> Result<ByteCount, E> {
                Ok(ByteCount(v.len()))
            }
        }
        d.deserialize_bytes(V)
    }
}

impl Packed {
    fn read(bytes: &[u8]) -> Result<Packed, GraphError> {
        rmp_serde::from_slice(bytes).map_err(|e| GraphError::Storage {
            backend: "memory",
            detail: format!("unpacking a checkpoint: {e}"),
        })
    }

    fn record(self, thread_id: &str, ns: &str, id: &str) -> CheckpointRecord {
        CheckpointRecord {
            thread_id: thread_id.into(),
            ns: ns.into(),
            id: id.into(),
            parent_id: self.parent_id,
            step: self.step,
            created_at_ms: self.created_at_ms,
            metadata: self.metadata,
            versions: self.versions,
            body: self.body.0,
        }
    }
}

impl Stored {
    /// `record` as kept: packed with the small blobs of `blobs` whose version is its id
    /// (encoded in `scratch`, emptied first, and copied out), its large ones beside it.
    fn new(
        record: &CheckpointRecord,
        blobs: &[FieldBlob],
        scratch: &mut Vec<u8>,
    ) -> Result<Stored, GraphError> {
        let large = blobs
            .iter()
            .filter(|b| *b.version == *record.id && b.data.len() > PACK_UP_TO)
            .map(|b| Large {
                field: b.field.clone(),
                base: b.base.clone(),
                data: kept(&b.data),
            })
            .collect();
        Ok(Stored {
            packed: pack(record, blobs, scratch)?,
            large,
        })
    }
}

/// Packs `record` with the small blobs of `blobs` whose version is its id, encoded in
/// `scratch` (emptied first) and copied out.
fn pack(
    record: &CheckpointRecord,
    blobs: &[FieldBlob],
    scratch: &mut Vec<u8>,
) -> Result<Box<[u8]>, GraphError> {
    let packed = PackRef {
        parent_id: &record.parent_id,
        step: record.step,
        created_at_ms: record.created_at_ms,
        metadata: &record.metadata,
        versions: &record.versions,
        body: RawBytes(&record.body),
        blobs: OwnBlobs {
            blobs,
            id: &record.id,
        },
    };
    scratch.clear();
    packed
        .serialize(&mut msgpack::Packer::compact(scratch))
        .map_err(|e| GraphError::Storage {
            backend: "memory",
            detail: format!("packing checkpoint `{}`: {e}", record.id),
        })?;
    Ok(kept(scratch))
}

/// `bytes` as kept for as long as the saver lives: a copy of exactly their length. Not the
/// buffer they came in: a vector's spare capacity would be kept with it (allocators may
/// shrink a block in place, keeping all of it), and so would a whole fan-out's worth of
/// allocations freed around it; a fresh block of the exact size is placed with the saver's
/// other long-lived ones.
fn kept(bytes: &[u8]) -> Box<[u8]> {
    Box::from(bytes)
}

/// The blobs packed with checkpoint `id`: its own small ones (field, delta base, data).
struct OwnBlobs<'a> {
    blobs: &'a [FieldBlob],
    id: &'a str,
}

impl OwnBlobs<'_> {
    fn iter(&self) -> impl Iterator<Item = (&str, &Base, RawBytes<'_>)> + Clone + '_ {
        self.blobs
            .iter()
            .filter(|b| *b.version == *self.id && b.data.len() <= PACK_UP_TO)
            .map(|b| (&*b.field, &b.base, RawBytes(&b.data)))
    }
}

impl Serialize for OwnBlobs<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeSeq;
        let mut seq = s.serialize_seq(Some(self.iter().count()))?;
        for blob in self.iter() {
            seq.serialize_element(&blob)?;
        }
        seq.end()
    }
}

impl Thread {
    /// Keeps checkpoint `id` (see [`Stored::new`]), and the blobs of `blobs` of other
    /// versions (moved out of `blobs`), loose.
    fn put(&mut self, id: Arc<str>, stored: Stored, blobs: &mut [FieldBlob]) {
        for blob in blobs.iter_mut().filter(|b| *b.version != *id) {
            let blob = FieldBlob {
                field: take(&mut blob.field),
                version: take(&mut blob.version),
                base: blob.base.take(),
                data: blob.data.as_slice().to_vec(),
            };
            self.loose
                .insert((blob.field.to_string(), blob.version.to_string()), blob);
        }
        self.checkpoints.insert(id, stored);
    }

    /// The blobs checkpoint `version` wrote, unpacked (none if it is not stored here).
    fn packed_blobs(&self, version: &str) -> Result<Vec<FieldBlob>, GraphError> {
        let Some(stored) = self.checkpoints.get(version) else {
            return Ok(Vec::new());
        };
        let version: Arc<str> = Arc::from(version);
        let mut blobs: Vec<FieldBlob> = Packed::read(&stored.packed)?
            .blobs
            .into_iter()
            .map(|(field, base, data)| FieldBlob {
                field: field.into(),
                version: version.clone(),
                base,
                data: data.0,
            })
            .collect();
        blobs.extend(stored.large.iter().map(|large| FieldBlob {
            field: large.field.clone(),
            version: version.clone(),
            base: large.base.clone(),
            data: large.data.to_vec(),
        }));
        Ok(blobs)
    }

    /// Every blob `wanted` needs: the versions, and the delta bases they extend, by (field,
    /// version). A packed checkpoint is unpacked once however many of its blobs are needed.
    fn needed(
        &self,
        wanted: impl IntoIterator<Item = (String, String)>,
    ) -> Result<HashMap<(String, String), FieldBlob>, GraphError> {
        let mut unpacked: HashMap<String, Vec<FieldBlob>> = HashMap::new();
        let mut found: HashMap<(String, String), FieldBlob> = HashMap::new();
        let mut stack: Vec<(String, String)> = wanted.into_iter().collect();
        while let Some(key) = stack.pop() {
            if found.contains_key(&key) {
                continue;
            }
            let blob = match self.loose.get(&key) {
                Some(blob) => Some(blob.clone()),
                None => {
                    if !unpacked.contains_key(&key.1) {
                        unpacked.insert(key.1.clone(), self.packed_blobs(&key.1)?);
                    }
                    unpacked
                        .get(&key.1)
                        .and_then(|blobs| blobs.iter().find(|b| *b.field == *key.0))
                        .cloned()
                }
            };
            let Some(blob) = blob else {
                continue;
            };
            if let Some((base, _)) = &blob.base {
                stack.push((key.0.clone(), base.to_string()));
            }
            found.insert(key, blob);
        }
        Ok(found)
    }
}

/// What [`Thread::plan_delete`] found: the checkpoints to delete, and the blobs the others
/// need (by field and version).
struct DeletePlan {
    doomed: Vec<Arc<str>>,
    needed: HashMap<(String, String), FieldBlob>,
    /// Remaining checkpoints whose parent goes, packed again with their new parent.
    reparented: Vec<(Arc<str>, Box<[u8]>)>,
}

impl Thread {
    /// The checkpoints whose metadata names one of `run_ids`, and what the others need; read
    /// only (nothing changes until [`apply_delete`](Self::apply_delete)).
    fn plan_delete(
        &self,
        thread_id: &str,
        ns: &str,
        run_ids: &[&str],
    ) -> Result<Option<DeletePlan>, GraphError> {
        self.plan(thread_id, ns, |_, record| {
            record
                .metadata
                .run_id
                .as_deref()
                .is_some_and(|run| run_ids.contains(&run))
        })
    }

    /// All but the newest `keep_last` checkpoints, as [`plan_delete`](Self::plan_delete).
    fn plan_prune(
        &self,
        thread_id: &str,
        ns: &str,
        keep_last: usize,
    ) -> Result<Option<DeletePlan>, GraphError> {
        let cut = self.checkpoints.len().saturating_sub(keep_last);
        self.plan(thread_id, ns, |at, _| at < cut)
    }

    /// The checkpoints `doomed` picks (by position, oldest first, and record), what the
    /// others need, and the others whose parent goes, packed again with their new parent.
    fn plan(
        &self,
        thread_id: &str,
        ns: &str,
        doomed_if: impl Fn(usize, &CheckpointRecord) -> bool,
    ) -> Result<Option<DeletePlan>, GraphError> {
        let mut doomed = Vec::new();
        let mut kept_versions = Vec::new();
        let mut parents = HashMap::new();
        for (at, (id, stored)) in self.checkpoints.0.iter().enumerate() {
            let record = Packed::read(&stored.packed)?.record(thread_id, ns, id);
            parents.insert(
                id.to_string(),
                record.parent_id.as_deref().map(str::to_owned),
            );
            if doomed_if(at, &record) {
                doomed.push(id.clone());
            } else {
                kept_versions.extend(
                    record
                        .versions
                        .iter()
                        .map(|(f, v)| (f.to_owned(), v.to_owned())),
                );
            }
        }
        if doomed.is_empty() {
            return Ok(None);
        }
        let gone: HashSet<&str> = doomed.iter().map(|id| &**id).collect();
        let mut reparented = Vec::new();
        let mut scratch = Vec::new();
        for (id, parent) in super::reparent::reparented(&parents, &gone) {
            let Some((id, stored)) = self.checkpoints.0.iter().find(|(k, _)| **k == *id) else {
                continue;
            };
            let packed = Packed::read(&stored.packed)?;
            let blobs: Vec<FieldBlob> = packed
                .blobs
                .iter()
                .map(|(field, base, data)| FieldBlob {
                    field: field.clone().into(),
                    version: id.clone(),
                    base: base.clone(),
                    data: data.0.clone(),
                })
                .collect();
            let mut record = packed.record(thread_id, ns, id);
            record.parent_id = parent.map(Into::into);
            reparented.push((id.clone(), pack(&record, &blobs, &mut scratch)?));
        }
        Ok(Some(DeletePlan {
            doomed,
            needed: self.needed(kept_versions)?,
            reparented,
        }))
    }

    /// Deletes the planned checkpoints with their writes; their blobs that the others need
    /// are kept loose, and loose blobs nothing needs go; the others whose parent went name
    /// their new one. The deleted values go to `removed` (freed by the caller, after the
    /// lock).
    fn apply_delete(&mut self, plan: DeletePlan, removed: &mut Vec<Stored>) {
        let DeletePlan {
            doomed,
            needed,
            reparented,
        } = plan;
        for (key, blob) in &needed {
            if doomed.iter().any(|id| **id == *key.1) {
                self.loose.insert(key.clone(), blob.clone());
            }
        }
        for id in &doomed {
            removed.extend(self.checkpoints.remove(id));
            self.writes.remove(id);
        }
        for (id, packed) in reparented {
            if let Some(at) = self.checkpoints.0.iter().position(|(k, _)| *k == id) {
                self.checkpoints.0[at].1.packed = packed;
            }
        }
        self.loose.retain(|k, _| needed.contains_key(k));
    }

    /// Whether nothing is stored here any more.
    fn is_empty(&self) -> bool {
        self.checkpoints.len() == 0 && self.writes.len() == 0 && self.loose.is_empty()
    }
}

/// Checkpoints in memory.
#[derive(Default)]
pub struct InMemorySaver {
    threads: Mutex<Threads>,
}

impl std::fmt::Debug for InMemorySaver {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("InMemorySaver").finish_non_exhaustive()
    }
}

impl InMemorySaver {
    /// An empty saver.
    pub fn new() -> Self {
        InMemorySaver::default()
    }

    /// Bytes of blobs stored for a thread (for storage measurements).
    pub fn blob_bytes(&self, thread_id: &str) -> usize {
        let threads = self.lock();
        let mut total = 0;
        for thread in threads
            .map
            .get(thread_id)
            .into_iter()
            .flat_map(|s| s.values())
        {
            total += thread.loose.values().map(|b| b.data.len()).sum::<usize>();
            for stored in thread.checkpoints.values() {
                if let Ok(packed) = Packed::read(&stored.packed) {
                    total += packed
                        .blobs
                        .iter()
                        .map(|(_, _, d)| d.0.len())
                        .sum::<usize>();
                }
                total += stored.large.iter().map(|b| b.data.len()).sum::<usize>();
            }
        }
        total
    }

    /// The maps. A panic while holding the lock leaves consistent data (each method mutates
    /// at the end), so a poisoned lock is still usable.
    fn lock(&self) -> MutexGuard<'_, Threads> {
        self.threads.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl InMemorySaver {
    /// Stores `ops` in order under one lock (taking them out of `ops`). Under the lock is only
    /// what needs the saver's maps: the checkpoints are packed and copied before it is
    /// taken, and the ops are dropped after it is released, so runs storing at once on other
    /// threads (a fan-out's subgraphs) do not wait for encoding or freeing.
    fn store(&self, ops: &mut Vec<StoreOp>) -> Result<(), GraphError> {
        let stored = self.pack_and_keep(ops);
        ops.clear();
        stored
    }

    fn pack_and_keep(&self, ops: &mut [StoreOp]) -> Result<(), GraphError> {
        let (mut prepared, mut scratch) = (Vec::new(), Vec::new());
        for op in ops.iter() {
            if let StoreOp::Checkpoint { record, blobs } = op {
                prepared.push(Stored::new(record, blobs, &mut scratch)?);
            }
        }
        let mut prepared = prepared.into_iter();
        let mut threads = self.lock();
        for op in ops.iter_mut() {
            match op {
                StoreOp::Checkpoint { record, blobs } => {
                    let Some(stored) = prepared.next() else {
                        break;
                    };
                    let thread = threads.at(record.thread_id.clone(), record.ns.clone());
                    thread.put(record.id.clone(), stored, blobs);
                }
                StoreOp::Writes {
                    thread_id,
                    ns,
                    checkpoint_id,
                    writes,
                } => {
                    let thread = threads.at(thread_id.clone(), ns.clone());
                    let list = thread.writes.get_or_insert_with(
                        checkpoint_id,
                        || checkpoint_id.clone(),
                        || Writes::with_capacity(writes.len()),
                    );
                    for write in writes.iter_mut() {
                        list.put(KeptWrite {
                            task_id: take(&mut write.task_id),
                            node: take(&mut write.node),
                            kind: write.kind,
                            data: kept(&write.data),
                        });
                    }
                }
            }
        }
        Ok(())
    }
}

#[async_trait::async_trait]
impl Checkpointer for InMemorySaver {
    fn backend(&self) -> &'static str {
        "memory"
    }

    fn put_batch_now(&self, ops: &mut Vec<StoreOp>) -> Option<Result<(), GraphError>> {
        Some(self.store(ops))
    }

    async fn put(&self, record: &CheckpointRecord, blobs: &[FieldBlob]) -> Result<(), GraphError> {
        let ops = StoreOp::Checkpoint {
            record: record.clone(),
            blobs: blobs.to_vec(),
        };
        self.store(&mut vec![ops])
    }

    async fn put_batch(&self, mut ops: Vec<StoreOp>) -> Result<(), GraphError> {
        self.store(&mut ops)
    }

    async fn put_writes(
        &self,
        thread_id: &str,
        ns: &str,
        checkpoint_id: &str,
        writes: &[PendingWrite],
    ) -> Result<(), GraphError> {
        let kept: Vec<KeptWrite> = writes
            .iter()
            .map(|w| KeptWrite {
                task_id: w.task_id.clone(),
                node: w.node.clone(),
                kind: w.kind,
                data: kept(&w.data),
            })
            .collect();
        let mut threads = self.lock();
        let thread = threads.at(thread_id.into(), ns.into());
        let list = thread.writes.get_or_insert_with(
            checkpoint_id,
            || checkpoint_id.into(),
            || Writes::with_capacity(kept.len()),
        );
        for write in kept {
            list.put(write);
        }
        Ok(())
    }

    async fn get(
        &self,
        thread_id: &str,
        ns: &str,
        checkpoint_id: Option<&str>,
    ) -> Result<LoadedCheckpoint, GraphError> {
        let threads = self.lock();
        let Some(thread) = threads.get(thread_id, ns) else {
            return Ok(LoadedCheckpoint::default());
        };
        let found = match checkpoint_id {
            Some(id) => thread.checkpoints.get_key_value(id),
            None => thread.checkpoints.last(),
        };
        let Some((id, stored)) = found else {
            return Ok(LoadedCheckpoint::default());
        };
        let record = Packed::read(&stored.packed)?.record(thread_id, ns, id);
        let blobs = thread
            .needed(
                record
                    .versions
                    .iter()
                    .map(|(f, v)| (f.to_owned(), v.to_owned())),
            )?
            .into_values()
            .collect();
        let writes = thread
            .writes
            .get(&record.id)
            .map(Writes::read)
            .unwrap_or_default();
        Ok(LoadedCheckpoint {
            record: Some(record),
            blobs,
            writes,
        })
    }

    async fn list(
        &self,
        thread_id: &str,
        ns: &str,
        filter: &ListFilter,
    ) -> Result<Vec<CheckpointRecord>, GraphError> {
        let threads = self.lock();
        let Some(thread) = threads.get(thread_id, ns) else {
            return Ok(Vec::new());
        };
        let limit = filter.limit.unwrap_or(usize::MAX);
        let mut out = Vec::new();
        for (id, stored) in thread.checkpoints.iter().rev() {
            if out.len() >= limit {
                break;
            }
            if filter.before.as_deref().is_some_and(|b| *id >= *b) {
                continue;
            }
            let record = Packed::read(&stored.packed)?.record(thread_id, ns, id);
            if filter.matches_metadata(&record.metadata) {
                out.push(record);
            }
        }
        Ok(out)
    }

    /// The thread's bytes are copied under the lock (the packed checkpoints are shared
    /// boxes, so a copy each) and read after it.
    async fn storage(&self, thread_id: &str) -> Result<Option<ThreadStorage>, GraphError> {
        let mut out = ThreadStorage::default();
        let mut packed = Vec::new();
        {
            let threads = self.lock();
            for thread in threads
                .map
                .get(thread_id)
                .into_iter()
                .flat_map(|s| s.values())
            {
                for stored in thread.checkpoints.values() {
                    packed.push(stored.packed.clone());
                    for large in stored.large.iter() {
                        out.add_value(&large.field, large.data.len() as u64);
                    }
                }
                for ((field, _), blob) in &thread.loose {
                    out.add_value(field, blob.data.len() as u64);
                }
                for writes in thread.writes.values() {
                    let bytes = writes.list.iter().map(|w| w.data.len() as u64).sum();
                    out.writes.add(writes.list.len() as u64, bytes);
                }
            }
        }
        for bytes in packed {
            let sizes: PackedSizes =
                rmp_serde::from_slice(&bytes).map_err(|e| GraphError::Storage {
                    backend: "memory",
                    detail: format!("unpacking a checkpoint: {e}"),
                })?;
            let mut own = 0;
            for (field, _, ByteCount(len)) in &sizes.blobs {
                out.add_value(field, *len as u64);
                own += *len;
            }
            out.checkpoints
                .add(1, bytes.len().saturating_sub(own) as u64);
        }
        Ok(Some(out))
    }

    async fn delete_thread(&self, thread_id: &str) -> Result<(), GraphError> {
        // Freed after the lock is released.
        let removed = self.lock().map.remove(thread_id);
        drop(removed);
        Ok(())
    }

    /// Every namespace planned first (what can fail: unpacking), then changed, under one
    /// lock: all or nothing.
    async fn delete_for_runs(
        &self,
        thread_id: &str,
        run_ids: &[&str],
    ) -> Result<usize, GraphError> {
        let mut removed = Vec::new();
        let deleted = {
            let mut threads = self.lock();
            let Some(spaces) = threads.map.get_mut(thread_id) else {
                return Ok(0);
            };
            let mut plans = Vec::new();
            for (ns, thread) in spaces.iter() {
                if let Some(plan) = thread.plan_delete(thread_id, ns, run_ids)? {
                    plans.push((ns.clone(), plan));
                }
            }
            let mut deleted = 0;
            for (ns, plan) in plans {
                if let Some(thread) = spaces.get_mut(&ns) {
                    deleted += plan.doomed.len();
                    thread.apply_delete(plan, &mut removed);
                }
            }
            spaces.retain(|_, thread| !thread.is_empty());
            if spaces.is_empty() {
                threads.map.remove(thread_id);
            }
            deleted
        };
        // Freed after the lock is released.
        drop(removed);
        Ok(deleted)
    }

    async fn prune(
        &self,
        thread_id: &str,
        ns: &str,
        keep_last: usize,
    ) -> Result<usize, GraphError> {
        let mut removed = Vec::new();
        let deleted = {
            let mut threads = self.lock();
            let Some(thread) = threads
                .map
                .get_mut(thread_id)
                .and_then(|spaces| spaces.get_mut(ns))
            else {
                return Ok(0);
            };
            let Some(plan) = thread.plan_prune(thread_id, ns, keep_last)? else {
                return Ok(0);
            };
            let deleted = plan.doomed.len();
            thread.apply_delete(plan, &mut removed);
            deleted
        };
        drop(removed);
        Ok(deleted)
    }

    /// Every namespace planned first, then changed, under one lock: all or nothing.
    async fn keep_latest(&self, thread_id: &str) -> Result<usize, GraphError> {
        let mut removed = Vec::new();
        let deleted = {
            let mut threads = self.lock();
            let Some(spaces) = threads.map.get_mut(thread_id) else {
                return Ok(0);
            };
            let mut plans = Vec::new();
            for (ns, thread) in spaces.iter() {
                if let Some(plan) = thread.plan_prune(thread_id, ns, 1)? {
                    plans.push((ns.clone(), plan));
                }
            }
            let mut deleted = 0;
            for (ns, plan) in plans {
                if let Some(thread) = spaces.get_mut(&ns) {
                    deleted += plan.doomed.len();
                    thread.apply_delete(plan, &mut removed);
                }
            }
            deleted
        };
        // Freed after the lock is released.
        drop(removed);
        Ok(deleted)
    }

    async fn replace_writes(
        &self,
        thread_id: &str,
        ns: &str,
        checkpoint_id: &str,
        writes: &[PendingWrite],
    ) -> Result<(), GraphError> {
        let mut threads = self.lock();
        let Some(thread) = threads
            .map
            .get_mut(thread_id)
            .and_then(|spaces| spaces.get_mut(ns))
        else {
            return Ok(());
        };
        let Some((id, _)) = thread.checkpoints.get_key_value(checkpoint_id) else {
            return Ok(());
        };
        let id: Arc<str> = id.into();
        let old = thread.writes.remove(checkpoint_id);
        if !writes.is_empty() {
            let mut kept = Writes::with_capacity(writes.len());
            for w in writes {
                kept.put(KeptWrite {
                    task_id: w.task_id.clone(),
                    node: w.node.clone(),
                    kind: w.kind,
                    data: w.data.clone().into_boxed_slice(),
                });
            }
            thread.writes.insert(id, kept);
        }
        drop(threads);
        drop(old);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(id: &str, parent: Option<&str>, versions: &[(&str, &str)]) -> CheckpointRecord {
        CheckpointRecord {
            thread_id: "t".into(),
            ns: "".into(),
            id: id.into(),
            parent_id: parent.map(Into::into),
            step: 0,
            created_at_ms: 1,
            metadata: CheckpointMetadata::from_json(
                &serde_json::json!({ "source": "loop", "n": 1.5 }),
            ),
            versions: versions
                .iter()
                .map(|(f, v)| ((*f).to_owned(), (*v).to_owned()))
                .collect(),
            body: vec![9, 8, 7],
        }
    }

    fn blob(field: &str, version: &str, base: Option<(&str, u64)>, data: Vec<u8>) -> FieldBlob {
        FieldBlob {
            field: field.to_owned().into(),
            version: version.into(),
            base: base.map(|(v, n)| (v.into(), n)),
            data,
        }
    }

    fn sorted(mut blobs: Vec<FieldBlob>) -> Vec<(String, String, usize)> {
        let mut out: Vec<_> = blobs
            .drain(..)
            .map(|b| (b.field.into_owned(), b.version.to_string(), b.data.len()))
            .collect();
        out.sort();
        out
    }

    #[tokio::test]
    async fn large_and_foreign_blobs_round_trip_and_survive_prune() {
        let saver = InMemorySaver::new();
        let big = vec![7u8; PACK_UP_TO * 3];
        // `a` writes a large field and a small one; `b` extends the large one and carries a
        // blob whose version is no checkpoint of the thread.
        saver
            .put(
                &record("a", None, &[("big", "a"), ("small", "a")]),
                &[
                    blob("big", "a", None, big.clone()),
                    blob("small", "a", None, vec![1]),
                ],
            )
            .await
            .unwrap();
        saver
            .put(
                &record(
                    "b",
                    Some("a"),
                    &[("big", "b"), ("small", "a"), ("x", "elsewhere")],
                ),
                &[
                    blob("big", "b", Some(("a", 1)), vec![2; 10]),
                    blob("x", "elsewhere", None, vec![3; 5]),
                ],
            )
            .await
            .unwrap();
        let loaded = saver.get("t", "", None).await.unwrap();
        let record = loaded.record.unwrap();
        assert_eq!(&*record.id, "b");
        assert_eq!(record.parent_id.as_deref(), Some("a"));
        assert_eq!(record.metadata.extra["n"], 1.5);
        assert_eq!(record.metadata.source, Some(super::super::Source::Loop));
        assert_eq!(record.body, vec![9, 8, 7]);
        let expected = vec![
            ("big".to_owned(), "a".to_owned(), big.len()),
            ("big".to_owned(), "b".to_owned(), 10),
            ("small".to_owned(), "a".to_owned(), 1),
            ("x".to_owned(), "elsewhere".to_owned(), 5),
        ];
        assert_eq!(sorted(loaded.blobs), expected);
        assert_eq!(saver.blob_bytes("t"), big.len() + 1 + 10 + 5);

        // Pruning `a` keeps the blobs `b` still needs (moved out of the pruned checkpoint).
        assert_eq!(saver.prune("t", "", 1).await.unwrap(), 1);
        let loaded = saver.get("t", "", None).await.unwrap();
        assert_eq!(sorted(loaded.blobs), expected);
        assert!(
            saver
                .get("t", "", Some("a"))
                .await
                .unwrap()
                .record
                .is_none()
        );
        assert_eq!(
            saver
                .list("t", "", &ListFilter::default())
                .await
                .unwrap()
                .len(),
            1
        );
    }

    #[tokio::test]
    async fn pending_writes_are_kept_replaced_and_dropped_with_their_checkpoint() {
        let saver = InMemorySaver::new();
        let live = || saver.lock().kept_bytes();
        let write = |task: &str, data: Vec<u8>| PendingWrite {
            task_id: task.to_owned(),
            node: "n".to_owned(),
            kind: WriteKind::Output,
            data,
        };
        saver.put(&record("a", None, &[]), &[]).await.unwrap();
        let one_checkpoint = live();
        saver
            .put_writes(
                "t",
                "",
                "a",
                &[write("x", vec![1; 100]), write("y", vec![2; 50])],
            )
            .await
            .unwrap();
        assert_eq!(live(), one_checkpoint + 150);
        // A task's second write of a kind replaces its first, bytes and all.
        saver
            .put_writes("t", "", "a", &[write("x", vec![3; 10])])
            .await
            .unwrap();
        assert_eq!(live(), one_checkpoint + 60);
        let loaded = saver.get("t", "", None).await.unwrap();
        let read: Vec<_> = loaded
            .writes
            .iter()
            .map(|w| (w.task_id.as_str(), w.data.clone()))
            .collect();
        assert_eq!(read, [("x", vec![3; 10]), ("y", vec![2; 50])]);
        // Pruned with their checkpoint.
        saver.put(&record("b", Some("a"), &[]), &[]).await.unwrap();
        let before = live();
        saver.prune("t", "", 1).await.unwrap();
        // `b`, whose parent went, is packed again naming none: `nil` for `"a"`, a byte less.
        assert_eq!(live(), before - one_checkpoint - 60 - 1);
        let kept = saver.get("t", "", Some("b")).await.unwrap().record.unwrap();
        assert_eq!(kept.parent_id, None);
        let pruned = saver.get("t", "", Some("a")).await.unwrap();
        assert!(pruned.writes.is_empty());
        saver
            .put_writes("t", "", "b", &[write("z", vec![4; 70])])
            .await
            .unwrap();
        // Deleted with their thread.
        saver.delete_thread("t").await.unwrap();
        assert_eq!(live(), 0);
    }

    #[tokio::test]
    async fn a_corrupt_packed_checkpoint_is_a_storage_error() {
        let saver = InMemorySaver::new();
        saver.put(&record("a", None, &[]), &[]).await.unwrap();
        {
            let mut threads = saver.lock();
            let thread = threads.at("t".into(), "".into());
            if let Some(stored) = thread.checkpoints.get_mut("a") {
                stored.packed = Box::new([0xc1]);
            }
        }
        let error = saver.get("t", "", None).await.unwrap_err();
        assert!(error.to_string().contains("unpacking"), "{error}");
    }
}
