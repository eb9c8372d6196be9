//! A server built in the test's process, serving on a free loopback port, and a JSON client
//! for it: what the HTTP tests share. A test file adds its own calls with an `impl Served`
//! block of its own.

use serde_json::Value;

/// A running in-process server and a client for it.
pub struct Served {
    /// `http://127.0.0.1:<port>`.
    pub base: String,
    pub http: reqwest::Client,
}

impl Served {
    /// Builds `builder`'s server and serves it on a free port until the test ends.
    pub async fn start(builder: agent_server::ServerBuilder) -> Served {
        let router = builder.build().await.unwrap().start().await.unwrap();
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let base = format!("http://{}", listener.local_addr().unwrap());
        tokio::spawn(async move { axum::serve(listener, router).await.unwrap() });
        let _ = rustls::crypto::ring::default_provider().install_default();
        Served {
            base,
            http: reqwest::Client::new(),
        }
    }

    /// The URL of `path`.
    pub fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base)
    }

    /// Sends `body` (if any) as JSON: the status and the answer as JSON (null when empty, a
    /// string when it is not JSON).
    pub async fn call(
        &self,
        method: reqwest::Method,
        path: &str,
        body: Option<Value>,
    ) -> (u16, Value) {
        let mut req = self.http.request(method, self.url(path));
        if let Some(b) = body {
            req = req.json(&b);
        }
        let resp = req.send().await.unwrap();
        let status = resp.status().as_u16();
        let text = resp.text().await.unwrap();
        let value = if text.trim().is_empty() {
            Value::Null
        } else {
            serde_json::from_str(text.trim()).unwrap_or(Value::String(text))
        };
        (status, value)
    }

    pub async fn get(&self, path: &str) -> (u16, Value) {
        self.call(reqwest::Method::GET, path, None).await
    }

    pub async fn post(&self, path: &str, body: Value) -> (u16, Value) {
        self.call(reqwest::Method::POST, path, Some(body)).await
    }
}
