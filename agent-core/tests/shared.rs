//! `Shared<T>` in checkpoints: a value held in many places is stored once per thread, a
//! restored state shares it again, and readers without the state's types see it whole.

mod common;

use std::sync::Arc;

use agent_core::checkpoint::Checkpointer;
use agent_core::{
    Command, Durability, END, GraphState, NodeContext, RunConfig, START, Shared, SqliteSaver,
    StateGraph,
};
use serde::{Deserialize, Serialize};

/// A retrieved document: a large body and tags that are shared values of their own.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
struct Doc {
    title: String,
    body: String,
    tags: Vec<Shared<String>>,
}

#[derive(GraphState, Clone, Default, Debug)]
struct Library {
    /// One new document per round.
    #[reducer(append)]
    docs: Vec<Shared<Doc>>,
    /// Every document so far, again, each round (references to the same values).
    #[reducer(append)]
    cited: Vec<Shared<Doc>>,
    /// The newest document.
    latest: Option<Shared<Doc>>,
    /// Rounds to run.
    rounds: usize,
}

const BODY: usize = 4_000;

fn doc(n: usize, tag: &Shared<String>) -> Shared<Doc> {
    Shared::new(Doc {
        title: format!("doc {n}"),
        body: format!("{n}").repeat(BODY),
        tags: vec![tag.clone(), Shared::new(format!("tag {n}"))],
    })
}

fn library(saver: Arc<dyn Checkpointer>) -> agent_core::CompiledGraph<Library> {
    let common_tag = Shared::new("retrieved".to_owned());
    StateGraph::new()
        .add_node("fetch", move |s: Arc<Library>| {
            let tag = common_tag.clone();
            async move {
                let new = doc(s.docs.len(), &tag);
                let mut cited = s.docs.clone();
                cited.push(new.clone());
                LibraryUpdate::default()
                    .docs(vec![new.clone()])
                    .cited(cited)
                    .latest(Some(new))
            }
        })
        .add_edge(START, "fetch")
        .add_conditional_edges(
            "fetch",
            |s: &Library| {
                if s.docs.len() < s.rounds {
                    "fetch"
                } else {
                    END
                }
            },
            ["fetch", END],
        )
        .compile_with(saver)
        .unwrap()
}

/// Bytes of the blobs a thread's latest checkpoint is built from.
async fn stored_bytes(saver: &dyn Checkpointer, thread: &str) -> usize {
    let loaded = saver.get(thread, "", None).await.unwrap();
    loaded.blobs.iter().map(|b| b.data.len()).sum()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shared_values_are_stored_once_and_shared_again_after_a_restore() {
    for durability in [Durability::Sync, Durability::Async, Durability::Exit] {
        for (name, saver) in common::backends().await {
            let thread = common::unique("shared");
            let config = RunConfig::default()
                .thread_id(thread.clone())
                .durability(durability);
            let out = library(saver.clone())
                .invoke(LibraryUpdate::default().rounds(6), config.clone())
                .await
                .unwrap();
            assert_eq!(out.docs.len(), 6);
            // 1 + 2 + ... + 6 places hold the six documents.
            assert_eq!(out.cited.len(), 21);

            // Six bodies are stored, not the 6 + 21 + 6 places that hold them.
            let stored = stored_bytes(&*saver, &thread).await;
            assert!(
                stored < 7 * BODY + 2_000,
                "{name} {durability:?}: {stored} bytes stored for six {BODY}-byte documents"
            );

            // A fresh graph on the same store: the same values, shared again.
            let graph = library(saver.clone());
            let snapshot = graph.get_state(&config).await.unwrap().unwrap();
            let state = &snapshot.values;
            assert_eq!(state.docs, out.docs, "{name} {durability:?}");
            assert_eq!(state.cited, out.cited);
            assert_eq!(state.latest, out.latest);
            assert!(Shared::ptr_eq(&state.docs[0], &state.cited[0]));
            assert!(Shared::ptr_eq(&state.docs[5], &state.cited[20]));
            assert!(Shared::ptr_eq(
                &state.docs[5],
                state.latest.as_ref().unwrap()
            ));
            assert!(Shared::ptr_eq(
                &state.docs[0].tags[0],
                &state.docs[4].tags[0]
            ));

            // Going on from the restored state: old documents cited again cost references.
            let out = graph
                .invoke(LibraryUpdate::default().rounds(8), config.clone())
                .await
                .unwrap();
            assert_eq!(out.docs.len(), 8);
            assert_eq!(out.cited.len(), 21 + 7 + 8);
            let stored = stored_bytes(&*saver, &thread).await;
            assert!(
                stored < 9 * BODY + 3_000,
                "{name} {durability:?}: {stored} bytes stored for eight documents"
            );
            let again = library(saver.clone())
                .get_state(&config)
                .await
                .unwrap()
                .unwrap();
            assert_eq!(again.values.cited, out.cited);
            assert!(Shared::ptr_eq(
                &again.values.docs[7],
                &again.values.cited[35]
            ));
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn history_and_a_second_process_read_every_checkpoint() {
    let path = common::sqlite_path();
    let thread = common::unique("shared-file");
    let config = RunConfig::default().thread_id(thread.clone());
    {
        let saver = Arc::new(SqliteSaver::open(&path).unwrap());
        library(saver)
            .invoke(LibraryUpdate::default().rounds(4), config.clone())
            .await
            .unwrap();
    }
    let graph = library(Arc::new(SqliteSaver::open(&path).unwrap()));
    let history = graph
        .get_state_history(&config, &Default::default())
        .await
        .unwrap();
    let lengths: Vec<usize> = history.iter().map(|s| s.values.cited.len()).collect();
    assert_eq!(lengths, [10, 6, 3, 1, 0, 0]);
    for snapshot in &history {
        for (n, d) in snapshot.values.docs.iter().enumerate() {
            assert_eq!(d.title, format!("doc {n}"));
            assert_eq!(d.body.len(), BODY);
        }
    }
}

/// A subgraph over `Library` that fetches once, then asks a human.
fn paused_parent(saver: Arc<dyn Checkpointer>) -> agent_core::CompiledGraph<Library> {
    let tag = Shared::new("retrieved".to_owned());
    let child = StateGraph::new()
        .add_node("fetch", move |_s: Arc<Library>| {
            let d = doc(0, &tag);
            async move {
                LibraryUpdate::default()
                    .docs(vec![d.clone()])
                    .cited(vec![d.clone(), d])
            }
        })
        .add_node("ask", |_s: Arc<Library>, ctx: NodeContext| async move {
            let _: String = ctx.interrupt_as("keep them?")?;
            Ok::<_, agent_core::BoxError>(LibraryUpdate::default())
        })
        .add_edge(START, "fetch")
        .add_edge("fetch", "ask")
        .add_edge("ask", END)
        .compile()
        .unwrap();
    StateGraph::new()
        .add_node("sub", child)
        .add_edge(START, "sub")
        .add_edge("sub", END)
        .compile_with(saver)
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_subgraph_snapshot_shows_shared_values_whole() {
    for (name, saver) in common::backends().await {
        let graph = paused_parent(saver);
        let config = RunConfig::default().thread_id(common::unique("shared-sub"));
        let out = graph
            .invoke(LibraryUpdate::default(), config.clone())
            .await
            .unwrap();
        assert_eq!(out.interrupts.len(), 1, "{name}");
        let nested = graph
            .get_state_with_subgraphs(&config)
            .await
            .unwrap()
            .unwrap();
        let sub = nested.tasks[0].subgraph.as_deref().unwrap();
        let docs = sub.values["docs"].as_array().unwrap();
        assert_eq!(docs[0]["title"], "doc 0", "{name}");
        assert_eq!(docs[0]["tags"], serde_json::json!(["retrieved", "tag 0"]));
        assert_eq!(sub.values["cited"], serde_json::json!([docs[0], docs[0]]));

        let out = graph
            .invoke(Command::resume("yes").unwrap(), config)
            .await
            .unwrap();
        assert_eq!(out.cited.len(), 2, "{name}");
        assert_eq!(out.cited[0].title, "doc 0");
    }
}

#[test]
fn outside_checkpoints_a_shared_value_is_the_value_itself() {
    let d = doc(1, &Shared::new("t".to_owned()));
    let json = serde_json::to_value(&d).unwrap();
    assert_eq!(json["tags"], serde_json::json!(["t", "tag 1"]));
    let back: Shared<Doc> = serde_json::from_value(json).unwrap();
    assert_eq!(back, d);
}

/// Round one fetches a document; round two cites it (and a new one) next to a node that asks
/// a human, so the citing task's writes wait as a pending write while the run is paused.
fn cite_and_ask(
    saver: Arc<dyn Checkpointer>,
    cite_runs: Arc<std::sync::atomic::AtomicUsize>,
) -> agent_core::CompiledGraph<Library> {
    let tag = Shared::new("retrieved".to_owned());
    let fetch_tag = tag.clone();
    StateGraph::new()
        .add_node("fetch", move |_s: Arc<Library>| {
            let d = doc(0, &fetch_tag);
            async move { LibraryUpdate::default().docs(vec![d]) }
        })
        .add_node("cite", move |s: Arc<Library>| {
            cite_runs.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            let new = doc(1, &tag);
            async move {
                LibraryUpdate::default()
                    .cited(vec![s.docs[0].clone(), new.clone(), s.docs[0].clone()])
                    .latest(Some(new))
            }
        })
        .add_node("ask", |_s: Arc<Library>, ctx: NodeContext| async move {
            let _: String = ctx.interrupt_as("cite these?")?;
            Ok::<_, agent_core::BoxError>(LibraryUpdate::default())
        })
        .add_edge(START, "fetch")
        .add_edge("fetch", "cite")
        .add_edge("fetch", "ask")
        .add_edge(["cite", "ask"], END)
        .compile_with(saver)
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pending_write_references_stored_shared_values_and_resumes_in_a_second_process() {
    for durability in [Durability::Sync, Durability::Async, Durability::Exit] {
        let path = common::sqlite_path();
        let config = RunConfig::default()
            .thread_id(common::unique("shared-pending"))
            .durability(durability);
        let runs = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        {
            let saver = Arc::new(SqliteSaver::open(&path).unwrap());
            let out = cite_and_ask(saver, runs.clone())
                .invoke(LibraryUpdate::default(), config.clone())
                .await
                .unwrap();
            assert_eq!(out.interrupts.len(), 1, "{durability:?}");
        }
        let saver = Arc::new(SqliteSaver::open(&path).unwrap());
        let graph = cite_and_ask(saver, runs.clone());
        let out = graph
            .invoke(Command::resume("yes").unwrap(), config)
            .await
            .unwrap();
        assert_eq!(
            runs.load(std::sync::atomic::Ordering::SeqCst),
            1,
            "{durability:?}: the finished task's writes were kept, not run again"
        );
        assert_eq!(out.cited.len(), 3, "{durability:?}");
        assert_eq!(out.cited[0].title, "doc 0");
        assert_eq!(out.cited[1].title, "doc 1");
        assert!(
            Shared::ptr_eq(&out.cited[0], &out.docs[0]),
            "{durability:?}"
        );
        assert!(Shared::ptr_eq(&out.cited[0], &out.cited[2]));
        assert!(Shared::ptr_eq(&out.cited[1], out.latest.as_ref().unwrap()));
    }
}
