//! One conformance suite for every checkpointer: the checkpointer test kit
//! (`agent_core::checkpoint::testkit`, feature `testkit`) on each built-in backend.

mod common;

use std::sync::Arc;

use agent_core::checkpoint::{
    CheckpointMetadata, CheckpointRecord, Checkpointer, Versions, testkit,
};
use serde_json::json;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn conformance() {
    for (name, saver) in common::backends().await {
        assert_eq!(saver.backend(), name);
        let passed = testkit::run_all(|| {
            let saver = saver.clone();
            async move { saver }
        })
        .await
        .unwrap_or_else(|failure| panic!("{failure}"));
        assert_eq!(passed, testkit::CASES, "{name}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_kit_catches_a_saver_that_breaks_the_contract() {
    /// Forgets pending writes: a resumed run would run finished tasks again.
    struct Forgetful(agent_core::InMemorySaver);

    #[async_trait::async_trait]
    impl Checkpointer for Forgetful {
        fn backend(&self) -> &'static str {
            "forgetful"
        }
        async fn put(
            &self,
            record: &CheckpointRecord,
            blobs: &[agent_core::checkpoint::FieldBlob],
        ) -> Result<(), agent_core::GraphError> {
            self.0.put(record, blobs).await
        }
        async fn put_writes(
            &self,
            _thread_id: &str,
            _ns: &str,
            _checkpoint_id: &str,
            _writes: &[agent_core::checkpoint::PendingWrite],
        ) -> Result<(), agent_core::GraphError> {
            Ok(())
        }
        async fn get(
            &self,
            thread_id: &str,
            ns: &str,
            checkpoint_id: Option<&str>,
        ) -> Result<agent_core::checkpoint::LoadedCheckpoint, agent_core::GraphError> {
            self.0.get(thread_id, ns, checkpoint_id).await
        }
        async fn list(
            &self,
            thread_id: &str,
            ns: &str,
            filter: &agent_core::ListFilter,
        ) -> Result<Vec<CheckpointRecord>, agent_core::GraphError> {
            self.0.list(thread_id, ns, filter).await
        }
        async fn delete_thread(&self, thread_id: &str) -> Result<(), agent_core::GraphError> {
            self.0.delete_thread(thread_id).await
        }
        async fn prune(
            &self,
            thread_id: &str,
            ns: &str,
            keep_last: usize,
        ) -> Result<usize, agent_core::GraphError> {
            self.0.prune(thread_id, ns, keep_last).await
        }
        async fn keep_latest(&self, thread_id: &str) -> Result<usize, agent_core::GraphError> {
            self.0.keep_latest(thread_id).await
        }
        async fn replace_writes(
            &self,
            thread_id: &str,
            ns: &str,
            checkpoint_id: &str,
            writes: &[agent_core::checkpoint::PendingWrite],
        ) -> Result<(), agent_core::GraphError> {
            self.0
                .replace_writes(thread_id, ns, checkpoint_id, writes)
                .await
        }
        async fn delete_for_runs(
            &self,
            thread_id: &str,
            run_ids: &[&str],
        ) -> Result<usize, agent_core::GraphError> {
            self.0.delete_for_runs(thread_id, run_ids).await
        }
    }

    let failure = testkit::run_all(|| async {
        Arc::new(Forgetful(agent_core::InMemorySaver::new())) as Arc<dyn Checkpointer>
    })
    .await
    .unwrap_err();
    assert_eq!(failure.case, "pending_writes");
    assert_eq!(failure.backend, "forgetful");
    assert!(
        failure.to_string().starts_with(
            "checkpointer `forgetful` fails the conformance case `pending_writes`: writes are []"
        ),
        "{failure}"
    );
}

fn record(thread: &str, id: &str) -> CheckpointRecord {
    CheckpointRecord {
        thread_id: thread.into(),
        ns: "".into(),
        id: id.into(),
        parent_id: None,
        step: 0,
        created_at_ms: 1_700_000_000_000,
        metadata: CheckpointMetadata::from_json(&json!({"source": "loop", "step": 0})),
        versions: Versions::new(),
        body: vec![1],
    }
}

#[tokio::test]
async fn sqlite_file_is_shared_by_two_savers() {
    let path = common::sqlite_path();
    let (a, b) = two_savers(&path);
    a.put(&record("t", "0190000001-0000-7000-8000-000000000000"), &[])
        .await
        .unwrap();
    assert!(b.get("t", "", None).await.unwrap().record.is_some());
}

/// Two savers on one file (as two processes would have). Large transactions spill pages to
/// the log before they commit, and some roll back after spilling (a trigger refuses their
/// checkpoint row once their blobs are in). First turn by turn: one saver's transaction
/// spills and rolls back, the other commits at the same place in the log, the first writes
/// again. Then both at once from threads of their own. The file stays sound (`PRAGMA
/// integrity_check`) and every checkpoint a `put` acknowledged reads back, bytes and all.
#[test]
fn two_savers_writing_at_once_never_corrupt_each_other() {
    let path = common::sqlite_path();
    let (a, b) = two_savers(&path);
    rusqlite::Connection::open(&path)
        .unwrap()
        .execute_batch(
            "CREATE TRIGGER refuse BEFORE INSERT ON checkpoints WHEN NEW.thread_id = 'refused'
             BEGIN SELECT RAISE(ABORT, 'refused'); END;",
        )
        .unwrap();
    // (saver, round, blobs of 128 KiB): 20 of them (2.5 MB) spill out of SQLite's 2 MB cache.
    let turns = [(&a, 3, 20), (&b, 0, 2), (&a, 0, 2), (&b, 1, 1)];
    let rt = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    let mut acked = Vec::new();
    for (turn, (saver, round, blobs)) in turns.into_iter().enumerate() {
        acked.extend(rt.block_on(write(saver, turn + 10, round, blobs)));
    }
    let writers: Vec<_> = [a, b]
        .into_iter()
        .enumerate()
        .map(|(writer, saver)| {
            std::thread::spawn(move || {
                let rt = tokio::runtime::Builder::new_current_thread()
                    .build()
                    .unwrap();
                let mut acked = Vec::new();
                for round in 0..16 {
                    let blobs = if round % 2 == 1 { 20 } else { 2 };
                    acked.extend(rt.block_on(write(&saver, writer, round, blobs)));
                }
                acked
            })
        })
        .collect();
    acked.extend(writers.into_iter().flat_map(|w| w.join().unwrap()));
    assert_eq!(acked.len(), 3 + 24);
    let integrity: String = rusqlite::Connection::open(&path)
        .unwrap()
        .query_row("PRAGMA integrity_check", [], |r| r.get(0))
        .unwrap();
    assert_eq!(integrity, "ok");
    let saver = agent_core::SqliteSaver::open(&path).unwrap();
    for (thread, id, mut blobs) in acked {
        let loaded = rt.block_on(saver.get(&thread, "", Some(&id))).unwrap();
        assert_eq!(loaded.record.map(|r| r.id.to_string()), Some(id.clone()));
        let mut got = loaded.blobs;
        got.sort_by(|x, y| x.field.cmp(&y.field));
        blobs.sort_by(|x, y| x.field.cmp(&y.field));
        assert!(got == blobs, "the blobs of `{id}` came back changed");
    }
    drop(saver);
    let _ = std::fs::remove_file(&path);
}

/// Writer `writer`'s checkpoint of `round` with `blobs` blobs of 128 KiB: refused (thread
/// `refused`) every fourth round, else stored; the acknowledged checkpoint (thread, id,
/// blobs).
async fn write(
    saver: &agent_core::SqliteSaver,
    writer: usize,
    round: usize,
    blobs: usize,
) -> Option<(String, String, Vec<agent_core::checkpoint::FieldBlob>)> {
    let refused = round % 4 == 3;
    let thread = if refused {
        "refused".to_owned()
    } else {
        format!("writer-{writer}")
    };
    let id = format!("0190000001-0000-7000-8000-{writer:02}{round:010}");
    let blobs = payload(&id, blobs, 128 * 1024);
    let fields: Vec<(&str, &str)> = blobs.iter().map(|b| (&*b.field, &*id)).collect();
    let stored = saver
        .put(&versioned(&thread, &id, None, &fields), &blobs)
        .await;
    if refused {
        assert!(stored.is_err(), "the trigger refuses `{id}`");
        return None;
    }
    stored.unwrap_or_else(|e| panic!("storing `{id}`: {e}"));
    Some((thread, id, blobs))
}

/// `count` blobs of `len` bytes each for checkpoint `id`, fields `f00`.., bytes that differ
/// from one checkpoint and field to the next.
fn payload(id: &str, count: usize, len: usize) -> Vec<agent_core::checkpoint::FieldBlob> {
    let seed = id
        .bytes()
        .fold(0u64, |h, b| h.wrapping_mul(31) ^ u64::from(b));
    (0..count)
        .map(|field| {
            let mut rng = fastrand::Rng::with_seed(seed ^ field as u64);
            agent_core::checkpoint::FieldBlob {
                field: format!("f{field:02}").into(),
                version: id.into(),
                base: None,
                data: std::iter::repeat_with(|| rng.u8(..)).take(len).collect(),
            }
        })
        .collect()
}

/// Set in the child process of the test below: the file another process holds.
const HELD_ENV: &str = "AGENTGRAPH_TEST_HELD_FILE";

/// A saver opened with `open_exclusive` holds its file for its process: another process
/// cannot open it, nor can a shared saver of the same process, with errors that say why;
/// another exclusive saver of the process shares it; once dropped, the file opens shared with
/// everything it stored.
#[tokio::test]
async fn an_exclusive_sqlite_saver_holds_its_file_until_dropped() {
    const ID: &str = "0190000001-0000-7000-8000-000000000000";
    if let Ok(path) = std::env::var(HELD_ENV) {
        for other in [
            agent_core::SqliteSaver::open(&path),
            agent_core::SqliteSaver::open_exclusive(&path),
        ] {
            let Err(e) = other else {
                panic!("the file is held by the parent process")
            };
            let message = e.to_string();
            assert!(message.contains("is held by another process"), "{message}");
            assert!(message.contains("open_exclusive"), "{message}");
        }
        return;
    }
    let path = common::sqlite_path();
    let owner = agent_core::SqliteSaver::open_exclusive(&path).unwrap();
    owner.put(&record("t", ID), &[]).await.unwrap();

    let Err(e) = agent_core::SqliteSaver::open(&path) else {
        panic!("a shared saver of this process is refused")
    };
    let message = e.to_string();
    assert!(
        message.contains("is held by a saver of this process"),
        "{message}"
    );
    assert!(message.contains("open_exclusive"), "{message}");
    let second = agent_core::SqliteSaver::open_exclusive(&path).unwrap();
    assert_eq!(
        second.get("t", "", None).await.unwrap().record.unwrap().id,
        ID.into()
    );
    drop(second);

    let child = std::process::Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "an_exclusive_sqlite_saver_holds_its_file_until_dropped",
            "--nocapture",
        ])
        .env(HELD_ENV, &path)
        .output()
        .unwrap();
    let out = String::from_utf8_lossy(&child.stdout);
    assert!(
        child.status.success() && out.contains("1 passed"),
        "the other process could open the held file: {out}{}",
        String::from_utf8_lossy(&child.stderr)
    );

    drop(owner);
    let reader = agent_core::SqliteSaver::open(&path).unwrap();
    assert_eq!(
        reader.get("t", "", None).await.unwrap().record.unwrap().id,
        ID.into()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sqlite_write_waits_for_another_process_holding_the_lock() {
    use agent_core::checkpoint::{FieldBlob, StoreOp};
    let path = common::sqlite_path();
    let saver = agent_core::SqliteSaver::open(&path).unwrap();
    // Another process's connection takes the write lock.
    let other = rusqlite::Connection::open(&path).unwrap();
    other.execute_batch("BEGIN IMMEDIATE;").unwrap();

    let record = CheckpointRecord {
        thread_id: "t".into(),
        ns: "".into(),
        id: "c1".into(),
        parent_id: None,
        step: 0,
        created_at_ms: 0,
        metadata: CheckpointMetadata::default(),
        versions: [("f", "c1")].into_iter().collect(),
        body: Vec::new(),
    };
    let blob = FieldBlob {
        field: "f".into(),
        version: "c1".into(),
        base: None,
        data: vec![0x90],
    };
    let put = tokio::spawn(async move {
        saver
            .put_batch(vec![StoreOp::Checkpoint {
                record,
                blobs: vec![blob],
            }])
            .await
            .map(|()| saver)
    });
    tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    assert!(
        !put.is_finished(),
        "a small write waits for the lock (off the runtime's threads)"
    );
    other.execute_batch("COMMIT;").unwrap();
    let saver = put.await.unwrap().unwrap();
    let loaded = saver.get("t", "", None).await.unwrap();
    assert_eq!(&*loaded.record.unwrap().id, "c1");
}

/// The saver's own thread checkpoints the write-ahead log into the database file once a
/// commit leaves more than 1,000 pages in it: with about 1,650 pages committed (under the
/// 3,000 at which a commit would checkpoint itself, and SQLite's automatic checkpoint
/// replaced), the file grows only if that thread ran — with `open` and with `open_exclusive`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlite_checkpoints_its_log_into_the_file() {
    for exclusive in [false, true] {
        let path = common::sqlite_path();
        let saver = if exclusive {
            agent_core::SqliteSaver::open_exclusive(&path).unwrap()
        } else {
            agent_core::SqliteSaver::open(&path).unwrap()
        };
        let size = || std::fs::metadata(&path).map_or(0, |m| m.len());
        let before = size();
        for i in 0..25 {
            let blob = agent_core::checkpoint::FieldBlob {
                field: "messages".into(),
                version: format!("v{i:03}").into(),
                base: None,
                data: vec![u8::try_from(i).unwrap(); 128 * 1024],
            };
            let id = format!("0190000001-0000-7000-8000-{i:012}");
            saver.put(&record("t", &id), &[blob]).await.unwrap();
        }
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
        while size() < before + 1024 * 1024 {
            assert!(
                std::time::Instant::now() < deadline,
                "the database file stayed at {} bytes (exclusive: {exclusive}): the log was never checkpointed",
                size()
            );
            tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        }
        // Everything still reads back, through the file and the log.
        let loaded = saver.get("t", "", None).await.unwrap();
        assert_eq!(
            &*loaded.record.unwrap().id,
            "0190000001-0000-7000-8000-000000000024"
        );
    }
}

/// A version-1 file (blobs keyed by an index of their keys) opens migrated: every checkpoint
/// reads back with its blobs and delta bases, and new checkpoints refer to the old rows.
#[tokio::test]
async fn a_version_1_sqlite_file_is_migrated_and_reads_back() {
    use agent_core::checkpoint::FieldBlob;
    let path = common::sqlite_path();
    {
        let old = rusqlite::Connection::open(&path).unwrap();
        old.execute_batch(
            "
            CREATE TABLE agentgraph_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
            INSERT INTO agentgraph_meta VALUES ('schema_version', '1');
            CREATE TABLE checkpoints (
                thread_id TEXT NOT NULL, ns TEXT NOT NULL, id TEXT NOT NULL, parent_id TEXT,
                step INTEGER NOT NULL, created_at_ms INTEGER NOT NULL, metadata TEXT NOT NULL,
                versions TEXT NOT NULL, body BLOB NOT NULL, PRIMARY KEY (thread_id, ns, id));
            CREATE TABLE blobs (
                thread_id TEXT NOT NULL, ns TEXT NOT NULL, field TEXT NOT NULL,
                version TEXT NOT NULL, base_version TEXT, base_len INTEGER, data BLOB NOT NULL,
                PRIMARY KEY (thread_id, ns, field, version));
            CREATE TABLE writes (
                thread_id TEXT NOT NULL, ns TEXT NOT NULL, checkpoint_id TEXT NOT NULL,
                task_id TEXT NOT NULL, kind INTEGER NOT NULL, node TEXT NOT NULL,
                data BLOB NOT NULL, PRIMARY KEY (thread_id, ns, checkpoint_id, task_id, kind));
            INSERT INTO checkpoints VALUES ('t', '', 'c1', NULL, 0, 0, '{}',
                '{\"count\":\"c1\",\"messages\":\"c1\"}', x'01');
            INSERT INTO checkpoints VALUES ('t', '', 'c2', 'c1', 1, 0, '{}',
                '{\"count\":\"c1\",\"messages\":\"c2\"}', x'02');
            INSERT INTO blobs VALUES ('t', '', 'messages', 'c1', NULL, NULL, x'aa');
            INSERT INTO blobs VALUES ('t', '', 'count', 'c1', NULL, NULL, x'07');
            INSERT INTO blobs VALUES ('t', '', 'messages', 'c2', 'c1', 1, x'bb');
            INSERT INTO blobs VALUES ('other', '', 'messages', 'c1', NULL, NULL, x'cc');
            ",
        )
        .unwrap();
    }
    let saver = agent_core::SqliteSaver::open(&path).unwrap();
    let keys = |blobs: &[FieldBlob]| {
        let mut keys: Vec<(String, String, Vec<u8>)> = blobs
            .iter()
            .map(|b| (b.field.to_string(), b.version.to_string(), b.data.clone()))
            .collect();
        keys.sort();
        keys
    };
    let key = |f: &str, v: &str, d: u8| (f.to_owned(), v.to_owned(), vec![d]);
    let latest = saver.get("t", "", None).await.unwrap();
    assert_eq!(&*latest.record.as_ref().unwrap().id, "c2");
    assert_eq!(
        keys(&latest.blobs),
        [
            key("count", "c1", 7),
            key("messages", "c1", 0xaa),
            key("messages", "c2", 0xbb)
        ]
    );
    // A new checkpoint keeps `count` from before the migration and extends `messages`.
    let next = versioned(
        "t",
        "c3",
        Some("c2"),
        &[("count", "c1"), ("messages", "c3")],
    );
    saver
        .put(&next, &[blob("messages", "c3", Some(("c2", 2)), 0xdd)])
        .await
        .unwrap();
    let latest = saver.get("t", "", None).await.unwrap();
    assert_eq!(
        keys(&latest.blobs),
        [
            key("count", "c1", 7),
            key("messages", "c1", 0xaa),
            key("messages", "c2", 0xbb),
            key("messages", "c3", 0xdd)
        ]
    );
    // Pruning to the newest keeps what it reads; deleting the thread leaves the other's blob.
    assert_eq!(saver.prune("t", "", 1).await.unwrap(), 2);
    let latest = saver.get("t", "", None).await.unwrap();
    assert_eq!(keys(&latest.blobs).len(), 4);
    saver.delete_thread("t").await.unwrap();
    let check = rusqlite::Connection::open(&path).unwrap();
    let left: Vec<String> = check
        .prepare("SELECT thread_id FROM blobs")
        .unwrap()
        .query_map([], |r| r.get(0))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    assert_eq!(left, ["other"]);
    let version: String = check
        .query_row(
            "SELECT value FROM agentgraph_meta WHERE key = 'schema_version'",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(version, "2");
    let indexes: i64 = check
        .query_row(
            "SELECT COUNT(*) FROM sqlite_master WHERE type = 'index' AND tbl_name = 'blobs'",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(
        indexes, 0,
        "blobs are found by row, with no key index to write"
    );
    let page_size: i64 = check
        .query_row("PRAGMA page_size", [], |r| r.get(0))
        .unwrap();
    assert_eq!(page_size, 4096, "a file keeps the pages it was made with");
}

/// A new file gets the saver's small pages (a `sync` commit writes the pages it changed,
/// whole), and a file of SQLite's default pages (an older saver's) works as it is.
#[tokio::test]
async fn new_sqlite_files_get_small_pages_and_old_ones_keep_theirs() {
    let page_size = |path: &std::path::Path| -> i64 {
        rusqlite::Connection::open(path)
            .unwrap()
            .query_row("PRAGMA page_size", [], |r| r.get(0))
            .unwrap()
    };
    let new = common::sqlite_path();
    let saver = agent_core::SqliteSaver::open(&new).unwrap();
    saver.put(&record("t", "c1"), &[]).await.unwrap();
    drop(saver);
    assert_eq!(page_size(&new), 2048);

    let old = common::sqlite_path();
    rusqlite::Connection::open(&old)
        .unwrap()
        .execute_batch("PRAGMA page_size = 4096; CREATE TABLE made_before (x);")
        .unwrap();
    let saver = agent_core::SqliteSaver::open_exclusive(&old).unwrap();
    for i in 0..200 {
        let id = format!("c{i:03}");
        saver.put(&record("t", &id), &[]).await.unwrap();
    }
    let loaded = saver.get("t", "", None).await.unwrap();
    assert_eq!(&*loaded.record.unwrap().id, "c199");
    drop(saver);
    assert_eq!(page_size(&old), 4096);
}

/// Unchanged fields point at blob rows another saver (another process) wrote, found through
/// the parent checkpoint; a blob no checkpoint lists is still found by its key.
#[tokio::test]
async fn sqlite_finds_blob_rows_another_saver_wrote() {
    let path = common::sqlite_path();
    let (a, b) = two_savers(&path);
    let first = versioned("t", "c1", None, &[("f", "c1")]);
    // `g` is stored with a checkpoint that does not list it.
    a.put(
        &first,
        &[blob("f", "c1", None, 1), blob("g", "c1", None, 2)],
    )
    .await
    .unwrap();
    let second = versioned(
        "t",
        "c2",
        Some("c1"),
        &[("f", "c1"), ("g", "c1"), ("h", "c2")],
    );
    b.put(&second, &[blob("h", "c2", None, 3)]).await.unwrap();
    for saver in [&a, &b] {
        assert_eq!(
            fields(saver, "t").await,
            pairs(&[("f", 1), ("g", 2), ("h", 3)])
        );
    }
}

/// A blob given again for a version already stored (a checkpoint stored twice in a batch) is
/// not appended again.
#[tokio::test]
async fn sqlite_stores_a_blob_given_twice_once() {
    use agent_core::checkpoint::StoreOp;
    let path = common::sqlite_path();
    let saver = agent_core::SqliteSaver::open(&path).unwrap();
    let first = versioned("t", "c1", None, &[("f", "c1")]);
    let blob = blob("f", "c1", None, 1);
    let op = || StoreOp::Checkpoint {
        record: first.clone(),
        blobs: vec![blob.clone()],
    };
    saver.put_batch(vec![op(), op()]).await.unwrap();
    saver.put_batch(vec![op()]).await.unwrap();
    let stored: i64 = rusqlite::Connection::open(&path)
        .unwrap()
        .query_row("SELECT COUNT(*) FROM blobs", [], |r| r.get(0))
        .unwrap();
    assert_eq!(stored, 1);
    assert_eq!(saver.get("t", "", None).await.unwrap().blobs, [blob]);
}

/// The blob rows checkpoints point at survive `VACUUM`, which renumbers a table's hidden
/// rowids (the blobs' row numbers are a column of their own).
#[tokio::test]
async fn sqlite_blob_rows_survive_vacuum() {
    let path = common::sqlite_path();
    let saver = agent_core::SqliteSaver::open(&path).unwrap();
    let u = versioned("u", "c1", None, &[("f", "c1")]);
    saver.put(&u, &[blob("f", "c1", None, 1)]).await.unwrap();
    let t = versioned("t", "c1", None, &[("f", "c1"), ("g", "c1")]);
    saver
        .put(&t, &[blob("f", "c1", None, 7), blob("g", "c1", None, 8)])
        .await
        .unwrap();
    saver.delete_thread("u").await.unwrap();
    rusqlite::Connection::open(&path)
        .unwrap()
        .execute_batch("VACUUM")
        .unwrap();
    assert_eq!(fields(&saver, "t").await, pairs(&[("f", 7), ("g", 8)]));
}

/// What another saver on the file deletes or prunes is not taken for stored: a checkpoint
/// stored again stores its blobs again, and a delta finds the base stored again.
#[tokio::test]
async fn sqlite_sees_what_another_saver_deleted() {
    let path = common::sqlite_path();
    let (a, b) = two_savers(&path);
    let c1 = versioned("t", "c1", None, &[("f", "c1")]);
    a.put(&c1, &[blob("f", "c1", None, 1)]).await.unwrap();
    b.delete_thread("t").await.unwrap();
    // The freed row is taken by another thread's blob.
    let x = versioned("u", "x", None, &[("f", "x")]);
    b.put(&x, &[blob("f", "x", None, 9)]).await.unwrap();
    a.put(&c1, &[blob("f", "c1", None, 1)]).await.unwrap();
    assert_eq!(fields(&a, "t").await, pairs(&[("f", 1)]));

    let c2 = versioned("t", "c2", Some("c1"), &[("f", "c2")]);
    b.put(&c2, &[blob("f", "c2", None, 2)]).await.unwrap();
    b.prune("t", "", 1).await.unwrap();
    b.put(&c1, &[blob("f", "c1", None, 1)]).await.unwrap();
    let c3 = versioned("t", "c3", Some("c1"), &[("f", "c3")]);
    a.put(&c3, &[blob("f", "c3", Some(("c1", 1)), 3)])
        .await
        .unwrap();
    let loaded = a.get("t", "", Some("c3")).await.unwrap();
    let mut got: Vec<(String, String)> = loaded
        .blobs
        .iter()
        .map(|b| (b.field.to_string(), b.version.to_string()))
        .collect();
    got.sort();
    assert_eq!(
        got,
        [
            ("f".to_owned(), "c1".to_owned()),
            ("f".to_owned(), "c3".to_owned())
        ]
    );
}

/// `delete_thread` leaves no blob of the thread: not one its checkpoint's versions do not
/// name, nor one a checkpoint stored again no longer needs.
#[tokio::test]
async fn sqlite_delete_thread_leaves_no_blob_behind() {
    let path = common::sqlite_path();
    let saver = agent_core::SqliteSaver::open(&path).unwrap();
    let count = || {
        rusqlite::Connection::open(&path)
            .unwrap()
            .query_row(
                "SELECT COUNT(*) FROM blobs WHERE thread_id = 't'",
                [],
                |r| r.get::<_, i64>(0),
            )
            .unwrap()
    };
    let c1 = versioned("t", "c1", None, &[("f", "c1")]);
    // `g` is not among c1's versions.
    saver
        .put(&c1, &[blob("f", "c1", None, 1), blob("g", "c1", None, 2)])
        .await
        .unwrap();
    let c2 = versioned("t", "c2", Some("c1"), &[("f", "c2")]);
    saver.put(&c2, &[blob("f", "c2", None, 3)]).await.unwrap();
    // c1 again, with another value for f at c1: the first row is no longer needed.
    saver
        .put(&c1, &[blob("f", "c1", None, 4), blob("g", "c1", None, 2)])
        .await
        .unwrap();
    assert_eq!(
        count(),
        3,
        "f@c1 stored again replaced the row c1 no longer needs"
    );
    saver.delete_thread("t").await.unwrap();
    assert_eq!(count(), 0);
}

/// A checkpoint of `thread` with these field versions, after `parent`.
fn versioned(
    thread: &str,
    id: &str,
    parent: Option<&str>,
    versions: &[(&str, &str)],
) -> CheckpointRecord {
    let mut record = record(thread, id);
    record.parent_id = parent.map(Into::into);
    record.versions = versions.iter().copied().collect();
    record
}

/// Two shared savers on one file (as two processes would have).
fn two_savers(path: &std::path::Path) -> (agent_core::SqliteSaver, agent_core::SqliteSaver) {
    (
        agent_core::SqliteSaver::open(path).unwrap(),
        agent_core::SqliteSaver::open(path).unwrap(),
    )
}

fn blob(
    field: &str,
    version: &str,
    base: Option<(&str, u64)>,
    data: u8,
) -> agent_core::checkpoint::FieldBlob {
    agent_core::checkpoint::FieldBlob {
        field: field.to_owned().into(),
        version: version.into(),
        base: base.map(|(b, n)| (b.into(), n)),
        data: vec![data],
    }
}

/// The latest checkpoint's blobs of thread `thread`: (field, first byte), sorted.
async fn fields(saver: &agent_core::SqliteSaver, thread: &str) -> Vec<(String, u8)> {
    let loaded = saver.get(thread, "", None).await.unwrap();
    let mut got: Vec<(String, u8)> = loaded
        .blobs
        .iter()
        .map(|b| (b.field.to_string(), b.data[0]))
        .collect();
    got.sort();
    got
}

/// (field, first byte) pairs as `fields` returns them.
fn pairs(expected: &[(&str, u8)]) -> Vec<(String, u8)> {
    expected.iter().map(|&(f, d)| (f.to_owned(), d)).collect()
}

/// A writer that never pauses: the log must still start over (once a checkpoint moved it all
/// into the file, the next write transaction writes it from its start), not grow without
/// bound (a checkpointer thread of the saver's own once took it to 125 MB here).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_log_written_without_pause_starts_over() {
    use agent_core::checkpoint::StoreOp;
    let path = common::sqlite_path();
    let log = std::path::PathBuf::from(format!("{}-wal", path.display()));
    let saver = agent_core::SqliteSaver::open(&path).unwrap();
    // Each commit adds three or four pages of 2 KiB to the log (the 3,000-byte row overflows):
    // about 56,000 frames in all, 115 MB of log written.
    let mut longest = 0;
    for i in 0..16_000 {
        let mut checkpoint = record("t", &format!("c{i:06}"));
        checkpoint.body = vec![7; 3000];
        saver
            .put_batch(vec![StoreOp::Checkpoint {
                record: checkpoint,
                blobs: vec![],
            }])
            .await
            .unwrap();
        longest = longest.max(std::fs::metadata(&log).map(|m| m.len()).unwrap_or(0));
    }
    // SQLite checkpoints it at 1,000 pages (about 2 MB) and starts it over; on a loaded machine
    // a checkpoint can lag a few commits behind (8.4 MB seen in CI), so the bound is a quarter
    // of what an unbounded log would reach.
    assert!(
        longest < 30_000_000,
        "the log reached {longest} bytes without starting over"
    );
    let loaded = saver.get("t", "", None).await.unwrap();
    assert_eq!(&*loaded.record.unwrap().id, "c015999");
    // 50 MB of file: not left for the next test process to remove.
    drop(saver);
    let _ = std::fs::remove_file(&log);
    let _ = std::fs::remove_file(&path);
}
