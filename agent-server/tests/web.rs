//! The web page beside the API: `/` is the page for a browser and `{"ok": true}` for an API
//! client, the page's files carry their types, an ETag and `no-cache`, an API key does not
//! hide the page (it holds no data) but still guards the API, and `web_page(false)` turns
//! the page off. The page itself is driven in a browser by `agent-flows/tests/web_page.rs`.

#[path = "../examples/reference/graphs.rs"]
#[allow(dead_code)]
mod graphs;

use reqwest::header::{ACCEPT, CACHE_CONTROL, CONTENT_TYPE, ETAG, IF_NONE_MATCH};
use serde_json::{Value, json};

async fn start(builder: agent_server::ServerBuilder) -> String {
    let router = builder.build().await.unwrap().start().await.unwrap();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, router).await.unwrap() });
    let _ = rustls::crypto::ring::default_provider().install_default();
    base
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

    let ok: Value = http.get(format!("{base}/")).send().await.unwrap().json().await.unwrap();
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
        let body = resp.text().await.unwrap().replace("http://www.w3.org/2000/svg", "");
        assert!(!body.contains("http://") && !body.contains("https://"), "{file} reaches out");
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
