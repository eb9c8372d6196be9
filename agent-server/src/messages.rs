//! Messages as LangGraph clients write and read them.
//!
//! Clients send `{"role": "user", "content": "hi"}` or LangChain dicts (`{"type": "human",
//! ...}`, content as a string or a list of blocks), and read LangChain dicts back
//! (`additional_kwargs`, `response_metadata`, `tool_calls` with `"type": "tool_call"`,
//! `usage_metadata`...). agent-llm's [`Message`](agent_llm::Message) has its own serde shape;
//! these functions map between the two on the fields of a state that hold messages (the
//! fields reduced by `add_messages`), so graph code never sees the wire's dialect. A human
//! message sent as content blocks keeps them ([`HumanMessage::content_blocks`](agent_llm::HumanMessage::content_blocks),
//! its `content` their text) and reads back as sent, with its id.

use agent_core::GraphState;
use serde_json::{Map, Value, json};

/// The fields of `S` that hold messages: those reduced by `add_messages`.
pub fn message_fields<S: GraphState>() -> Vec<&'static str> {
    S::fields()
        .iter()
        .filter(|f| f.reducer_name.ends_with("add_messages"))
        .map(|f| f.name)
        .collect()
}

/// Rewrites the message fields of a state or update object from the client's dialect to
/// agent-llm's. Anything that is not a recognisable message is left for serde to reject
/// with its own message.
pub fn incoming(fields: &[&str], object: &mut Value) {
    let Some(map) = object.as_object_mut() else {
        return;
    };
    for field in fields {
        match map.get_mut(*field) {
            Some(Value::Array(items)) => items.iter_mut().for_each(message_in),
            Some(one @ Value::Object(_)) => message_in(one),
            Some(Value::String(text)) => {
                // LangGraph coerces a bare string to a human message.
                let text = std::mem::take(text);
                map.insert(
                    (*field).to_owned(),
                    json!([{"type": "human", "content": text}]),
                );
            }
            _ => {}
        }
    }
}

/// Rewrites the message fields of a state or update object into LangChain dicts.
pub fn outgoing(fields: &[&str], object: &mut Value) {
    let Some(map) = object.as_object_mut() else {
        return;
    };
    for field in fields {
        match map.get_mut(*field) {
            Some(Value::Array(items)) => items.iter_mut().for_each(message_out),
            Some(one @ Value::Object(_)) => message_out(one),
            _ => {}
        }
    }
}

fn message_in(value: &mut Value) {
    let Some(m) = value.as_object_mut() else {
        return;
    };
    let kind = m
        .get("type")
        .or_else(|| m.get("role"))
        .and_then(Value::as_str)
        .unwrap_or_default();
    let kind = match kind {
        "user" | "human" | "HumanMessageChunk" => "human",
        "assistant" | "ai" | "AIMessageChunk" => "ai",
        "system" | "developer" | "SystemMessageChunk" => "system",
        "tool" | "ToolMessageChunk" => "tool",
        "remove" => "remove",
        _ => return,
    };
    let mut out = Map::new();
    out.insert("type".into(), kind.into());
    out.insert(
        "id".into(),
        m.get("id")
            .filter(|v| v.is_string())
            .cloned()
            .unwrap_or(Value::Null),
    );
    if kind == "remove" {
        *value = Value::Object(out);
        return;
    }
    out.insert("content".into(), content_text(m.get("content")).into());
    if kind == "human"
        && let Some(Value::Array(blocks)) = m.get("content")
    {
        // The blocks as sent (attachments too); `content` is their text.
        out.insert("content_blocks".into(), Value::Array(blocks.clone()));
    }
    let mut extra = match m.get("additional_kwargs") {
        Some(Value::Object(kw)) => kw.clone(),
        _ => Map::new(),
    };
    if let Some(Value::Object(kept)) = m.get("extra") {
        extra.extend(kept.clone());
    }
    out.insert("extra".into(), Value::Object(extra));
    match kind {
        "human" => {
            out.insert("name".into(), m.get("name").cloned().unwrap_or(Value::Null));
        }
        "ai" => {
            let calls: Vec<Value> = m
                .get("tool_calls")
                .and_then(Value::as_array)
                .map(|calls| {
                    calls
                        .iter()
                        .map(|c| {
                            // OpenAI's shape nests name and arguments under `function`.
                            let function = c.get("function");
                            let name = c
                                .get("name")
                                .or_else(|| function.and_then(|f| f.get("name")))
                                .cloned()
                                .unwrap_or(Value::Null);
                            let args = match c
                                .get("args")
                                .or_else(|| function.and_then(|f| f.get("arguments")))
                            {
                                Some(Value::String(s)) => {
                                    serde_json::from_str(s).unwrap_or_else(|_| json!({}))
                                }
                                Some(v) => v.clone(),
                                None => json!({}),
                            };
                            json!({"id": c.get("id").cloned().unwrap_or_default(), "name": name, "args": args})
                        })
                        .collect()
                })
                .unwrap_or_default();
            out.insert("tool_calls".into(), Value::Array(calls));
            let usage = m
                .get("usage_metadata")
                .or_else(|| m.get("usage"))
                .filter(|u| u.is_object())
                .map(|u| {
                    json!({
                        "input_tokens": u.get("input_tokens").and_then(Value::as_u64).unwrap_or(0),
                        "output_tokens": u.get("output_tokens").and_then(Value::as_u64).unwrap_or(0),
                    })
                });
            out.insert("usage".into(), usage.unwrap_or(Value::Null));
        }
        "tool" => {
            out.insert(
                "tool_call_id".into(),
                m.get("tool_call_id").cloned().unwrap_or_else(|| "".into()),
            );
            out.insert("name".into(), m.get("name").cloned().unwrap_or(Value::Null));
            let failed = m.get("status").and_then(Value::as_str) == Some("error")
                || m.get("is_error").and_then(Value::as_bool) == Some(true);
            out.insert("is_error".into(), failed.into());
        }
        _ => {}
    }
    *value = Value::Object(out);
}

/// The text of LangChain content: a string, or the text blocks of a list joined.
fn content_text(content: Option<&Value>) -> String {
    match content {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Array(blocks)) => agent_llm::text_of_blocks(blocks),
        Some(Value::Null) | None => String::new(),
        Some(other) => other.to_string(),
    }
}

/// One agent-llm message as a LangChain dict, keys in LangChain's order.
pub fn message_out(value: &mut Value) {
    let Some(m) = value.as_object() else {
        return;
    };
    let kind = m.get("type").and_then(Value::as_str).unwrap_or_default();
    let get = |k: &str| m.get(k).cloned().unwrap_or(Value::Null);
    let extra = match m.get("extra") {
        Some(Value::Object(e)) => Value::Object(e.clone()),
        _ => json!({}),
    };
    let out = match kind {
        "human" | "system" => {
            // A message sent as content blocks reads back as those blocks.
            let content = match m.get("content_blocks") {
                Some(blocks @ Value::Array(_)) => blocks.clone(),
                _ => get("content"),
            };
            json!({
                "content": content, "additional_kwargs": extra, "response_metadata": {},
                "type": kind, "name": get("name"), "id": get("id"),
            })
        }
        "ai" => {
            let calls: Vec<Value> = m
                .get("tool_calls")
                .and_then(Value::as_array)
                .map(|calls| {
                    calls
                        .iter()
                        .map(|c| json!({"name": c.get("name"), "args": c.get("args"), "id": c.get("id"), "type": "tool_call"}))
                        .collect()
                })
                .unwrap_or_default();
            json!({
                "content": get("content"), "additional_kwargs": extra, "response_metadata": {},
                "type": "ai", "name": null, "id": get("id"),
                "tool_calls": calls, "invalid_tool_calls": [], "usage_metadata": usage_metadata(m.get("usage")),
            })
        }
        "tool" => json!({
            "content": get("content"), "additional_kwargs": extra, "response_metadata": {},
            "type": "tool", "name": get("name"), "id": get("id"), "tool_call_id": get("tool_call_id"),
            "artifact": null,
            "status": if m.get("is_error").and_then(Value::as_bool) == Some(true) { "error" } else { "success" },
        }),
        _ => return,
    };
    *value = out;
}

fn usage_metadata(usage: Option<&Value>) -> Value {
    match usage {
        Some(u @ Value::Object(_)) => {
            let i = u.get("input_tokens").and_then(Value::as_u64).unwrap_or(0);
            let o = u.get("output_tokens").and_then(Value::as_u64).unwrap_or(0);
            json!({"input_tokens": i, "output_tokens": o, "total_tokens": i + o})
        }
        _ => Value::Null,
    }
}

/// A streamed piece of an AI reply as LangChain's `AIMessageChunk` dict.
pub fn chunk_dict(id: &str, content: &str, tool_call_chunks: Vec<Value>, last: bool) -> Value {
    json!({
        "content": content, "additional_kwargs": {}, "response_metadata": {},
        "type": "AIMessageChunk", "name": null, "id": id,
        "tool_calls": [], "invalid_tool_calls": [], "usage_metadata": null,
        "tool_call_chunks": tool_call_chunks,
        "chunk_position": if last { Value::from("last") } else { Value::Null },
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn role_dicts_and_blocks_become_agent_llm_messages() {
        let mut state = json!({"messages": [
            {"role": "user", "content": [{"type": "text", "text": "hi "}, "there"]},
            {"type": "ai", "content": "", "tool_calls": [{"name": "f", "args": {"x": 1}, "id": "c1", "type": "tool_call"}]},
            {"role": "tool", "content": "ok", "tool_call_id": "c1", "status": "error"},
        ]});
        incoming(&["messages"], &mut state);
        let parsed: Vec<agent_llm::Message> =
            serde_json::from_value(state["messages"].clone()).unwrap();
        assert_eq!(parsed[0].content(), "hi there");
        assert_eq!(
            parsed[0],
            agent_llm::HumanMessage::blocks(vec![
                json!({"type": "text", "text": "hi "}),
                json!("there")
            ])
            .into()
        );
        assert_eq!(parsed.len(), 3);
    }

    #[test]
    fn messages_round_trip_through_the_langchain_dialect() {
        let original = vec![
            agent_llm::Message::human("hi"),
            agent_llm::Message::tool("c1", "12 degrees"),
        ];
        let mut state = json!({"messages": original});
        outgoing(&["messages"], &mut state);
        assert_eq!(state["messages"][0]["additional_kwargs"], json!({}));
        assert_eq!(state["messages"][1]["status"], "success");
        incoming(&["messages"], &mut state);
        let back: Vec<agent_llm::Message> =
            serde_json::from_value(state["messages"].clone()).unwrap();
        assert_eq!(back, original);
    }

    #[test]
    fn a_human_message_of_blocks_keeps_them_and_its_id() {
        let blocks = json!([
            {"type": "text", "text": "What is in "},
            {"type": "text", "text": "this picture?"},
            {"type": "image", "source_type": "url", "url": "https://example.com/cat.png"},
        ]);
        let mut state = json!({"messages": [
            {"type": "human", "id": "5e1c-client", "content": blocks},
        ]});
        incoming(&["messages"], &mut state);
        let parsed: Vec<agent_llm::Message> =
            serde_json::from_value(state["messages"].clone()).unwrap();
        let agent_llm::Message::Human(human) = &parsed[0] else {
            panic!("{parsed:?}");
        };
        assert_eq!(human.id.as_deref(), Some("5e1c-client"));
        assert_eq!(human.content, "What is in this picture?");
        assert_eq!(human.content_blocks.as_ref(), blocks.as_array());
        let mut back = json!({"messages": parsed});
        outgoing(&["messages"], &mut back);
        assert_eq!(back["messages"][0]["content"], blocks);
        assert_eq!(back["messages"][0]["id"], "5e1c-client");
        assert_eq!(back["messages"][0]["type"], "human");
    }

    #[test]
    fn a_bare_string_is_a_human_message() {
        let mut state = json!({"messages": "hello"});
        incoming(&["messages"], &mut state);
        assert_eq!(state["messages"][0]["type"], "human");
    }
}
