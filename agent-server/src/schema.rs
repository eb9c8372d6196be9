//! JSON Schemas the `/schemas` endpoint reports: titles as pydantic writes them, and the
//! message dicts a messages field holds (Studio renders a chat box for a field whose items
//! reference them).

use serde_json::{Value, json};

pub(crate) fn title(name: &str) -> String {
    name.split('_')
        .filter(|w| !w.is_empty())
        .map(|w| {
            let mut c = w.chars();
            c.next()
                .map(|f| f.to_uppercase().chain(c).collect::<String>())
                .unwrap_or_default()
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// JSON Schemas of the message dicts a messages field holds (Studio renders a chat box
/// for a field whose items reference them).
pub(crate) fn message_defs() -> Value {
    let def = |kind: &str, name: &str, extra: Value| {
        let mut props = json!({
            "content": {"anyOf": [{"type": "string"}, {"type": "array", "items": {}}], "title": "Content"},
            "additional_kwargs": {"type": "object", "title": "Additional Kwargs"},
            "response_metadata": {"type": "object", "title": "Response Metadata"},
            "type": {"const": kind, "default": kind, "title": "Type", "type": "string"},
            "name": {"anyOf": [{"type": "string"}, {"type": "null"}], "default": null, "title": "Name"},
            "id": {"anyOf": [{"type": "string"}, {"type": "null"}], "default": null, "title": "Id"},
        });
        if let (Some(p), Value::Object(e)) = (props.as_object_mut(), extra) {
            p.extend(e);
        }
        let required: Vec<&str> = if kind == "tool" {
            vec!["content", "tool_call_id"]
        } else {
            vec!["content"]
        };
        json!({"additionalProperties": true, "properties": props, "required": required, "title": name, "type": "object"})
    };
    json!({
        "HumanMessage": def("human", "HumanMessage", json!({})),
        "AIMessage": def("ai", "AIMessage", json!({"tool_calls": {"type": "array", "items": {"type": "object"}, "title": "Tool Calls"}})),
        "ToolMessage": def("tool", "ToolMessage", json!({"tool_call_id": {"type": "string", "title": "Tool Call Id"}})),
        "SystemMessage": def("system", "SystemMessage", json!({})),
    })
}
