//! Embeddings: the OpenAI-compatible and Ollama wire formats against a local server
//! (wiremock), and semantic search ranking in a store with the offline embedding and with
//! an OpenAI-compatible endpoint served locally.

mod common;

use std::sync::Arc;

use agent_core::store::{InMemoryStore, SearchOp, Store, ns};
use agent_llm::LlmError;
use agent_llm::embeddings::{
    Embeddings, OfflineEmbeddings, OllamaEmbeddings, OpenAiEmbeddings, index_config,
    init_embeddings,
};
use common::fast_retry;
use serde_json::{Value, json};
use wiremock::matchers::{header, method, path};
use wiremock::{Mock, MockServer, Request, Respond, ResponseTemplate};

const KEY: &str = "sk-embeddings-SECRET-42";

/// A fake `/v1/embeddings` that really embeds (with the offline embedding), answering its
/// vectors in reverse order with their `index` as OpenAI does.
struct OfflineServer(OfflineEmbeddings);

impl Respond for OfflineServer {
    fn respond(&self, request: &Request) -> ResponseTemplate {
        let body: Value = serde_json::from_slice(&request.body).unwrap_or_default();
        let inputs: Vec<String> = body["input"]
            .as_array()
            .map(|a| {
                a.iter()
                    .filter_map(|t| t.as_str().map(str::to_owned))
                    .collect()
            })
            .unwrap_or_default();
        let mut data: Vec<Value> = inputs
            .iter()
            .enumerate()
            .map(|(i, t)| json!({"object": "embedding", "index": i, "embedding": self.0.vector(t)}))
            .collect();
        data.reverse();
        ResponseTemplate::new(200).set_body_json(json!({
            "object": "list", "data": data, "model": body["model"],
            "usage": {"prompt_tokens": 3, "total_tokens": 3}
        }))
    }
}

#[tokio::test]
async fn openai_wire_sends_batches_and_orders_by_index() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/v1/embeddings"))
        .and(header("authorization", format!("Bearer {KEY}").as_str()))
        .respond_with(OfflineServer(OfflineEmbeddings::new(8)))
        // Two batches of documents, then the query.
        .expect(3)
        .mount(&server)
        .await;
    let embeddings = OpenAiEmbeddings::builder()
        .base_url(format!("{}/v1", server.uri()))
        .api_key(KEY)
        .model("text-embedding-3-small")
        .dimensions(8)
        .batch_size(2)
        .build()
        .expect("build");
    assert_eq!(embeddings.dims(), Some(8));
    let texts: Vec<String> = ["alpha", "beta", "gamma"].map(String::from).to_vec();
    let vectors = embeddings.embed_documents(&texts).await.expect("embed");
    let offline = OfflineEmbeddings::new(8);
    assert_eq!(
        vectors,
        texts.iter().map(|t| offline.vector(t)).collect::<Vec<_>>()
    );
    let requests = server.received_requests().await.unwrap_or_default();
    let first: Value = serde_json::from_slice(&requests[0].body).expect("json body");
    assert_eq!(
        first,
        json!({"model": "text-embedding-3-small", "input": ["alpha", "beta"],
               "encoding_format": "float", "dimensions": 8})
    );
    let second: Value = serde_json::from_slice(&requests[1].body).expect("json body");
    assert_eq!(second["input"], json!(["gamma"]));
    assert_eq!(
        embeddings.embed_query("beta").await.expect("query"),
        offline.vector("beta")
    );
}

#[tokio::test]
async fn ollama_wire_posts_to_api_embed() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/api/embed"))
        .respond_with(ResponseTemplate::new(200).set_body_json(json!({
            "model": "nomic-embed-text",
            "embeddings": [[0.1, 0.2, 0.3], [0.4, 0.5, 0.6]],
            "total_duration": 1000
        })))
        // The documents, then the probe for dimensions.
        .expect(2)
        .mount(&server)
        .await;
    let embeddings = OllamaEmbeddings::builder()
        .base_url(server.uri())
        .model("nomic-embed-text")
        .build()
        .expect("build");
    assert_eq!(embeddings.dims(), None);
    let vectors = embeddings
        .embed_documents(&["a".into(), "b".into()])
        .await
        .expect("embed");
    assert_eq!(vectors, [[0.1f32, 0.2, 0.3], [0.4, 0.5, 0.6]]);
    let requests = server.received_requests().await.unwrap_or_default();
    let body: Value = serde_json::from_slice(&requests[0].body).expect("json body");
    assert_eq!(
        body,
        json!({"model": "nomic-embed-text", "input": ["a", "b"]})
    );
    // Unknown dimensions are asked for once when an index is built.
    let index = index_config(Arc::new(embeddings), ["text"]).await;
    assert!(
        index.is_err(),
        "the mock answers two vectors for one text: {index:?}"
    );
}

#[tokio::test]
async fn errors_are_typed_and_keys_stay_out() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/v1/embeddings"))
        .respond_with(ResponseTemplate::new(400).set_body_json(
            json!({"error": {"message": "input is too long", "type": "invalid_request_error"}}),
        ))
        .expect(1)
        .mount(&server)
        .await;
    let embeddings = OpenAiEmbeddings::builder()
        .base_url(format!("{}/v1", server.uri()))
        .api_key(KEY)
        .model("m")
        .retry(fast_retry(3))
        .build()
        .expect("build");
    let err = embeddings.embed_query("x").await.expect_err("a 400");
    let text = err.to_string();
    assert!(text.contains("input is too long"), "{text}");
    assert!(!text.contains(KEY) && !format!("{err:?}").contains(KEY));
    assert!(!format!("{embeddings:?}").contains(KEY));

    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(200).set_body_json(json!({"data": []})))
        .mount(&server)
        .await;
    let short = OpenAiEmbeddings::builder()
        .base_url(server.uri())
        .model("m")
        .build()
        .expect("build");
    let err = short
        .embed_documents(&["x".into()])
        .await
        .expect_err("no vectors");
    assert!(matches!(err, LlmError::MalformedResponse { .. }), "{err}");
    assert!(err.to_string().contains("0 vectors for 1 texts"), "{err}");
}

#[test]
fn init_embeddings_knows_its_providers() {
    assert_eq!(
        init_embeddings("offline").map(|e| e.dims()).ok().flatten(),
        Some(256)
    );
    assert_eq!(
        init_embeddings("offline:32")
            .map(|e| e.dims())
            .ok()
            .flatten(),
        Some(32)
    );
    assert!(init_embeddings("offline:zero").is_err());
    assert!(init_embeddings("openai").is_err());
    let unknown = init_embeddings("cohere:embed-v3").expect_err("unknown");
    assert!(
        unknown
            .to_string()
            .contains("known providers: openai, ollama, offline"),
        "{unknown}"
    );
    let openai = init_embeddings("openai:text-embedding-3-large").expect("openai");
    assert_eq!(openai.dims(), Some(3072));
}

/// A small fixed corpus and the note each query must find first.
const CORPUS: &[(&str, &str)] = &[
    (
        "train",
        "My train to Lyon leaves at nine from platform four",
    ),
    ("milk", "Buy oat milk, bread and coffee beans"),
    ("dentist", "Dentist appointment on Tuesday afternoon"),
    (
        "rust",
        "Rewrite the parser in Rust with better error messages",
    ),
    ("garden", "Water the tomatoes and plant basil in the garden"),
];

const QUERIES: &[(&str, &str)] = &[
    ("which platform does the train leave from", "train"),
    ("groceries: milk and bread", "milk"),
    ("when is my dentist appointment", "dentist"),
    ("parser error messages", "rust"),
    ("planting tomatoes", "garden"),
];

async fn ranks_the_corpus(store: &InMemoryStore) {
    let notes = ns(["users", "ada", "notes"]);
    for (key, text) in CORPUS {
        store
            .put(&notes, key, json!({"text": text}))
            .await
            .expect("put");
    }
    for (query, want) in QUERIES {
        let found = store
            .search(SearchOp::new(ns(["users", "ada"])).query(*query).limit(3))
            .await
            .expect("search");
        assert_eq!(found[0].key, *want, "query {query:?}: {found:#?}");
        assert!(found[0].score > found[1].score, "{query:?}: a clear first");
    }
}

#[tokio::test]
async fn semantic_search_with_the_offline_embedding() {
    let index = index_config(init_embeddings("offline").expect("offline"), ["text"])
        .await
        .expect("index");
    ranks_the_corpus(&InMemoryStore::new().with_index(index)).await;
}

#[tokio::test]
async fn semantic_search_through_a_local_openai_compatible_endpoint() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/v1/embeddings"))
        .respond_with(OfflineServer(OfflineEmbeddings::new(256)))
        .mount(&server)
        .await;
    let embeddings = OpenAiEmbeddings::builder()
        .base_url(format!("{}/v1", server.uri()))
        .model("local-embedder")
        .build()
        .expect("build");
    let index = index_config(Arc::new(embeddings), ["text"])
        .await
        .expect("index");
    assert_eq!(index.dims, 256, "asked for with one request");
    ranks_the_corpus(&InMemoryStore::new().with_index(index)).await;
    // Puts embed in one request per batch, searches one per query.
    let requests = server.received_requests().await.unwrap_or_default();
    assert_eq!(requests.len(), 1 + CORPUS.len() + QUERIES.len());
}
