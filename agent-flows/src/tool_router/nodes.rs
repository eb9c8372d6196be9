//! The three nodes of seed 000 and its one routing function.

use std::collections::BTreeMap;

use agent_core::{BoxError, Runtime, node};
use agent_llm::{CallOptions, Message, ToolCall, invoke_in_node};
use agent_tools::content_of;
use serde_json::{Value, json};

use crate::chat;

use super::{RouterDecision, ToolRouterContext, ToolRouterState, ToolRouterStateUpdate};

/// What the router is told (the seed's `ROUTER_PROMPT`).
pub(crate) const ROUTER_PROMPT: &str = "You route a user's question to tools. Decide which \
    tool calls answer it and reply with JSON {\"calls\": [{\"tool\": name, \"args\": {...}}]}. \
    Use `datetime` with an IANA time zone (for example {\"timezone\": \"Asia/Tokyo\"}) for every \
    place whose current time is asked, one call per place, in the order asked; use \
    `calculator` with an arithmetic expression (for example {\"expression\": \"2 * (3 + 4)\"}) \
    for calculations. Reply {\"calls\": []} when no tool is needed or when a place is not a \
    real one.";

/// What the generator is told (the seed's `GENERATOR_PROMPT`).
pub(crate) const GENERATOR_PROMPT: &str = "You answer the user's last question in the \
    language they wrote it in, briefly, using only the tool results given. Say the local time \
    of each place asked for, and the result of each calculation. If a result is an error, or \
    a place is unknown, say so honestly.";

/// How tool results reach the generator (a system message after the conversation).
pub(crate) const TOOL_RESULTS: &str = "Tool Results:";

/// Decides which tools the last message needs.
#[node]
pub async fn router(
    state: &ToolRouterState,
    rt: &Runtime<ToolRouterContext>,
) -> Result<ToolRouterStateUpdate, BoxError> {
    let question = state
        .messages
        .iter()
        .rev()
        .find(|m| m.kind() == "human")
        .cloned()
        .ok_or("the router needs a question: the conversation has no human message")?;
    let context = rt.context();
    let tools: Vec<String> = context
        .tools
        .registry()
        .specs()
        .iter()
        .map(|t| format!("- {}: {}", t.name, t.description))
        .collect();
    let prompt = format!("{ROUTER_PROMPT}\nTools:\n{}", tools.join("\n"));
    let mut decision = context
        .router
        .invoke_in(
            rt,
            &[Message::system(prompt), question],
            // The decision is not the answer: never a chat message.
            &CallOptions::new()
                .task("RouterDecision")
                .max_tokens(400)
                .nostream(),
        )
        .await?
        .value;
    decision.calls.truncate(super::MAX_CALLS);
    Ok(plan(decision))
}

/// The decision as the seed's fields: the tool of each call, arguments by call id.
pub(crate) fn plan(decision: RouterDecision) -> ToolRouterStateUpdate {
    let mut selected = Vec::with_capacity(decision.calls.len());
    let mut args = BTreeMap::new();
    for (position, call) in decision.calls.into_iter().enumerate() {
        args.insert(call_id(&call.tool, position), call.args);
        selected.push(call.tool);
    }
    ToolRouterStateUpdate::default()
        .selected_tools(selected)
        .tool_args(args)
}

/// The id of the call at `position`: `<tool>_<position>`.
pub(crate) fn call_id(tool: &str, position: usize) -> String {
    format!("{tool}_{position}")
}

/// Runs every planned call at once; a failure is that call's result, not the node's. The
/// chat gets the calls as an AI message and a tool message per result.
#[node]
pub async fn tool_executor(
    state: &ToolRouterState,
    rt: &Runtime<ToolRouterContext>,
) -> ToolRouterStateUpdate {
    let tools = &rt.context().tools;
    let calls: Vec<ToolCall> = state
        .selected_tools
        .iter()
        .enumerate()
        .map(|(position, tool)| {
            let id = call_id(tool, position);
            let args = state.tool_args.get(&id).cloned().unwrap_or(Value::Null);
            ToolCall::new(id, tool.clone(), args)
        })
        .collect();
    let results = futures::future::join_all(
        calls
            .iter()
            .map(|call| tools.call_in(call, Some(rt.node_context()))),
    )
    .await;
    // In the chat, each call under an id unique in the conversation.
    let asked: Vec<ToolCall> = calls
        .iter()
        .map(|call| ToolCall::new(chat::call_id(), call.name.clone(), call.args.clone()))
        .collect();
    let mut messages = vec![chat::tool_call_message(asked.clone())];
    let results: BTreeMap<String, Value> = calls
        .into_iter()
        .zip(results)
        .zip(&asked)
        .map(|((call, result), asked)| {
            let mut entry = json!({ "tool": call.name, "args": call.args });
            match result {
                Ok(output) => {
                    messages.push(chat::tool_result(asked, Ok(content_of(&output))));
                    entry["output"] = output;
                }
                Err(error) => {
                    messages.push(chat::tool_result(asked, Err(error.to_string())));
                    entry["error"] = Value::from(error.to_string());
                }
            }
            (call.id, entry)
        })
        .collect();
    ToolRouterStateUpdate::default()
        .tool_results(results)
        .messages(messages)
}

/// Writes the answer from the conversation and the results, streaming its tokens.
#[node]
pub async fn generator(
    state: &ToolRouterState,
    rt: &Runtime<ToolRouterContext>,
) -> Result<ToolRouterStateUpdate, BoxError> {
    let mut messages = Vec::with_capacity(state.messages.len() + 2);
    messages.push(Message::system(GENERATOR_PROMPT));
    // The conversation as the seed's generator reads it: the results come below, not as
    // the chat's tool exchange.
    messages.extend(
        state
            .messages
            .iter()
            .filter(|m| match m {
                Message::Ai(ai) => ai.tool_calls.is_empty(),
                Message::Tool(_) | Message::Remove(_) => false,
                _ => true,
            })
            .cloned(),
    );
    messages.push(Message::system(format!(
        "{TOOL_RESULTS} {}",
        serde_json::to_string(&state.tool_results)?
    )));
    let reply = invoke_in_node(
        &*rt.context().generator,
        &messages,
        &CallOptions::new().task("generator").max_tokens(400),
        rt,
    )
    .await?;
    let text = reply.text().trim().to_owned();
    // The answer keeps the id its tokens streamed under.
    Ok(ToolRouterStateUpdate::default()
        .messages(vec![chat::model_answer(reply.message, text.clone())])
        .response(text))
}

/// `tools` when the router planned calls, `direct` otherwise (the seed's condition).
pub fn route_after_router(state: &ToolRouterState) -> &'static str {
    if state.selected_tools.is_empty() {
        "direct"
    } else {
        "tools"
    }
}
