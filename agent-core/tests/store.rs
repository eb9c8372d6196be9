//! The store conformance kit (`agent_core::store::testkit`) on every built-in store, and the
//! checks a kit run cannot make: one SQLite file shared with the checkpoints, the sweeper.

mod common;

use std::sync::Arc;
use std::time::Duration;

use agent_core::store::{
    InMemoryStore, PostgresStore, SqliteStore, Store, StoreConfig, Sweeper, TtlConfig, ns, testkit,
};
use agent_core::{ManualClock, SqliteSaver};
use serde_json::json;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn in_memory_conforms() {
    let passed = testkit::run_all(|config| async move {
        Arc::new(InMemoryStore::new().with_config(config)) as Arc<dyn Store>
    })
    .await
    .unwrap_or_else(|failure| panic!("{failure}"));
    assert_eq!(passed, testkit::CASES);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlite_conforms() {
    // One file for every case, as several stores of a program would share it.
    let path = common::sqlite_path();
    let passed = testkit::run_all(|config| {
        let path = path.clone();
        async move {
            let store = SqliteStore::open(&path).expect("open the store");
            Arc::new(store.with_config(config)) as Arc<dyn Store>
        }
    })
    .await
    .unwrap_or_else(|failure| panic!("{failure}"));
    assert_eq!(passed, testkit::CASES);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_conforms() {
    let Some(url) = common::postgres_url() else {
        eprintln!("AGENTGRAPH_POSTGRES_URL not set: skipping");
        return;
    };
    let passed = testkit::run_all(|config| {
        let url = url.clone();
        async move {
            let store = PostgresStore::connect(&url)
                .await
                .expect("connect the store");
            Arc::new(store.with_config(config)) as Arc<dyn Store>
        }
    })
    .await
    .unwrap_or_else(|failure| panic!("{failure}"));
    assert_eq!(passed, testkit::CASES);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_kit_catches_a_store_that_ignores_filters() {
    /// Answers every search as if it had no filter.
    #[derive(Debug)]
    struct Unfiltered(InMemoryStore);

    #[async_trait::async_trait]
    impl Store for Unfiltered {
        fn backend(&self) -> &str {
            "unfiltered"
        }
        async fn batch(
            &self,
            ops: Vec<agent_core::store::Op>,
        ) -> Result<Vec<agent_core::store::OpResult>, agent_core::store::StoreError> {
            let ops = ops
                .into_iter()
                .map(|op| match op {
                    agent_core::store::Op::Search(mut s) => {
                        s.filter.clear();
                        agent_core::store::Op::Search(s)
                    }
                    other => other,
                })
                .collect();
            self.0.batch(ops).await
        }
        async fn sweep_expired(&self) -> Result<usize, agent_core::store::StoreError> {
            self.0.sweep_expired().await
        }
    }

    let failure = testkit::search_filters(&|config: StoreConfig| async move {
        Arc::new(Unfiltered(InMemoryStore::new().with_config(config))) as Arc<dyn Store>
    })
    .await
    .expect_err("the kit must catch it");
    assert_eq!(failure.backend, "unfiltered");
    assert!(failure.message.contains("filter"), "{failure}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_store_shares_the_checkpoints_file() {
    let path = common::sqlite_path();
    let saver = SqliteSaver::open(&path).expect("saver");
    let store = SqliteStore::open(&path).expect("store");
    store
        .put(&ns(["users", "ada"]), "profile", json!({"name": "Ada"}))
        .await
        .expect("put");
    drop(store);
    // Opening again migrates nothing and finds the item; the saver's tables are untouched.
    let store = SqliteStore::open(&path).expect("store again");
    let item = store
        .get(&ns(["users", "ada"]), "profile")
        .await
        .expect("get");
    assert_eq!(item.map(|i| i.value["name"].clone()), Some(json!("Ada")));
    use agent_core::Checkpointer;
    let none = saver
        .list("nobody", "", &agent_core::ListFilter::default())
        .await
        .expect("the saver still reads its tables");
    assert!(none.is_empty());
}

#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn the_sweeper_deletes_expired_items_in_the_background() {
    let clock = Arc::new(ManualClock::at_unix_seconds(1_000));
    let store: Arc<dyn Store> = Arc::new(InMemoryStore::new().with_clock(clock.clone()).with_ttl(
        TtlConfig {
            default_ttl: Some(Duration::from_secs(60)),
            refresh_on_read: false,
            sweep_interval: Some(Duration::from_secs(30)),
        },
    ));
    store
        .put(&ns(["s"]), "k", json!({"v": 1}))
        .await
        .expect("put");
    let sweeper = Sweeper::for_store(&store).expect("a sweep interval is configured");
    clock.advance(Duration::from_secs(61));
    // The item is hidden at once; the sweeper's next tick deletes it.
    assert_eq!(store.get(&ns(["s"]), "k").await.expect("get"), None);
    tokio::time::sleep(Duration::from_secs(31)).await;
    assert_eq!(
        store.sweep_expired().await.expect("sweep"),
        0,
        "the sweeper swept it already"
    );
    drop(sweeper);
}

/// A database whose vectors were written as `real[]` (store schema 3, before they became
/// bytes) keeps them: opening it converts them, and a search ranks old and new vectors alike.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_vectors_written_as_arrays_survive_the_upgrade() {
    use agent_core::store::{Embed, IndexConfig, SearchOp, testkit::WordEmbed};

    let Some(url) = common::postgres_url() else {
        return;
    };
    let (admin, schema, scoped) = common::postgres_schema(&url, "store_upgrade").await;
    let embed = WordEmbed { dims: 64 };
    let old = embed
        .embed(&["cat sat".to_owned(), "dog ran".to_owned()])
        .await
        .unwrap();
    let array = |v: &[f32]| {
        let floats: Vec<String> = v.iter().map(f32::to_string).collect();
        format!("ARRAY[{}]::real[]", floats.join(","))
    };
    admin
        .batch_execute(&format!(
            "SET search_path = {schema};
             CREATE TABLE store_meta (key TEXT PRIMARY KEY, value INTEGER NOT NULL);
             INSERT INTO store_meta VALUES ('schema_version', 3);
             CREATE TABLE store_items (prefix TEXT NOT NULL, key TEXT NOT NULL,
                 value JSONB NOT NULL, created_at_ms BIGINT NOT NULL,
                 updated_at_ms BIGINT NOT NULL, ttl_ms BIGINT, expires_at_ms BIGINT,
                 PRIMARY KEY (prefix, key));
             CREATE TABLE store_vectors (prefix TEXT NOT NULL, key TEXT NOT NULL,
                 field TEXT NOT NULL, embedding REAL[] NOT NULL,
                 PRIMARY KEY (prefix, key, field));
             INSERT INTO store_items VALUES
                 ('docs', 'a', '{{\"text\": \"cat sat\"}}', 1, 1, NULL, NULL),
                 ('docs', 'b', '{{\"text\": \"dog ran\"}}', 2, 2, NULL, NULL);
             INSERT INTO store_vectors VALUES
                 ('docs', 'a', 'text', {}), ('docs', 'b', 'text', {});",
            array(&old[0]),
            array(&old[1]),
        ))
        .await
        .unwrap();
    let store = PostgresStore::connect(&scoped)
        .await
        .expect("opening migrates the vectors")
        .with_index(IndexConfig::new(64, Arc::new(embed)).fields(["text"]));
    store
        .put(&ns(["docs"]), "c", json!({"text": "cat"}))
        .await
        .unwrap();
    let found = store
        .search(SearchOp::new(ns(["docs"])).query("cat"))
        .await
        .unwrap();
    let scores: Vec<(&str, f32)> = found
        .iter()
        .map(|hit| (hit.key.as_str(), hit.score.unwrap_or(f32::NAN)))
        .collect();
    assert_eq!(scores.len(), 3, "{scores:?}");
    assert_eq!(scores[0].0, "c");
    assert!((scores[0].1 - 1.0).abs() < 1e-6, "{scores:?}");
    assert_eq!(scores[1].0, "a");
    assert!(
        (scores[1].1 - std::f32::consts::FRAC_1_SQRT_2).abs() < 1e-6,
        "{scores:?}"
    );
    assert_eq!(scores[2].0, "b");
    assert!(scores[2].1.abs() < 1e-6, "{scores:?}");
    let column: String = admin
        .query_one(
            "SELECT data_type FROM information_schema.columns
              WHERE table_schema = $1 AND table_name = 'store_vectors' AND column_name = 'vector'",
            &[&schema],
        )
        .await
        .unwrap()
        .get(0);
    assert_eq!(column, "bytea");
    admin
        .batch_execute(&format!("DROP SCHEMA {schema} CASCADE"))
        .await
        .unwrap();
}
