//! The run store's queue as the server uses it, on both backends: a run queued with a claim
//! starts at once only when its thread runs nothing else; `reject` is decided as the run is
//! queued; a run's end is recorded with its thread's in one step, a stateless run's thread
//! going with its runs, and claims in that step the next run for its worker; a run's writes
//! are fenced by its claim (a deleted run is not written back, a run taken over writes
//! nothing); abandoned runs release their thread; expired threads are claimed once;
//! long-finished runs' stored results are swept.

mod common;

use std::sync::Arc;
use std::time::Duration;

use agent_core::PostgresSaver;
use agent_server::store::{Claim, Enqueued, Kind, Queueing, RunStore, ThreadEnd, Token};
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

/// A run queued with its thread made.
const NEW: Queueing = Queueing {
    reject_busy: false,
    new_thread: true,
};

fn token(attempt: i64) -> Token {
    Token {
        owner: "me".into(),
        attempt,
    }
}

async fn queue_semantics(store: Arc<dyn RunStore>) {
    // Claimed as it is queued: its thread runs nothing.
    let Enqueued::Claimed(claimed) = store
        .enqueue(&thread("t1"), &run("r1", "t1"), Some(CLAIM), NEW)
        .await
        .unwrap()
    else {
        panic!("a run on an idle thread is claimed as it is queued");
    };
    assert_eq!(claimed["status"], "running");
    // A run asking for `reject` on a busy thread is not queued.
    let rejected = store
        .enqueue(
            &thread("t1"),
            &run("rx", "t1"),
            Some(CLAIM),
            Queueing {
                reject_busy: true,
                new_thread: false,
            },
        )
        .await
        .unwrap();
    assert_eq!(rejected, Enqueued::Busy);
    // A run on a thread deleted since it was read is not queued, and does not make the
    // thread again.
    let gone = store
        .enqueue(
            &thread("t-gone"),
            &run("rg", "t-gone"),
            Some(CLAIM),
            Queueing::default(),
        )
        .await
        .unwrap();
    assert_eq!(gone, Enqueued::ThreadGone);
    assert!(store.get(Kind::Thread, "t-gone").await.unwrap().is_none());
    assert!(store.get(Kind::Run, "rx").await.unwrap().is_none());
    // A second run on the same thread waits in the queue, claim or not.
    let second = store
        .enqueue(&thread("t1"), &run("r2", "t1"), Some(CLAIM), NEW)
        .await
        .unwrap();
    assert_eq!(
        second,
        Enqueued::Queued,
        "a thread never runs two runs at once"
    );
    assert_eq!(
        store.get(Kind::Run, "r2").await.unwrap().unwrap()["status"],
        "pending"
    );
    // Without a claim (no free worker), a run on another thread only waits.
    assert_eq!(
        store
            .enqueue(&thread("t2"), &run("r3", "t2"), None, NEW)
            .await
            .unwrap(),
        Enqueued::Queued
    );
    // The first run ends: its thread's document goes with it, and the worker that ran it
    // claims in the same step the run that waited (the oldest pending run: the second one).
    let mut done = claimed.clone();
    done["status"] = "success".into();
    let mut idle = thread("t1");
    idle["status"] = "idle".into();
    let next = store
        .finish(
            &done,
            ThreadEnd::Put(idle),
            &token(1),
            &json!({}),
            Some(CLAIM),
        )
        .await
        .unwrap()
        .expect("the run that waited on the thread is claimed as the first ends");
    assert_eq!(next["run_id"], "r2");
    assert_eq!(next["status"], "running");
    assert_eq!(
        store.get(Kind::Run, "r1").await.unwrap().unwrap()["status"],
        "success"
    );
    // The thread is busy again at once: its next run is running (the store decides a
    // thread's status as it writes it, whatever the run's end asked).
    assert_eq!(
        store.get(Kind::Thread, "t1").await.unwrap().unwrap()["status"],
        "busy"
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
            .finish(
                &r3,
                ThreadEnd::Delete("t2".into()),
                &token(1),
                &json!({}),
                Some(CLAIM)
            )
            .await
            .unwrap()
            .is_none()
    );
    assert!(store.get(Kind::Thread, "t2").await.unwrap().is_none());
    assert!(store.get(Kind::Run, "r3").await.unwrap().is_none());
    // A run's end under another claim (another attempt) is refused.
    let mut r2 = store.get(Kind::Run, "r2").await.unwrap().unwrap();
    r2["status"] = "error".into();
    let stale = store
        .finish(&r2, ThreadEnd::Gone, &token(2), &json!({}), None)
        .await
        .unwrap_err();
    assert!(stale.is_fenced(), "{stale}");
    assert!(
        store
            .renew("r2", &token(2), CLAIM.lease)
            .await
            .unwrap()
            .is_none()
    );
    assert!(
        store
            .renew("r2", &token(1), CLAIM.lease)
            .await
            .unwrap()
            .is_some()
    );
    // A thread deleted while its run went on: the run's end does not write it back.
    store.delete(Kind::Thread, "t1").await.unwrap();
    let gone = store
        .finish(&r2, ThreadEnd::Gone, &token(1), &json!({}), None)
        .await
        .unwrap_err();
    assert!(gone.is_fenced(), "{gone}");
    assert!(store.get(Kind::Run, "r2").await.unwrap().is_none());
    // A run that must wait (`after_seconds`) is not claimed as it is queued.
    let mut later = run("r4", "t3");
    later["kwargs"]["not_before_ms"] = (jiff::Timestamp::now().as_millisecond() + 60_000).into();
    assert_eq!(
        store
            .enqueue(&thread("t3"), &later, Some(CLAIM), NEW)
            .await
            .unwrap(),
        Enqueued::Queued
    );
    // Threads whose ttl ran out are claimed once (their expiry moved on).
    let mut expiring = thread("t4");
    expiring["ttl"] = json!({"strategy": "delete", "ttl_minutes": 1.0, "expires_at_ms": 1000});
    store.put(Kind::Thread, &expiring).await.unwrap();
    let now = jiff::Timestamp::now().as_millisecond();
    let due = store.claim_expired_threads(now, 10, 60_000).await.unwrap();
    assert_eq!(due.len(), 1);
    assert_eq!(due[0]["thread_id"], "t4");
    assert!(
        store
            .claim_expired_threads(now, 10, 60_000)
            .await
            .unwrap()
            .is_empty()
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
    // A result of a run that is gone (r1, with its thread) is not kept.
    store
        .put_result("r1", &json!({"done": true}))
        .await
        .unwrap();
    assert!(store.result("r1").await.unwrap().is_none());
    // Events of a run no longer running (r1 ended) are refused: only its claim writes them.
    let refused = store
        .append_events(
            "r1",
            &token(1),
            &[agent_server::store::StoredEvent {
                seq: 0,
                id: "1-0".into(),
                name: "values".into(),
                data: "{}".into(),
            }],
        )
        .await
        .unwrap_err();
    assert!(refused.is_fenced(), "{refused}");
    let Enqueued::Claimed(_) = store
        .enqueue(&thread("t9"), &run("r9", "t9"), Some(CLAIM), NEW)
        .await
        .unwrap()
    else {
        panic!("claimed");
    };
    store
        .append_events(
            "r9",
            &token(1),
            &[agent_server::store::StoredEvent {
                seq: 0,
                id: "1-0".into(),
                name: "values".into(),
                data: "{}".into(),
            }],
        )
        .await
        .unwrap();
    store
        .put_result("r9", &json!({"done": true}))
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
    assert!(store.result("r9").await.unwrap().is_some());
    assert_eq!(store.events_after("r9", -1).await.unwrap().len(), 1);
    // ...and forgotten after (r9's and the results the runs' ends stored).
    tokio::time::sleep(Duration::from_millis(20)).await;
    assert!(
        store
            .sweep_finished(Duration::from_millis(1))
            .await
            .unwrap()
            >= 1
    );
    assert!(store.result("r9").await.unwrap().is_none());
    assert!(store.events_after("r9", -1).await.unwrap().is_empty());
}

/// A run whose instance keeps dying is given up after its last attempt, and its thread is
/// released (no longer `busy`), showing why.
#[tokio::test]
async fn postgres_abandoned_runs_release_their_thread() {
    let Some(url) = common::fresh_database("run_store").await else {
        return;
    };
    let saver = PostgresSaver::connect(&url).await.unwrap();
    let store = PostgresStore::open(&saver, &url).await.unwrap();
    let mut r = run("ra", "ta");
    r["attempt"] = 3.into();
    store
        .enqueue(
            &thread("ta"),
            &r,
            Some(Claim {
                owner: "dead",
                lease: Duration::ZERO,
            }),
            NEW,
        )
        .await
        .unwrap();
    tokio::time::sleep(Duration::from_millis(20)).await;
    assert_eq!(store.requeue_expired(3).await.unwrap(), 0);
    assert_eq!(
        store.get(Kind::Run, "ra").await.unwrap().unwrap()["status"],
        "error"
    );
    let t = store.get(Kind::Thread, "ta").await.unwrap().unwrap();
    assert_eq!(t["status"], "error", "{t}");
    assert_eq!(t["error"]["error"], "WorkerLost");
}

/// A run left `running` by a process that stopped is started again at the next open, at
/// most as often as it may be: then it ends `error` and its thread is released.
#[tokio::test]
async fn sqlite_requeues_at_open_up_to_the_attempt_cap() {
    let dir = std::env::temp_dir().join(format!("agentgraph-run-store-{}", uuid::Uuid::new_v4()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("runs.sqlite");
    {
        let store = SqliteStore::open_with(&path, 2).unwrap();
        store
            .enqueue(&thread("tc"), &run("rc", "tc"), Some(CLAIM), NEW)
            .await
            .unwrap();
    }
    // The process "crashed" with the run running: the next open requeues it (attempt 2)...
    {
        let store = SqliteStore::open_with(&path, 2).unwrap();
        let r = store.get(Kind::Run, "rc").await.unwrap().unwrap();
        assert_eq!(
            (r["status"].as_str(), r["attempt"].as_i64()),
            (Some("pending"), Some(2))
        );
        store.claim("me", CLAIM.lease).await.unwrap().unwrap();
    }
    // ...and the one after gives up on it.
    let store = SqliteStore::open_with(&path, 2).unwrap();
    assert_eq!(
        store.get(Kind::Run, "rc").await.unwrap().unwrap()["status"],
        "error"
    );
    let t = store.get(Kind::Thread, "tc").await.unwrap().unwrap();
    assert_eq!(t["status"], "error", "{t}");
    let _ = std::fs::remove_dir_all(dir);
}

#[tokio::test]
async fn sqlite_keeps_an_acknowledged_stop_across_a_restart() {
    let dir = std::env::temp_dir().join(format!("agentgraph-run-store-{}", uuid::Uuid::new_v4()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("runs.sqlite");
    {
        let store = SqliteStore::open_with(&path, 1).unwrap();
        store
            .enqueue(&thread("ts"), &run("rs", "ts"), Some(CLAIM), NEW)
            .await
            .unwrap();
        // A rollback acknowledged, then a weaker stop: the rollback is what is kept.
        assert!(store.request_cancel("rs", "rollback").await.unwrap());
        assert!(store.request_cancel("rs", "interrupt").await.unwrap());
        // No running run by that id: nothing to stop.
        assert!(!store.request_cancel("nobody", "interrupt").await.unwrap());
    }
    // The process stopped before the run applied its stop: queued again, past the attempt
    // cap, with the stop for its next claim to apply before it starts.
    let store = SqliteStore::open_with(&path, 1).unwrap();
    let r = store.get(Kind::Run, "rs").await.unwrap().unwrap();
    assert_eq!(
        (r["status"].as_str(), r["stop_asked"].as_str()),
        (Some("pending"), Some("rollback")),
        "{r}"
    );
    let claimed = store.claim("me", CLAIM.lease).await.unwrap().unwrap();
    assert_eq!(claimed["stop_asked"], "rollback");
    let _ = std::fs::remove_dir_all(dir);
}

#[tokio::test]
async fn sqlite_thread_delete_names_the_runs_claimed_as_it_went() {
    let dir = std::env::temp_dir().join(format!("agentgraph-run-store-{}", uuid::Uuid::new_v4()));
    std::fs::create_dir_all(&dir).unwrap();
    let store = SqliteStore::open(dir.join("runs.sqlite")).unwrap();
    store
        .enqueue(&thread("td"), &run("running", "td"), Some(CLAIM), NEW)
        .await
        .unwrap();
    let queued = Queueing {
        reject_busy: false,
        new_thread: false,
    };
    store
        .enqueue(&thread("td"), &run("waiting", "td"), Some(CLAIM), queued)
        .await
        .unwrap();
    assert_eq!(
        store.delete_thread("td").await.unwrap(),
        vec!["running".to_owned()]
    );
    assert!(store.get(Kind::Thread, "td").await.unwrap().is_none());
    assert!(store.runs_of("td").await.unwrap().is_empty());
    // Nothing of it is claimed afterwards.
    assert!(store.claim("me", CLAIM.lease).await.unwrap().is_none());
    let _ = std::fs::remove_dir_all(dir);
}

/// A rollback asked for a running run is not weakened by an interrupt asked after it, and
/// the run cannot end `interrupted` over it: its end is refused with the rollback, which
/// its worker then applies (the run and its checkpoints deleted).
#[tokio::test]
async fn postgres_a_rollback_asked_for_outranks_a_later_interrupt() {
    let Some(url) = common::fresh_database("run_store").await else {
        return;
    };
    let saver = PostgresSaver::connect(&url).await.unwrap();
    let store = PostgresStore::open(&saver, &url).await.unwrap();
    let claim = Claim {
        owner: "me",
        lease: Duration::from_secs(20),
    };
    let Enqueued::Claimed(mut r) = store
        .enqueue(&thread("tr"), &run("rr", "tr"), Some(claim), NEW)
        .await
        .unwrap()
    else {
        panic!("claimed as queued");
    };
    assert!(store.request_cancel("rr", "rollback").await.unwrap());
    assert!(store.request_cancel("rr", "interrupt").await.unwrap());
    r["status"] = "interrupted".into();
    let refused = store
        .finish(
            &r,
            ThreadEnd::Put(thread("tr")),
            &token(1),
            &json!({}),
            None,
        )
        .await
        .unwrap_err();
    assert_eq!(refused.asked_stop(), Some("rollback"), "{refused}");
    // An interrupt alone lets the run end `interrupted`.
    let Enqueued::Claimed(mut r2) = store
        .enqueue(&thread("ti"), &run("ri", "ti"), Some(claim), NEW)
        .await
        .unwrap()
    else {
        panic!("claimed as queued");
    };
    assert!(store.request_cancel("ri", "interrupt").await.unwrap());
    r2["status"] = "interrupted".into();
    store
        .finish(
            &r2,
            ThreadEnd::Put(thread("ti")),
            &token(1),
            &json!({}),
            None,
        )
        .await
        .unwrap();
}

/// A run's end (or a refresh) writes the thread's state fields onto the document as it is
/// stored then: what a request changed since the fields were computed (metadata a PATCH
/// set, the graph a queued run named) stays.
async fn refresh_keeps_what_requests_changed(store: Arc<dyn RunStore>) {
    store
        .enqueue(&thread("tk"), &run("rk", "tk"), None, NEW)
        .await
        .unwrap();
    let mut fresh = store.get(Kind::Thread, "tk").await.unwrap().unwrap();
    let mut patched = fresh.clone();
    patched["metadata"] = json!({"graph_id": "g", "owner": "ada"});
    assert!(store.update(Kind::Thread, &patched).await.unwrap());
    fresh["values"] = json!({"n": 1});
    fresh["status"] = "idle".into();
    assert!(store.refresh_thread(&fresh).await.unwrap());
    let t = store.get(Kind::Thread, "tk").await.unwrap().unwrap();
    assert_eq!(
        t["metadata"],
        json!({"graph_id": "g", "owner": "ada"}),
        "{t}"
    );
    assert_eq!(t["values"], json!({"n": 1}));
    // Still busy: its run is pending.
    assert_eq!(t["status"], "busy");
    // A thread that is gone is not made again.
    assert!(store.delete(Kind::Thread, "tk").await.unwrap());
    assert!(!store.refresh_thread(&fresh).await.unwrap());
    assert!(store.get(Kind::Thread, "tk").await.unwrap().is_none());
}

#[tokio::test]
async fn sqlite_refresh_keeps_what_requests_changed() {
    let dir = std::env::temp_dir().join(format!("agentgraph-run-store-{}", uuid::Uuid::new_v4()));
    std::fs::create_dir_all(&dir).unwrap();
    let store = SqliteStore::open(dir.join("runs.sqlite")).unwrap();
    refresh_keeps_what_requests_changed(Arc::new(store)).await;
    let _ = std::fs::remove_dir_all(dir);
}

#[tokio::test]
async fn postgres_refresh_keeps_what_requests_changed() {
    let Some(url) = common::fresh_database("run_store").await else {
        return;
    };
    let saver = PostgresSaver::connect(&url).await.unwrap();
    let store = PostgresStore::open(&saver, &url).await.unwrap();
    refresh_keeps_what_requests_changed(Arc::new(store)).await;
}
