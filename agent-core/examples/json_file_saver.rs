//! A checkpointer written outside agent-core, as a user writes one for their own store (the
//! seed's Firestore, DynamoDB, a bucket): checkpoints as JSON files, one per thread and
//! namespace, in a directory. It implements the public [`Checkpointer`] trait only, and its
//! tests run the same conformance kit as the built-in savers
//! (`agent_core::checkpoint::testkit`).
//!
//! ```text
//! cargo run -p agent-core --example json_file_saver       # a thread continued from the files
//! cargo test -p agent-core --example json_file_saver      # the conformance kit
//! ```
//!
//! Writes go to a temporary file renamed over the old one, so a crash never leaves half a
//! file; a lock serializes the savers of one process. Several processes writing one thread
//! at once would need a file lock too: this is an example, not a production store.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use agent_core::checkpoint::{
    CheckpointMetadata, CheckpointRecord, Checkpointer, FieldBlob, ListFilter, LoadedCheckpoint,
    PendingWrite, Versions, WriteKind,
};
use agent_core::{END, GraphError, GraphState, RunConfig, START, StateGraph};
use serde::{Deserialize, Serialize};

const BACKEND: &str = "json-file";

fn storage(detail: impl std::fmt::Display) -> GraphError {
    GraphError::Storage {
        backend: BACKEND,
        detail: detail.to_string(),
    }
}

/// Bytes as lowercase hex (JSON has no bytes).
fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn unhex(text: &str) -> Result<Vec<u8>, GraphError> {
    if !text.len().is_multiple_of(2) {
        return Err(storage(format!("odd-length hex `{text}`")));
    }
    (0..text.len())
        .step_by(2)
        .map(|i| {
            u8::from_str_radix(&text[i..i + 2], 16)
                .map_err(|e| storage(format!("bad hex `{text}`: {e}")))
        })
        .collect()
}

#[derive(Serialize, Deserialize, Clone)]
struct StoredRecord {
    id: String,
    parent_id: Option<String>,
    step: i64,
    created_at_ms: i64,
    metadata: CheckpointMetadata,
    versions: Versions,
    body: String,
}

#[derive(Serialize, Deserialize, Clone)]
struct StoredBlob {
    field: String,
    version: String,
    base: Option<(String, u64)>,
    data: String,
}

#[derive(Serialize, Deserialize, Clone)]
struct StoredWrite {
    task_id: String,
    node: String,
    kind: i64,
    data: String,
}

/// One thread and namespace: its checkpoints by id (time-ordered), blobs, writes.
#[derive(Serialize, Deserialize, Default)]
struct ThreadFile {
    checkpoints: BTreeMap<String, StoredRecord>,
    /// By `field/version`.
    blobs: BTreeMap<String, StoredBlob>,
    /// By checkpoint id.
    writes: BTreeMap<String, Vec<StoredWrite>>,
}

fn blob_key(field: &str, version: &str) -> String {
    format!("{field}/{version}")
}

/// Checkpoints as JSON files in a directory.
pub struct JsonFileSaver {
    dir: PathBuf,
    lock: tokio::sync::Mutex<()>,
}

impl JsonFileSaver {
    /// A saver writing into `dir` (created if missing).
    pub fn open(dir: impl AsRef<Path>) -> Result<Self, GraphError> {
        let dir = dir.as_ref().to_path_buf();
        std::fs::create_dir_all(&dir)
            .map_err(|e| storage(format!("cannot create {}: {e}", dir.display())))?;
        Ok(JsonFileSaver {
            dir,
            lock: tokio::sync::Mutex::new(()),
        })
    }

    /// The file of a thread and namespace: names hex-encoded, so any id is a safe file name.
    fn path(&self, thread_id: &str, ns: &str) -> PathBuf {
        self.dir.join(format!(
            "{}__{}.json",
            hex(thread_id.as_bytes()),
            hex(ns.as_bytes())
        ))
    }

    fn load(&self, thread_id: &str, ns: &str) -> Result<ThreadFile, GraphError> {
        let path = self.path(thread_id, ns);
        match std::fs::read(&path) {
            Ok(bytes) => serde_json::from_slice(&bytes)
                .map_err(|e| storage(format!("{} is not a thread file: {e}", path.display()))),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(ThreadFile::default()),
            Err(e) => Err(storage(format!("cannot read {}: {e}", path.display()))),
        }
    }

    fn save(&self, thread_id: &str, ns: &str, file: &ThreadFile) -> Result<(), GraphError> {
        let path = self.path(thread_id, ns);
        let temp = path.with_extension("json.tmp");
        let bytes = serde_json::to_vec(file).map_err(storage)?;
        std::fs::write(&temp, bytes)
            .map_err(|e| storage(format!("cannot write {}: {e}", temp.display())))?;
        std::fs::rename(&temp, &path)
            .map_err(|e| storage(format!("cannot replace {}: {e}", path.display())))
    }

    fn record(
        thread_id: &str,
        ns: &str,
        stored: &StoredRecord,
    ) -> Result<CheckpointRecord, GraphError> {
        Ok(CheckpointRecord {
            thread_id: thread_id.into(),
            ns: ns.into(),
            id: stored.id.as_str().into(),
            parent_id: stored.parent_id.as_deref().map(Into::into),
            step: stored.step,
            created_at_ms: stored.created_at_ms,
            metadata: stored.metadata.clone(),
            versions: stored.versions.clone(),
            body: unhex(&stored.body)?,
        })
    }

    /// The blob keys `versions` need, delta bases included.
    fn needed<'a>(
        file: &ThreadFile,
        versions: impl IntoIterator<Item = (&'a str, &'a str)>,
    ) -> Vec<String> {
        let mut needed: Vec<String> = Vec::new();
        let mut stack: Vec<String> = versions.into_iter().map(|(f, v)| blob_key(f, v)).collect();
        while let Some(key) = stack.pop() {
            if needed.contains(&key) {
                continue;
            }
            if let Some(blob) = file.blobs.get(&key)
                && let Some((base, _)) = &blob.base
            {
                stack.push(blob_key(&blob.field, base));
            }
            needed.push(key);
        }
        needed
    }
}

#[async_trait::async_trait]
impl Checkpointer for JsonFileSaver {
    fn backend(&self) -> &'static str {
        BACKEND
    }

    async fn put(&self, record: &CheckpointRecord, blobs: &[FieldBlob]) -> Result<(), GraphError> {
        let _guard = self.lock.lock().await;
        let mut file = self.load(&record.thread_id, &record.ns)?;
        for blob in blobs {
            file.blobs.insert(
                blob_key(&blob.field, &blob.version),
                StoredBlob {
                    field: blob.field.to_string(),
                    version: blob.version.to_string(),
                    base: blob.base.as_ref().map(|(v, n)| (v.to_string(), *n)),
                    data: hex(&blob.data),
                },
            );
        }
        file.checkpoints.insert(
            record.id.to_string(),
            StoredRecord {
                id: record.id.to_string(),
                parent_id: record.parent_id.as_deref().map(str::to_owned),
                step: record.step,
                created_at_ms: record.created_at_ms,
                metadata: record.metadata.clone(),
                versions: record.versions.clone(),
                body: hex(&record.body),
            },
        );
        self.save(&record.thread_id, &record.ns, &file)
    }

    async fn put_writes(
        &self,
        thread_id: &str,
        ns: &str,
        checkpoint_id: &str,
        writes: &[PendingWrite],
    ) -> Result<(), GraphError> {
        let _guard = self.lock.lock().await;
        let mut file = self.load(thread_id, ns)?;
        let list = file.writes.entry(checkpoint_id.to_owned()).or_default();
        for write in writes {
            let kind = i64::from(write.kind.code());
            list.retain(|w| !(w.task_id == write.task_id && w.kind == kind));
            list.push(StoredWrite {
                task_id: write.task_id.clone(),
                node: write.node.clone(),
                kind,
                data: hex(&write.data),
            });
        }
        self.save(thread_id, ns, &file)
    }

    async fn get(
        &self,
        thread_id: &str,
        ns: &str,
        checkpoint_id: Option<&str>,
    ) -> Result<LoadedCheckpoint, GraphError> {
        let _guard = self.lock.lock().await;
        let file = self.load(thread_id, ns)?;
        let stored = match checkpoint_id {
            Some(id) => file.checkpoints.get(id),
            None => file.checkpoints.values().next_back(),
        };
        let Some(stored) = stored else {
            return Ok(LoadedCheckpoint::default());
        };
        let record = JsonFileSaver::record(thread_id, ns, stored)?;
        let blobs = JsonFileSaver::needed(&file, &record.versions)
            .iter()
            .filter_map(|key| file.blobs.get(key))
            .map(|b| {
                Ok(FieldBlob {
                    field: b.field.clone().into(),
                    version: b.version.as_str().into(),
                    base: b.base.as_ref().map(|(v, n)| (v.as_str().into(), *n)),
                    data: unhex(&b.data)?,
                })
            })
            .collect::<Result<Vec<_>, GraphError>>()?;
        let writes = file
            .writes
            .get(&*record.id)
            .map(|list| {
                list.iter()
                    .map(|w| {
                        Ok(PendingWrite {
                            task_id: w.task_id.clone(),
                            node: w.node.clone(),
                            kind: WriteKind::from_code(w.kind)
                                .ok_or_else(|| storage(format!("unknown write kind {}", w.kind)))?,
                            data: unhex(&w.data)?,
                        })
                    })
                    .collect::<Result<Vec<_>, GraphError>>()
            })
            .transpose()?
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
        let _guard = self.lock.lock().await;
        let file = self.load(thread_id, ns)?;
        file.checkpoints
            .values()
            .rev()
            .filter(|r| filter.before.as_ref().is_none_or(|b| r.id < *b))
            .filter(|r| filter.matches_metadata(&r.metadata))
            .take(filter.limit.unwrap_or(usize::MAX))
            .map(|r| JsonFileSaver::record(thread_id, ns, r))
            .collect()
    }

    async fn delete_thread(&self, thread_id: &str) -> Result<(), GraphError> {
        let _guard = self.lock.lock().await;
        let prefix = format!("{}__", hex(thread_id.as_bytes()));
        let entries = std::fs::read_dir(&self.dir)
            .map_err(|e| storage(format!("cannot list {}: {e}", self.dir.display())))?;
        for entry in entries.flatten() {
            if entry.file_name().to_string_lossy().starts_with(&prefix) {
                std::fs::remove_file(entry.path()).map_err(|e| {
                    storage(format!("cannot delete {}: {e}", entry.path().display()))
                })?;
            }
        }
        Ok(())
    }

    /// Namespace by namespace (one file each: not atomic across them, as this example is not
    /// across processes either).
    async fn delete_for_runs(
        &self,
        thread_id: &str,
        run_ids: &[&str],
    ) -> Result<usize, GraphError> {
        let _guard = self.lock.lock().await;
        let mut deleted = 0;
        for ns in self.spaces(thread_id)? {
            let mut file = self.load(thread_id, &ns)?;
            let doomed: Vec<String> = file
                .checkpoints
                .values()
                .filter(|r| {
                    r.metadata
                        .run_id
                        .as_deref()
                        .is_some_and(|run| run_ids.contains(&run))
                })
                .map(|r| r.id.clone())
                .collect();
            if doomed.is_empty() {
                continue;
            }
            JsonFileSaver::drop_checkpoints(&mut file, &doomed);
            self.save(thread_id, &ns, &file)?;
            deleted += doomed.len();
        }
        Ok(deleted)
    }

    async fn prune(
        &self,
        thread_id: &str,
        ns: &str,
        keep_last: usize,
    ) -> Result<usize, GraphError> {
        let _guard = self.lock.lock().await;
        let mut file = self.load(thread_id, ns)?;
        let total = file.checkpoints.len();
        if total <= keep_last {
            return Ok(0);
        }
        let doomed: Vec<String> = file
            .checkpoints
            .keys()
            .take(total - keep_last)
            .cloned()
            .collect();
        JsonFileSaver::drop_checkpoints(&mut file, &doomed);
        self.save(thread_id, ns, &file)?;
        Ok(doomed.len())
    }

    /// Namespace by namespace, as `delete_for_runs`.
    async fn keep_latest(&self, thread_id: &str) -> Result<usize, GraphError> {
        let spaces = {
            let _guard = self.lock.lock().await;
            self.spaces(thread_id)?
        };
        let mut deleted = 0;
        for ns in spaces {
            deleted += self.prune(thread_id, &ns, 1).await?;
        }
        Ok(deleted)
    }

    async fn replace_writes(
        &self,
        thread_id: &str,
        ns: &str,
        checkpoint_id: &str,
        writes: &[PendingWrite],
    ) -> Result<(), GraphError> {
        let _guard = self.lock.lock().await;
        let mut file = self.load(thread_id, ns)?;
        if !file.checkpoints.contains_key(checkpoint_id) {
            return Ok(());
        }
        file.writes.remove(checkpoint_id);
        self.save(thread_id, ns, &file)?;
        drop(_guard);
        self.put_writes(thread_id, ns, checkpoint_id, writes).await
    }
}

impl JsonFileSaver {
    /// The namespaces a thread has files for.
    fn spaces(&self, thread_id: &str) -> Result<Vec<String>, GraphError> {
        let prefix = format!("{}__", hex(thread_id.as_bytes()));
        let entries = std::fs::read_dir(&self.dir)
            .map_err(|e| storage(format!("cannot list {}: {e}", self.dir.display())))?;
        let mut spaces = Vec::new();
        for entry in entries.flatten() {
            let name = entry.file_name().to_string_lossy().into_owned();
            if let Some(ns) = name
                .strip_prefix(&prefix)
                .and_then(|rest| rest.strip_suffix(".json"))
            {
                spaces.push(String::from_utf8(unhex(ns)?).map_err(storage)?);
            }
        }
        Ok(spaces)
    }

    /// Deletes `doomed` with their writes and the blobs nothing kept needs; a kept
    /// checkpoint whose parent goes names its nearest remaining ancestor.
    fn drop_checkpoints(file: &mut ThreadFile, doomed: &[String]) {
        let parents: BTreeMap<String, Option<String>> = file
            .checkpoints
            .values()
            .map(|r| (r.id.clone(), r.parent_id.clone()))
            .collect();
        for id in doomed {
            file.checkpoints.remove(id);
            file.writes.remove(id);
        }
        for record in file.checkpoints.values_mut() {
            let mut parent = record.parent_id.clone();
            while let Some(p) = parent.take_if(|p| doomed.contains(p)) {
                parent = parents.get(&p).cloned().flatten();
            }
            record.parent_id = parent;
        }
        let needed = JsonFileSaver::needed(
            file,
            file.checkpoints.values().flat_map(|r| r.versions.iter()),
        );
        file.blobs.retain(|key, _| needed.contains(key));
    }
}

/// A conversation that only grows, for the demo.
#[derive(GraphState, Clone, Default, Debug)]
struct Notes {
    #[reducer(append)]
    lines: Vec<String>,
}

fn graph(saver: Arc<dyn Checkpointer>) -> Result<agent_core::CompiledGraph<Notes>, GraphError> {
    StateGraph::new()
        .add_node("note", |s: Arc<Notes>| async move {
            NotesUpdate::default().lines(vec![format!("note {}", s.lines.len() + 1)])
        })
        .add_edge(START, "note")
        .add_edge("note", END)
        .compile_with(saver)
}

#[tokio::main]
async fn main() -> Result<(), GraphError> {
    let dir = std::env::temp_dir().join("agentgraph-json-file-saver-example");
    let config = RunConfig::default().thread_id("notes");
    // Two graphs on two savers over the same directory: the second continues the thread as
    // a second process would.
    let first = graph(Arc::new(JsonFileSaver::open(&dir)?))?;
    first.invoke(NotesUpdate::default(), config.clone()).await?;
    let second = graph(Arc::new(JsonFileSaver::open(&dir)?))?;
    let out = second
        .invoke(NotesUpdate::default(), config.clone())
        .await?;
    println!("{:?} (checkpoints in {})", out.lines, dir.display());
    JsonFileSaver::open(&dir)?.delete_thread("notes").await?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use agent_core::checkpoint::testkit;

    fn scratch() -> PathBuf {
        std::env::temp_dir().join(format!("agentgraph-json-saver-{}", uuid_like()))
    }

    fn uuid_like() -> String {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or_default();
        format!("{}-{nanos}", std::process::id())
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn passes_the_checkpointer_test_kit() {
        let dir = scratch();
        let passed = testkit::run_all(|| {
            let dir = dir.clone();
            async move { Arc::new(JsonFileSaver::open(dir).unwrap()) as Arc<dyn Checkpointer> }
        })
        .await
        .unwrap_or_else(|failure| panic!("{failure}"));
        assert_eq!(passed, testkit::CASES);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[tokio::test]
    async fn a_thread_continues_from_the_files() {
        let dir = scratch();
        let config = RunConfig::default().thread_id("t");
        graph(Arc::new(JsonFileSaver::open(&dir).unwrap()))
            .unwrap()
            .invoke(NotesUpdate::default(), config.clone())
            .await
            .unwrap();
        let out = graph(Arc::new(JsonFileSaver::open(&dir).unwrap()))
            .unwrap()
            .invoke(NotesUpdate::default(), config)
            .await
            .unwrap();
        assert_eq!(out.lines, ["note 1", "note 2"]);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn hex_round_trips() {
        assert_eq!(unhex(&hex(&[0, 1, 254, 255])).unwrap(), [0, 1, 254, 255]);
        assert!(unhex("abc").is_err());
    }
}
