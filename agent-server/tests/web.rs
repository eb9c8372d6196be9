//! The web page beside the API: `/` is the page for a browser and `{"ok": true}` for an API
//! client, the page's files carry their types, an ETag and `no-cache`, an API key does not
//! hide the page (it holds no data) but still guards the API, and `web_page(false)` turns
//! the page off. In a browser (headless Chromium): the reference `agent` graph drawn with its
//! subgraph boxed, its `interrupt()` answered from the page's form (`command.resume`), a
//! failing run's error shown, Stop cancelling a run, and the API key asked for and sent.
//! `agent-flows/tests/web_page.rs` drives the page over the five seed flows.

mod browser;
mod common;

#[path = "../examples/reference/graphs.rs"]
#[allow(dead_code)]
mod graphs;

use browser::{Browser, click, css, shot, type_in, until};
use fantoccini::key::Key;

use reqwest::header::{ACCEPT, CACHE_CONTROL, CONTENT_TYPE, ETAG, IF_NONE_MATCH};
use serde_json::{Value, json};

async fn start(builder: agent_server::ServerBuilder) -> String {
    common::served::Served::start(builder).await.base
}

#[tokio::test]
async fn browsers_get_the_page_and_clients_get_json() {
    let base = start(graphs::server()).await;
    let http = reqwest::Client::new();
    let page = http
        .get(format!("{base}/"))
        .header(ACCEPT, "text/html,application/xhtml+xml,*/*;q=0.8")
        .send()
        .await
        .unwrap();
    assert_eq!(page.status(), 200);
    assert_eq!(page.headers()[CONTENT_TYPE], "text/html; charset=utf-8");
    assert_eq!(page.headers()[CACHE_CONTROL], "no-cache");
    let html = page.text().await.unwrap();
    assert!(html.contains("/ui/app.js"), "{html}");

    let ok: Value = http
        .get(format!("{base}/"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(ok, json!({"ok": true, "services": {}}));

    // Every file the page loads is served with its type; none is fetched from elsewhere.
    for (file, kind) in [
        ("style.css", "text/css; charset=utf-8"),
        ("app.js", "text/javascript; charset=utf-8"),
        ("api.js", "text/javascript; charset=utf-8"),
        ("draw.js", "text/javascript; charset=utf-8"),
        ("chat.js", "text/javascript; charset=utf-8"),
        ("threads.js", "text/javascript; charset=utf-8"),
        ("dom.js", "text/javascript; charset=utf-8"),
    ] {
        let resp = http.get(format!("{base}/ui/{file}")).send().await.unwrap();
        assert_eq!(resp.status(), 200, "{file}");
        assert_eq!(resp.headers()[CONTENT_TYPE], kind, "{file}");
        let etag = resp.headers()[ETAG].clone();
        // The SVG namespace is a name, not a request.
        let body = resp
            .text()
            .await
            .unwrap()
            .replace("http://www.w3.org/2000/svg", "");
        assert!(
            !body.contains("http://") && !body.contains("https://"),
            "{file} reaches out"
        );
        let again = http
            .get(format!("{base}/ui/{file}"))
            .header(IF_NONE_MATCH, etag)
            .send()
            .await
            .unwrap();
        assert_eq!(again.status(), 304, "{file} revalidates");
    }
    let missing = http.get(format!("{base}/ui/nope.js")).send().await.unwrap();
    assert_eq!(missing.status(), 404);
}

#[tokio::test]
async fn an_api_key_guards_the_api_not_the_page() {
    let base = start(graphs::server().api_key("sesame")).await;
    let http = reqwest::Client::new();
    let page = http.get(format!("{base}/ui/")).send().await.unwrap();
    assert_eq!(page.status(), 200);
    let refused = http
        .post(format!("{base}/assistants/search"))
        .json(&json!({}))
        .send()
        .await
        .unwrap();
    assert_eq!(refused.status(), 401);
}

#[tokio::test]
async fn the_page_can_be_turned_off() {
    let base = start(graphs::server().web_page(false)).await;
    let http = reqwest::Client::new();
    let root = http
        .get(format!("{base}/"))
        .header(ACCEPT, "text/html")
        .send()
        .await
        .unwrap();
    assert_eq!(root.headers()[CONTENT_TYPE], "application/json");
    let ui = http.get(format!("{base}/ui/app.js")).send().await.unwrap();
    assert_eq!(ui.status(), 404);
}

#[tokio::test]
async fn a_description_reaches_the_system_assistant() {
    let base = start(graphs::server().description("Says hello back.")).await;
    let found: Value = reqwest::Client::new()
        .post(format!("{base}/assistants/search"))
        .json(&json!({"graph_id": "simple"}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(found[0]["description"], "Says hello back.");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_interrupt_is_answered_from_the_page() {
    let Some(browser) = Browser::open().await else {
        return;
    };
    let base = start(graphs::server()).await;
    let c = browser.page();
    browser
        .run(async move {
            c.goto(&format!("{base}/")).await.unwrap();
            // The subgraph `sub` is a box around its two nodes.
            let inside = until(
                &c,
                "the agent graph's subgraph box",
                "const card = document.querySelector('li.card[data-graph=\"agent\"]');
                 return card && card.querySelector('g.subgraph[data-subgraph=\"sub\"]')
                     && card.querySelectorAll('g.node[data-node^=\"sub:\"]').length",
            )
            .await;
            assert_eq!(inside, 2);
            click(&c, "li.card[data-graph=\"agent\"] a.button").await;
            type_in(&c, "#message", "please ask").await;
            click(&c, "#send").await;
            let asks = until(
                &c,
                "the interrupt's question",
                "const p = document.querySelector('#paused'); return !p.hidden && p.textContent",
            )
            .await;
            assert!(asks.as_str().unwrap().contains("approve?"), "{asks}");
            shot(&c, "resume").await;
            type_in(&c, "#resume-value", "yes").await;
            click(&c, "#resume").await;
            let log = until(
                &c,
                "the resumed run's answer",
                "return document.querySelector('#chat-status').textContent === 'Done.'
                     && document.querySelector('#paused').hidden
                     && document.querySelector('#log').textContent",
            )
            .await;
            assert!(log.as_str().unwrap().contains("human said: yes"), "{log}");
            let errors = c
                .execute(
                    "return document.querySelector('#chat-errors').textContent",
                    vec![],
                )
                .await
                .unwrap();
            assert_eq!(errors, "");

            // A failing run's error is shown as it is.
            click(&c, "#new-thread").await;
            type_in(&c, "#message", &format!("please fail{}", char::from(Key::Enter))).await;
            let error = until(
                &c,
                "the run's error",
                "return document.querySelector('#chat-status').textContent === 'Failed.'
                     && document.querySelector('#chat-errors [role=alert]')?.textContent",
            )
            .await;
            assert!(error.as_str().unwrap().contains("failed on purpose"), "{error}");
            let panel = css(&c, "#paused").await.text().await.unwrap();
            assert!(panel.contains("Failed") && panel.contains("Retry"), "{panel}");
            shot(&c, "error").await;

            // Stop cancels a run that is still going.
            click(&c, "#new-thread").await;
            type_in(&c, "#message", &format!("sleep 60{}", char::from(Key::Enter))).await;
            until(
                &c,
                "Stop to be ready",
                "return !document.querySelector('#stop').disabled",
            )
            .await;
            click(&c, "#stop").await;
            until(
                &c,
                "the stopped run to end",
                "return ['Stopped.', 'Done.'].includes(document.querySelector('#chat-status').textContent)",
            )
            .await;
            let thread = c
                .execute("return location.hash.split('/')[3]", vec![])
                .await
                .unwrap();
            let runs: Value = reqwest::Client::new()
                .get(format!("{base}/threads/{}/runs", thread.as_str().unwrap()))
                .send()
                .await
                .unwrap()
                .json()
                .await
                .unwrap();
            assert_eq!(runs[0]["status"], "interrupted", "{runs}");
        })
        .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_page_asks_for_a_token_and_its_user_owns_the_chat() {
    let Some(browser) = Browser::open().await else {
        return;
    };
    let secret = b"page-test-secret-page-test-secret!!".to_vec();
    let auth = agent_server::auth::Builtin::new().jwt(
        agent_server::auth::Jwt::new(agent_server::auth::JwtKeys::Secret(secret.clone()))
            .await
            .unwrap(),
    );
    let base = start(graphs::server().auth(auth)).await;
    let token = jsonwebtoken::encode(
        &jsonwebtoken::Header::default(),
        &serde_json::json!({"sub": "pat", "exp": jsonwebtoken::get_current_timestamp() + 600}),
        &jsonwebtoken::EncodingKey::from_secret(&secret).unwrap(),
    )
    .unwrap();
    let c = browser.page();
    let typed = token.clone();
    let at = base.clone();
    browser
        .run(async move {
            c.goto(&format!("{at}/")).await.unwrap();
            type_in(
                &c,
                "#key-form:not([hidden]) #api-key",
                &format!("{typed}{}", char::from(Key::Enter)),
            )
            .await;
            until(
                &c,
                "the graphs once the token is given",
                "return document.querySelectorAll('#graphs li.card').length === 2
                     && document.querySelector('#key-form').hidden",
            )
            .await;
            click(&c, "li.card[data-graph=\"agent\"] a.button").await;
            type_in(&c, "#message", &format!("hello{}", char::from(Key::Enter))).await;
            until(
                &c,
                "the answer",
                "return document.querySelector('#chat-status').textContent === 'Done.'",
            )
            .await;
        })
        .await;
    let threads: Value = reqwest::Client::new()
        .post(format!("{base}/threads/search"))
        .bearer_auth(&token)
        .json(&serde_json::json!({}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(threads[0]["metadata"]["owner"], "pat", "{threads}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_page_asks_for_the_api_key() {
    let Some(browser) = Browser::open().await else {
        return;
    };
    let base = start(graphs::server().api_key("sesame")).await;
    let c = browser.page();
    browser
        .run(async move {
            c.goto(&format!("{base}/")).await.unwrap();
            type_in(
                &c,
                "#key-form:not([hidden]) #api-key",
                &format!("sesame{}", char::from(Key::Enter)),
            )
            .await;
            until(
                &c,
                "the graphs once the key is given",
                "return document.querySelectorAll('#graphs li.card').length === 2
                     && document.querySelector('#key-form').hidden",
            )
            .await;
        })
        .await;
}
