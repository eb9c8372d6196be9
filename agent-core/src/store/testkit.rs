//! A conformance kit for [`Store`] implementations: the cases every store must pass, for the
//! built-in ones and for yours. Behind the `testkit` feature, like the checkpointer kit.
//!
//! The factory builds a store from a [`StoreConfig`] (index, TTL, clock: the cases drive
//! time with a [`ManualClock`]). Each case works under a root label of its own, so stores
//! that share one database (a file, a server) can be handed out as they are.
//!
//! ```no_run
//! # use std::sync::Arc;
//! use agent_core::store::{testkit, InMemoryStore, Store};
//! #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
//! async fn my_store_conforms() {
//!     let passed = testkit::run_all(|config| async move {
//!         Arc::new(InMemoryStore::new().with_config(config)) as Arc<dyn Store>
//!     })
//!     .await
//!     .unwrap_or_else(|failure| panic!("{failure}"));
//!     assert_eq!(passed, testkit::CASES);
//! }
//! ```
//!
//! - [`put_get_delete`]: values round-trip; an update keeps `created_at` and moves
//!   `updated_at`; delete; bad namespaces and values are refused with `StoreError`.
//! - [`search_filters`]: prefix scoping, equality and `$eq/$ne/$gt/$gte/$lt/$lte` on dotted
//!   paths, newest first, `limit`/`offset`, bad filters refused.
//! - [`search_pages`]: pages of filtered searches over many items, with equal timestamps and
//!   values on the filters' bounds, equal those of the same search done by hand.
//! - [`list_namespaces`]: prefix and suffix with `*`, `max_depth`, `limit`/`offset`, sorted.
//! - [`ttl`]: items expire on the clock, reads refresh (or not), sweeping deletes.
//! - [`batches`]: mixed ops applied in order, each result in its op's place.
//! - [`concurrent_writers`]: eight tasks writing at once lose nothing.
//! - [`semantic_search`]: ranking by similarity with a small deterministic embedder,
//!   combined with filters; per-item index choices; a query without an index refused.

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};

use super::{
    Embed, GetOp, IndexChoice, IndexConfig, ListNamespacesOp, Op, OpResult, PutOp, SearchOp, Store,
    StoreConfig, StoreError, Ttl, TtlConfig, ns,
};
use crate::error::BoxError;
use crate::runtime::ManualClock;

/// The cases, in the order [`run_all`] runs them.
pub const CASES: &[&str] = &[
    "put_get_delete",
    "search_filters",
    "search_pages",
    "list_namespaces",
    "ttl",
    "batches",
    "concurrent_writers",
    "semantic_search",
];

/// A case that failed: which, on which backend, and why.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("store `{backend}` fails the conformance case `{case}`: {message}")]
pub struct Failure {
    /// The case.
    pub case: &'static str,
    /// The store's [`Store::backend`].
    pub backend: String,
    /// What went wrong.
    pub message: String,
}

/// A case's outcome.
pub type CaseResult = Result<(), Failure>;

/// A lexical embedder for the cases: each lowercase word hashed (FNV-1a) into one of `dims`
/// counts. Deterministic, no model: texts sharing words are similar.
#[derive(Debug, Clone, Copy)]
pub struct WordEmbed {
    /// The vectors' length.
    pub dims: usize,
}

#[async_trait::async_trait]
impl Embed for WordEmbed {
    async fn embed(&self, texts: &[String]) -> Result<Vec<Vec<f32>>, BoxError> {
        Ok(texts
            .iter()
            .map(|text| {
                let mut v = vec![0.0f32; self.dims];
                for word in text
                    .split(|c: char| !c.is_alphanumeric())
                    .filter(|w| !w.is_empty())
                {
                    let hash = word
                        .to_lowercase()
                        .bytes()
                        .fold(0xcbf2_9ce4_8422_2325u64, |h, b| {
                            (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3)
                        });
                    v[(hash % self.dims as u64) as usize] += 1.0;
                }
                v
            })
            .collect())
    }
}

/// What the cases open stores with: any `Fn(StoreConfig) -> impl Future<Output = Arc<dyn
/// Store>>`, a closure as in the example above.
pub trait StoreFactory {
    /// A store using `config`.
    fn open(&self, config: StoreConfig) -> impl Future<Output = Arc<dyn Store>>;
}

impl<F, Fut> StoreFactory for F
where
    F: Fn(StoreConfig) -> Fut,
    Fut: Future<Output = Arc<dyn Store>>,
{
    fn open(&self, config: StoreConfig) -> impl Future<Output = Arc<dyn Store>> {
        self(config)
    }
}

struct Case<'a> {
    name: &'static str,
    store: &'a Arc<dyn Store>,
    /// The case's root label.
    root: String,
}

impl<'a> Case<'a> {
    fn new(name: &'static str, store: &'a Arc<dyn Store>, root: String) -> Self {
        Case { name, store, root }
    }

    fn fail(&self, message: impl Into<String>) -> Failure {
        Failure {
            case: self.name,
            backend: self.store.backend().to_owned(),
            message: message.into(),
        }
    }

    fn check(&self, ok: bool, message: impl FnOnce() -> String) -> CaseResult {
        if ok {
            Ok(())
        } else {
            Err(self.fail(message()))
        }
    }

    fn call<T>(&self, what: &str, result: Result<T, StoreError>) -> Result<T, Failure> {
        result.map_err(|e| self.fail(format!("{what} failed: {e}")))
    }

    /// A namespace under the case's root.
    fn ns(&self, labels: &[&str]) -> Vec<String> {
        let mut out = vec![self.root.clone()];
        out.extend(labels.iter().map(|l| (*l).to_owned()));
        out
    }

    async fn put(&self, labels: &[&str], key: &str, value: Value) -> CaseResult {
        self.call(
            &format!("put {labels:?}/{key}"),
            self.store.put(&self.ns(labels), key, value).await,
        )
    }

    /// A put of `value` (a JSON object) under the case's `labels`, to give a TTL or an index
    /// choice before [`Case::put_op`].
    fn op(&self, labels: &[&str], key: &str, value: Value) -> PutOp {
        let value = value.as_object().cloned().unwrap_or_default();
        PutOp::new(self.ns(labels), key, value)
    }

    async fn put_op(&self, op: PutOp) -> CaseResult {
        let what = format!("put {:?}/{}", op.namespace, op.key);
        self.call(&what, self.store.put_op(op).await)
    }

    async fn keys(&self, op: SearchOp) -> Result<Vec<String>, Failure> {
        let found = self.call("search", self.store.search(op).await)?;
        Ok(found.into_iter().map(|i| i.item.key).collect())
    }
}

fn unique(case: &str) -> String {
    format!("{case}-{}", uuid::Uuid::now_v7().simple())
}

fn config(clock: &Arc<ManualClock>) -> StoreConfig {
    StoreConfig {
        index: None,
        ttl: None,
        clock: clock.clone(),
    }
}

fn clock() -> Arc<ManualClock> {
    Arc::new(ManualClock::at_unix_seconds(1_800_000_000))
}

/// Runs every case on stores from `factory` (one per case); the names of the cases that
/// passed (all of [`CASES`]), or the first failure.
pub async fn run_all<F: StoreFactory>(factory: F) -> Result<Vec<&'static str>, Failure> {
    put_get_delete(&factory).await?;
    search_filters(&factory).await?;
    search_pages(&factory).await?;
    list_namespaces(&factory).await?;
    ttl(&factory).await?;
    batches(&factory).await?;
    concurrent_writers(&factory).await?;
    semantic_search(&factory).await?;
    Ok(CASES.to_vec())
}

/// Values round-trip; updates keep `created_at`; delete; bad namespaces and values refused.
pub async fn put_get_delete<F: StoreFactory>(factory: &F) -> CaseResult {
    let clock = clock();
    let store = factory.open(config(&clock)).await;
    let c = Case::new("put_get_delete", &store, unique("pgd"));
    let user = c.ns(&["users", "ada"]);
    c.put(
        &["users", "ada"],
        "profile",
        json!({"name": "Ada", "langs": ["en", "fr"], "n": 1.5}),
    )
    .await?;
    let got = c.call("get", store.get(&user, "profile").await)?;
    let Some(first) = got else {
        return Err(c.fail("a put item was not found by get"));
    };
    c.check(
        first.namespace == user
            && first.key == "profile"
            && Value::Object(first.value.clone())
                == json!({"name": "Ada", "langs": ["en", "fr"], "n": 1.5}),
        || format!("get returned {first:?}"),
    )?;
    let t0 = first.created_at_ms;
    c.check(t0 == 1_800_000_000_000 && first.updated_at_ms == t0, || {
        format!("timestamps come from the store's clock: {first:?}")
    })?;
    clock.advance(Duration::from_secs(5));
    c.put(&["users", "ada"], "profile", json!({"name": "Ada L."}))
        .await?;
    let second = c.call("get", store.get(&user, "profile").await)?;
    c.check(
        second.as_ref().is_some_and(|i| {
            i.created_at_ms == t0
                && i.updated_at_ms == t0 + 5_000
                && i.value["name"] == "Ada L."
                && i.value.len() == 1
        }),
        || {
            format!(
                "an update replaces the value, keeps created_at and moves updated_at: {second:?}"
            )
        },
    )?;
    let missing = c.call("get", store.get(&user, "nothing").await)?;
    c.check(missing.is_none(), || {
        format!("a missing key gave {missing:?}")
    })?;
    let other = c.call("get", store.get(&c.ns(&["users", "bob"]), "profile").await)?;
    c.check(other.is_none(), || "namespaces are apart".into())?;
    c.call("delete", store.delete(&user, "profile").await)?;
    c.call(
        "delete of a missing item",
        store.delete(&user, "profile").await,
    )?;
    let gone = c.call("get", store.get(&user, "profile").await)?;
    c.check(gone.is_none(), || {
        format!("a deleted item was found: {gone:?}")
    })?;
    for bad in [vec![], ns(["a", ""]), ns(["a.b"]), ns(["langgraph", "x"])] {
        let result = store.put(&bad, "k", json!({"v": 1})).await;
        c.check(
            matches!(result, Err(StoreError::InvalidNamespace { .. })),
            || format!("namespace {bad:?} must be refused, got {result:?}"),
        )?;
    }
    let result = store.put(&user, "k", json!([1, 2])).await;
    c.check(
        matches!(result, Err(StoreError::InvalidValue { .. })),
        || format!("a value that is not an object must be refused, got {result:?}"),
    )?;
    Ok(())
}

/// Filters, ordering, paging and prefix scoping.
pub async fn search_filters<F: StoreFactory>(factory: &F) -> CaseResult {
    let clock = clock();
    let store = factory.open(config(&clock)).await;
    let c = Case::new("search_filters", &store, unique("sf"));
    let items = [
        (
            "a",
            json!({"kind": "fact", "score": 1, "user": {"age": 30}}),
        ),
        (
            "b",
            json!({"kind": "fact", "score": 5, "user": {"age": 41}}),
        ),
        (
            "c",
            json!({"kind": "rule", "score": 9, "user": {"age": 52}}),
        ),
        ("d", json!({"kind": "fact", "score": 7})),
    ];
    for (key, value) in items {
        c.put(&["docs"], key, value).await?;
        clock.advance(Duration::from_secs(1));
    }
    c.put(&["docs", "deep"], "e", json!({"kind": "fact", "score": 3}))
        .await?;
    clock.advance(Duration::from_secs(1));
    c.put(&["elsewhere"], "f", json!({"kind": "fact", "score": 3}))
        .await?;
    let search = |filter: Value| SearchOp::new(c.ns(&["docs"])).filter(filter).limit(100);
    let cases: [(Value, &[&str]); 8] = [
        (json!({}), &["e", "d", "c", "b", "a"]),
        (json!({"kind": "fact"}), &["e", "d", "b", "a"]),
        (json!({"score": {"$gt": 3, "$lte": 7}}), &["d", "b"]),
        (
            json!({"score": {"$gte": 5}, "kind": {"$ne": "rule"}}),
            &["d", "b"],
        ),
        (json!({"user.age": {"$lt": 45}}), &["b", "a"]),
        (json!({"user": {"age": 52}}), &["c"]),
        (json!({"score": {"$eq": 1.0}}), &["a"]),
        (json!({"kind": {"$gt": "fact"}}), &["c"]),
    ];
    for (filter, want) in cases {
        let got = c.keys(search(filter.clone())).await?;
        c.check(got == want, || {
            format!("filter {filter} found {got:?}, not {want:?}")
        })?;
    }
    let page = c
        .keys(SearchOp::new(c.ns(&["docs"])).limit(2).offset(1))
        .await?;
    c.check(page == ["d", "c"], || {
        format!("limit 2 offset 1 gave {page:?}")
    })?;
    let deep = c.keys(SearchOp::new(c.ns(&["docs", "deep"]))).await?;
    c.check(deep == ["e"], || format!("a deeper prefix gave {deep:?}"))?;
    let root = c.keys(SearchOp::new(c.ns(&[])).limit(100)).await?;
    c.check(root.len() == 6, || {
        format!("the root prefix found {root:?}")
    })?;
    let partial = c
        .keys(SearchOp::new(vec![c.root.clone(), "doc".into()]))
        .await?;
    c.check(partial.is_empty(), || {
        format!("a prefix matches whole labels, found {partial:?}")
    })?;
    let bad = store.search(search(json!({"score": {"$in": [1]}}))).await;
    c.check(matches!(bad, Err(StoreError::InvalidFilter { .. })), || {
        format!("an unknown operator gave {bad:?}")
    })?;
    let bad = store.search(search(json!({"score": {"$gt": [1]}}))).await;
    c.check(matches!(bad, Err(StoreError::InvalidFilter { .. })), || {
        format!("`$gt` on a list gave {bad:?}")
    })?;
    // A field that is a number in some items and not in others: comparisons skip the others
    // (a SQL backend must not cast them and fail the search).
    for (key, score) in [
        ("text", json!("high")),
        ("flag", json!(true)),
        ("nested", json!({"v": 9})),
        ("four", json!(4)),
        ("two", json!(2)),
    ] {
        c.put(&["mixed"], key, json!({ "score": score })).await?;
        clock.advance(Duration::from_secs(1));
    }
    let mixed = c
        .keys(SearchOp::new(c.ns(&["mixed"])).filter(json!({"score": {"$gt": 3}})))
        .await?;
    c.check(mixed == ["four"], || {
        format!("`$gt` over mixed types found {mixed:?}")
    })?;
    let mixed = c
        .keys(SearchOp::new(c.ns(&["mixed"])).filter(json!({"score": {"$lt": "z"}})))
        .await?;
    c.check(mixed == ["text"], || {
        format!("`$lt` on a string over mixed types found {mixed:?}")
    })?;
    // The empty prefix searches every namespace (other cases' items too: the filter picks
    // this case's marker).
    c.put(&["marked", "deep"], "m", json!({ "case": c.root }))
        .await?;
    let everywhere = c
        .keys(SearchOp::new(Vec::new()).filter(json!({ "case": c.root })))
        .await?;
    c.check(everywhere == ["m"], || {
        format!("the empty prefix with a filter found {everywhere:?}")
    })?;
    Ok(())
}

/// Pages of filtered searches over 120 items in three namespaces, four items to a timestamp
/// (ties broken by namespace, then key), numbers on the filters' bounds, and a namespace
/// whose newest items all sit on a bound: each page equals the same search done by hand
/// (filter, newest first, offset, limit). A store that reads only the newest candidates
/// must still find older ones when the newest fail the filter.
pub async fn search_pages<F: StoreFactory>(factory: &F) -> CaseResult {
    let clock = clock();
    let store = factory.open(config(&clock)).await;
    let c = Case::new("search_pages", &store, unique("sp"));
    // (namespace, key, value, updated_at_ms) of every item put.
    let mut all: Vec<(Vec<String>, String, Value, i64)> = Vec::new();
    // The store's time, as it stamps items.
    let times = config(&clock);
    for i in 0..90usize {
        let user = format!("u{}", (i * 7) % 3);
        let kind = ["a", "b"][i % 2];
        let value =
            json!({"kind": kind, "n": i % 20, "x": i as f64 / 4.0, "tag": format!("t{}", i % 5)});
        let key = format!("k{:02}", (i * 37) % 90);
        c.put(&["p", &user], &key, value.clone()).await?;
        all.push((c.ns(&["p", &user]), key, value, times.now_ms()));
        if i % 4 == 3 {
            clock.advance(Duration::from_secs(1));
        }
    }
    // Ten older items above the bound, then thirty newer ones on it.
    for i in 0..40usize {
        let n = if i < 10 { 6 } else { 5 };
        let value = json!({"n": n, "i": i});
        let key = format!("e{i:02}");
        c.put(&["p", "edge"], &key, value.clone()).await?;
        all.push((c.ns(&["p", "edge"]), key, value, times.now_ms()));
        clock.advance(Duration::from_millis(1));
    }
    all.sort_by(|a, b| {
        b.3.cmp(&a.3)
            .then_with(|| a.0.cmp(&b.0))
            .then_with(|| a.1.cmp(&b.1))
    });
    let filters = [
        json!({}),
        json!({"kind": "a"}),
        json!({"n": {"$gt": 10}}),
        json!({"n": {"$gte": 10, "$lt": 15}}),
        json!({"kind": "b", "n": {"$lte": 3}}),
        json!({"x": {"$gt": 7.25}}),
        json!({"n": {"$ne": 4}}),
        json!({"kind": {"$eq": "a"}, "x": {"$lt": 2.0}}),
        json!({"tag": {"$gte": "t3"}}),
        json!({"n": {"$gt": 5}}),
        json!({"n": 5.0}),
    ];
    for filter in filters {
        let Value::Object(conditions) = &filter else {
            continue;
        };
        for (limit, offset) in [(1, 0), (3, 0), (10, 5), (7, 40), (200, 0), (5, 300)] {
            let want: Vec<&str> = all
                .iter()
                .filter(|(_, _, value, _)| {
                    value
                        .as_object()
                        .is_some_and(|v| super::matches(conditions, v))
                })
                .skip(offset)
                .take(limit)
                .map(|(_, key, _, _)| key.as_str())
                .collect();
            let got = c
                .keys(
                    SearchOp::new(c.ns(&["p"]))
                        .filter(filter.clone())
                        .limit(limit)
                        .offset(offset),
                )
                .await?;
            c.check(got == want, || {
                format!("filter {filter} limit {limit} offset {offset} found {got:?}, not {want:?}")
            })?;
        }
    }
    Ok(())
}

/// Namespace listing with conditions, depth and paging.
pub async fn list_namespaces<F: StoreFactory>(factory: &F) -> CaseResult {
    let clock = clock();
    let store = factory.open(config(&clock)).await;
    let c = Case::new("list_namespaces", &store, unique("ln"));
    for labels in [
        &["users", "u1", "facts"][..],
        &["users", "u1", "prefs"],
        &["users", "u2", "facts"],
        &["teams", "t1"],
    ] {
        c.put(labels, "k", json!({"v": 1})).await?;
    }
    let list =
        |op: ListNamespacesOp| async { c.call("list_namespaces", store.list_namespaces(op).await) };
    let root = c.root.clone();
    let full = |labels: &[&str]| c.ns(labels);
    let all = list(ListNamespacesOp::new().prefix(ns([root.as_str()]))).await?;
    c.check(
        all == [
            full(&["teams", "t1"]),
            full(&["users", "u1", "facts"]),
            full(&["users", "u1", "prefs"]),
            full(&["users", "u2", "facts"]),
        ],
        || format!("all namespaces, sorted: {all:?}"),
    )?;
    let facts = list(
        ListNamespacesOp::new()
            .prefix(ns([root.as_str(), "users"]))
            .suffix(ns(["facts"])),
    )
    .await?;
    c.check(
        facts
            == [
                full(&["users", "u1", "facts"]),
                full(&["users", "u2", "facts"]),
            ],
        || format!("suffix: {facts:?}"),
    )?;
    let wild = list(ListNamespacesOp::new().prefix(ns([root.as_str(), "*", "u1"]))).await?;
    c.check(wild.len() == 2, || format!("a `*` label: {wild:?}"))?;
    let depth = list(
        ListNamespacesOp::new()
            .prefix(ns([root.as_str()]))
            .max_depth(3),
    )
    .await?;
    c.check(
        depth
            == [
                full(&["teams", "t1"]),
                full(&["users", "u1"]),
                full(&["users", "u2"]),
            ],
        || format!("max_depth 3 lists each cut namespace once: {depth:?}"),
    )?;
    let page = list(
        ListNamespacesOp::new()
            .prefix(ns([root.as_str()]))
            .limit(2)
            .offset(1),
    )
    .await?;
    c.check(
        page == [
            full(&["users", "u1", "facts"]),
            full(&["users", "u1", "prefs"]),
        ],
        || format!("limit/offset: {page:?}"),
    )?;
    c.call("delete", store.delete(&full(&["teams", "t1"]), "k").await)?;
    let after = list(ListNamespacesOp::new().prefix(ns([root.as_str(), "teams"]))).await?;
    c.check(after.is_empty(), || {
        format!("a namespace without items is not listed: {after:?}")
    })?;
    Ok(())
}

/// Expiry on the clock, refresh on read, sweeping.
pub async fn ttl<F: StoreFactory>(factory: &F) -> CaseResult {
    let clock = clock();
    let mut cfg = config(&clock);
    cfg.ttl = Some(TtlConfig {
        default_ttl: Some(Duration::from_secs(60)),
        refresh_on_read: true,
        sweep_interval: None,
    });
    let store = factory.open(cfg).await;
    let c = Case::new("ttl", &store, unique("ttl"));
    let space = c.ns(&["s"]);
    c.put(&["s"], "refreshed", json!({"v": 1})).await?;
    c.put(&["s"], "plain", json!({"v": 2})).await?;
    c.put_op(c.op(&["s"], "forever", json!({"v": 3})).ttl(Ttl::Never))
        .await?;
    c.put_op(
        c.op(&["s"], "short", json!({"v": 4}))
            .ttl(Ttl::After(Duration::from_secs(10))),
    )
    .await?;
    clock.advance(Duration::from_secs(40));
    let short = c.call("get", store.get(&space, "short").await)?;
    c.check(short.is_none(), || {
        "an item is not read after its own TTL".into()
    })?;
    // Reading restarts a TTL; a read that says not to does not.
    c.call("get", store.get(&space, "refreshed").await)?;
    let unrefreshed = c.call(
        "batch",
        store
            .batch(vec![
                GetOp::new(space.clone(), "plain").refresh_ttl(false).into(),
            ])
            .await,
    )?;
    c.check(
        matches!(&unrefreshed[..], [OpResult::Item(Some(_))]),
        || format!("a live item read: {unrefreshed:?}"),
    )?;
    clock.advance(Duration::from_secs(40));
    let refreshed = c.call("get", store.get(&space, "refreshed").await)?;
    c.check(refreshed.is_some(), || {
        "a read item lives a TTL from its read".into()
    })?;
    let plain = c.call("get", store.get(&space, "plain").await)?;
    c.check(plain.is_none(), || {
        "an item expires a TTL after its put".into()
    })?;
    let found = c
        .keys(SearchOp::new(space.clone()).refresh_ttl(false))
        .await?;
    c.check(found == ["forever", "refreshed"], || {
        format!("search hides expired items: {found:?}")
    })?;
    clock.advance(Duration::from_secs(61));
    let listed = c.call(
        "list",
        store
            .list_namespaces(ListNamespacesOp::new().prefix(space.clone()))
            .await,
    )?;
    c.check(listed == [space.clone()], || {
        format!("the namespace still holds `forever`: {listed:?}")
    })?;
    let swept = c.call("sweep_expired", store.sweep_expired().await)?;
    c.check(swept >= 3, || {
        format!("sweeping deleted {swept} items, expected at least 3")
    })?;
    let left = c.keys(SearchOp::new(space.clone())).await?;
    c.check(left == ["forever"], || format!("after sweeping: {left:?}"))?;
    // Putting again an expired key makes a new item.
    c.put(&["s"], "plain", json!({"v": 5})).await?;
    let fresh = c.call("get", store.get(&space, "plain").await)?;
    let now = 1_800_000_000_000 + 141_000;
    c.check(
        fresh.as_ref().is_some_and(|i| i.created_at_ms == now),
        || format!("a put after expiry: {fresh:?}"),
    )?;
    Ok(())
}

/// Mixed ops in one batch, applied in order.
pub async fn batches<F: StoreFactory>(factory: &F) -> CaseResult {
    let clock = clock();
    let store = factory.open(config(&clock)).await;
    let c = Case::new("batches", &store, unique("b"));
    let space = c.ns(&["x"]);
    let value = |v: i64| json!({"v": v}).as_object().cloned().unwrap_or_default();
    let ops: Vec<Op> = vec![
        PutOp::new(space.clone(), "a", value(1)).into(),
        PutOp::new(space.clone(), "b", value(2)).into(),
        GetOp::new(space.clone(), "a").into(),
        SearchOp::new(space.clone())
            .filter(json!({"v": {"$gte": 2}}))
            .into(),
        PutOp::delete(space.clone(), "a").into(),
        GetOp::new(space.clone(), "a").into(),
        ListNamespacesOp::new().prefix(space.clone()).into(),
    ];
    let results = c.call("batch", store.batch(ops).await)?;
    let ok = matches!(&results[..], [
        OpResult::Done,
        OpResult::Done,
        OpResult::Item(Some(a)),
        OpResult::Items(found),
        OpResult::Done,
        OpResult::Item(None),
        OpResult::Namespaces(listed),
    ] if a.value["v"] == 1 && found.len() == 1 && found[0].key == "b" && listed == std::slice::from_ref(&space));
    c.check(ok, || format!("batch results: {results:?}"))?;
    let bad = store
        .batch(vec![
            PutOp::new(space.clone(), "c", value(3)).into(),
            GetOp::new(vec![], "k").into(),
        ])
        .await;
    c.check(
        matches!(bad, Err(StoreError::InvalidNamespace { .. })),
        || format!("a bad op fails the batch: {bad:?}"),
    )?;
    let c_item = c.call("get", store.get(&space, "c").await)?;
    c.check(c_item.is_none(), || {
        "a refused batch applies none of its ops".into()
    })?;
    Ok(())
}

/// Eight tasks writing at once lose nothing.
pub async fn concurrent_writers<F: StoreFactory>(factory: &F) -> CaseResult {
    let clock = clock();
    let store = factory.open(config(&clock)).await;
    let c = Case::new("concurrent_writers", &store, unique("cw"));
    let space = c.ns(&["shared"]);
    let tasks: Vec<_> = (0..8)
        .map(|t| {
            let store = store.clone();
            let space = space.clone();
            tokio::spawn(async move {
                for i in 0..20 {
                    store
                        .put(&space, &format!("{t}-{i}"), json!({"t": t, "i": i}))
                        .await?;
                    store.put(&space, "last", json!({"t": t})).await?;
                }
                Ok::<_, StoreError>(())
            })
        })
        .collect();
    for task in tasks {
        let joined = task
            .await
            .map_err(|e| c.fail(format!("a writer panicked: {e}")))?;
        c.call("a writer's put", joined)?;
    }
    let found = c.keys(SearchOp::new(space.clone()).limit(1000)).await?;
    c.check(found.len() == 161, || {
        format!("8 x 20 items and `last`: found {}", found.len())
    })?;
    let three = c
        .keys(SearchOp::new(space).filter(json!({"t": 3})).limit(1000))
        .await?;
    c.check(three.len() >= 20, || {
        format!("writer 3's items: {}", three.len())
    })?;
    Ok(())
}

/// Ranking by meaning with a deterministic embedder, with filters and index choices.
pub async fn semantic_search<F: StoreFactory>(factory: &F) -> CaseResult {
    let clock = clock();
    let plain = factory.open(config(&clock)).await;
    let c = Case::new("semantic_search", &plain, unique("ss"));
    let refused = plain
        .search(SearchOp::new(c.ns(&[])).query("anything"))
        .await;
    c.check(matches!(refused, Err(StoreError::NoIndex { .. })), || {
        format!("a query without an index: {refused:?}")
    })?;
    let mut cfg = config(&clock);
    cfg.index = Some(IndexConfig::new(512, Arc::new(WordEmbed { dims: 512 })).fields(["text"]));
    let store = factory.open(cfg).await;
    let c = Case::new("semantic_search", &store, c.root);
    let docs = [
        ("cat", "the cat sleeps on the warm sofa", "pets"),
        ("dog", "a dog chases the ball in the park", "pets"),
        ("rust", "rust compiles fast safe programs", "code"),
        ("python", "python scripts are quick to write", "code"),
    ];
    for (key, text, topic) in docs {
        c.put(&["docs"], key, json!({"text": text, "topic": topic}))
            .await?;
    }
    // Not embedded at all, and embedded on another field.
    c.put_op(
        c.op(&["docs"], "hidden", json!({"text": "cat cat cat"}))
            .index(IndexChoice::Off),
    )
    .await?;
    let titled = json!({"text": "nothing here", "title": "safe rust programs"});
    c.put_op(
        c.op(&["docs"], "titled", titled)
            .index(IndexChoice::Fields(vec!["title".into()])),
    )
    .await?;
    let found = c.call(
        "search",
        store
            .search(
                SearchOp::new(c.ns(&["docs"]))
                    .query("where does the cat sleep")
                    .limit(10),
            )
            .await,
    )?;
    let keys: Vec<&str> = found.iter().map(|i| i.key.as_str()).collect();
    c.check(keys.first() == Some(&"cat"), || {
        format!("the cat text ranks first: {keys:?}")
    })?;
    c.check(
        found
            .iter()
            .all(|i| (i.key == "hidden") == i.score.is_none()),
        || format!("only the unindexed item has no score: {found:?}"),
    )?;
    c.check(keys.last() == Some(&"hidden") && keys.len() == 6, || {
        format!("unscored items come last: {keys:?}")
    })?;
    let scores: Vec<f32> = found.iter().filter_map(|i| i.score).collect();
    c.check(scores.windows(2).all(|w| w[0] >= w[1]), || {
        format!("scores descend: {scores:?}")
    })?;
    let code = c.call(
        "search",
        store
            .search(
                SearchOp::new(c.ns(&["docs"]))
                    .query("safe rust programs")
                    .filter(json!({"topic": "code"}))
                    .limit(2),
            )
            .await,
    )?;
    let keys: Vec<&str> = code.iter().map(|i| i.key.as_str()).collect();
    c.check(keys == ["rust", "python"], || {
        format!("a query with a filter: {keys:?}")
    })?;
    let titled = c.call(
        "search",
        store
            .search(
                SearchOp::new(c.ns(&["docs"]))
                    .query("safe rust programs")
                    .limit(2),
            )
            .await,
    )?;
    c.check(
        titled
            .iter()
            .any(|i| i.key == "titled" && i.score.is_some_and(|s| s > 0.99)),
        || format!("an item indexed on its own field matches by that field: {titled:?}"),
    )?;
    // An update re-embeds.
    c.put(
        &["docs"],
        "python",
        json!({"text": "the cat naps", "topic": "pets"}),
    )
    .await?;
    let again = c.call(
        "search",
        store
            .search(SearchOp::new(c.ns(&["docs"])).query("cat naps").limit(1))
            .await,
    )?;
    c.check(again.first().is_some_and(|i| i.key == "python"), || {
        format!("re-embedded on update: {again:?}")
    })?;
    // An update's index choice replaces the item's vectors whole: `titled` put again on its
    // `text` keeps no vector of its title, and `cat` put again unindexed keeps none.
    for (key, value, index) in [
        (
            "titled",
            json!({"text": "nothing here", "title": "safe rust programs"}),
            IndexChoice::Fields(vec!["text".into()]),
        ),
        (
            "cat",
            json!({"text": "the cat sleeps on the warm sofa", "topic": "pets"}),
            IndexChoice::Off,
        ),
    ] {
        c.put_op(c.op(&["docs"], key, value).index(index)).await?;
    }
    let replaced = c.call(
        "search",
        store
            .search(
                SearchOp::new(c.ns(&["docs"]))
                    .query("safe rust programs sleeps sofa")
                    .limit(10),
            )
            .await,
    )?;
    let stale: Vec<String> = replaced
        .iter()
        .filter(|i| {
            (i.key == "cat" && i.score.is_some())
                || (i.key == "titled" && i.score.is_some_and(|s| s > 0.5))
        })
        .map(|i| format!("{} {:?}", i.key, i.score))
        .collect();
    c.check(stale.is_empty(), || {
        format!("vectors of an item's earlier put still rank it: {stale:?}")
    })?;
    // Equal scores go to namespace and key order, also where the page cuts through them
    // (put in the reverse order).
    for key in ["t4", "t3", "t2", "t1", "t0"] {
        c.put(
            &["docs", "twins"],
            key,
            json!({"text": "safe rust programs"}),
        )
        .await?;
    }
    c.put(&["docs", "twins"], "other", json!({"text": "a ball"}))
        .await?;
    for (limit, offset, want) in [(2, 0, &["t0", "t1"][..]), (2, 3, &["t3", "t4"][..])] {
        let got = c
            .keys(
                SearchOp::new(c.ns(&["docs", "twins"]))
                    .query("safe rust programs")
                    .limit(limit)
                    .offset(offset),
            )
            .await?;
        c.check(got == want, || {
            format!("tied scores, limit {limit} offset {offset}: {got:?}, not {want:?}")
        })?;
    }
    Ok(())
}
