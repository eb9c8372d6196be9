//! Tools from MCP servers, against a real server written with the official Python SDK
//! (`tests/mcp/server.py`, `mcp` pinned in `tests/mcp/requirements.txt`), over stdio and over
//! streamable HTTP: listing with schemas, calls, error results, timeouts, arguments that do
//! not fit the schema, a server that dies mid-session, and a ReAct agent calling the tools.
//!
//! The SDK is installed from PyPI on first use (a cached venv, `tests/mcp/python.sh`), so the
//! tests that need it run under CI (`CI` set) or with `AGENTGRAPH_MCP_TESTS=1`, and say they
//! skipped otherwise. The failures that need no MCP server (a program that does not exist,
//! one that exits at once, an HTTP server that is not there) always run.

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::Duration;

use agent_core::RunConfig;
use agent_llm::{Message, Reply, ScriptedModel};
use agent_tools::mcp::{
    McpClient, McpConfig, McpError, McpServerConfig, McpTool, MultiServerMcpClient,
};
use agent_tools::prebuilt::{AgentState, create_react_agent};
use agent_tools::{DynTool, ToolError, ToolRegistry};
use serde_json::{Value, json};

#[path = "mcp/python.rs"]
mod mcp_python_sdk;

use mcp_python_sdk::mcp_python as python;

const DIR: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/mcp");

fn stdio_server(python: &str) -> McpServerConfig {
    McpServerConfig::stdio(python, [format!("{DIR}/server.py")])
}

/// The same server module over streamable HTTP, killed on drop.
struct HttpServer {
    child: Child,
    url: String,
}

impl Drop for HttpServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn http_server(python: &str) -> HttpServer {
    let mut child = Command::new(python)
        .args([format!("{DIR}/server.py"), "--http".to_owned()])
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("python starts");
    let stdout = child.stdout.take().unwrap();
    let mut line = String::new();
    BufReader::new(stdout).read_line(&mut line).unwrap();
    let url = line
        .trim()
        .strip_prefix("listening on ")
        .unwrap_or_else(|| panic!("the HTTP server said {line:?}"))
        .to_owned();
    HttpServer { child, url }
}

fn tool<'a>(tools: &'a [McpTool], name: &str) -> &'a McpTool {
    tools
        .iter()
        .find(|t| t.name() == name)
        .unwrap_or_else(|| panic!("no tool `{name}`"))
}

/// Listing, schemas and the calls that succeed, on one connection.
async fn lists_and_calls(client: &McpClient) {
    let tools = client.tools().await.unwrap();
    let mut names: Vec<&str> = tools.iter().map(|t| t.name()).collect();
    names.sort_unstable();
    assert_eq!(
        names,
        [
            "add", "crash", "environ", "fail", "greet", "pixel", "refuse", "slow", "stats"
        ]
    );
    let add = tool(&tools, "add");
    assert_eq!(add.description(), "Adds two integers.");
    assert_eq!(add.server(), client.name());
    let schema = add.parameters();
    assert_eq!(schema["type"], "object");
    assert_eq!(schema["required"], json!(["a", "b"]));
    assert_eq!(schema["properties"]["a"]["type"], "integer");
    let greet = tool(&tools, "greet");
    assert_eq!(greet.parameters()["required"], json!(["name"]));
    assert_eq!(greet.parameters()["properties"]["shout"]["type"], "boolean");

    assert_eq!(add.call(json!({"a": 2, "b": 3})).await.unwrap(), json!("5"));
    assert_eq!(
        greet
            .call(json!({"name": "Ada", "shout": true}))
            .await
            .unwrap(),
        json!("HELLO, ADA!")
    );
    // A dict return: the server sends its JSON as text (read) and as structuredContent.
    let stats = tool(&tools, "stats")
        .call(json!({"numbers": [1, 2, 3]}))
        .await
        .unwrap();
    let parsed: Value = serde_json::from_str(stats.as_str().unwrap()).unwrap();
    assert_eq!(parsed, json!({"count": 3, "sum": 6.0, "mean": 2.0}));
    let raw = client
        .call_tool(
            "stats",
            json!({"numbers": [4]}).as_object().unwrap().clone(),
        )
        .await
        .unwrap();
    assert_eq!(
        raw.structured_content,
        Some(json!({"count": 1.0, "sum": 4.0, "mean": 4.0}))
    );
    // Content a tool message cannot carry becomes a note of what it was.
    let pixel = tool(&tools, "pixel").call(Value::Null).await.unwrap();
    assert!(
        pixel.as_str().unwrap().starts_with("[image: image/png, "),
        "{pixel}"
    );
}

/// The failures a model must see as tool errors, on one connection.
async fn errors_are_tool_errors(client: &McpClient) {
    let tools = client.tools().await.unwrap();
    let fail = tool(&tools, "fail");
    let error = fail.call(json!({"reason": "boom"})).await.unwrap_err();
    assert!(matches!(error, ToolError::Failed { .. }), "{error:?}");
    assert!(
        error.to_string().starts_with("tool `fail` failed: ")
            && error.to_string().contains("failed on purpose: boom"),
        "{error}"
    );
    // The text is the server's (the SDK prefixes its own words).
    assert_eq!(
        error.to_string(),
        "tool `fail` failed: Error executing tool fail: failed on purpose: boom"
    );
    // A protocol error instead of a result.
    let error = tool(&tools, "refuse").call(json!({})).await.unwrap_err();
    assert_eq!(
        error.to_string(),
        format!(
            "tool `refuse` failed: MCP server `{}` refused tools/call `refuse`: refused on purpose",
            client.name()
        )
    );

    // Checked against the schema here: the server is not asked.
    let add = tool(&tools, "add");
    match add.call(json!({"a": "two", "b": 3})).await.unwrap_err() {
        ToolError::InvalidArguments {
            tool,
            path,
            message,
        } => {
            assert_eq!((tool.as_str(), path.as_str()), ("add", "a"));
            assert_eq!(message, "expected integer, got string \"two\"");
        }
        other => panic!("{other:?}"),
    }
    let missing = add.call(json!({"a": 1})).await.unwrap_err();
    assert_eq!(
        missing.to_string(),
        "invalid arguments for tool `add` at `.`: the required property `b` is missing; call it again with arguments that match its JSON schema"
    );
    let list = tool(&tools, "stats")
        .call(json!({"numbers": [1, "x"]}))
        .await
        .unwrap_err();
    assert!(
        matches!(&list, ToolError::InvalidArguments { path, .. } if path == "numbers[1]"),
        "{list}"
    );
    assert!(matches!(
        add.call(json!([1, 2])).await.unwrap_err(),
        ToolError::InvalidArguments { .. }
    ));
    // The connection is still good after all of these.
    assert_eq!(add.call(json!({"a": 1, "b": 1})).await.unwrap(), json!("2"));
}

/// A call that outlives the server's timeout is a timed-out tool call, and the session goes on.
async fn slow_calls_time_out(config: McpServerConfig) {
    let client = McpClient::connect("slowpoke", &config.with_timeout(Duration::from_millis(300)))
        .await
        .unwrap();
    let tools = client.tools().await.unwrap();
    let error = tool(&tools, "slow")
        .call(json!({"seconds": 30}))
        .await
        .unwrap_err();
    match &error {
        ToolError::TimedOut { tool, after } => {
            assert_eq!(tool, "slow");
            assert_eq!(*after, Duration::from_millis(300));
        }
        other => panic!("{other:?}"),
    }
    assert!(error.is_transient());
    let add = tool(&tools, "add");
    assert_eq!(add.call(json!({"a": 4, "b": 5})).await.unwrap(), json!("9"));
    client.close().await;
}

#[tokio::test]
async fn a_python_server_over_stdio() {
    let Some(python) = python() else { return };
    let client = McpClient::connect("py", &stdio_server(&python))
        .await
        .unwrap();
    assert_eq!(client.name(), "py");
    assert!(client.target().ends_with("tests/mcp/server.py"));
    lists_and_calls(&client).await;
    errors_are_tool_errors(&client).await;
    client.close().await;
    // After close, calls fail clearly instead of hanging.
    let error = client
        .call_tool("add", Default::default())
        .await
        .unwrap_err();
    assert!(
        matches!(error, McpError::Exited { .. } | McpError::Connection { .. }),
        "{error:?}"
    );
    slow_calls_time_out(stdio_server(&python)).await;
}

#[tokio::test]
async fn a_python_server_over_streamable_http() {
    let Some(python) = python() else { return };
    let server = http_server(&python);
    let config = McpServerConfig::http(&server.url).with_header("X-Test", "1");
    let client = McpClient::connect("web", &config).await.unwrap();
    assert_eq!(client.target(), server.url);
    lists_and_calls(&client).await;
    errors_are_tool_errors(&client).await;
    client.close().await;
    slow_calls_time_out(config).await;
}

/// A stdio server sees the variables it needs to start and its configured `env`, not the
/// rest of ours (API keys live there).
#[tokio::test]
async fn a_stdio_server_inherits_only_a_few_variables_and_its_own_env() {
    let Some(python) = python() else { return };
    let config = stdio_server(&python).with_env("GIVEN", "to the server");
    let client = McpClient::connect("py", &config).await.unwrap();
    let tools = client.tools().await.unwrap();
    let environ = tool(&tools, "environ");
    let read = |name: &str| environ.call(json!({ "name": name }));
    assert_eq!(read("GIVEN").await.unwrap(), json!("to the server"));
    assert_ne!(read("PATH").await.unwrap(), json!("<unset>"));
    // Cargo sets this one for the test process; the server must not see it.
    assert!(std::env::var_os("CARGO_PKG_NAME").is_some());
    assert_eq!(read("CARGO_PKG_NAME").await.unwrap(), json!("<unset>"));
    client.close().await;
}

#[tokio::test]
async fn a_server_that_dies_mid_session_is_reported_with_its_status_and_stderr() {
    let Some(python) = python() else { return };
    let client = McpClient::connect("fragile", &stdio_server(&python))
        .await
        .unwrap();
    let pid = client.process_id().expect("a stdio server has a process");
    let tools = client.tools().await.unwrap();
    let error = tool(&tools, "crash")
        .call(json!({"code": 3}))
        .await
        .unwrap_err();
    let check = |error: &ToolError| {
        let ToolError::Failed { source, .. } = error else {
            panic!("{error:?}")
        };
        match source.downcast_ref::<McpError>() {
            Some(McpError::Exited {
                server,
                status,
                stderr,
                command,
            }) => {
                assert_eq!(server, "fragile");
                assert_eq!(status, "exit status: 3");
                assert!(stderr.contains("crashing on purpose"), "{stderr}");
                assert!(command.ends_with("server.py"), "{command}");
            }
            other => panic!("{other:?}"),
        }
    };
    check(&error);
    assert!(
        error.to_string().contains("exited with exit status: 3"),
        "{error}"
    );
    // Later calls say the same, at once.
    let again = tool(&tools, "add")
        .call(json!({"a": 1, "b": 2}))
        .await
        .unwrap_err();
    check(&again);
    assert!(!process_alive(pid));
}

#[tokio::test]
async fn dropping_the_last_handle_kills_a_stdio_server() {
    let Some(python) = python() else { return };
    let client = McpClient::connect("short-lived", &stdio_server(&python))
        .await
        .unwrap();
    let pid = client.process_id().unwrap();
    let tools = client.tools().await.unwrap();
    assert!(process_alive(pid));
    drop(client);
    // The tools hold the connection: still up.
    assert_eq!(
        tool(&tools, "add")
            .call(json!({"a": 1, "b": 2}))
            .await
            .unwrap(),
        json!("3")
    );
    drop(tools);
    wait_until_gone(pid).await;
}

/// Whether `pid` runs (not gone, not a zombie waiting to be reaped).
fn process_alive(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        // The state follows the parenthesized command name.
        Ok(stat) => !stat
            .rsplit_once(") ")
            .is_some_and(|(_, rest)| rest.starts_with('Z') || rest.starts_with('X')),
        Err(_) => false,
    }
}

/// Polls until `pid` is gone (the kill is sent on drop; the exit takes a moment).
async fn wait_until_gone(pid: u32) {
    for _ in 0..600 {
        if !process_alive(pid) {
            return;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("the server process {pid} still runs after its client was dropped");
}

#[tokio::test]
async fn a_program_that_does_not_exist_is_a_clear_error() {
    let config = McpServerConfig::command_line("agentgraph-no-such-program --flag").unwrap();
    let error = McpClient::connect("ghost", &config).await.unwrap_err();
    assert!(matches!(error, McpError::Spawn { .. }), "{error:?}");
    let text = error.to_string();
    assert!(
        text.starts_with("cannot start MCP server `ghost` (`agentgraph-no-such-program --flag`): ")
            && text.ends_with("check that the program exists and is on PATH"),
        "{text}"
    );
}

#[tokio::test]
async fn a_server_that_exits_at_start_up_shows_its_status_and_stderr() {
    let config =
        McpServerConfig::stdio("sh", ["-c", "echo 'config error: no API key' >&2; exit 2"]);
    let error = McpClient::connect("broken", &config).await.unwrap_err();
    match &error {
        McpError::Exited {
            server,
            status,
            stderr,
            ..
        } => {
            assert_eq!(server, "broken");
            assert_eq!(status, "exit status: 2");
            assert_eq!(stderr, "config error: no API key");
        }
        other => panic!("{other:?}"),
    }
    assert!(
        error.to_string().ends_with(
            "exited with exit status: 2; the end of its stderr:\nconfig error: no API key"
        ),
        "{error}"
    );
}

#[tokio::test]
async fn a_server_that_never_answers_times_out_at_start_up() {
    let config =
        McpServerConfig::stdio("sleep", ["30"]).with_startup_timeout(Duration::from_millis(300));
    let error = McpClient::connect("mute", &config).await.unwrap_err();
    assert!(
        matches!(&error, McpError::TimedOut { server, .. } if server == "mute"),
        "{error:?}"
    );
}

#[tokio::test]
async fn an_http_server_that_is_not_there_is_a_connection_error() {
    // Bind a port, then free it: nothing listens there.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let url = format!("http://127.0.0.1:{port}/mcp");
    let error = McpClient::connect("away", &McpServerConfig::http(&url))
        .await
        .unwrap_err();
    match &error {
        McpError::Connection { server, target, .. } => {
            assert_eq!((server.as_str(), target.as_str()), ("away", url.as_str()));
        }
        other => panic!("{other:?}"),
    }
}

#[tokio::test]
async fn many_servers_from_an_mcp_servers_file_prefix_only_colliding_names() {
    let Some(python) = python() else { return };
    let http = http_server(&python);
    let dir = std::env::temp_dir().join(format!("agentgraph-mcp-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("mcp.json");
    let config = json!({"mcpServers": {
        "local": {"command": python, "args": [format!("{DIR}/server.py")]},
        "remote": {"url": http.url, "timeout": 30},
    }});
    std::fs::write(&file, config.to_string()).unwrap();
    let config = McpConfig::from_file(&file).unwrap();
    let servers = MultiServerMcpClient::connect(&config).await.unwrap();
    assert_eq!(servers.clients().len(), 2);

    // The same module twice: every name collides, so every tool carries its server's name.
    let registry = servers.registry().await.unwrap();
    let mut names: Vec<&str> = registry.names().collect();
    names.sort_unstable();
    assert_eq!(names.len(), 18);
    assert!(names.contains(&"local_add") && names.contains(&"remote_add"));
    assert_eq!(
        registry
            .call("remote_add", json!({"a": 20, "b": 22}))
            .await
            .unwrap(),
        json!("42")
    );
    assert_eq!(
        registry
            .call("local_greet", json!({"name": "Bo"}))
            .await
            .unwrap(),
        json!("Hello, Bo!")
    );
    let remote_add = registry.get("remote_add").unwrap();
    assert_eq!(remote_add.parameters()["required"], json!(["a", "b"]));

    // One server alone: plain names; a name the program already uses gets the prefix.
    let local = MultiServerMcpClient::default().with_client(servers.clients()[0].clone());
    let tools = local.tools_avoiding(&["add"]).await.unwrap();
    let mut names: Vec<&str> = tools.iter().map(|t| t.name()).collect();
    names.sort_unstable();
    assert_eq!(
        names,
        [
            "crash",
            "environ",
            "fail",
            "greet",
            "local_add",
            "pixel",
            "refuse",
            "slow",
            "stats"
        ]
    );
    assert_eq!(tool(&tools, "local_add").remote_name(), "add");
    servers.close().await;
    let _ = std::fs::remove_dir_all(&dir);

    // A server that fails to start fails the whole set, naming it.
    let config = McpConfig::new()
        .with_server("good", stdio_server(&python))
        .with_server(
            "bad",
            McpServerConfig::stdio("agentgraph-no-such-program", [""; 0]),
        );
    let error = MultiServerMcpClient::connect(&config).await.unwrap_err();
    assert!(error.to_string().contains("MCP server `bad`"), "{error}");
}

/// A ReAct agent whose model calls `add`, then answers with the tool's result.
async fn react_agent_uses(registry: ToolRegistry) {
    let model = ScriptedModel::new([
        Reply::tool_call("add", json!({"a": 19, "b": 23})),
        Reply::from_fn(|messages: &[Message]| {
            let result = messages.last().map(Message::content).unwrap_or_default();
            Reply::text(format!("The sum is {result}."))
        }),
    ]);
    let agent = create_react_agent(model.clone(), registry).build().unwrap();
    let out = agent
        .invoke(AgentState::user("what is 19 + 23?"), RunConfig::default())
        .await
        .unwrap();
    let kinds: Vec<&str> = out.messages.iter().map(Message::kind).collect();
    assert_eq!(kinds, ["human", "ai", "tool", "ai"]);
    assert_eq!(out.messages[2].content(), "42");
    assert_eq!(out.answer(), Some("The sum is 42."));
    // The model was given the server's tool with its schema.
    let requests = model.requests();
    let add = requests[0]
        .options
        .tools
        .iter()
        .find(|t| t.name == "add")
        .expect("add is bound");
    assert_eq!(add.parameters["properties"]["b"]["type"], "integer");
}

#[tokio::test]
async fn a_react_agent_calls_mcp_tools_over_both_transports() {
    let Some(python) = python() else { return };
    let stdio = McpClient::connect("local", &stdio_server(&python))
        .await
        .unwrap();
    let http = http_server(&python);
    let remote = McpClient::connect("remote", &McpServerConfig::http(&http.url))
        .await
        .unwrap();
    for client in [&stdio, &remote] {
        let servers = MultiServerMcpClient::default().with_client(client.clone());
        react_agent_uses(servers.registry().await.unwrap()).await;
    }

    // Next to the program's own tools, in a ToolNode that reports errors to the model.
    let mut registry = ToolRegistry::builtins();
    for tool in MultiServerMcpClient::default()
        .with_client(remote.clone())
        .tools_avoiding(&registry.names().collect::<Vec<_>>())
        .await
        .unwrap()
    {
        registry.register_arc(Arc::new(tool)).unwrap();
    }
    let model = ScriptedModel::new([
        Reply::tool_calls([
            ("fail", json!({"reason": "no"})),
            ("calculator", json!({"expression": "2 + 2"})),
        ]),
        Reply::text("done"),
    ]);
    let agent = create_react_agent(model, registry).build().unwrap();
    let out = agent
        .invoke(AgentState::user("try both"), RunConfig::default())
        .await
        .unwrap();
    let Message::Tool(failed) = &out.messages[2] else {
        panic!("{:?}", out.messages[2])
    };
    assert!(failed.is_error);
    assert!(
        failed.content.contains("failed on purpose: no"),
        "{}",
        failed.content
    );
    assert_eq!(out.messages[3].content(), "4");
    stdio.close().await;
    remote.close().await;
}
