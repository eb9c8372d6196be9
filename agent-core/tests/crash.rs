//! Crash recovery: a child process runs a long graph on SQLite and is killed (SIGKILL) in the
//! middle of a parallel step; a second run resumes the thread and ends where an uninterrupted
//! run does. With `Durability::Sync`, nodes that finished are not run again; with
//! `Durability::Async`, the crash loses at most the last step's checkpoint (and the step that
//! was running), never an earlier one. And a process killed right after SQLite acknowledged a
//! commit keeps that commit.

mod common;

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use agent_core::checkpoint::{
    CheckpointMetadata, CheckpointRecord, Checkpointer, FieldBlob, PendingWrite, StoreOp, WriteKind,
};
use agent_core::{
    CompiledGraph, Durability, END, GraphState, Input, RunConfig, START, SqliteSaver, StateGraph,
};

const CHILD_ENV: &str = "AGENTGRAPH_CRASH_CHILD";
const THREAD: &str = "crash";

#[derive(GraphState, Clone, Default, Debug, PartialEq)]
struct Work {
    #[reducer(append)]
    log: Vec<String>,
    #[reducer(add)]
    total: u64,
}

fn record_line(side: &Path, line: &str) {
    let mut file = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(side)
        .expect("side file");
    writeln!(file, "{line}").expect("write side file");
}

fn graph(side: Option<PathBuf>, saver: Option<Arc<SqliteSaver>>) -> CompiledGraph<Work> {
    let node = |name: &'static str, millis: u64| {
        let side = side.clone();
        move |_s: Arc<Work>| {
            let side = side.clone();
            async move {
                if let Some(side) = &side {
                    record_line(side, &format!("start:{name}"));
                }
                tokio::time::sleep(Duration::from_millis(millis)).await;
                if let Some(side) = &side {
                    record_line(side, &format!("done:{name}"));
                }
                WorkUpdate::default().log(vec![name.to_owned()]).total(1)
            }
        }
    };
    let g = StateGraph::new()
        .add_node("s1", node("s1", 20))
        .add_node("s2", node("s2", 20))
        .add_node("fan", node("fan", 20))
        .add_node("p1", node("p1", 10))
        .add_node("p2", node("p2", 3_000))
        .add_node("p3", node("p3", 3_000))
        .add_node("s3", node("s3", 20))
        .add_node("s4", node("s4", 20))
        .add_edge(START, "s1")
        .add_edge("s1", "s2")
        .add_edge("s2", "fan")
        .add_edge("fan", "p1")
        .add_edge("fan", "p2")
        .add_edge("fan", "p3")
        .add_edge(["p1", "p2", "p3"], "s3")
        .add_edge("s3", "s4")
        .add_edge("s4", END);
    match saver {
        Some(saver) => g.compile_with(saver).expect("graph"),
        None => g.compile().expect("graph"),
    }
}

/// The child: runs the graph until the parent kills it.
async fn child(db: &Path, side: &Path, durability: Durability) {
    let saver = Arc::new(SqliteSaver::open(db).expect("sqlite"));
    let g = graph(Some(side.to_owned()), Some(saver));
    let config = RunConfig::default()
        .thread_id(THREAD)
        .durability(durability);
    let _ = g.invoke(Work::default(), config).await;
    record_line(side, "child finished (it should have been killed)");
}

/// Starts this test binary as the child of test `name`, and kills it once p1 finished (p2
/// and p3 still sleep for seconds). Returns the database and the side file's lines.
fn run_and_kill(name: &str, durability: &str) -> (PathBuf, PathBuf, String) {
    let db = common::sqlite_path();
    let side = common::scratch_dir().join(format!("{}.log", common::unique("crash-side")));
    let exe = std::env::current_exe().expect("test binary");
    let mut child = std::process::Command::new(exe)
        .args(["--exact", name, "--nocapture"])
        .env(
            CHILD_ENV,
            format!("{}|{}|{durability}", db.display(), side.display()),
        )
        .stdout(std::process::Stdio::null())
        .spawn()
        .expect("spawn child");
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let text = std::fs::read_to_string(&side).unwrap_or_default();
        if text.lines().any(|l| l == "done:p1") {
            break;
        }
        assert!(Instant::now() < deadline, "child never reached p1: {text}");
        std::thread::sleep(Duration::from_millis(5));
    }
    // p1's body is done; give the executor time to store what it stores (p2 and p3 sleep
    // for seconds more), then kill.
    std::thread::sleep(Duration::from_millis(500));
    child.kill().expect("SIGKILL");
    child.wait().expect("reap child");
    let before_kill = std::fs::read_to_string(&side).unwrap_or_default();
    assert!(
        !before_kill.lines().any(|l| l == "done:p2"),
        "killed too late: {before_kill}"
    );
    (db, side, before_kill)
}

/// When this process is a child: runs it and returns true.
async fn as_child() -> bool {
    let Ok(spec) = std::env::var(CHILD_ENV) else {
        return false;
    };
    let mut parts = spec.split('|');
    let (Some(db), Some(side), Some(durability)) = (parts.next(), parts.next(), parts.next())
    else {
        panic!("bad child spec {spec}");
    };
    let durability = match durability {
        "async" => Durability::Async,
        _ => Durability::Sync,
    };
    child(Path::new(db), Path::new(side), durability).await;
    true
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn killed_async_run_loses_at_most_the_last_step() {
    if as_child().await {
        return;
    }
    let (db, side, before_kill) =
        run_and_kill("killed_async_run_loses_at_most_the_last_step", "async");
    let saver = Arc::new(SqliteSaver::open(&db).expect("sqlite"));
    let g = graph(Some(side.clone()), Some(saver));
    let config = RunConfig::default().thread_id(THREAD);
    let snapshot = g
        .get_state(&config)
        .await
        .expect("state")
        .expect("a checkpoint");
    // The last step that completed was `fan` (step 3); its checkpoint may be lost, no
    // earlier one.
    assert!(
        snapshot.step >= 2,
        "lost more than the last step: {snapshot:?}"
    );
    let out = g
        .invoke(Input::Continue, config.durability(Durability::Async))
        .await
        .expect("resume");
    let all = std::fs::read_to_string(&side).unwrap_or_default();
    let after_kill = &all[before_kill.len()..];
    for name in ["s1", "s2"] {
        assert!(
            !after_kill.lines().any(|l| l == format!("start:{name}")),
            "{name} ran again, so more than the last step was lost:\n{all}"
        );
    }
    let uninterrupted = graph(None, None)
        .invoke(Work::default(), RunConfig::default())
        .await
        .expect("uninterrupted run");
    assert_eq!(out.state, uninterrupted.state);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn killed_run_resumes_without_rerunning_finished_nodes() {
    if as_child().await {
        return;
    }
    let (db, side, before_kill) = run_and_kill(
        "killed_run_resumes_without_rerunning_finished_nodes",
        "sync",
    );

    let finished: Vec<String> = before_kill
        .lines()
        .filter_map(|l| l.strip_prefix("done:"))
        .map(str::to_owned)
        .collect();
    assert!(finished.contains(&"p1".to_owned()));
    assert!(
        !finished.contains(&"p2".to_owned()),
        "killed too late: {before_kill}"
    );

    // A second process (here: this one) resumes the thread from the file.
    let saver = Arc::new(SqliteSaver::open(&db).expect("sqlite"));
    let g = graph(Some(side.clone()), Some(saver));
    let snapshot = g
        .get_state(&RunConfig::default().thread_id(THREAD))
        .await
        .expect("state")
        .expect("a checkpoint");
    assert_eq!(snapshot.next, ["p1", "p2", "p3"]);
    assert!(
        snapshot.tasks.iter().any(|t| t.node == "p1" && t.finished),
        "p1's output was kept: {:?}",
        snapshot.tasks
    );
    let out = g
        .invoke(Input::Continue, RunConfig::default().thread_id(THREAD))
        .await
        .expect("resume");

    let all = std::fs::read_to_string(&side).unwrap_or_default();
    let after_kill = &all[before_kill.len()..];
    for name in &finished {
        assert!(
            !after_kill.lines().any(|l| l == format!("start:{name}")),
            "{name} finished before the kill but ran again:\n{all}"
        );
    }
    assert_eq!(all.lines().filter(|l| *l == "start:p1").count(), 1);

    let uninterrupted = graph(None, None)
        .invoke(Work::default(), RunConfig::default())
        .await
        .expect("uninterrupted run");
    assert_eq!(out.state, uninterrupted.state);
    assert_eq!(out.total, 8);
}

/// Set in the child of the test below: the database and the side file it acknowledges to.
const COMMITS_CHILD_ENV: &str = "AGENTGRAPH_CRASH_COMMITS_CHILD";

/// Checkpoint `i`, with one small blob.
fn checkpoint(i: usize) -> StoreOp {
    let id = format!("0190000001-0000-7000-8000-{i:012}");
    let blob = FieldBlob {
        field: "f".into(),
        version: id.as_str().into(),
        base: None,
        data: vec![u8::try_from(i).unwrap_or(0); 100],
    };
    let record = CheckpointRecord {
        thread_id: THREAD.into(),
        ns: "".into(),
        id: id.as_str().into(),
        parent_id: None,
        step: i as i64,
        created_at_ms: 1_700_000_000_000,
        metadata: CheckpointMetadata::default(),
        versions: [("f", id.as_str())].into_iter().collect(),
        body: vec![1],
    };
    StoreOp::Checkpoint {
        record,
        blobs: vec![blob],
    }
}

/// The pending writes the child stores for checkpoint 1: 3,000 of 1,000 bytes under long
/// task ids in random order. One transaction of about 3,000 pages: it spills pages out of
/// SQLite's page cache (2 MB) before its commit, and changes spilled pages of the writes'
/// key index again, so the commit rewrites frame headers already in the log after its last
/// page.
fn pending_writes() -> Vec<PendingWrite> {
    let mut rng = fastrand::Rng::with_seed(7);
    (0..3_000)
        .map(|_| PendingWrite {
            task_id: std::iter::repeat_with(|| rng.alphanumeric())
                .take(160)
                .collect(),
            node: "n".to_owned(),
            kind: WriteKind::Output,
            data: std::iter::repeat_with(|| rng.u8(..)).take(1_000).collect(),
        })
        .collect()
}

/// The id of checkpoint `i`.
fn checkpoint_id(i: usize) -> String {
    let StoreOp::Checkpoint { record, .. } = checkpoint(i) else {
        unreachable!("a checkpoint")
    };
    record.id.to_string()
}

/// A child process commits checkpoints, writing down each commit once SQLite acknowledged
/// it, and is killed (SIGKILL) right after the last acknowledgement, before it does anything
/// else. Reopened, the file is sound and holds every acknowledged checkpoint, bytes and all.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_process_killed_right_after_a_commit_keeps_every_acknowledged_checkpoint() {
    const NAME: &str = "a_process_killed_right_after_a_commit_keeps_every_acknowledged_checkpoint";
    if let Ok(spec) = std::env::var(COMMITS_CHILD_ENV) {
        let (db, side) = spec.split_once('|').expect("child spec");
        let saver = SqliteSaver::open(db).expect("sqlite");
        let side = Path::new(side);
        for i in 0..2 {
            saver.put_batch(vec![checkpoint(i)]).await.expect("commit");
            record_line(side, &format!("acked:checkpoint {i}"));
        }
        let writes = pending_writes();
        saver
            .put_writes(THREAD, "", &checkpoint_id(1), &writes)
            .await
            .expect("commit");
        record_line(side, "acked:writes");
        // Waits to be killed, touching nothing.
        std::thread::sleep(Duration::from_secs(60));
        return;
    }
    let db = common::sqlite_path();
    let side = common::scratch_dir().join(format!("{}.log", common::unique("commits-side")));
    let mut child = std::process::Command::new(std::env::current_exe().expect("test binary"))
        .args(["--exact", NAME, "--nocapture"])
        .env(
            COMMITS_CHILD_ENV,
            format!("{}|{}", db.display(), side.display()),
        )
        .stdout(std::process::Stdio::null())
        .spawn()
        .expect("spawn child");
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        let text = std::fs::read_to_string(&side).unwrap_or_default();
        if text.lines().any(|l| l == "acked:writes") {
            break;
        }
        assert!(Instant::now() < deadline, "the child stalled: {text}");
        std::thread::sleep(Duration::from_millis(1));
    }
    child.kill().expect("SIGKILL");
    child.wait().expect("reap child");

    let integrity: String = rusqlite::Connection::open(&db)
        .expect("open")
        .query_row("PRAGMA integrity_check", [], |r| r.get(0))
        .expect("integrity_check");
    assert_eq!(integrity, "ok");
    let saver = SqliteSaver::open(&db).expect("reopen");
    for i in 0..2 {
        let StoreOp::Checkpoint { record, blobs } = checkpoint(i) else {
            unreachable!("a checkpoint")
        };
        let loaded = saver.get(THREAD, "", Some(&record.id)).await.expect("get");
        assert!(
            loaded.record.is_some(),
            "acknowledged checkpoint {i} was lost"
        );
        assert_eq!(loaded.blobs, blobs);
    }
    let loaded = saver
        .get(THREAD, "", Some(&checkpoint_id(1)))
        .await
        .expect("get");
    let mut expected = pending_writes();
    let mut got = loaded.writes;
    assert_eq!(
        got.len(),
        expected.len(),
        "acknowledged pending writes were lost"
    );
    expected.sort_by(|a, b| a.task_id.cmp(&b.task_id));
    got.sort_by(|a, b| a.task_id.cmp(&b.task_id));
    assert!(got == expected, "the pending writes came back changed");
    drop(saver);
    let _ = std::fs::remove_file(&db);
}
