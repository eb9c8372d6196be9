//! Tool-call logging: every call runs in an `execute_tool` span, and its arguments reach the logs
//! only through `DynTool::redact_args`, so a `Redacted` tool (or a `.redacted()` registry)
//! never logs a secret.
//!
//! This is its own test binary (one test): `tracing` caches per call site whether anyone
//! listens, and tests on other threads of the same process would race with the subscriber
//! installed here.

use std::sync::{Arc, Mutex};

use agent_llm::ToolCall;
use agent_tools::{ToolNode, ToolRegistry, tool_fn};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::json;

fn call(id: &str, name: &str, args: serde_json::Value) -> ToolCall {
    ToolCall::new(id, name, args)
}

/// A `tracing` writer into a shared buffer.
#[derive(Clone, Default)]
struct Captured(Arc<Mutex<Vec<u8>>>);

impl std::io::Write for Captured {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

#[tokio::test]
async fn logged_arguments_go_through_redaction() {
    #[derive(Deserialize, JsonSchema)]
    struct Login {
        user: String,
        password: String,
    }
    let login = tool_fn("login", "Logs in.", |l: Login| async move {
        Ok::<_, String>(format!("{} ok ({} chars)", l.user, l.password.len()))
    });
    let registry = ToolRegistry::new().with_tool(login).unwrap();
    let calls = [call(
        "l",
        "login",
        json!({"user": "ada", "password": "hunter2"}),
    )];

    let logs = Captured::default();
    let writer = logs.clone();
    let subscriber = tracing_subscriber::fmt()
        .with_max_level(tracing::Level::DEBUG)
        .with_ansi(false)
        .with_writer(move || writer.clone())
        .finish();
    let _guard = tracing::subscriber::set_default(subscriber);

    let plain = ToolNode::new(registry.clone())
        .run_calls(&calls)
        .await
        .unwrap();
    let redacted = ToolNode::new(registry.redacted())
        .run_calls(&calls)
        .await
        .unwrap();
    // The tool got the real password either way.
    assert_eq!(plain[0].content, "ada ok (7 chars)");
    assert_eq!(redacted[0].content, "ada ok (7 chars)");

    let text = String::from_utf8(logs.0.lock().unwrap().clone()).unwrap();
    let started: Vec<&str> = text
        .lines()
        .filter(|l| l.contains("tool call started"))
        .collect();
    assert_eq!(started.len(), 2, "{text}");
    assert!(started[0].contains("hunter2"), "{text}");
    assert!(!started[1].contains("hunter2"), "{text}");
    assert!(started[1].contains(r#""password":"[REDACTED]""#), "{text}");
    assert!(
        started[1].contains("execute_tool{")
            && started[1].contains(r#"gen_ai.tool.name="login""#)
            && started[1].contains(r#"gen_ai.tool.call.id="l""#),
        "{text}"
    );
    assert!(text.contains("tool call finished"), "{text}");
}
