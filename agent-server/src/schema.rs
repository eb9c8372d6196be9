//! JSON Schemas the `/schemas` and `/subgraphs` endpoints report: a graph's input, output,
//! state and context schemas from its state's fields (a subgraph's from the fields its
//! compiled shape keeps, its state type being erased in its node), titles as pydantic
//! writes them, and the message dicts a messages field holds (Studio renders a chat box for
//! a field whose items reference them).

use agent_core::{FieldInfo, Topology};
use serde_json::{Map, Value, json};

/// Whether a field holds chat messages (its reducer is `add_messages`).
pub(crate) fn is_messages(field: &FieldInfo) -> bool {
    field.reducer_name.ends_with("add_messages")
}

/// `input_schema`, `output_schema`, `state_schema`, `config_schema` and `context_schema` of
/// a graph whose state has `fields`. `context`: the graph's context schema when it is known
/// (`Some(None)`: it takes none), `None` when it is not (then both context entries are null).
pub(crate) fn graph_schemas(
    fields: &[FieldInfo],
    state_title: &str,
    context: Option<Option<&Value>>,
) -> Map<String, Value> {
    let message_ref = json!({"oneOf": [
        {"$ref": "#/$defs/HumanMessage"}, {"$ref": "#/$defs/AIMessage"},
        {"$ref": "#/$defs/ToolMessage"}, {"$ref": "#/$defs/SystemMessage"}]});
    let mut props = Map::new();
    for f in fields {
        let schema = if is_messages(f) {
            json!({"type": "array", "items": message_ref, "title": title(f.name)})
        } else {
            json!({"title": title(f.name)})
        };
        props.insert(f.name.to_owned(), schema);
    }
    let defs = message_defs();
    let io = json!({"$defs": defs, "properties": props, "title": "State", "type": "object"});
    let mut state_props = props;
    for v in state_props.values_mut() {
        if let Some(o) = v.as_object_mut() {
            o.insert("default".to_owned(), Value::Null);
        }
    }
    let (config, context) = match context {
        Some(schema) => (
            schema.cloned().unwrap_or_else(|| json!({})),
            schema.cloned().unwrap_or(Value::Null),
        ),
        None => (Value::Null, Value::Null),
    };
    let mut out = Map::new();
    out.insert("input_schema".into(), io.clone());
    out.insert("output_schema".into(), io);
    out.insert(
        "state_schema".into(),
        json!({"$defs": defs, "properties": state_props, "title": state_title, "type": "object"}),
    );
    out.insert("config_schema".into(), config);
    out.insert("context_schema".into(), context);
    out
}

/// The subgraphs of `t` as LangGraph's `get_subgraphs(namespace, recurse)` yields them:
/// without a namespace, each of `t`'s subgraph nodes (and with `recurse` the ones nested in
/// them, `a|b`), depth first; with one (`a`, or `a|b` for a nested one), only the subgraph
/// there, if any.
pub(crate) fn subgraphs_at<'t>(
    t: &'t Topology,
    namespace: Option<&str>,
    recurse: bool,
) -> Vec<(String, &'t Topology)> {
    let mut out = Vec::new();
    match namespace {
        Some(ns) => {
            let mut at = t;
            for label in ns.split('|') {
                match at.subgraphs.iter().find(|(name, _)| name == label) {
                    Some((_, sub)) => at = sub,
                    None => return out,
                }
            }
            out.push((ns.to_owned(), at));
        }
        None => every(t, "", recurse, &mut out),
    }
    out
}

fn every<'t>(t: &'t Topology, prefix: &str, recurse: bool, out: &mut Vec<(String, &'t Topology)>) {
    for (name, sub) in &t.subgraphs {
        let ns = format!("{prefix}{name}");
        out.push((ns.clone(), sub));
        if recurse {
            every(sub, &format!("{ns}|"), true, out);
        }
    }
}

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
