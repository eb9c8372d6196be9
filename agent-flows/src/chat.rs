//! The chat contract every flow keeps (LangGraph's, what chat UIs such as Agent Chat UI draw
//! from a thread's `messages`), beside its seed's own fields:
//!
//! - the turn's human message is appended to `messages` as it was sent: its id and content
//!   blocks kept (the rules read its text);
//! - tool use shows as an AI message with `tool_calls` (name, args, id) followed by one
//!   [`ToolMessage`] per call ([`tool_call_message`], [`tool_result`]), in the order the
//!   flow's graph runs them; call ids are unique in the conversation, so a result is never
//!   matched to another turn's call;
//! - the answer is an AI message with a stable id ([`answer`]): a model's streamed answer
//!   keeps the id of its chunks (see [`agent_llm::invoke_in_node`]), a written one gets a
//!   fresh id before it is stored, so the message a stream sent is the message the thread
//!   keeps;
//! - model calls whose output is not the answer (routers, classifiers, extractors) are
//!   tagged [`nostream`](agent_llm::CallOptions::nostream): they never stream as chat
//!   messages.

use agent_llm::{AiMessage, Message, ToolCall, ToolMessage, new_message_id};

/// The answer of a turn written without a model (rules, templates, SQL results): an AI
/// message with a fresh id.
pub fn answer(text: impl Into<String>) -> Message {
    Message::ai(text).with_id(new_message_id())
}

/// A model's reply as the turn's answer: its text replaced by `text` (trimmed, or a
/// fallback), its id kept — the id its streamed chunks carried.
pub fn model_answer(reply: AiMessage, text: impl Into<String>) -> Message {
    let id = reply.id.clone().unwrap_or_else(new_message_id);
    Message::Ai(AiMessage {
        id: Some(id),
        content: text.into(),
        ..reply
    })
}

/// A fresh tool call id, unique in any conversation (providers take it back: at most 40
/// characters, letters, digits, `-` and `_`).
pub fn call_id() -> String {
    new_message_id()
}

/// The AI message that asks for `calls` (no text), with a fresh id.
pub fn tool_call_message(calls: Vec<ToolCall>) -> Message {
    Message::ai_tool_calls(calls).with_id(new_message_id())
}

/// The result of `call`: its output as text, or its error (`is_error`), with a fresh id.
pub fn tool_result(call: &ToolCall, result: Result<String, String>) -> Message {
    let (content, is_error) = match result {
        Ok(output) => (output, false),
        Err(error) => (error, true),
    };
    Message::Tool(ToolMessage {
        id: Some(new_message_id()),
        tool_call_id: call.id.clone(),
        name: Some(call.name.clone()),
        content,
        is_error,
        ..ToolMessage::default()
    })
}

/// `message` with a fresh id when it has none (tool messages a `ToolNode` wrote, say), so
/// what a stream sends and what the thread keeps carry the same id.
pub fn with_id(mut message: Message) -> Message {
    if message.id().is_none_or(str::is_empty) {
        message.set_id(new_message_id());
    }
    message
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn every_message_has_an_id_and_calls_are_unique() {
        assert!(answer("hi").id().is_some());
        let calls = vec![
            ToolCall::new(call_id(), "datetime", json!({"timezone": "Asia/Tokyo"})),
            ToolCall::new(call_id(), "datetime", json!({"timezone": "Europe/London"})),
        ];
        assert_ne!(calls[0].id, calls[1].id);
        assert!(calls[0].id.len() <= 40);
        let asked = tool_call_message(calls.clone());
        assert_eq!(asked.tool_calls(), calls.as_slice());
        let Message::Tool(failed) = tool_result(&calls[1], Err("boom".into())) else {
            panic!("a tool message");
        };
        assert!(failed.is_error && failed.id.is_some());
        assert_eq!(failed.tool_call_id, calls[1].id);
        let kept = model_answer(
            AiMessage {
                id: Some("chatcmpl-1".into()),
                content: " hi ".into(),
                ..AiMessage::default()
            },
            "hi",
        );
        assert_eq!((kept.id(), kept.content()), (Some("chatcmpl-1"), "hi"));
        assert!(with_id(Message::tool("c", "x")).id().is_some());
    }
}
