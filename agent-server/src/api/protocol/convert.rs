//! One run's events in the protocol's terms. A run started by `run.start` streams as any
//! other run does (`values`, `updates`, `messages-tuple`, `custom`, subgraphs named
//! `<mode>|<ns>`); these are what its channel (here or mirrored from the store) keeps, and
//! every connection converts them again the same way, so an event's id and place are the
//! same on every connection and `since` means the same after a reconnect.
//!
//! What is made of them: the root `lifecycle` (`running` first, `completed` / `failed` /
//! `interrupted` last), a subgraph's `started` on its first event and `completed` when its
//! node's update reaches the parent (or the run ends); `values` and `updates` without
//! `__interrupt__`; one `input.requested` per interrupt (its value under both `payload`, as
//! langgraph-api and the JS SDK have it, and `value`, which the python SDK reads); the
//! model's tokens as a content-block stream on `messages` (a message that was not streamed
//! as one delta); `tools` from the graph's messages: `tool-started` when a model's message
//! asks for a call, `tool-finished` (or `tool-error`) when its tool message lands.

use std::collections::{BTreeMap, HashMap, HashSet};

use serde_json::{Map, Value, json};

use crate::runs::LiveEvent;

/// An event before its place on a connection is known.
#[derive(Debug, Clone)]
pub(super) struct Raw {
    pub(super) event_id: String,
    pub(super) method: &'static str,
    pub(super) namespace: Vec<String>,
    pub(super) timestamp: i64,
    pub(super) data: Value,
    pub(super) node: Option<String>,
}

/// A message being streamed in one namespace: its content blocks so far.
#[derive(Default)]
struct Streaming {
    id: String,
    text: Option<(usize, String)>,
    /// Tool call blocks by the provider's index: wire index, id, name, args so far.
    calls: BTreeMap<i64, (usize, String, String, String)>,
    next_index: usize,
    node: Option<String>,
}

/// How a run ended, as its row says.
pub(super) enum Ending {
    /// `success`.
    Completed,
    /// `error`, `timeout`: with the error's message when known.
    Failed(Option<String>),
    /// `interrupted` (a cancel).
    Interrupted,
    /// Unknown (the run is gone, or still running).
    Unknown,
}

/// Converts one run's events, in order.
pub(super) struct Converter {
    run_id: String,
    graph_name: String,
    count: u64,
    started: bool,
    /// Subgraph namespaces announced and not yet closed, in the order they opened.
    open: Vec<Vec<String>>,
    streaming: HashMap<Vec<String>, Streaming>,
    interrupts: HashSet<String>,
    /// Subgraphs' pauses seen before the root's: namespace, value.
    held: Vec<(Vec<String>, Value)>,
    /// Set once the run's terminal lifecycle event went out.
    ended: bool,
    /// Tool calls asked for: id → (name, args).
    asked: HashMap<String, (String, Value)>,
    /// Tool calls started / finished.
    tools_started: HashSet<String>,
    tools_finished: HashSet<String>,
}

impl Converter {
    pub(super) fn new(run_id: &str, graph_name: &str) -> Self {
        Converter {
            run_id: run_id.to_owned(),
            graph_name: graph_name.to_owned(),
            count: 0,
            started: false,
            open: Vec::new(),
            streaming: HashMap::new(),
            interrupts: HashSet::new(),
            held: Vec::new(),
            ended: false,
            asked: HashMap::new(),
            tools_started: HashSet::new(),
            tools_finished: HashSet::new(),
        }
    }

    fn emit(
        &mut self,
        out: &mut Vec<Raw>,
        method: &'static str,
        namespace: &[String],
        data: Value,
        node: Option<String>,
        ts: i64,
    ) {
        self.count += 1;
        out.push(Raw {
            event_id: format!("{}:{}", self.run_id, self.count),
            method,
            namespace: namespace.to_vec(),
            timestamp: ts,
            data,
            node,
        });
    }

    fn lifecycle(&mut self, out: &mut Vec<Raw>, ns: &[String], data: Value, ts: i64) {
        self.emit(out, "lifecycle", ns, data, None, ts);
    }

    fn begin(&mut self, out: &mut Vec<Raw>, ts: i64) {
        if !self.started {
            self.started = true;
            let data = json!({"event": "running", "graph_name": self.graph_name});
            self.lifecycle(out, &[], data, ts);
        }
    }

    /// Announces `ns` and each of its parents not yet announced.
    fn enter(&mut self, out: &mut Vec<Raw>, ns: &[String], ts: i64) {
        for depth in 1..=ns.len() {
            let prefix = &ns[..depth];
            if self.open.iter().any(|o| o == prefix) {
                continue;
            }
            self.open.push(prefix.to_vec());
            let last = &prefix[depth - 1];
            let (name, task) = last.split_once(':').unwrap_or((last.as_str(), ""));
            let data = json!({"event": "started", "namespace": prefix, "graph_name": name,
                "trigger_call_id": task});
            self.lifecycle(out, prefix, data, ts);
        }
    }

    /// Closes the open namespaces under `parent` whose node is `node` (any node: `None`),
    /// deepest first.
    fn close(&mut self, out: &mut Vec<Raw>, parent: &[String], node: Option<&str>, ts: i64) {
        let mut closing: Vec<Vec<String>> = self
            .open
            .iter()
            .filter(|o| {
                o.len() > parent.len()
                    && o.starts_with(parent)
                    && node.is_none_or(|n| o[parent.len()].split(':').next() == Some(n))
            })
            .cloned()
            .collect();
        closing.sort_by_key(|o| std::cmp::Reverse(o.len()));
        for ns in closing {
            self.finish_message(out, &ns, ts);
            self.open.retain(|o| *o != ns);
            let name = ns
                .last()
                .and_then(|s| s.split(':').next())
                .unwrap_or_default()
                .to_owned();
            self.lifecycle(
                out,
                &ns,
                json!({"event": "completed", "graph_name": name}),
                ts,
            );
        }
    }

    /// The protocol events of one of the run's events.
    pub(super) fn push(&mut self, event: &LiveEvent, ts: i64) -> Vec<Raw> {
        let mut out = Vec::new();
        if self.ended {
            return out;
        }
        self.begin(&mut out, ts);
        let mut parts = event.name.split('|');
        let mode = parts.next().unwrap_or_default();
        let ns: Vec<String> = parts.map(str::to_owned).collect();
        let Ok(data) = serde_json::from_str::<Value>(&event.data) else {
            return out;
        };
        match mode {
            "values" | "updates" | "messages" | "custom" => self.enter(&mut out, &ns, ts),
            _ => {}
        }
        match mode {
            "values" => self.values(&mut out, &ns, data, ts),
            "updates" => self.updates(&mut out, &ns, data, ts),
            "messages" => self.message(&mut out, &ns, data, ts),
            "custom" => self.emit(&mut out, "custom", &ns, json!({"payload": data}), None, ts),
            "error" => {
                self.finish_all(&mut out, ts);
                let message = data["message"].as_str().unwrap_or("the run failed");
                let data = json!({"event": "failed", "graph_name": self.graph_name,
                    "error": message});
                self.lifecycle(&mut out, &[], data, ts);
                self.ended = true;
            }
            _ => {}
        }
        out
    }

    /// The run's last events once its channel ended: open subgraphs completed, then the
    /// root's end (unless an interrupt or a failure already said it).
    pub(super) fn end(&mut self, ending: Ending, ts: i64) -> Vec<Raw> {
        let mut out = Vec::new();
        if self.ended {
            return out;
        }
        self.begin(&mut out, ts);
        self.finish_all(&mut out, ts);
        let data = match ending {
            Ending::Completed => json!({"event": "completed", "graph_name": self.graph_name}),
            Ending::Failed(error) => {
                let mut d = json!({"event": "failed", "graph_name": self.graph_name});
                if let Some(e) = error {
                    d["error"] = e.into();
                }
                d
            }
            Ending::Interrupted => {
                json!({"event": "interrupted", "graph_name": self.graph_name})
            }
            Ending::Unknown => return out,
        };
        self.lifecycle(&mut out, &[], data, ts);
        self.ended = true;
        out
    }

    fn finish_all(&mut self, out: &mut Vec<Raw>, ts: i64) {
        let keys: Vec<Vec<String>> = self.streaming.keys().cloned().collect();
        for ns in keys {
            self.finish_message(out, &ns, ts);
        }
        self.close(out, &[], None, ts);
    }

    fn values(&mut self, out: &mut Vec<Raw>, ns: &[String], mut data: Value, ts: i64) {
        let interrupts = data
            .as_object_mut()
            .and_then(|o| o.remove("__interrupt__"))
            .unwrap_or(Value::Null);
        self.interrupted(out, ns, &interrupts, ts);
        self.emit(out, "values", ns, data, None, ts);
    }

    fn updates(&mut self, out: &mut Vec<Raw>, ns: &[String], data: Value, ts: i64) {
        let Value::Object(nodes) = data else {
            return;
        };
        for (node, update) in nodes {
            if node == "__interrupt__" {
                self.interrupted(out, ns, &update, ts);
                continue;
            }
            self.tools(out, ns, &node, &update, ts);
            let data = match update {
                Value::Object(o) => Value::Object(o),
                Value::Null => Value::Object(Map::new()),
                other => json!({"value": other}),
            };
            self.emit(out, "updates", ns, data, Some(node.clone()), ts);
            // The node's subgraph (if it was one) is done.
            self.close(out, ns, Some(&node), ts);
        }
    }

    /// `input.requested` for each interrupt not announced yet, then the root's
    /// `interrupted` (once). A subgraph's pause is announced with the id its thread records
    /// (the root's, which comes as the run pauses), in the namespace it was first seen in.
    fn interrupted(&mut self, out: &mut Vec<Raw>, ns: &[String], list: &Value, ts: i64) {
        let Some(list) = list.as_array() else {
            return;
        };
        if !ns.is_empty() {
            for i in list {
                let value = i.get("value").cloned().unwrap_or(Value::Null);
                if !self.held.iter().any(|(n, v)| n == ns && *v == value) {
                    self.held.push((ns.to_vec(), value));
                }
            }
            return;
        }
        let mut any = false;
        for i in list {
            let id = i["id"].as_str().unwrap_or_default().to_owned();
            if !self.interrupts.insert(id.clone()) {
                continue;
            }
            any = true;
            let value = i.get("value").cloned().unwrap_or(Value::Null);
            let at = match self.held.iter().position(|(_, v)| *v == value) {
                Some(k) => self.held.remove(k).0,
                None => Vec::new(),
            };
            let data = json!({"interrupt_id": id, "payload": value, "value": value});
            self.emit(out, "input.requested", &at, data, None, ts);
        }
        if any {
            self.finish_all(out, ts);
            let data = json!({"event": "interrupted", "graph_name": self.graph_name});
            self.lifecycle(out, &[], data, ts);
            self.ended = true;
        }
    }

    /// `tools` events from a node's update: calls its model asked for, results its tools
    /// gave.
    fn tools(&mut self, out: &mut Vec<Raw>, ns: &[String], node: &str, update: &Value, ts: i64) {
        let Some(messages) = update.get("messages").and_then(Value::as_array) else {
            return;
        };
        for m in messages {
            match m["type"].as_str() {
                Some("ai") => {
                    for call in m["tool_calls"].as_array().into_iter().flatten() {
                        let Some(id) = call["id"].as_str() else {
                            continue;
                        };
                        let name = call["name"].as_str().unwrap_or_default().to_owned();
                        let args = call.get("args").cloned().unwrap_or(json!({}));
                        self.asked.insert(id.to_owned(), (name, args));
                    }
                    let ids: Vec<String> = m["tool_calls"]
                        .as_array()
                        .into_iter()
                        .flatten()
                        .filter_map(|c| c["id"].as_str().map(str::to_owned))
                        .collect();
                    for id in ids {
                        self.tool_started(out, ns, &id, Some(node), ts);
                    }
                }
                Some("tool") => {
                    let Some(id) = m["tool_call_id"].as_str().map(str::to_owned) else {
                        continue;
                    };
                    self.tool_started(out, ns, &id, Some(node), ts);
                    if !self.tools_finished.insert(id.clone()) {
                        continue;
                    }
                    let data = if m["status"] == "error" {
                        let message = match &m["content"] {
                            Value::String(s) => s.clone(),
                            other => other.to_string(),
                        };
                        json!({"event": "tool-error", "tool_call_id": id, "message": message})
                    } else {
                        json!({"event": "tool-finished", "tool_call_id": id, "output": m})
                    };
                    self.emit(out, "tools", ns, data, Some(node.to_owned()), ts);
                }
                _ => {}
            }
        }
    }

    fn tool_started(
        &mut self,
        out: &mut Vec<Raw>,
        ns: &[String],
        id: &str,
        node: Option<&str>,
        ts: i64,
    ) {
        if !self.tools_started.insert(id.to_owned()) {
            return;
        }
        let (name, input) = self
            .asked
            .get(id)
            .cloned()
            .unwrap_or_else(|| (String::new(), json!({})));
        let data = json!({"event": "tool-started", "tool_call_id": id, "tool_name": name,
            "input": input});
        self.emit(out, "tools", ns, data, node.map(str::to_owned), ts);
    }

    /// A `messages-tuple` event: `[chunk or message, metadata]`.
    fn message(&mut self, out: &mut Vec<Raw>, ns: &[String], data: Value, ts: i64) {
        let (m, meta) = match data {
            Value::Array(mut a) if a.len() == 2 => {
                let meta = a.pop().unwrap_or(Value::Null);
                (a.pop().unwrap_or(Value::Null), meta)
            }
            _ => return,
        };
        let node = meta["langgraph_node"].as_str().map(str::to_owned);
        let id = m["id"].as_str().unwrap_or_default().to_owned();
        match m["type"].as_str() {
            Some("AIMessageChunk") => {
                self.start_message(out, ns, &id, node, ts);
                if let Some(text) = m["content"].as_str().filter(|t| !t.is_empty()) {
                    self.text_delta(out, ns, text, ts);
                }
                for c in m["tool_call_chunks"].as_array().into_iter().flatten() {
                    self.call_delta(out, ns, c, ts);
                }
                if m["chunk_position"] == "last" {
                    self.finish_message(out, ns, ts);
                }
            }
            // A message that was not streamed: one delta with all of it.
            Some("ai") => {
                self.finish_message(out, ns, ts);
                self.start_message(out, ns, &id, node, ts);
                if let Some(text) = m["content"].as_str().filter(|t| !t.is_empty()) {
                    self.text_delta(out, ns, text, ts);
                }
                for (i, c) in m["tool_calls"].as_array().into_iter().flatten().enumerate() {
                    let chunk = json!({"index": i, "id": c["id"], "name": c["name"],
                        "args": c.get("args").map(Value::to_string).unwrap_or_default()});
                    self.call_delta(out, ns, &chunk, ts);
                }
                self.finish_message(out, ns, ts);
            }
            _ => {}
        }
    }

    fn start_message(
        &mut self,
        out: &mut Vec<Raw>,
        ns: &[String],
        id: &str,
        node: Option<String>,
        ts: i64,
    ) {
        if self.streaming.get(ns).is_some_and(|s| s.id == id) {
            return;
        }
        // Another message in this namespace ends first: clients route id-less events to
        // the one message open there.
        self.finish_message(out, ns, ts);
        self.streaming.insert(
            ns.to_vec(),
            Streaming {
                id: id.to_owned(),
                node: node.clone(),
                ..Streaming::default()
            },
        );
        let data = json!({"event": "message-start", "role": "ai", "id": id});
        self.emit(out, "messages", ns, data, node, ts);
    }

    fn text_delta(&mut self, out: &mut Vec<Raw>, ns: &[String], text: &str, ts: i64) {
        let Some(s) = self.streaming.get_mut(ns) else {
            return;
        };
        let node = s.node.clone();
        let (index, fresh) = match &mut s.text {
            Some((i, acc)) => {
                acc.push_str(text);
                (*i, false)
            }
            None => {
                let i = s.next_index;
                s.next_index += 1;
                s.text = Some((i, text.to_owned()));
                (i, true)
            }
        };
        if fresh {
            let data = json!({"event": "content-block-start", "index": index,
                "content": {"type": "text", "text": ""}});
            self.emit(out, "messages", ns, data, node.clone(), ts);
        }
        let data = json!({"event": "content-block-delta", "index": index,
            "delta": {"type": "text-delta", "text": text}});
        self.emit(out, "messages", ns, data, node, ts);
    }

    fn call_delta(&mut self, out: &mut Vec<Raw>, ns: &[String], chunk: &Value, ts: i64) {
        let Some(s) = self.streaming.get_mut(ns) else {
            return;
        };
        let node = s.node.clone();
        let provider_index = chunk["index"].as_i64().unwrap_or(s.calls.len() as i64);
        let args = chunk["args"].as_str().unwrap_or_default().to_owned();
        let mut start = None;
        let index = match s.calls.get_mut(&provider_index) {
            Some((i, _, _, acc)) => {
                acc.push_str(&args);
                *i
            }
            None => {
                let i = s.next_index;
                s.next_index += 1;
                let id = chunk["id"].as_str().unwrap_or_default().to_owned();
                let name = chunk["name"].as_str().unwrap_or_default().to_owned();
                start = Some(json!({"event": "content-block-start", "index": i,
                    "content": {"type": "tool_call_chunk", "id": id, "name": name, "args": "",
                        "index": provider_index}}));
                s.calls.insert(provider_index, (i, id, name, args.clone()));
                i
            }
        };
        if let Some(data) = start {
            self.emit(out, "messages", ns, data, node.clone(), ts);
        }
        if !args.is_empty() {
            let data = json!({"event": "content-block-delta", "index": index,
                "delta": {"type": "tool-call-delta", "args": args}});
            self.emit(out, "messages", ns, data, node, ts);
        }
    }

    /// The open message of `ns`, if any: each block's final content, then its end.
    fn finish_message(&mut self, out: &mut Vec<Raw>, ns: &[String], ts: i64) {
        let Some(s) = self.streaming.remove(ns) else {
            return;
        };
        let mut blocks: Vec<(usize, Value)> = Vec::new();
        if let Some((i, text)) = &s.text {
            blocks.push((*i, json!({"type": "text", "text": text})));
        }
        for (i, id, name, args) in s.calls.values() {
            let parsed = if args.trim().is_empty() {
                Some(json!({}))
            } else {
                serde_json::from_str::<Value>(args)
                    .ok()
                    .filter(Value::is_object)
            };
            let block = match parsed {
                Some(args) => json!({"type": "tool_call", "id": id, "name": name, "args": args}),
                None => json!({"type": "invalid_tool_call", "id": id, "name": name,
                    "args": args, "error": "Malformed args."}),
            };
            blocks.push((*i, block));
        }
        blocks.sort_by_key(|(i, _)| *i);
        let finish = if s.calls.is_empty() {
            "stop"
        } else {
            "tool_calls"
        };
        for (i, content) in blocks {
            let data = json!({"event": "content-block-finish", "index": i, "content": content});
            self.emit(out, "messages", ns, data, s.node.clone(), ts);
        }
        let data = json!({"event": "message-finish", "metadata": {"finish_reason": finish}});
        self.emit(out, "messages", ns, data, s.node, ts);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ev(name: &str, data: Value) -> LiveEvent {
        LiveEvent {
            id: "1-0".into(),
            name: name.into(),
            data: data.to_string().into(),
        }
    }

    fn methods(raw: &[Raw]) -> Vec<String> {
        raw.iter()
            .map(|r| match r.data["event"].as_str() {
                Some(e) => format!("{}:{e}", r.method),
                None => r.method.to_owned(),
            })
            .collect()
    }

    #[test]
    fn tokens_become_a_content_block_stream() {
        let mut c = Converter::new("r", "agent");
        let meta = json!({"langgraph_node": "chat"});
        let chunk = |text: &str, last: bool| {
            ev(
                "messages",
                json!([crate::messages::chunk_dict("m1", text, vec![], last), meta]),
            )
        };
        let mut all = Vec::new();
        all.extend(c.push(&ev("metadata", json!({"run_id": "r"})), 1));
        all.extend(c.push(&chunk("echo", false), 1));
        all.extend(c.push(&chunk(": hi", false), 1));
        all.extend(c.push(&chunk("", true), 1));
        all.extend(c.end(Ending::Completed, 2));
        assert_eq!(
            methods(&all),
            [
                "lifecycle:running",
                "messages:message-start",
                "messages:content-block-start",
                "messages:content-block-delta",
                "messages:content-block-delta",
                "messages:content-block-finish",
                "messages:message-finish",
                "lifecycle:completed"
            ]
        );
        assert_eq!(all[5].data["content"]["text"], "echo: hi");
        assert_eq!(all[1].node.as_deref(), Some("chat"));
        let ids: HashSet<&str> = all.iter().map(|r| r.event_id.as_str()).collect();
        assert_eq!(ids.len(), all.len());
    }

    #[test]
    fn an_interrupt_is_announced_once_and_ends_the_run() {
        let mut c = Converter::new("r", "agent");
        let inner = json!([{"id": "inner", "value": {"question": "ok?"}}]);
        let a = c.push(&ev("updates|sub:t1", json!({"__interrupt__": inner})), 1);
        assert_eq!(methods(&a), ["lifecycle:running", "lifecycle:started"]);
        // The thread's id, in the namespace the pause was first seen in.
        let intr = json!([{"id": "i1", "value": {"question": "ok?"}}]);
        let b = c.push(&ev("updates", json!({"__interrupt__": intr.clone()})), 2);
        assert_eq!(
            methods(&b),
            [
                "input.requested",
                "lifecycle:completed",
                "lifecycle:interrupted"
            ]
        );
        assert_eq!(b[0].namespace, ["sub:t1"]);
        assert_eq!(b[0].data["interrupt_id"], "i1");
        assert_eq!(b[0].data["payload"], b[0].data["value"]);
        assert!(
            c.push(&ev("values", json!({"__interrupt__": intr})), 3)
                .is_empty()
        );
        assert!(c.end(Ending::Completed, 3).is_empty());
    }

    #[test]
    fn tool_calls_start_with_the_request_and_finish_with_the_result() {
        let mut c = Converter::new("r", "tools");
        let ai = json!({"agent": {"messages": [{"type": "ai", "content": "", "id": "a",
            "tool_calls": [{"id": "c1", "name": "add", "args": {"a": 1}}]}]}});
        let tool = json!({"tools": {"messages": [{"type": "tool", "content": "2",
            "tool_call_id": "c1", "id": "t"}]}});
        let mut all = c.push(&ev("updates", ai), 1);
        all.extend(c.push(&ev("updates", tool), 2));
        let tools: Vec<&Raw> = all.iter().filter(|r| r.method == "tools").collect();
        assert_eq!(tools.len(), 2);
        assert_eq!(tools[0].data["tool_name"], "add");
        assert_eq!(tools[0].data["input"]["a"], 1);
        assert_eq!(tools[1].data["output"]["content"], "2");
    }
}
