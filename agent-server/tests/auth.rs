//! Safe on a network, over HTTP as clients meet it: users with JWTs and keys who own what
//! they create and cannot see or touch each other's threads, runs, crons, assistants or
//! store items; the operator's key that sees everything; tokens that do not hold (401);
//! permissions; pages from other origins and rebinding hosts refused; every limit a clear
//! 4xx; no environment value in an error.

mod common;

#[path = "../examples/reference/graphs.rs"]
#[allow(dead_code)]
mod graphs;

use std::sync::Arc;
use std::time::Duration;

use agent_core::{END, GraphState, START, StateGraph};
use agent_server::auth::{ApiKeys, Builtin, Jwt, JwtKeys};
use agent_server::{Limits, ServerBuilder};
use jsonwebtoken::{Algorithm, EncodingKey, Header, encode};
use reqwest::Method;
use serde_json::{Value, json};

use common::served::Served;

const SECRET: &[u8] = b"test-secret-test-secret-test-secret!";
const OPERATOR: &str = "operator-key-for-tests";

fn token(sub: &str, extra: Value) -> String {
    let mut claims = json!({"sub": sub, "exp": jsonwebtoken::get_current_timestamp() + 600});
    if let (Some(c), Some(e)) = (claims.as_object_mut(), extra.as_object()) {
        c.extend(e.clone());
    }
    encode(
        &Header::new(Algorithm::HS256),
        &claims,
        &EncodingKey::from_secret(SECRET).unwrap(),
    )
    .unwrap()
}

async fn auth() -> Builtin {
    Builtin::new()
        .keys(ApiKeys::operator(OPERATOR).unwrap())
        .jwt(Jwt::new(JwtKeys::Secret(SECRET.to_vec())).await.unwrap())
}

/// A client that sends one credential with every request.
struct As {
    api: Arc<Served>,
    header: (&'static str, String),
}

impl As {
    fn bearer(api: &Arc<Served>, sub: &str) -> As {
        As {
            api: api.clone(),
            header: ("authorization", format!("Bearer {}", token(sub, json!({})))),
        }
    }

    fn operator(api: &Arc<Served>) -> As {
        As {
            api: api.clone(),
            header: ("x-api-key", OPERATOR.to_owned()),
        }
    }

    async fn call(&self, method: Method, path: &str, body: Option<Value>) -> (u16, Value) {
        let mut req = self
            .api
            .http
            .request(method, self.api.url(path))
            .header(self.header.0, &self.header.1);
        if let Some(b) = body {
            req = req.json(&b);
        }
        let resp = req.send().await.unwrap();
        let status = resp.status().as_u16();
        let text = resp.text().await.unwrap();
        let value = serde_json::from_str(text.trim()).unwrap_or(Value::String(text));
        (status, value)
    }

    async fn get(&self, path: &str) -> (u16, Value) {
        self.call(Method::GET, path, None).await
    }

    async fn post(&self, path: &str, body: Value) -> (u16, Value) {
        self.call(Method::POST, path, Some(body)).await
    }

    async fn ok(&self, method: Method, path: &str, body: Option<Value>) -> Value {
        let (status, v) = self.call(method, path, body).await;
        assert!((200..300).contains(&status), "{path}: {status} {v}");
        v
    }

    async fn ids(&self, path: &str, key: &str) -> Vec<String> {
        let v = self
            .ok(Method::POST, path, Some(json!({"limit": 100})))
            .await;
        v.as_array()
            .unwrap()
            .iter()
            .map(|d| d[key].as_str().unwrap().to_owned())
            .collect()
    }
}

async fn serve(builder: ServerBuilder) -> Arc<Served> {
    Arc::new(Served::start(builder).await)
}

#[tokio::test]
async fn two_users_cannot_see_or_touch_each_others_data_and_the_operator_sees_both() {
    let api = serve(graphs::server().auth(auth().await)).await;
    let (ada, bob, op) = (
        As::bearer(&api, "ada"),
        As::bearer(&api, "bob"),
        As::operator(&api),
    );

    // Threads: what ada makes is hers, whatever owner she claims.
    let thread = ada
        .ok(
            Method::POST,
            "/threads",
            Some(json!({"metadata": {"owner": "bob", "topic": "x"}})),
        )
        .await;
    assert_eq!(thread["metadata"]["owner"], "ada");
    let t = thread["thread_id"].as_str().unwrap().to_owned();
    for (method, path, body) in [
        (Method::GET, format!("/threads/{t}"), None),
        (
            Method::PATCH,
            format!("/threads/{t}"),
            Some(json!({"metadata": {"owner": "bob"}})),
        ),
        (Method::GET, format!("/threads/{t}/state"), None),
        (Method::GET, format!("/threads/{t}/storage"), None),
        (
            Method::POST,
            format!("/threads/{t}/history"),
            Some(json!({})),
        ),
        (Method::POST, format!("/threads/{t}/copy"), Some(json!({}))),
        (
            Method::POST,
            format!("/threads/{t}/runs/wait"),
            Some(json!({"assistant_id": "simple", "input": {"value": "x"}})),
        ),
        (
            Method::POST,
            format!("/threads/{t}/runs/crons"),
            Some(json!({"assistant_id": "simple", "schedule": "0 0 * * *"})),
        ),
        (Method::GET, format!("/threads/{t}/runs"), None),
        (Method::DELETE, format!("/threads/{t}"), None),
    ] {
        let (status, v) = bob.call(method.clone(), &path, body).await;
        assert_eq!(status, 404, "bob {method} {path}: {v}");
    }
    assert_eq!(ada.get(&format!("/threads/{t}/storage")).await.0, 200);
    let (status, _) = bob
        .post(
            "/threads",
            json!({"thread_id": t, "if_exists": "do_nothing"}),
        )
        .await;
    assert_eq!(status, 409, "bob cannot take ada's thread id");
    assert!(bob.ids("/threads/search", "thread_id").await.is_empty());
    assert_eq!(bob.post("/threads/count", json!({})).await.1, 0);
    assert_eq!(
        ada.ids("/threads/search", "thread_id").await,
        vec![t.clone()]
    );

    // Runs: ada's run on her thread, its user handed to the graph; bob cannot see it or
    // cancel it, even by status.
    let out = ada
        .ok(
            Method::POST,
            &format!("/threads/{t}/runs/wait"),
            Some(json!({"assistant_id": "simple", "input": {"value": "hi"}})),
        )
        .await;
    assert_eq!(out["value"], "HI");
    let runs = ada
        .ok(Method::GET, &format!("/threads/{t}/runs"), None)
        .await;
    let run = &runs[0];
    let r = run["run_id"].as_str().unwrap();
    let user = &run["kwargs"]["config"]["configurable"]["langgraph_auth_user"];
    assert_eq!(user["identity"], "ada", "{run}");
    assert_eq!(run["metadata"]["owner"], "ada");
    assert_eq!(bob.get(&format!("/threads/{t}/runs/{r}")).await.0, 404);
    assert_eq!(bob.get(&format!("/threads/{t}/runs/{r}/join")).await.0, 404);
    assert_eq!(
        bob.call(Method::POST, &format!("/threads/{t}/runs/{r}/cancel"), None)
            .await
            .0,
        404
    );
    // A client cannot claim to be someone: the key is the server's to set.
    let (status, v) = bob
        .post(
            "/runs/wait",
            json!({"assistant_id": "agent", "input": {}, "context": {"langgraph_auth_user": {"identity": "ada"}}}),
        )
        .await;
    assert_eq!(status, 422, "{v}");
    assert!(
        v["detail"]
            .as_str()
            .unwrap()
            .contains("langgraph_auth_user")
    );
    let (status, _) = bob
        .post(
            "/runs/wait",
            json!({"assistant_id": "simple", "input": {"value": "x"}, "config": {"configurable": {"langgraph_auth_user": {"identity": "ada"}}}}),
        )
        .await;
    assert_eq!(status, 422);

    // Crons.
    let cron = ada
        .ok(
            Method::POST,
            "/runs/crons",
            Some(
                json!({"assistant_id": "simple", "schedule": "0 0 * * *", "input": {"value": "x"}}),
            ),
        )
        .await;
    assert_eq!(cron["user_id"], "ada");
    assert!(cron.get("auth_user").is_none(), "{cron}");
    let c = cron["cron_id"].as_str().unwrap();
    assert_eq!(bob.get(&format!("/runs/crons/{c}")).await.0, 404);
    assert_eq!(
        bob.call(Method::DELETE, &format!("/runs/crons/{c}"), None)
            .await
            .0,
        404
    );
    assert!(bob.ids("/runs/crons/search", "cron_id").await.is_empty());
    assert_eq!(
        ada.ids("/runs/crons/search", "cron_id").await,
        vec![c.to_owned()]
    );

    // Assistants: the graphs' own are everyone's to read and the operator's to change.
    let mine = ada
        .ok(
            Method::POST,
            "/assistants",
            Some(json!({"graph_id": "simple", "name": "ada's"})),
        )
        .await;
    let a = mine["assistant_id"].as_str().unwrap();
    assert_eq!(bob.get(&format!("/assistants/{a}")).await.0, 404);
    let bobs = bob.ids("/assistants/search", "assistant_id").await;
    assert_eq!(bobs.len(), 2, "bob sees the two graphs' assistants only");
    assert!(!bobs.contains(&a.to_owned()));
    let system = &bobs[0];
    let (status, v) = bob
        .call(
            Method::PATCH,
            &format!("/assistants/{system}"),
            Some(json!({"name": "mine now"})),
        )
        .await;
    assert_eq!(status, 403, "{v}");
    let (status, _) = bob
        .post(
            "/runs/wait",
            json!({"assistant_id": a, "input": {"value": "x"}}),
        )
        .await;
    assert_eq!(status, 404, "bob cannot run ada's assistant");

    // The store: namespaces start with the identity.
    let put = |ns: Value| json!({"namespace": ns, "key": "k", "value": {"text": "ada's note"}});
    assert_eq!(
        ada.call(
            Method::PUT,
            "/store/items",
            Some(put(json!(["ada", "notes"])))
        )
        .await
        .0,
        204
    );
    let (status, v) = ada
        .call(
            Method::PUT,
            "/store/items",
            Some(put(json!(["bob", "notes"]))),
        )
        .await;
    assert_eq!(status, 403, "{v}");
    let found = ada
        .ok(Method::POST, "/store/items/search", Some(json!({})))
        .await;
    assert_eq!(found["items"].as_array().unwrap().len(), 1);
    let (status, _) = bob
        .post("/store/items/search", json!({"namespace_prefix": ["ada"]}))
        .await;
    assert_eq!(status, 403);
    let empty = bob
        .ok(Method::POST, "/store/items/search", Some(json!({})))
        .await;
    assert!(empty["items"].as_array().unwrap().is_empty());
    assert_eq!(
        bob.get("/store/items?namespace=ada.notes&key=k").await.0,
        403
    );
    let spaces = bob
        .ok(Method::POST, "/store/namespaces", Some(json!({})))
        .await;
    assert!(spaces["namespaces"].as_array().unwrap().is_empty());

    // The operator sees both users' things.
    let (bobs_thread, _) = bob.post("/threads", json!({})).await;
    assert_eq!(bobs_thread, 200);
    assert_eq!(op.ids("/threads/search", "thread_id").await.len(), 2);
    assert_eq!(op.get(&format!("/threads/{t}")).await.0, 200);
    assert_eq!(op.ids("/runs/crons/search", "cron_id").await.len(), 1);
    let all = op
        .ok(Method::POST, "/store/items/search", Some(json!({})))
        .await;
    assert_eq!(all["items"].as_array().unwrap().len(), 1);
}

#[tokio::test]
async fn credentials_that_do_not_hold_are_401() {
    let api = serve(graphs::server().auth(auth().await)).await;
    let forged = encode(
        &Header::new(Algorithm::HS256),
        &json!({"sub": "ada", "exp": jsonwebtoken::get_current_timestamp() + 600}),
        &EncodingKey::from_secret(b"not-the-servers-secret-at-all-no!").unwrap(),
    )
    .unwrap();
    let expired = token(
        "ada",
        json!({"exp": jsonwebtoken::get_current_timestamp() - 3600}),
    );
    let no_exp = encode(
        &Header::new(Algorithm::HS256),
        &json!({"sub": "ada"}),
        &EncodingKey::from_secret(SECRET).unwrap(),
    )
    .unwrap();
    for (header, value, says) in [
        ("authorization", format!("Bearer {forged}"), "signature"),
        ("authorization", format!("Bearer {expired}"), "expired"),
        ("authorization", format!("Bearer {no_exp}"), "exp"),
        ("authorization", "Bearer not.a.jwt".to_owned(), "JWT"),
        ("authorization", "Basic YWRhOmFkYQ==".to_owned(), "Missing"),
        ("x-api-key", "wrong".to_owned(), "Wrong API key"),
        ("x-api-key", String::new(), "Wrong API key"),
    ] {
        let resp = api
            .http
            .post(api.url("/threads/search"))
            .header(header, &value)
            .json(&json!({}))
            .send()
            .await
            .unwrap();
        assert_eq!(resp.status(), 401, "{header}: {value}");
        assert_eq!(resp.headers()["www-authenticate"], "Bearer");
        let body: Value = resp.json().await.unwrap();
        assert!(
            body["detail"].as_str().unwrap().contains(says),
            "{header} {value}: {body}"
        );
    }
    let (status, _) = api.post("/threads/search", json!({})).await;
    assert_eq!(status, 401, "no credential at all");
    assert_eq!(api.get("/ok").await.0, 200, "health checks need none");
}

#[tokio::test]
async fn permissions_in_the_servers_vocabulary_are_enforced() {
    let api = serve(graphs::server().auth(auth().await)).await;
    let reader = As {
        api: api.clone(),
        header: (
            "authorization",
            format!(
                "Bearer {}",
                token(
                    "rita",
                    json!({"permissions": ["threads:read", "store:read"]})
                )
            ),
        ),
    };
    assert_eq!(reader.post("/threads/search", json!({})).await.0, 200);
    let (status, v) = reader.post("/threads", json!({})).await;
    assert_eq!(status, 403, "{v}");
    assert!(
        v["detail"].as_str().unwrap().contains("threads:write"),
        "{v}"
    );
    assert_eq!(
        reader
            .post("/runs/wait", json!({"assistant_id": "simple", "input": {}}))
            .await
            .0,
        403
    );
    assert_eq!(
        reader
            .call(
                Method::PUT,
                "/store/items",
                Some(json!({"namespace": ["rita"], "key": "k", "value": {}}))
            )
            .await
            .0,
        403
    );
    assert_eq!(reader.post("/store/items/search", json!({})).await.0, 200);
    assert_eq!(reader.post("/runs/crons/search", json!({})).await.0, 403);
    // OAuth scopes that are not the server's restrict nothing.
    let oidc = As {
        api: api.clone(),
        header: (
            "authorization",
            format!(
                "Bearer {}",
                token("olga", json!({"scope": "openid profile"}))
            ),
        ),
    };
    assert_eq!(oidc.post("/threads", json!({})).await.0, 200);
}

#[tokio::test]
async fn a_keys_file_names_users_and_is_read_again_when_it_changes() {
    let dir = std::env::temp_dir().join(format!("agentgraph-keys-{}", uuid::Uuid::new_v4()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("keys.toml");
    std::fs::write(
        &path,
        "[[key]]\nkey = \"ada-key\"\nidentity = \"ada\"\n\n[[key]]\nkey = \"ops-key\"\nidentity = \"ops\"\noperator = true\n",
    )
    .unwrap();
    let keys = ApiKeys::file(&path).await.unwrap();
    let api = serve(graphs::server().auth(Builtin::new().keys(keys))).await;
    let key = |k: &str| As {
        api: api.clone(),
        header: ("x-api-key", k.to_owned()),
    };
    let t = key("ada-key")
        .ok(Method::POST, "/threads", Some(json!({})))
        .await;
    assert_eq!(t["metadata"]["owner"], "ada");
    assert_eq!(
        key("ops-key")
            .ids("/threads/search", "thread_id")
            .await
            .len(),
        1
    );
    std::fs::write(
        &path,
        "[[key]]\nkey = \"ops-key\"\nidentity = \"ops\"\noperator = true\n",
    )
    .unwrap();
    let mut revoked = false;
    for _ in 0..40 {
        if key("ada-key").post("/threads/search", json!({})).await.0 == 401 {
            revoked = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(revoked, "a key taken out of the file stops working");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[tokio::test]
async fn an_empty_api_key_does_not_start_a_server() {
    let e = graphs::server().api_key("").build().await.err().unwrap();
    assert!(e.to_string().contains("empty"), "{e}");
}

#[tokio::test]
async fn pages_from_other_origins_and_rebinding_hosts_are_refused() {
    let api = serve(graphs::server()).await;
    let send = |origin: Option<&str>, host: Option<&str>, path: &str| {
        let mut req = api
            .http
            .post(api.url(path))
            .header("content-type", "text/plain")
            .body("{}");
        if let Some(o) = origin {
            req = req.header("origin", o);
        }
        if let Some(h) = host {
            req = req.header("host", h);
        }
        req.send()
    };
    // A simple cross-origin POST (text/plain, no preflight) from a page elsewhere.
    let resp = send(Some("https://evil.example"), None, "/threads/search")
        .await
        .unwrap();
    assert_eq!(resp.status(), 403);
    assert!(resp.headers().get("access-control-allow-origin").is_none());
    // Studio, a local dev server, and the server's own page are allowed.
    for origin in [
        "https://smith.langchain.com".to_owned(),
        "http://localhost:5173".to_owned(),
        api.base.clone(),
    ] {
        let resp = send(Some(&origin), None, "/threads/search").await.unwrap();
        assert_eq!(resp.status(), 200, "{origin}");
        assert_eq!(
            resp.headers()["access-control-allow-origin"],
            origin.as_str()
        );
    }
    // A preflight from elsewhere gets no CORS grant.
    let pre = api
        .http
        .request(Method::OPTIONS, api.url("/threads"))
        .header("origin", "https://evil.example")
        .header("access-control-request-method", "POST")
        .send()
        .await
        .unwrap();
    assert!(pre.headers().get("access-control-allow-origin").is_none());
    // DNS rebinding: a keyless loopback server answers loopback names only, /mcp too.
    for path in ["/threads/search", "/mcp", "/ok"] {
        let resp = send(None, Some("evil.example:2024"), path).await.unwrap();
        assert_eq!(resp.status(), 403, "{path}");
    }
    let resp = send(None, Some("localhost:2024"), "/threads/search")
        .await
        .unwrap();
    assert_eq!(resp.status(), 200);

    // With auth, any host may be served (a rebinding page holds no credential), and an
    // explicit list of origins replaces the default.
    let open = serve(
        graphs::server()
            .auth(auth().await)
            .cors_allow_origins(["https://app.example.com"]),
    )
    .await;
    let op = |origin: &str| {
        open.http
            .post(open.url("/threads/search"))
            .header("x-api-key", OPERATOR)
            .header("host", "agents.example.com")
            .header("origin", origin)
            .json(&json!({}))
            .send()
    };
    assert_eq!(op("https://app.example.com").await.unwrap().status(), 200);
    assert_eq!(
        op("https://smith.langchain.com").await.unwrap().status(),
        403
    );

    // Any origin only when `*` is written: then a text/plain page from anywhere is served.
    let star = serve(graphs::server().cors_allow_origins(["*"])).await;
    let resp = star
        .http
        .post(star.url("/threads/search"))
        .header("content-type", "text/plain")
        .header("origin", "https://evil.example")
        .body("{}")
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 200);
    assert!(
        resp.headers().get("access-control-allow-origin").is_some(),
        "{:?}",
        resp.headers()
    );
}

/// Every limit is a clear 4xx.
#[tokio::test]
async fn every_limit_is_a_clear_4xx() {
    let limits = Limits {
        batch_runs: 2,
        recursion_limit: 50,
        queued_runs_per_thread: 2,
        streams_per_user: 1,
        crons_per_user: 1,
        webhooks_in_flight: 0,
        metadata_bytes: 100,
        ..Limits::default()
    };
    let api = serve(
        graphs::server()
            .graph("slow", graphs::slow())
            .limits(limits),
    )
    .await;
    let detail = |v: &Value| v["detail"].as_str().unwrap_or_default().to_owned();

    let (status, v) = api.post("/threads/search", json!({"limit": 1001})).await;
    assert_eq!(status, 422, "{v}");
    assert!(detail(&v).contains("1000"));
    let (status, _) = api
        .post("/threads/search", json!({"limit": 10, "offset": u64::MAX}))
        .await;
    assert_eq!(status, 422);
    let run = json!({"assistant_id": "simple", "input": {"value": "x"}});
    let (status, v) = api.post("/runs/batch", json!([run, run, run])).await;
    assert_eq!(status, 422, "{v}");
    assert!(detail(&v).contains("at most 2"));
    let (status, v) = api
        .post(
            "/runs/wait",
            json!({"assistant_id": "simple", "input": {"value": "x"}, "config": {"recursion_limit": 51}}),
        )
        .await;
    assert_eq!(status, 422, "{v}");
    assert!(detail(&v).contains("1 to 50"));
    let big = json!({"k": "x".repeat(200)});
    for (path, body) in [
        ("/threads", json!({"metadata": big})),
        (
            "/assistants",
            json!({"graph_id": "simple", "metadata": big}),
        ),
        (
            "/runs",
            json!({"assistant_id": "simple", "input": {}, "metadata": big}),
        ),
        (
            "/runs/crons",
            json!({"assistant_id": "simple", "schedule": "0 0 * * *", "metadata": big}),
        ),
    ] {
        let (status, v) = api.post(path, body).await;
        assert_eq!(status, 422, "{path}: {v}");
        assert!(detail(&v).contains("metadata"), "{v}");
    }
    let (status, v) = api
        .post(
            "/runs",
            json!({"assistant_id": "simple", "input": {}, "webhook": "https://93.184.215.14/hook"}),
        )
        .await;
    assert_eq!(status, 429, "{v}");

    // Crons per user.
    let cron = json!({"assistant_id": "simple", "schedule": "0 0 * * *"});
    assert_eq!(api.post("/runs/crons", cron.clone()).await.0, 200);
    let (status, v) = api.post("/runs/crons", cron).await;
    assert_eq!(status, 429, "{v}");

    // Queued runs per thread: one running (slow), two waiting, the third refused.
    let (_, t) = api.post("/threads", json!({})).await;
    let t = t["thread_id"].as_str().unwrap();
    let slow = json!({"assistant_id": "slow", "input": {"seconds": 30.0}, "multitask_strategy": "enqueue"});
    let mut statuses = Vec::new();
    for _ in 0..4 {
        statuses.push(
            api.post(&format!("/threads/{t}/runs"), slow.clone())
                .await
                .0,
        );
    }
    assert_eq!(statuses, [200, 200, 200, 429]);

    // Open streams per user: a second stream while one is open is refused.
    let first = api
        .http
        .get(api.url(&format!("/threads/{t}/stream")))
        .send()
        .await
        .unwrap();
    assert_eq!(first.status(), 200);
    let (status, v) = api
        .post(
            "/runs/stream",
            json!({"assistant_id": "simple", "input": {"value": "x"}}),
        )
        .await;
    assert_eq!(status, 429, "{v}");
    drop(first);
    let mut freed = false;
    for _ in 0..50 {
        let (status, _) = api
            .post(
                "/runs/stream",
                json!({"assistant_id": "simple", "input": {"value": "x"}}),
            )
            .await;
        if status == 200 {
            freed = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(freed, "a closed stream gives its place back");
    api.post("/runs/cancel?action=interrupt", json!({"status": "all"}))
        .await;
}

/// A graph whose node fails quoting a value of the server's environment (as a provider's
/// connection error quotes its base URL).
#[derive(GraphState, Clone, Default, Debug)]
struct Leaky {
    out: String,
}

#[tokio::test]
async fn no_environment_value_reaches_a_client_in_an_error() {
    let secret = std::env::var("PATH").unwrap();
    let leaky = StateGraph::<Leaky>::new()
        .add_node("leak", |_s: Arc<Leaky>| async move {
            let path = std::env::var("PATH").unwrap_or_default();
            Err::<LeakyUpdate, _>(agent_core::BoxError::from(format!(
                "cannot reach http://model.internal/?path={path}"
            )))
        })
        .add_edge(START, "leak")
        .add_edge("leak", END);
    let api = serve(
        graphs::server()
            .graph("leaky", leaky)
            .allow_private_webhooks(true),
    )
    .await;
    let (_, out) = api
        .post("/runs/wait", json!({"assistant_id": "leaky", "input": {}}))
        .await;
    let text = out.to_string();
    assert!(text.contains("cannot reach"), "{text}");
    assert!(text.contains("[redacted]"), "{text}");
    assert!(!text.contains(&secret), "{text}");
    let resp = api
        .http
        .post(api.url("/runs/stream"))
        .json(&json!({"assistant_id": "leaky", "input": {}}))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(resp.contains("event: error"), "{resp}");
    assert!(!resp.contains(&secret), "{resp}");

    // An MCP tool call's `isError` result.
    let mcp = api
        .http
        .post(api.url("/mcp"))
        .header("accept", "application/json, text/event-stream")
        .json(&json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                      "params": {"name": "leaky", "arguments": {}}}))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(
        mcp.contains("isError") && mcp.contains("cannot reach"),
        "{mcp}"
    );
    assert!(!mcp.contains(&secret), "{mcp}");

    // A webhook's payload.
    let got: Arc<std::sync::Mutex<Vec<String>>> = Arc::default();
    let seen = got.clone();
    let hook = axum::Router::new().route(
        "/hook",
        axum::routing::post(move |body: String| {
            let seen = seen.clone();
            async move { seen.lock().unwrap().push(body) }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let hook_url = format!("http://{}/hook", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, hook).await.unwrap() });
    api.post(
        "/runs/wait",
        json!({"assistant_id": "leaky", "input": {}, "webhook": hook_url}),
    )
    .await;
    let mut delivered = Vec::new();
    for _ in 0..100 {
        delivered = got.lock().unwrap().clone();
        if !delivered.is_empty() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let payload = delivered.first().expect("the webhook was delivered");
    assert!(payload.contains("cannot reach"), "{payload}");
    assert!(!payload.contains(&secret), "{payload}");
}

/// The `whoami` graph's state: who the run was for, as its typed context said.
#[derive(GraphState, Clone, Default, Debug)]
struct Whoami {
    who: String,
}

/// A typed context that declares the caller: the server fills it in, a client cannot.
#[derive(Clone, Debug, Default, serde::Deserialize, schemars::JsonSchema)]
struct WhoContext {
    langgraph_auth_user: Option<Value>,
}

/// The authenticated user reaches a graph's typed runtime (`rt.context()`), the identity of
/// the credential, never one a request claims.
#[tokio::test]
async fn the_user_reaches_the_typed_runtime() {
    let whoami = StateGraph::<Whoami, WhoContext>::with_context_type()
        .add_node(
            "who",
            |_s: Arc<Whoami>, rt: agent_core::Runtime<WhoContext>| async move {
                let user = rt.context().langgraph_auth_user.clone();
                let who = user
                    .as_ref()
                    .and_then(|u| u["identity"].as_str())
                    .unwrap_or("nobody");
                WhoamiUpdate::default().who(who.to_owned())
            },
        )
        .add_edge(START, "who")
        .add_edge("who", END);
    let api = serve(graphs::server().graph("whoami", whoami).auth(auth().await)).await;
    let ada = As::bearer(&api, "ada");
    let out = ada
        .ok(
            Method::POST,
            "/runs/wait",
            Some(json!({"assistant_id": "whoami", "input": {}})),
        )
        .await;
    assert_eq!(out["who"], "ada", "{out}");
    let (status, v) = ada
        .post(
            "/runs/wait",
            json!({"assistant_id": "whoami", "input": {},
                   "context": {"langgraph_auth_user": {"identity": "bob"}}}),
        )
        .await;
    assert_eq!(status, 422, "{v}");
    let out = As::operator(&api)
        .ok(
            Method::POST,
            "/runs/wait",
            Some(json!({"assistant_id": "whoami", "input": {}})),
        )
        .await;
    assert_ne!(out["who"], "nobody", "the operator is a user too: {out}");
}

/// Tokens signed by an identity provider (RS256 and ES256, its public keys in a JWKS file)
/// with the issuer and audience the server expects: each names its user over HTTP; another
/// issuer, another audience or a token without `exp` is a 401.
#[tokio::test]
async fn jwks_tokens_with_issuer_and_audience_over_http() {
    let dir = std::env::temp_dir().join(format!("agentgraph-jwks-http-{}", uuid::Uuid::new_v4()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("jwks.json");
    std::fs::write(&path, include_str!("fixtures/jwt/jwks.json")).unwrap();
    let jwt = Jwt::new(JwtKeys::Jwks(path))
        .await
        .unwrap()
        .issuer("https://idp.example")
        .audience("agents");
    let api = serve(graphs::server().auth(Builtin::new().jwt(jwt))).await;
    let es = include_str!("fixtures/jwt/es256.pem");
    let rs = include_str!("fixtures/jwt/rs256.pem");
    let sign = |alg: Algorithm, kid: &str, claims: Value| {
        let mut header = Header::new(alg);
        header.kid = Some(kid.to_owned());
        let key = match alg {
            Algorithm::ES256 => EncodingKey::from_ec_pem(es.as_bytes()),
            _ => EncodingKey::from_rsa_pem(rs.as_bytes()),
        }
        .unwrap();
        encode(&header, &claims, &key).unwrap()
    };
    let exp = jsonwebtoken::get_current_timestamp() + 600;
    let good =
        |sub: &str| json!({"sub": sub, "exp": exp, "iss": "https://idp.example", "aud": "agents"});
    let create = |token: String| {
        api.http
            .post(api.url("/threads"))
            .bearer_auth(token)
            .json(&json!({}))
            .send()
    };
    for (alg, kid, sub) in [
        (Algorithm::ES256, "test-es256", "ada"),
        (Algorithm::RS256, "test-rs256", "bob"),
    ] {
        let resp = create(sign(alg, kid, good(sub))).await.unwrap();
        assert_eq!(resp.status(), 200, "{kid}");
        let thread: Value = resp.json().await.unwrap();
        assert_eq!(thread["metadata"]["owner"], sub, "{thread}");
    }
    let mut other_issuer = good("ada");
    other_issuer["iss"] = json!("https://evil.example");
    let mut other_audience = good("ada");
    other_audience["aud"] = json!("someone-else");
    let mut no_exp = good("ada");
    no_exp.as_object_mut().unwrap().remove("exp");
    for (what, claims) in [
        ("issuer", other_issuer),
        ("audience", other_audience),
        ("exp", no_exp),
    ] {
        let resp = create(sign(Algorithm::ES256, "test-es256", claims))
            .await
            .unwrap();
        assert_eq!(resp.status(), 401, "{what}");
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A custom [`agent_server::Auth`], as langgraph-api's `@auth.authenticate` + `@auth.on`:
/// users in teams (`x-user`, `x-team`), who share what their team makes; deleting a thread
/// is for no one.
struct Teams;

#[async_trait::async_trait]
impl agent_server::Auth for Teams {
    async fn authenticate(
        &self,
        request: &agent_server::auth::AuthRequest<'_>,
    ) -> Result<agent_server::User, agent_server::auth::AuthError> {
        let header = |name: &str| {
            request
                .headers
                .get(name)
                .and_then(|v| v.to_str().ok())
                .map(str::to_owned)
        };
        let (Some(user), Some(team)) = (header("x-user"), header("x-team")) else {
            return Err(agent_server::auth::AuthError::Unauthorized(
                "say who you are".into(),
            ));
        };
        let mut u = agent_server::User::new(user);
        u.claims.insert("team".into(), team.into());
        Ok(u)
    }

    async fn authorize(
        &self,
        user: &agent_server::User,
        action: &agent_server::auth::Action<'_>,
    ) -> agent_server::auth::Decision {
        use agent_server::auth::{Decision, Resource, Scope, Verb};
        if (action.resource, action.verb) == (Resource::Threads, Verb::Delete) {
            return Decision::Deny;
        }
        let team = user.claims["team"].as_str().unwrap_or_default().to_owned();
        let mut scope = Scope {
            namespace: vec![team.clone()],
            ..Scope::default()
        };
        scope.metadata.insert("team".into(), team.into());
        Decision::Scope(scope)
    }
}

/// A custom Auth over HTTP: its users, its scope's metadata stamped and filtered, its
/// denial a 403, its refusal a 401, its user in the graph's `langgraph_auth_user`.
#[tokio::test]
async fn a_custom_auth_scopes_and_denies_over_http() {
    let api = serve(graphs::server().auth(Teams)).await;
    let call = |user: &str, team: &str, method: Method, path: &str, body: Option<Value>| {
        let mut req = api
            .http
            .request(method, api.url(path))
            .header("x-user", user)
            .header("x-team", team);
        if let Some(b) = body {
            req = req.json(&b);
        }
        async move {
            let resp = req.send().await.unwrap();
            let status = resp.status().as_u16();
            (status, resp.json::<Value>().await.unwrap_or(Value::Null))
        }
    };
    let (status, thread) = call("alice", "red", Method::POST, "/threads", Some(json!({}))).await;
    assert_eq!(status, 200, "{thread}");
    assert_eq!(thread["metadata"]["team"], "red", "{thread}");
    let t = thread["thread_id"].as_str().unwrap();
    let path = format!("/threads/{t}");
    assert_eq!(call("carol", "red", Method::GET, &path, None).await.0, 200);
    assert_eq!(call("bob", "blue", Method::GET, &path, None).await.0, 404);
    let (_, count) = call(
        "bob",
        "blue",
        Method::POST,
        "/threads/count",
        Some(json!({})),
    )
    .await;
    assert_eq!(count, 0);
    assert_eq!(
        call("alice", "red", Method::DELETE, &path, None).await.0,
        403
    );
    let (status, _) = api.post("/threads/search", json!({})).await;
    assert_eq!(status, 401);
    let (status, out) = call(
        "carol",
        "red",
        Method::POST,
        &format!("{path}/runs/wait"),
        Some(json!({"assistant_id": "simple", "input": {"value": "hi"}})),
    )
    .await;
    assert_eq!(status, 200, "{out}");
    let (_, runs) = call("carol", "red", Method::GET, &format!("{path}/runs"), None).await;
    let user = &runs[0]["kwargs"]["config"]["configurable"]["langgraph_auth_user"];
    assert_eq!(user["identity"], "carol", "{runs}");
    assert_eq!(user["team"], "red", "{runs}");
    let (status, _) = call(
        "bob",
        "blue",
        Method::PUT,
        "/store/items",
        Some(json!({"namespace": ["red", "notes"], "key": "k", "value": {"x": 1}})),
    )
    .await;
    assert_eq!(status, 403, "another team's namespace");
}
