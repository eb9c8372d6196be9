//! The run store's queue as the server uses it, on both backends: a run queued with a claim
//! starts at once only when its thread runs nothing else; a run's end is recorded with its
//! thread's in one step, a stateless run's thread going with its runs, and claims in that
//! step the next run for its worker; long-finished runs' stored results are swept.

mod common;

use std::sync::Arc;
use std::time::Duration;

use agent_core::PostgresSaver;
use agent_server::store::{Claim, Kind, RunStore, ThreadEnd};
use agent_server::{PostgresStore, SqliteStore};
use serde_json::{Value, json};

fn thread(id: &str) -> Value {
    json!({"thread_id": id, "status": "busy", "metadata": {}})
}

fn run(id: &str, thread: &str) -> Value {
    json!({"run_id": id, "thread_id": thread, "status": "pending", "attempt": 1, "kwargs": {}})
}

const CLAIM: Claim<'static> = Claim {
    owner: "me",
    lease: Duration::from_secs(20),
};

async fn queue_semantics(store: Arc<dyn RunStore>) {
    // Claimed as it is queued: its thread runs nothing.
    let claimed = store
        .enqueue(&thread("t1"), &run("r1", "t1"), Some(CLAIM))
        .await
        .unwrap()
        .expect("a run on an idle thread is claimed as it is queued");
    assert_eq!(claimed["status"], "running");
    // A second run on the same thread waits in the queue, claim or not.
    let second = store
        .enqueue(&thread("t1"), &run("r2", "t1"), Some(CLAIM))
        .await
        .unwrap();
    assert!(second.is_none(), "a thread never runs two runs at once");
    assert_eq!(
        store.get(Kind::Run, "r2").await.unwrap().unwrap()["status"],
        "pending"
    );
    // Without a claim (no free worker), a run on another thread only waits.
    assert!(
        store
            .enqueue(&thread("t2"), &run("r3", "t2"), None)
            .await
            .unwrap()
            .is_none()
    );
    // The first run ends: its thread's document goes with it, and the worker that ran it
    // claims in the same step the run that waited (the oldest pending run: the second one).
    let mut done = claimed.clone();
    done["status"] = "success".into();
    let mut idle = thread("t1");
    idle["status"] = "idle".into();
    let next = store
        .finish(&done, ThreadEnd::Put(idle), Some(CLAIM))
        .await
        .unwrap()
        .expect("the run that waited on the thread is claimed as the first ends");
    assert_eq!(next["run_id"], "r2");
    assert_eq!(next["status"], "running");
    assert_eq!(
        store.get(Kind::Run, "r1").await.unwrap().unwrap()["status"],
        "success"
    );
    assert_eq!(
        store.get(Kind::Thread, "t1").await.unwrap().unwrap()["status"],
        "idle"
    );
    assert_eq!(
        store.get(Kind::Run, "r2").await.unwrap().unwrap()["status"],
        "running"
    );
    // A stateless run's thread is deleted with its runs as it ends.
    let mut r3 = store
        .claim("me", Duration::from_secs(20))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(r3["run_id"], "r3");
    r3["status"] = "success".into();
    // Nothing else is pending (r2 runs): the end claims nothing.
    assert!(
        store
            .finish(&r3, ThreadEnd::Delete("t2".into()), Some(CLAIM))
            .await
            .unwrap()
            .is_none()
    );
    assert!(store.get(Kind::Thread, "t2").await.unwrap().is_none());
    assert!(store.get(Kind::Run, "r3").await.unwrap().is_none());
    // A thread deleted while its run went on: the run's end is still recorded.
    let mut r2 = store.get(Kind::Run, "r2").await.unwrap().unwrap();
    store.delete(Kind::Thread, "t1").await.unwrap();
    r2["status"] = "error".into();
    store.finish(&r2, ThreadEnd::Gone, None).await.unwrap();
    assert_eq!(
        store.get(Kind::Run, "r2").await.unwrap().unwrap()["status"],
        "error"
    );
    // A run that must wait (`after_seconds`) is not claimed as it is queued.
    let mut later = run("r4", "t3");
    later["kwargs"]["not_before_ms"] = (jiff::Timestamp::now().as_millisecond() + 60_000).into();
    assert!(
        store
            .enqueue(&thread("t3"), &later, Some(CLAIM))
            .await
            .unwrap()
            .is_none()
    );
}

#[tokio::test]
async fn sqlite_queue_claims_at_once_only_an_idle_threads_run() {
    let dir = std::env::temp_dir().join(format!("agentgraph-run-store-{}", uuid::Uuid::new_v4()));
    std::fs::create_dir_all(&dir).unwrap();
    let store = SqliteStore::open(dir.join("runs.sqlite")).unwrap();
    queue_semantics(Arc::new(store)).await;
    let _ = std::fs::remove_dir_all(dir);
}

/// Operations on a SQLite store whose file another connection holds the write lock of (as
/// the checkpointer's does a moment at a time) wait without holding the runtime's threads,
/// all complete once the lock is free, and are applied in the order they asked for the
/// connection: the last of many replacements of one document is the one kept.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlite_ops_under_contention_all_complete_in_order() {
    let dir = std::env::temp_dir().join(format!("agentgraph-run-store-{}", uuid::Uuid::new_v4()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("runs.sqlite");
    let store = SqliteStore::open(&path).unwrap();
    store.put(Kind::Thread, &thread("t")).await.unwrap();
    let other = rusqlite::Connection::open(&path).unwrap();
    other.execute_batch("BEGIN IMMEDIATE").unwrap();
    let puts = (0..40).map(|n| {
        let store = &store;
        async move {
            let mut doc = thread("t");
            doc["n"] = n.into();
            store.put(Kind::Thread, &doc).await
        }
    });
    let all = futures::future::join_all(puts);
    tokio::pin!(all);
    // Let them start and queue: none can finish while the lock is held.
    tokio::select! {
        _ = &mut all => panic!("a write finished while another connection held the lock"),
        _ = tokio::time::sleep(Duration::from_millis(100)) => {}
    }
    // Meanwhile the runtime's two threads run other tasks.
    let others: Vec<_> = (0..4).map(|i| tokio::spawn(async move { i * 2 })).collect();
    for (i, task) in others.into_iter().enumerate() {
        assert_eq!(task.await.unwrap(), i * 2);
    }
    other.execute_batch("COMMIT").unwrap();
    for result in all.await {
        result.unwrap();
    }
    let kept = store.get(Kind::Thread, "t").await.unwrap().unwrap();
    assert_eq!(kept["n"], 39, "{kept}");
    let _ = std::fs::remove_dir_all(dir);
}

#[tokio::test]
async fn postgres_queue_claims_at_once_only_an_idle_threads_run_and_sweeps_old_results() {
    let Some(url) = common::fresh_database("run_store").await else {
        eprintln!("skipped: AGENTGRAPH_POSTGRES_URL is not set");
        return;
    };
    let saver = PostgresSaver::connect(&url).await.unwrap();
    let store = Arc::new(PostgresStore::open(&saver, &url).await.unwrap());
    queue_semantics(store.clone()).await;
    store
        .put_result("r1", &json!({"done": true}))
        .await
        .unwrap();
    store
        .append_events(
            "r1",
            &[agent_server::store::StoredEvent {
                seq: 0,
                id: "1-0".into(),
                name: "values".into(),
                data: "{}".into(),
            }],
        )
        .await
        .unwrap();
    // Kept while they may be followed...
    assert_eq!(
        store
            .sweep_finished(Duration::from_secs(600))
            .await
            .unwrap(),
        0
    );
    assert!(store.result("r1").await.unwrap().is_some());
    // ...and forgotten after.
    tokio::time::sleep(Duration::from_millis(20)).await;
    assert_eq!(
        store
            .sweep_finished(Duration::from_millis(1))
            .await
            .unwrap(),
        1
    );
    assert!(store.result("r1").await.unwrap().is_none());
    assert!(store.events_after("r1", -1).await.unwrap().is_empty());
}
