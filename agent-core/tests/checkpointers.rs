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
        thread_id: thread.to_owned(),
        ns: String::new(),
        id: id.to_owned(),
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
    let a = agent_core::SqliteSaver::open(&path).unwrap();
    let b = agent_core::SqliteSaver::open(&path).unwrap();
    a.put(&record("t", "0190000001-0000-7000-8000-000000000000"), &[])
        .await
        .unwrap();
    assert!(b.get("t", "", None).await.unwrap().record.is_some());
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
        thread_id: "t".to_owned(),
        ns: String::new(),
        id: "c1".to_owned(),
        parent_id: None,
        step: 0,
        created_at_ms: 0,
        metadata: CheckpointMetadata::default(),
        versions: [("f", "c1")].into_iter().collect(),
        body: Vec::new(),
    };
    let blob = FieldBlob {
        field: "f".to_owned(),
        version: "c1".to_owned(),
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
    assert_eq!(loaded.record.unwrap().id, "c1");
}

/// The saver's own thread moves the write-ahead log into the database file (the commits do
/// not: SQLite's automatic checkpoint is off), so a file that was only written through the
/// log grows once enough pages were committed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlite_checkpoints_its_log_on_a_thread_of_its_own() {
    let path = common::sqlite_path();
    let saver = agent_core::SqliteSaver::open(&path).unwrap();
    let size = || std::fs::metadata(&path).map_or(0, |m| m.len());
    let before = size();
    // About 2,600 pages of 4 KiB through the log.
    for i in 0..80 {
        let blob = agent_core::checkpoint::FieldBlob {
            field: "messages".to_owned(),
            version: format!("v{i:03}"),
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
            "the database file stayed at {} bytes: the log was never checkpointed",
            size()
        );
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    // Everything still reads back, through the file and the log.
    let loaded = saver.get("t", "", None).await.unwrap();
    assert_eq!(
        loaded.record.unwrap().id,
        "0190000001-0000-7000-8000-000000000079"
    );
}
