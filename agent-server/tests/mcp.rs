//! `/mcp` spoken over plain HTTP as MCP clients speak it (JSON-RPC POSTs, streamable HTTP
//! without sessions): initialize, the assistants listed as tools with their input schemas,
//! tool calls running the graphs (context included), failing runs as `isError` results,
//! protocol errors, the API key, the body limit, the switch that turns `/mcp` off, and tool
//! calls queued on PostgreSQL.

mod common;
#[path = "../examples/reference/graphs.rs"]
#[allow(dead_code)]
mod graphs;

use std::sync::Arc;

use agent_core::{END, GraphState, Runtime, START, StateGraph};
use agent_server::ServerBuilder;
use common::served::Served;
use serde_json::{Value, json};

/// The `greeter` graph's state.
#[derive(GraphState, Clone, Default, Debug)]
struct Greeting {
    name: String,
    greeting: String,
}

/// What a run's context sets: the word the greeter greets with.
#[derive(Clone, Debug, Default, serde::Deserialize, schemars::JsonSchema)]
struct Style {
    word: Option<String>,
}

fn greeter() -> StateGraph<Greeting, Style> {
    StateGraph::<Greeting, Style>::with_context_type()
        .add_node("greet", |s: Arc<Greeting>, rt: Runtime<Style>| async move {
            let word = rt.context().word.clone().unwrap_or_else(|| "Hello".into());
            GreetingUpdate::default().greeting(format!("{word}, {}!", s.name))
        })
        .add_edge(START, "greet")
        .add_edge("greet", END)
}

fn builder() -> ServerBuilder {
    graphs::server()
        .graph("greeter", greeter())
        .description("Greets someone by name.")
        .workers(2)
}

/// The served reference graphs and the key an MCP client sends.
struct Mcp {
    served: Served,
    key: Option<&'static str>,
}

impl std::ops::Deref for Mcp {
    type Target = Served;

    fn deref(&self) -> &Served {
        &self.served
    }
}

impl Mcp {
    async fn start(builder: ServerBuilder) -> Mcp {
        Mcp {
            served: Served::start(builder).await,
            key: None,
        }
    }

    /// POSTs `body` to `/mcp` as an MCP client does: (status, JSON body or text).
    async fn post(&self, body: &Value) -> (u16, Value) {
        let mut req = self
            .http
            .post(format!("{}/mcp", self.base))
            .header("accept", "application/json, text/event-stream")
            .header("content-type", "application/json")
            .body(body.to_string());
        if let Some(key) = self.key {
            req = req.header("x-api-key", key);
        }
        let resp = req.send().await.unwrap();
        let status = resp.status().as_u16();
        let text = resp.text().await.unwrap();
        let value = serde_json::from_str(&text).unwrap_or(Value::String(text));
        (status, value)
    }

    /// A JSON-RPC request's response object.
    async fn rpc(&self, method: &str, params: Value) -> Value {
        let (status, out) = self
            .post(&json!({"jsonrpc": "2.0", "id": 7, "method": method, "params": params}))
            .await;
        assert_eq!(status, 200, "{method}: {out}");
        assert_eq!(out["jsonrpc"], "2.0");
        assert_eq!(out["id"], 7);
        out
    }

    async fn call(&self, params: Value) -> Value {
        let out = self.rpc("tools/call", params).await;
        assert!(out.get("error").is_none(), "{out}");
        out["result"].clone()
    }
}

fn tools_by_name(list: &Value) -> Vec<(String, Value)> {
    let mut tools: Vec<(String, Value)> = list["result"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| (t["name"].as_str().unwrap().to_owned(), t.clone()))
        .collect();
    tools.sort_by(|a, b| a.0.cmp(&b.0));
    tools
}

#[tokio::test]
async fn an_mcp_client_lists_the_graphs_and_calls_them() {
    let mcp = Mcp::start(builder()).await;
    let init = mcp
        .rpc(
            "initialize",
            json!({"protocolVersion": "2025-06-18", "capabilities": {},
                   "clientInfo": {"name": "test", "version": "1"}}),
        )
        .await;
    assert_eq!(init["result"]["protocolVersion"], "2025-06-18", "{init}");
    assert_eq!(init["result"]["serverInfo"]["name"], "agent-server");
    assert!(
        init["result"]["capabilities"]["tools"].is_object(),
        "{init}"
    );
    let (status, _) = mcp
        .post(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}))
        .await;
    assert_eq!(status, 202, "a notification is accepted");

    let list = mcp.rpc("tools/list", json!({})).await;
    let tools = tools_by_name(&list);
    let names: Vec<&str> = tools.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(names, ["agent", "greeter", "simple"], "{list}");
    assert!(
        list["result"].get("nextCursor").is_none(),
        "one page: {list}"
    );
    let (_, agent) = &tools[0];
    assert_eq!(agent["title"], "agent");
    assert_eq!(agent["description"], "Tool based on the agent assistant");
    let schema = &agent["inputSchema"];
    assert_eq!(schema["type"], "object");
    assert_eq!(
        schema["properties"]["messages"]["type"], "string",
        "a message list is asked as the user's message: {schema}"
    );
    assert!(schema.get("$defs").is_none(), "{schema}");
    let (_, greeter) = &tools[1];
    assert_eq!(greeter["description"], "Greets someone by name.");
    assert!(greeter["inputSchema"]["properties"]["name"].is_object());

    // A call is a stateless run: the final state as JSON text and structured content.
    let out = mcp
        .call(json!({"name": "simple", "arguments": {"value": "quiet"}}))
        .await;
    assert_eq!(out["isError"], false, "{out}");
    assert_eq!(out["structuredContent"], json!({"value": "QUIET"}));
    let text: Value = serde_json::from_str(out["content"][0]["text"].as_str().unwrap()).unwrap();
    assert_eq!(text, out["structuredContent"]);

    let out = mcp
        .call(json!({"name": "agent", "arguments": {"messages": "hello there"}}))
        .await;
    let messages = out["structuredContent"]["messages"].as_array().unwrap();
    assert_eq!(messages[0]["type"], "human", "{out}");
    assert_eq!(messages[0]["content"], "hello there");
    assert!(
        messages
            .iter()
            .any(|m| m["type"] == "ai" && m["content"] == "echo: hello there"),
        "{out}"
    );

    // The run's context: LangGraph's `params.context`, or `_meta.context`.
    let out = mcp
        .call(json!({"name": "greeter", "arguments": {"name": "Ann"}}))
        .await;
    assert_eq!(out["structuredContent"]["greeting"], "Hello, Ann!");
    let out = mcp
        .call(json!({"name": "greeter", "arguments": {"name": "Ann"}, "context": {"word": "Hi"}}))
        .await;
    assert_eq!(out["structuredContent"]["greeting"], "Hi, Ann!", "{out}");
    let out = mcp
        .call(json!({"name": "greeter", "arguments": {"name": "Bo"}, "_meta": {"context": {"word": "Hey"}}}))
        .await;
    assert_eq!(out["structuredContent"]["greeting"], "Hey, Bo!", "{out}");
}

#[tokio::test]
async fn assistants_made_by_clients_are_tools_too() {
    let mcp = Mcp::start(builder()).await;
    let resp = mcp
        .http
        .post(format!("{}/assistants", mcp.base))
        .json(&json!({"graph_id": "greeter", "name": "formal greeter",
                      "description": "Greets formally.", "context": {"word": "Good day"}}))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 200);
    let list = mcp.rpc("tools/list", json!({})).await;
    let tools = tools_by_name(&list);
    let (_, formal) = tools
        .iter()
        .find(|(n, _)| n == "formal_greeter")
        .unwrap_or_else(|| panic!("the assistant's name made a tool name: {list}"));
    assert_eq!(formal["title"], "formal greeter");
    assert_eq!(formal["description"], "Greets formally.");
    let out = mcp
        .call(json!({"name": "formal_greeter", "arguments": {"name": "Ann"}}))
        .await;
    assert_eq!(
        out["structuredContent"]["greeting"], "Good day, Ann!",
        "the assistant's context: {out}"
    );
}

#[tokio::test]
async fn failures_are_tool_errors_and_bad_requests_protocol_errors() {
    let mcp = Mcp::start(builder()).await;
    // A run that fails: an error result carrying the error.
    let out = mcp
        .call(json!({"name": "agent", "arguments": {"messages": "please fail"}}))
        .await;
    assert_eq!(out["isError"], true, "{out}");
    let text = out["content"][0]["text"].as_str().unwrap();
    assert!(text.contains("failed on purpose"), "{text}");
    // A run refused before it runs (a context that does not fit): an error result too.
    let out = mcp
        .call(json!({"name": "greeter", "arguments": {"name": "Ann"}, "context": {"word": 5}}))
        .await;
    assert_eq!(out["isError"], true, "{out}");
    assert!(
        out["content"][0]["text"].as_str().unwrap().contains("word"),
        "{out}"
    );

    let out = mcp
        .rpc("tools/call", json!({"name": "nope", "arguments": {}}))
        .await;
    assert_eq!(out["error"]["code"], -32602, "{out}");
    assert_eq!(out["error"]["message"], "Unknown tool: nope");
    let out = mcp.rpc("prompts/get", json!({"name": "x"})).await;
    assert_eq!(out["error"]["code"], -32601, "{out}");

    let (status, _) = mcp.post(&Value::String("not json-rpc".into())).await;
    assert_eq!(status / 100, 4, "a body that is no JSON-RPC message");
    let resp = mcp
        .http
        .post(format!("{}/mcp", mcp.base))
        .header("content-type", "application/json")
        .body(json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}).to_string())
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 406, "a client must accept JSON and SSE");
    let resp = mcp
        .http
        .get(format!("{}/mcp", mcp.base))
        .header("accept", "text/event-stream")
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 405, "no server-sent stream without sessions");
}

#[tokio::test]
async fn the_api_key_and_the_body_limit_guard_mcp() {
    let mut mcp = Mcp::start(builder().api_key("sesame").body_limit(4096)).await;
    let list = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"});
    let (status, out) = mcp.post(&list).await;
    assert_eq!(status, 401, "{out}");
    mcp.key = Some("wrong");
    assert_eq!(mcp.post(&list).await.0, 401);
    mcp.key = Some("sesame");
    let (status, out) = mcp.post(&list).await;
    assert_eq!(status, 200, "{out}");
    assert_eq!(tools_by_name(&out).len(), 3);
    let big = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                     "params": {"name": "simple", "arguments": {"value": "x".repeat(8000)}}});
    assert_eq!(mcp.post(&big).await.0, 413);
}

#[tokio::test]
async fn mcp_can_be_turned_off() {
    let mcp = Mcp::start(builder().mcp(false)).await;
    let (status, _) = mcp
        .post(&json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}))
        .await;
    assert_eq!(status, 404);
}

#[tokio::test]
async fn tool_calls_queue_like_any_run_on_postgres() {
    let Some(db) = common::fresh_database("agentgraph_mcp").await else {
        return;
    };
    let mcp = Mcp::start(builder().postgres(db)).await;
    let list = mcp.rpc("tools/list", json!({})).await;
    assert_eq!(tools_by_name(&list).len(), 3, "{list}");
    let out = mcp
        .call(json!({"name": "simple", "arguments": {"value": "pg"}}))
        .await;
    assert_eq!(out["structuredContent"], json!({"value": "PG"}), "{out}");
    let out = mcp
        .call(json!({"name": "agent", "arguments": {"messages": "please fail"}}))
        .await;
    assert_eq!(out["isError"], true, "{out}");
}
