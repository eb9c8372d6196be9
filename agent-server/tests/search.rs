//! Searches, counts and lists answered by the database, over HTTP as clients meet them, on
//! SQLite and on PostgreSQL (when `AGENTGRAPH_POSTGRES_URL` is set): metadata filters
//! (LangGraph's top-level equality, scalars and not), values, status, ids, the orders, pages
//! and their headers (the total is every match), the side table kept through every write
//! (create, patch, runs, delete, stateless runs), owners who see only theirs (totals too),
//! assistants, crons, the runs of a thread, history pages, and files and databases made
//! before all this, migrated as they are opened.

mod common;

#[path = "../examples/reference/graphs.rs"]
#[allow(dead_code)]
mod graphs;

use std::sync::Arc;

use agent_server::ServerBuilder;
use agent_server::auth::{Builtin, Jwt, JwtKeys};
use jsonwebtoken::{Algorithm, EncodingKey, Header, encode};
use reqwest::Method;
use serde_json::{Value, json};

use common::served::Served;

/// A client with one credential (or none).
struct Client {
    api: Arc<Served>,
    bearer: Option<String>,
}

/// A page: its items and its pagination headers.
struct Page {
    items: Vec<Value>,
    total: Option<u64>,
    next: Option<u64>,
}

impl Page {
    fn ids(&self, key: &str) -> Vec<String> {
        self.items
            .iter()
            .map(|d| d[key].as_str().unwrap_or_default().to_owned())
            .collect()
    }
}

impl Client {
    async fn call(&self, method: Method, path: &str, body: Option<Value>) -> reqwest::Response {
        let mut req = self.api.http.request(method, self.api.url(path));
        if let Some(token) = &self.bearer {
            req = req.bearer_auth(token);
        }
        if let Some(b) = body {
            req = req.json(&b);
        }
        req.send().await.unwrap()
    }

    async fn ok(&self, method: Method, path: &str, body: Option<Value>) -> Value {
        let resp = self.call(method, path, body).await;
        let status = resp.status();
        let text = resp.text().await.unwrap();
        assert!(status.is_success(), "{path}: {status} {text}");
        serde_json::from_str(text.trim()).unwrap_or(Value::Null)
    }

    async fn post(&self, path: &str, body: Value) -> Value {
        self.ok(Method::POST, path, Some(body)).await
    }

    async fn page(&self, path: &str, body: Value) -> Page {
        let resp = self.call(Method::POST, path, Some(body.clone())).await;
        if !resp.status().is_success() {
            let status = resp.status();
            panic!("{path} {body}: {status} {}", resp.text().await.unwrap());
        }
        let header = |name: &str| {
            resp.headers()
                .get(name)
                .and_then(|v| v.to_str().ok())
                .and_then(|v| v.parse().ok())
        };
        let (total, next) = (header("x-pagination-total"), header("x-pagination-next"));
        let items = resp.json::<Value>().await.unwrap();
        Page {
            items: items.as_array().cloned().unwrap_or_default(),
            total,
            next,
        }
    }

    async fn count(&self, path: &str, body: Value) -> u64 {
        self.post(path, body).await.as_u64().unwrap()
    }

    async fn threads(&self, body: Value) -> Vec<String> {
        self.page("/threads/search", body).await.ids("thread_id")
    }
}

async fn serve(builder: ServerBuilder) -> Arc<Served> {
    Arc::new(Served::start(builder).await)
}

fn anonymous(api: &Arc<Served>) -> Client {
    Client {
        api: api.clone(),
        bearer: None,
    }
}

/// Filters, orders, pages and totals of threads, kept right through every kind of write.
async fn threads(api: &Arc<Served>) {
    let c = anonymous(api);
    let mut ids = Vec::new();
    for i in 0..12 {
        let t = c
            .post(
                "/threads",
                json!({"metadata": {"user": format!("u{}", i % 3), "i": i, "tags": ["t", i % 2]}}),
            )
            .await;
        ids.push(t["thread_id"].as_str().unwrap().to_owned());
    }
    let of = |is: &[usize]| is.iter().map(|&i| ids[i].clone()).collect::<Vec<_>>();
    let u1 = json!({"user": "u1"});

    // Newest first, ten by default; pages with the total of every match and the next offset.
    let page = c
        .page("/threads/search", json!({"metadata": u1, "limit": 3}))
        .await;
    assert_eq!(page.ids("thread_id"), of(&[10, 7, 4]));
    assert_eq!((page.total, page.next), (Some(4), Some(3)));
    let page = c
        .page(
            "/threads/search",
            json!({"metadata": u1, "limit": 3, "offset": 3}),
        )
        .await;
    assert_eq!(page.ids("thread_id"), of(&[1]));
    assert_eq!((page.total, page.next), (Some(4), None));
    assert_eq!(
        c.threads(json!({"metadata": u1, "limit": 3, "sort_order": "asc"}))
            .await,
        of(&[1, 4, 7])
    );
    let page = c.page("/threads/search", json!({"limit": 5})).await;
    assert_eq!(page.ids("thread_id"), of(&[11, 10, 9, 8, 7]));
    assert_eq!((page.total, page.next), (Some(12), Some(5)));
    assert_eq!(c.count("/threads/count", json!({"metadata": u1})).await, 4);
    assert_eq!(c.count("/threads/count", json!({})).await, 12);

    // LangGraph's containment: each key's value equal, whatever its type.
    assert_eq!(
        c.count("/threads/count", json!({"metadata": {"tags": ["t", 0]}}))
            .await,
        6
    );
    assert_eq!(
        c.count("/threads/count", json!({"metadata": {"tags": ["t"]}}))
            .await,
        0,
        "an array is equal, not contained"
    );
    assert_eq!(
        c.threads(json!({"metadata": {"i": 3}})).await,
        of(&[3]),
        "a number"
    );
    assert_eq!(
        c.count("/threads/count", json!({"metadata": {"i": "3"}}))
            .await,
        0,
        "a string is not a number"
    );
    assert_eq!(
        c.threads(json!({"metadata": {"user": "u1", "i": 4, "tags": ["t", 0]}}))
            .await,
        of(&[4])
    );
    assert_eq!(
        c.count("/threads/count", json!({"metadata": {"user": "nobody"}}))
            .await,
        0
    );
    let missing = uuid::Uuid::new_v4().to_string();
    assert_eq!(
        c.threads(json!({"metadata": u1, "ids": [ids[0], ids[4], ids[7], missing]}))
            .await,
        of(&[7, 4])
    );
    // An id that is not a UUID is refused, as langgraph-api's schema refuses it.
    let resp = c
        .call(
            Method::POST,
            "/threads/search",
            Some(json!({"ids": ["nope"]})),
        )
        .await;
    assert_eq!(resp.status(), 422);
    let mut sorted = of(&[1, 4, 7, 10]);
    sorted.sort();
    assert_eq!(
        c.threads(json!({"metadata": u1, "sort_by": "thread_id", "sort_order": "asc"}))
            .await,
        sorted
    );
    let selected = c
        .page(
            "/threads/search",
            json!({"metadata": u1, "limit": 1, "select": ["thread_id", "metadata"]}),
        )
        .await;
    let keys: Vec<&String> = selected.items[0].as_object().unwrap().keys().collect();
    assert_eq!(keys, ["metadata", "thread_id"]);

    // A patch moves a thread in the updated order and between metadata values.
    tokio::time::sleep(std::time::Duration::from_millis(5)).await;
    c.ok(
        Method::PATCH,
        &format!("/threads/{}", ids[4]),
        Some(json!({"metadata": {"user": "u9"}})),
    )
    .await;
    assert_eq!(c.threads(json!({"metadata": u1})).await, of(&[10, 7, 1]));
    assert_eq!(
        c.threads(json!({"metadata": {"user": "u9"}})).await,
        of(&[4])
    );
    assert_eq!(
        c.threads(json!({"sort_by": "updated_at", "limit": 1}))
            .await,
        of(&[4])
    );

    // Runs write values and status (and metadata: their graph).
    for i in [0, 3] {
        c.post(
            &format!("/threads/{}/runs/wait", ids[i]),
            json!({"assistant_id": "simple", "input": {"value": "a"}}),
        )
        .await;
    }
    c.post(
        &format!("/threads/{}/runs/wait", ids[0]),
        json!({"assistant_id": "simple", "input": {"value": "b"}}),
    )
    .await;
    c.post(
        &format!("/threads/{}/runs/wait", ids[6]),
        json!({"assistant_id": "agent", "input": {"messages": [{"role": "user", "content": "ask me"}]}}),
    )
    .await;
    assert_eq!(c.threads(json!({"values": {"value": "A"}})).await, of(&[3]));
    assert_eq!(
        c.threads(json!({"metadata": {"graph_id": "simple"}})).await,
        of(&[3, 0])
    );
    assert_eq!(c.threads(json!({"status": "interrupted"})).await, of(&[6]));
    assert_eq!(
        c.count("/threads/count", json!({"status": "idle"})).await,
        11
    );
    assert_eq!(
        c.threads(json!({"status": "idle", "metadata": {"user": "u0"}, "sort_by": "status"}))
            .await,
        of(&[9, 3, 0])
    );

    // The runs of a thread: newest first, by status, paged.
    let runs = c
        .ok(
            Method::GET,
            &format!("/threads/{}/runs?limit=1", ids[0]),
            None,
        )
        .await;
    let all = c
        .ok(Method::GET, &format!("/threads/{}/runs", ids[0]), None)
        .await;
    assert_eq!(all.as_array().unwrap().len(), 2);
    assert_eq!(runs[0]["run_id"], all[0]["run_id"]);
    let older = c
        .ok(
            Method::GET,
            &format!("/threads/{}/runs?offset=1&status=success", ids[0]),
            None,
        )
        .await;
    assert_eq!(older.as_array().unwrap().len(), 1);
    assert_eq!(older[0]["run_id"], all[1]["run_id"]);
    let none = c
        .ok(
            Method::GET,
            &format!("/threads/{}/runs?status=error", ids[0]),
            None,
        )
        .await;
    assert_eq!(none, json!([]));

    // History pages: `limit`, then `before` the last one seen.
    let every = c
        .ok(
            Method::GET,
            &format!("/threads/{}/history?limit=100", ids[0]),
            None,
        )
        .await;
    let every: Vec<Value> = every.as_array().unwrap().clone();
    assert!(every.len() >= 4, "{every:?}");
    let first = c
        .post(&format!("/threads/{}/history", ids[0]), json!({"limit": 2}))
        .await;
    assert_eq!(first.as_array().unwrap().len(), 2);
    assert_eq!(first[0]["checkpoint_id"], every[0]["checkpoint_id"]);
    let next = c
        .post(
            &format!("/threads/{}/history", ids[0]),
            json!({"limit": 2, "before": {"configurable": {"checkpoint_id": first[1]["checkpoint_id"]}}}),
        )
        .await;
    assert_eq!(next[0]["checkpoint_id"], every[2]["checkpoint_id"]);
    assert_eq!(next[1]["checkpoint_id"], every[3]["checkpoint_id"]);

    // Deletes, and a stateless run's thread that comes and goes.
    c.ok(Method::DELETE, &format!("/threads/{}", ids[10]), None)
        .await;
    c.post(
        "/runs/wait",
        json!({"assistant_id": "simple", "input": {"value": "x"}}),
    )
    .await;
    assert_eq!(c.threads(json!({"metadata": u1})).await, of(&[7, 1]));
    assert_eq!(c.count("/threads/count", json!({"metadata": u1})).await, 2);
    assert_eq!(c.count("/threads/count", json!({})).await, 11);

    // One user's count is kept, not counted: past a few hundred changes they are folded into
    // the sum (PostgreSQL), and the count is the same before and after.
    let bulk = json!({"user": "bulk"});
    let mut made = Vec::new();
    for _ in 0..210 {
        let t = c.post("/threads", json!({"metadata": bulk})).await;
        made.push(t["thread_id"].as_str().unwrap().to_owned());
    }
    assert_eq!(
        c.count("/threads/count", json!({"metadata": bulk})).await,
        210
    );
    assert_eq!(
        c.count("/threads/count", json!({"metadata": bulk})).await,
        210
    );
    c.ok(Method::DELETE, &format!("/threads/{}", made[0]), None)
        .await;
    c.ok(
        Method::PATCH,
        &format!("/threads/{}", made[1]),
        Some(json!({"metadata": {"user": "moved"}})),
    )
    .await;
    assert_eq!(
        c.count("/threads/count", json!({"metadata": bulk})).await,
        208
    );
    assert_eq!(
        c.count("/threads/count", json!({"metadata": {"user": "moved"}}))
            .await,
        1
    );
    for id in &made[1..] {
        c.ok(Method::DELETE, &format!("/threads/{id}"), None).await;
    }
    assert_eq!(
        c.count("/threads/count", json!({"metadata": bulk})).await,
        0
    );
    assert_eq!(c.count("/threads/count", json!({})).await, 11);
    let page = c.page("/threads/search", json!({"limit": 11})).await;
    assert_eq!((page.total, page.next), (Some(11), None));

    // Refused as before: an order a route does not have.
    let resp = c
        .call(
            Method::POST,
            "/threads/search",
            Some(json!({"sort_by": "values"})),
        )
        .await;
    assert_eq!(resp.status(), 422);
}

/// Assistants (the served graphs' own among them) and crons.
async fn assistants_and_crons(api: &Arc<Served>) {
    let c = anonymous(api);
    for (name, graph, team) in [
        ("Alpha Bot", "simple", "a"),
        ("beta", "agent", "b"),
        ("Gamma bot", "simple", "a"),
    ] {
        c.post(
            "/assistants",
            json!({"graph_id": graph, "name": name, "metadata": {"team": team}}),
        )
        .await;
    }
    let page = c.page("/assistants/search", json!({"limit": 2})).await;
    assert_eq!(page.ids("name"), ["Gamma bot", "beta"]);
    assert_eq!((page.total, page.next), (Some(5), Some(2)));
    assert_eq!(
        c.page(
            "/assistants/search",
            json!({"name": "BOT", "sort_by": "name", "sort_order": "asc"})
        )
        .await
        .ids("name"),
        ["Alpha Bot", "Gamma bot"]
    );
    assert_eq!(
        c.page(
            "/assistants/search",
            json!({"graph_id": "simple", "metadata": {"team": "a"}, "sort_order": "asc"})
        )
        .await
        .ids("name"),
        ["Alpha Bot", "Gamma bot"]
    );
    assert_eq!(
        c.count(
            "/assistants/count",
            json!({"metadata": {"created_by": "system"}})
        )
        .await,
        2
    );
    assert_eq!(c.count("/assistants/count", json!({})).await, 5);

    let thread = c.post("/threads", json!({})).await["thread_id"]
        .as_str()
        .unwrap()
        .to_owned();
    let on_thread = c
        .post(
            &format!("/threads/{thread}/runs/crons"),
            json!({"assistant_id": "simple", "schedule": "0 0 * * *", "input": {"value": "c"}}),
        )
        .await;
    for graph in ["simple", "agent"] {
        c.post(
            "/runs/crons",
            json!({"assistant_id": graph, "schedule": "0 0 * * *", "metadata": {"graph": graph}}),
        )
        .await;
    }
    let page = c
        .page("/runs/crons/search", json!({"assistant_id": "simple"}))
        .await;
    assert_eq!(page.items.len(), 2);
    assert_eq!(page.total, Some(2));
    assert_eq!(
        c.page("/runs/crons/search", json!({"thread_id": thread}))
            .await
            .ids("cron_id"),
        [on_thread["cron_id"].as_str().unwrap()]
    );
    assert_eq!(
        c.count("/runs/crons/count", json!({"metadata": {"graph": "agent"}}))
            .await,
        1
    );
    assert_eq!(c.count("/runs/crons/count", json!({})).await, 3);
    let asc = c
        .page(
            "/runs/crons/search",
            json!({"sort_by": "thread_id", "sort_order": "asc", "limit": 1}),
        )
        .await;
    assert_eq!(asc.items[0]["thread_id"], thread.as_str(), "nulls last");
    assert_eq!((asc.total, asc.next), (Some(3), Some(1)));
}

const SECRET: &[u8] = b"test-secret-test-secret-test-secret!";

fn user(api: &Arc<Served>, sub: &str) -> Client {
    let claims = json!({"sub": sub, "exp": jsonwebtoken::get_current_timestamp() + 600});
    let token = encode(
        &Header::new(Algorithm::HS256),
        &claims,
        &EncodingKey::from_secret(SECRET).unwrap(),
    )
    .unwrap();
    Client {
        api: api.clone(),
        bearer: Some(token),
    }
}

async fn with_auth(builder: ServerBuilder) -> ServerBuilder {
    builder.auth(Builtin::new().jwt(Jwt::new(JwtKeys::Secret(SECRET.to_vec())).await.unwrap()))
}

/// Owners see only theirs, and pages and totals count only theirs.
async fn owners(api: &Arc<Served>) {
    let (ada, bob) = (user(api, "ada"), user(api, "bob"));
    for (who, n) in [(&ada, 3), (&bob, 2)] {
        for i in 0..n {
            who.post("/threads", json!({"metadata": {"topic": "x", "i": i}}))
                .await;
        }
    }
    let page = ada
        .page(
            "/threads/search",
            json!({"metadata": {"topic": "x"}, "limit": 2}),
        )
        .await;
    assert_eq!(page.items.len(), 2);
    assert_eq!((page.total, page.next), (Some(3), Some(2)));
    assert!(page.items.iter().all(|t| t["metadata"]["owner"] == "ada"));
    let page = bob.page("/threads/search", json!({})).await;
    assert_eq!((page.items.len(), page.total), (2, Some(2)));
    assert_eq!(ada.count("/threads/count", json!({})).await, 3);
    assert_eq!(
        bob.count("/threads/count", json!({"metadata": {"i": 0}}))
            .await,
        1
    );
    assert_eq!(
        ada.count("/threads/count", json!({"metadata": {"owner": "bob"}}))
            .await,
        0,
        "another owner's filter finds nothing"
    );
    assert_eq!(
        ada.count("/threads/count", json!({"metadata": {"owner": "ada"}}))
            .await,
        3
    );

    ada.post("/assistants", json!({"graph_id": "simple", "name": "mine"}))
        .await;
    let page = bob.page("/assistants/search", json!({})).await;
    assert_eq!(page.total, Some(2), "the served graphs' own only");
    let page = ada.page("/assistants/search", json!({"limit": 1})).await;
    assert_eq!(page.ids("name"), ["mine"]);
    assert_eq!((page.total, page.next), (Some(3), Some(1)));
    assert_eq!(
        bob.count("/assistants/count", json!({"name": "mine"}))
            .await,
        0
    );

    ada.post(
        "/runs/crons",
        json!({"assistant_id": "simple", "schedule": "0 0 * * *"}),
    )
    .await;
    assert_eq!(ada.count("/runs/crons/count", json!({})).await, 1);
    assert_eq!(bob.count("/runs/crons/count", json!({})).await, 0);
    let page = bob.page("/runs/crons/search", json!({})).await;
    assert_eq!((page.items.len(), page.total), (0, Some(0)));
}

#[tokio::test]
async fn sqlite_searches_filter_sort_page_and_count_in_the_database() {
    let dir = std::env::temp_dir().join(format!("agentgraph-search-{}", uuid::Uuid::new_v4()));
    std::fs::create_dir_all(&dir).unwrap();
    let api = serve(graphs::server().sqlite(dir.join("api.sqlite"))).await;
    threads(&api).await;
    assistants_and_crons(&api).await;
    let api = serve(with_auth(graphs::server().sqlite(dir.join("auth.sqlite"))).await).await;
    owners(&api).await;
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test]
async fn postgres_searches_filter_sort_page_and_count_in_the_database() {
    let Some(url) = common::fresh_database("search").await else {
        return;
    };
    let api = serve(graphs::server().postgres(&url)).await;
    threads(&api).await;
    assistants_and_crons(&api).await;
    let Some(url) = common::fresh_database("search_auth").await else {
        return;
    };
    let api = serve(with_auth(graphs::server().postgres(&url)).await).await;
    owners(&api).await;
}

/// The run store's SQLite tables as they were before searches moved into the database.
const OLD_SQLITE: &str = "
CREATE TABLE api_assistants (assistant_id TEXT PRIMARY KEY, doc TEXT NOT NULL, seq INTEGER NOT NULL);
CREATE TABLE api_assistant_versions (assistant_id TEXT NOT NULL, version INTEGER NOT NULL, doc TEXT NOT NULL, PRIMARY KEY (assistant_id, version));
CREATE TABLE api_threads (thread_id TEXT PRIMARY KEY, doc TEXT NOT NULL, seq INTEGER NOT NULL);
CREATE TABLE api_runs (run_id TEXT PRIMARY KEY, thread_id TEXT NOT NULL, status TEXT NOT NULL, doc TEXT NOT NULL, seq INTEGER NOT NULL);
CREATE INDEX runs_by_thread ON api_runs (thread_id, seq);
CREATE INDEX runs_by_status ON api_runs (status, seq);
CREATE TABLE api_seq (n INTEGER NOT NULL);
CREATE TABLE api_crons (cron_id TEXT PRIMARY KEY, thread_id TEXT, next_run_ms INTEGER, doc TEXT NOT NULL, seq INTEGER NOT NULL);
CREATE INDEX crons_due ON api_crons (next_run_ms);
CREATE INDEX crons_by_thread ON api_crons (thread_id);
";

/// The run store's PostgreSQL tables as they were before.
const OLD_POSTGRES: &str = "
CREATE TABLE api_assistants (assistant_id TEXT PRIMARY KEY, doc TEXT NOT NULL, seq BIGSERIAL);
CREATE TABLE api_assistant_versions (assistant_id TEXT NOT NULL, version BIGINT NOT NULL, doc TEXT NOT NULL, PRIMARY KEY (assistant_id, version));
CREATE TABLE api_threads (thread_id TEXT PRIMARY KEY, doc TEXT NOT NULL, seq BIGSERIAL);
CREATE TABLE api_runs (run_id TEXT PRIMARY KEY, thread_id TEXT NOT NULL, status TEXT NOT NULL, doc TEXT NOT NULL, seq BIGSERIAL,
    owner TEXT, lease_until TIMESTAMPTZ, cancel TEXT);
CREATE TABLE api_crons (cron_id TEXT PRIMARY KEY, thread_id TEXT, next_run_ms BIGINT, doc TEXT NOT NULL, seq BIGSERIAL);
";

/// Threads as an older server wrote them: `u<i % 2>`, oldest first.
fn old_threads() -> Vec<Value> {
    (0..5)
        .map(|i| {
            json!({
                "thread_id": format!("00000000-0000-4000-8000-00000000000{i}"),
                "created_at": format!("2025-01-0{}T00:00:00.000+00:00", i + 1),
                "updated_at": format!("2025-01-0{}T00:00:00.000+00:00", i + 1),
                "state_updated_at": format!("2025-01-0{}T00:00:00.000+00:00", i + 1),
                "metadata": {"user": format!("u{}", i % 2), "nested": {"i": i}},
                "status": "idle", "config": {}, "values": null, "interrupts": {}, "error": null,
            })
        })
        .collect()
}

/// What a migrated store answers: the old threads found by their metadata, in order, with
/// their totals; new writes kept alongside.
async fn migrated(api: &Arc<Served>) {
    let c = anonymous(api);
    let old: Vec<String> = old_threads()
        .iter()
        .map(|t| t["thread_id"].as_str().unwrap().to_owned())
        .collect();
    let page = c
        .page("/threads/search", json!({"metadata": {"user": "u0"}}))
        .await;
    assert_eq!(page.ids("thread_id"), [old[4].as_str(), &old[2], &old[0]]);
    assert_eq!(page.total, Some(3));
    assert_eq!(c.count("/threads/count", json!({})).await, 5);
    assert_eq!(
        c.threads(json!({"metadata": {"nested": {"i": 3}}})).await,
        [old[3].as_str()]
    );
    assert_eq!(
        c.threads(json!({"sort_by": "created_at", "sort_order": "asc", "limit": 2}))
            .await,
        [old[0].as_str(), &old[1]]
    );
    let new = c
        .post("/threads", json!({"metadata": {"user": "u0"}}))
        .await;
    c.ok(Method::DELETE, &format!("/threads/{}", old[2]), None)
        .await;
    assert_eq!(
        c.threads(json!({"metadata": {"user": "u0"}})).await,
        [new["thread_id"].as_str().unwrap(), &old[4], &old[0]]
    );
    assert_eq!(c.count("/threads/count", json!({})).await, 5);
    assert_eq!(
        c.count(
            "/assistants/count",
            json!({"metadata": {"created_by": "system"}})
        )
        .await,
        2
    );
}

#[tokio::test]
async fn an_sqlite_file_from_before_is_migrated_as_it_opens() {
    let dir = std::env::temp_dir().join(format!("agentgraph-migrate-{}", uuid::Uuid::new_v4()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("old.sqlite");
    {
        let conn = rusqlite::Connection::open(&path).unwrap();
        conn.execute_batch(OLD_SQLITE).unwrap();
        for (seq, doc) in old_threads().iter().enumerate() {
            conn.execute(
                "INSERT INTO api_threads (thread_id, doc, seq) VALUES (?1, ?2, ?3)",
                rusqlite::params![doc["thread_id"].as_str(), doc.to_string(), seq as i64 + 1],
            )
            .unwrap();
        }
    }
    let api = serve(graphs::server().sqlite(&path)).await;
    migrated(&api).await;
    // Opened again (its triggers made again, its numbers counted again): the same answers.
    let api = serve(graphs::server().sqlite(&path)).await;
    let c = anonymous(&api);
    assert_eq!(c.count("/threads/count", json!({})).await, 5);
    assert_eq!(
        c.count("/threads/count", json!({"metadata": {"user": "u0"}}))
            .await,
        3
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test]
async fn a_postgres_database_from_before_is_migrated_as_it_opens() {
    let Some(url) = common::fresh_database("migrate").await else {
        return;
    };
    let (client, connection) = tokio_postgres::connect(&url, tokio_postgres::NoTls)
        .await
        .unwrap();
    tokio::spawn(connection);
    client.batch_execute(OLD_POSTGRES).await.unwrap();
    for doc in old_threads() {
        client
            .execute(
                "INSERT INTO api_threads (thread_id, doc) VALUES ($1, $2)",
                &[&doc["thread_id"].as_str(), &doc.to_string()],
            )
            .await
            .unwrap();
    }
    let api = serve(graphs::server().postgres(&url)).await;
    migrated(&api).await;
    let api = serve(graphs::server().postgres(&url)).await;
    let c = anonymous(&api);
    assert_eq!(c.count("/threads/count", json!({})).await, 5);
}
