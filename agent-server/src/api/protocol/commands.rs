//! The protocol's commands. `run.start` and `input.respond` queue a run exactly as
//! `POST /threads/{id}/runs` does (auth, ownership, multitask strategies, limits), asking
//! for the stream modes the protocol's channels are made of; the subscription commands and
//! `agent.getTree` need a connection (the WebSocket) and are answered there.

use std::sync::Arc;
use std::time::Duration;

use serde_json::{Map, Value, json};

use crate::api::models::protocol::{
    ErrorType, ProtocolError, ProtocolErrorCode, ProtocolResponse, ProtocolResponseMeta,
    ProtocolSuccess, SuccessType,
};
use crate::api::models::runs::RunCreate;
use crate::api::{App, Caller};
use crate::error::ApiError;
use crate::store::Kind;

/// Every method the protocol names; the others are `unknown_command`.
const KNOWN: [&str; 6] = [
    "run.start",
    "input.respond",
    "agent.getTree",
    "subscription.subscribe",
    "subscription.unsubscribe",
    "subscription.reconnect",
];

/// The stream modes a protocol run asks for: what its channels are made of.
const MODES: [&str; 4] = ["values", "updates", "messages-tuple", "custom"];

/// How long `input.respond` waits for a busy thread to record its interrupts.
const SETTLE: Duration = Duration::from_secs(5);

pub(super) fn success(id: i64, result: Value, seq: u64) -> ProtocolResponse {
    ProtocolResponse::Success(ProtocolSuccess {
        kind: SuccessType::Success,
        id,
        result,
        meta: ProtocolResponseMeta {
            applied_through_seq: seq,
        },
    })
}

pub(super) fn error(
    id: Option<i64>,
    code: ProtocolErrorCode,
    message: impl Into<String>,
) -> ProtocolResponse {
    ProtocolResponse::Error(ProtocolError {
        kind: ErrorType::Error,
        id,
        error: code,
        message: message.into(),
        meta: None,
    })
}

fn invalid(id: i64, message: &str) -> ProtocolResponse {
    error(Some(id), ProtocolErrorCode::InvalidArgument, message)
}

/// Whether `method` is one of the protocol's.
pub(super) fn known(method: &str) -> bool {
    KNOWN.contains(&method)
}

/// The answer to a command that needs no connection (`run.start`, `input.respond`), or
/// `None` for one that does.
pub(super) async fn run_command(
    app: &Arc<App>,
    caller: &Caller,
    thread_id: &str,
    id: i64,
    method: &str,
    params: &Value,
    seq: u64,
) -> Option<ProtocolResponse> {
    if matches!(method, "run.start" | "input.respond")
        && let Err(e) = super::readable(app, caller, thread_id).await
    {
        // Another user's thread: as if it did not exist, before anything of it is read.
        return Some(refused(id, &e));
    }
    Some(match method {
        "run.start" => start(app, caller, thread_id, id, params, seq).await,
        "input.respond" => respond(app, caller, thread_id, id, params, seq).await,
        m if !known(m) => error(
            Some(id),
            ProtocolErrorCode::UnknownCommand,
            format!("Unknown protocol command: {}", clip(m)),
        ),
        _ => return None,
    })
}

/// A method name as quoted back: at most 64 characters.
fn clip(s: &str) -> String {
    s.chars().take(64).collect()
}

/// A queue's refusal as langgraph-api words it: `<status>: <detail>`.
fn refused(id: i64, e: &ApiError) -> ProtocolResponse {
    error(
        Some(id),
        ProtocolErrorCode::UnknownError,
        format!("{}: {}", e.status.as_u16(), crate::redact::scrub(&e.detail)),
    )
}

async fn start(
    app: &Arc<App>,
    caller: &Caller,
    thread_id: &str,
    id: i64,
    params: &Value,
    seq: u64,
) -> ProtocolResponse {
    let Some(assistant_id) = params["assistant_id"].as_str().filter(|a| !a.is_empty()) else {
        return invalid(id, "run.start requires an assistant_id.");
    };
    let mut config = params["config"].as_object().cloned().unwrap_or_default();
    let mut checkpoint_id = None;
    if let Some(c) = config
        .get_mut("configurable")
        .and_then(Value::as_object_mut)
        && let Some(cp) = c.remove("checkpoint_id")
    {
        match cp.as_str().filter(|s| !s.is_empty()) {
            Some(s) if uuid::Uuid::parse_str(s).is_ok() => checkpoint_id = Some(s.to_owned()),
            Some(_) => return invalid(id, "Invalid config.configurable.checkpoint_id."),
            None => {
                return invalid(
                    id,
                    "config.configurable.checkpoint_id must be a non-empty string.",
                );
            }
        }
    }
    let strategy = params
        .get("multitaskStrategy")
        .or(params.get("multitask_strategy"))
        .and_then(Value::as_str)
        .filter(|s| ["reject", "rollback", "interrupt", "enqueue"].contains(s))
        .unwrap_or("enqueue");
    let input = params.get("input").cloned().unwrap_or(Value::Null);
    // Input sent to a thread paused at an interrupt answers it.
    let (input, command) = if !input.is_null() && pending_interrupts(app, thread_id, false).await {
        (Value::Null, json!({"resume": input}))
    } else {
        (input, Value::Null)
    };
    let body = json!({
        "assistant_id": assistant_id,
        "input": input,
        "command": command,
        "config": config,
        "metadata": params.get("metadata").filter(|m| m.is_object()),
        "checkpoint_id": checkpoint_id,
        "multitask_strategy": strategy,
    });
    queue(
        app,
        caller,
        thread_id,
        id,
        body,
        seq,
        |run| json!({"run_id": run["run_id"]}),
    )
    .await
}

/// Queues a protocol run from `body` (a run's fields without the protocol's own).
async fn queue(
    app: &Arc<App>,
    caller: &Caller,
    thread_id: &str,
    id: i64,
    mut body: Value,
    seq: u64,
    result: impl FnOnce(&Value) -> Value,
) -> ProtocolResponse {
    if let Some(o) = body.as_object_mut() {
        o.retain(|_, v| !v.is_null());
        o.insert("stream_mode".into(), json!(MODES));
        o.insert("stream_subgraphs".into(), true.into());
        o.insert("stream_resumable".into(), true.into());
        o.insert("on_completion".into(), "keep".into());
        o.insert("if_not_exists".into(), "create".into());
    }
    let body: RunCreate = match crate::api::models::from_value(body) {
        Ok(b) => b,
        Err(e) => return error(Some(id), ProtocolErrorCode::InvalidArgument, e.detail),
    };
    match crate::api::runs::queue(app, caller, Some(thread_id), body).await {
        Ok(run) => success(id, result(&run), seq),
        Err(e) => refused(id, &e),
    }
}

/// The thread's recorded interrupts: interrupt id → namespace (of its task). With `wait`,
/// a busy thread is looked at again until it settles (its run may be recording its pause).
async fn interrupts_of(
    app: &App,
    thread_id: &str,
    wait: bool,
) -> Option<(Value, Map<String, Value>)> {
    let deadline = tokio::time::Instant::now() + SETTLE;
    loop {
        let doc = app
            .store
            .get(Kind::Thread, thread_id)
            .await
            .ok()
            .flatten()?;
        let busy = doc["status"] == "busy";
        let mut found = Map::new();
        for list in doc["interrupts"]
            .as_object()
            .into_iter()
            .flat_map(|m| m.values())
        {
            for i in list.as_array().into_iter().flatten() {
                if let Some(id) = i["id"].as_str() {
                    found.insert(id.to_owned(), i.clone());
                }
            }
        }
        if !found.is_empty() || !busy || !wait || tokio::time::Instant::now() >= deadline {
            return Some((doc, found));
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

async fn pending_interrupts(app: &App, thread_id: &str, wait: bool) -> bool {
    interrupts_of(app, thread_id, wait)
        .await
        .is_some_and(|(doc, found)| doc["status"] == "interrupted" || !found.is_empty())
}

async fn respond(
    app: &Arc<App>,
    caller: &Caller,
    thread_id: &str,
    id: i64,
    params: &Value,
    seq: u64,
) -> ProtocolResponse {
    // One answer (`interrupt_id`, `response`) or several (`responses`).
    let answers: Vec<&Value> = match params.get("responses") {
        Some(Value::Array(list)) if list.is_empty() => {
            return invalid(id, "input.respond requires at least one response.");
        }
        Some(Value::Array(list)) => {
            if list.iter().any(|r| !r.is_object()) {
                return invalid(id, "input.respond responses entries must be objects.");
            }
            if list.iter().any(|r| !r["interrupt_id"].is_string()) {
                return invalid(
                    id,
                    "input.respond responses entries require an interrupt_id.",
                );
            }
            list.iter().collect()
        }
        _ => {
            if !params["interrupt_id"].is_string() {
                return invalid(id, "input.respond requires an interrupt_id.");
            }
            vec![params]
        }
    };
    for a in &answers {
        if let Some(ns) = a.get("namespace")
            && !ns
                .as_array()
                .is_some_and(|l| l.iter().all(Value::is_string))
        {
            return invalid(
                id,
                "input.respond requires namespace to be a list of strings.",
            );
        }
    }
    let Some((doc, pending)) = interrupts_of(app, thread_id, true).await else {
        return error(
            Some(id),
            ProtocolErrorCode::NoSuchRun,
            "No interrupted run is bound to this thread.",
        );
    };
    for a in &answers {
        let iid = a["interrupt_id"].as_str().unwrap_or_default();
        if !pending.contains_key(iid) {
            return error(
                Some(id),
                ProtocolErrorCode::NoSuchInterrupt,
                format!("Unknown or already-consumed interrupt: {}", clip(iid)),
            );
        }
    }
    let Some(assistant_id) = doc["metadata"]["assistant_id"].as_str() else {
        return error(
            Some(id),
            ProtocolErrorCode::NoSuchRun,
            "No interrupted run is bound to this thread.",
        );
    };
    // One answer resumes the pause with its value; several, a map by interrupt id.
    let resume = match answers.as_slice() {
        [one] => one.get("response").cloned().unwrap_or(Value::Null),
        many => Value::Object(
            many.iter()
                .map(|a| {
                    (
                        a["interrupt_id"].as_str().unwrap_or_default().to_owned(),
                        a.get("response").cloned().unwrap_or(Value::Null),
                    )
                })
                .collect(),
        ),
    };
    let mut command = json!({"resume": resume});
    for key in ["update", "goto"] {
        if let Some(v) = params.get(key).filter(|v| !v.is_null()) {
            command[key] = v.clone();
        }
    }
    let body = json!({
        "assistant_id": assistant_id,
        "command": command,
        "config": params.get("config").filter(|c| c.is_object()),
        "metadata": params.get("metadata").filter(|m| m.is_object()),
        "multitask_strategy": "enqueue",
    });
    queue(app, caller, thread_id, id, body, seq, |_| json!({})).await
}
