//! A run's stream in LangGraph's words: the runtime's typed parts become SSE events
//! (`values`, `updates`, `messages` as `[chunk, metadata]`, `messages/partial`, `custom`,
//! `events`, `debug`, `tasks`, `checkpoints`), and the run's end an [`Outcome`].
//!
//! With `stream_subgraphs`, a subgraph's parts are named `<mode>|<ns>` (`values|sub:<id>`,
//! `updates|sub:<id>`, `messages|sub:<id>`, nested `a:<id>|b:<id>`), as langgraph-api names
//! them; without it, only the messages produced inside a subgraph come through (as plain
//! `messages`, their namespace in their metadata).

use std::collections::{HashMap, HashSet};

use agent_core::{
    CompiledGraph, DebugEvent, GraphState, INTERRUPT, Input, Namespace, RunConfig, StreamModes,
    StreamPart, SubgraphPart,
};
use futures::StreamExt;
use futures::stream::BoxStream;
use serde_json::{Map, Value, json};

use crate::graph::{ApiMode, Failure, GraphPart, Outcome, interrupt_json};
use crate::messages;

/// What a run's stream needs of the graph without its types.
pub(crate) struct Erased {
    pub(crate) fields: Vec<&'static str>,
}

/// Turns the runtime's typed stream parts into LangGraph's events.
pub(crate) struct Translator {
    asked: HashSet<ApiMode>,
    subgraphs: bool,
    fields: Vec<&'static str>,
    metadata: Map<String, Value>,
    thread_id: String,
    /// Per (node, step, ns): the id of the message being streamed and its text so far.
    streamed: HashMap<(String, i64, Vec<String>), (String, String)>,
    /// Nodes (node, step) that streamed tokens: their whole messages are not sent again.
    streamed_nodes: HashSet<(String, i64)>,
    /// Message ids already sent whole.
    seen: HashSet<String>,
    /// Messages without an id sent whole from a subgraph's update (as JSON): its node's
    /// update in the parent holds them again.
    seen_in_subgraphs: HashSet<String>,
    last_values: Value,
    /// The root's last checkpoint (step, id, next), sent with the values that follow it
    /// (the runtime writes a step's checkpoint before it streams the step's state).
    pending_checkpoint: Option<(i64, String, Vec<String>)>,
}

impl Translator {
    /// A translator for a run that asked for `asked` on `thread_id`.
    pub(crate) fn new(
        asked: HashSet<ApiMode>,
        subgraphs: bool,
        fields: Vec<&'static str>,
        metadata: Map<String, Value>,
        thread_id: String,
    ) -> Self {
        Translator {
            asked,
            subgraphs,
            fields,
            metadata,
            thread_id,
            streamed: HashMap::new(),
            streamed_nodes: HashSet::new(),
            seen: HashSet::new(),
            seen_in_subgraphs: HashSet::new(),
            last_values: Value::Null,
            pending_checkpoint: None,
        }
    }

    fn wants(&self, mode: ApiMode) -> bool {
        self.asked.contains(&mode)
    }

    fn name(&self, base: &str, ns: &[String]) -> Option<String> {
        if ns.is_empty() {
            Some(base.to_owned())
        } else if self.subgraphs {
            Some(format!("{base}|{}", ns.join("|")))
        } else {
            None
        }
    }

    /// The name of a `messages-tuple` event: a subgraph's messages reach the root's
    /// `messages` without `stream_subgraphs` (as in langgraph-api), `messages|<ns>` with it.
    fn messages_name(&self, ns: &[String]) -> String {
        if ns.is_empty() || !self.subgraphs {
            "messages".to_owned()
        } else {
            format!("messages|{}", ns.join("|"))
        }
    }

    fn message_meta(&self, node: &str, step: i64, triggers: &[String], ns: &[String]) -> Value {
        let mut meta = self.metadata.clone();
        let checkpoint_ns = if ns.is_empty() {
            node.to_owned()
        } else {
            ns.join("|")
        };
        meta.insert("thread_id".into(), self.thread_id.clone().into());
        meta.insert("langgraph_step".into(), step.into());
        meta.insert("langgraph_node".into(), node.into());
        meta.insert("langgraph_triggers".into(), json!(triggers));
        meta.insert("langgraph_path".into(), json!(["__pregel_pull", node]));
        meta.insert(
            "langgraph_checkpoint_ns".into(),
            checkpoint_ns.clone().into(),
        );
        meta.insert("checkpoint_ns".into(), checkpoint_ns.into());
        Value::Object(meta)
    }

    fn push(out: &mut Vec<GraphPart>, name: Option<String>, data: Value) {
        if let Some(name) = name {
            out.push(GraphPart::Event { name, data });
        }
    }

    fn translate<S: GraphState>(&mut self, erased: &Erased, part: StreamPart<S>) -> Vec<GraphPart> {
        let mut out = Vec::new();
        match part {
            StreamPart::Values(state) => {
                let mut v =
                    serde_json::to_value((*state).clone().into_update()).unwrap_or(Value::Null);
                messages::outgoing(&erased.fields, &mut v);
                if let Some(list) = self
                    .fields
                    .first()
                    .and_then(|f| v.get(*f))
                    .and_then(Value::as_array)
                {
                    // Messages already in the state (the input's) are not sent as new.
                    for m in list {
                        if let Some(id) = m.get("id").and_then(Value::as_str)
                            && self.last_values.is_null()
                        {
                            self.seen.insert(id.to_owned());
                        }
                    }
                }
                self.last_values = v.clone();
                self.flush_checkpoint(&mut out);
                if self.wants(ApiMode::Values) {
                    out.push(GraphPart::Event {
                        name: "values".into(),
                        data: v,
                    });
                }
            }
            StreamPart::Updates { node, update } => {
                let mut v = serde_json::to_value(&update).unwrap_or(Value::Null);
                messages::outgoing(&erased.fields, &mut v);
                if self.wants(ApiMode::Messages) || self.wants(ApiMode::MessagesTuple) {
                    self.whole_messages(&node, &v, &[], &mut out);
                }
                if self.wants(ApiMode::Updates) {
                    let data = if v.as_object().is_some_and(Map::is_empty) {
                        Value::Null
                    } else {
                        v
                    };
                    out.push(GraphPart::Event {
                        name: "updates".into(),
                        data: json!({ node: data }),
                    });
                }
            }
            StreamPart::Messages { chunk, meta } => {
                self.chunk(
                    chunk,
                    &meta.node,
                    meta.step,
                    &meta.triggers,
                    &meta.ns,
                    &mut out,
                );
            }
            StreamPart::Custom { value, meta } => {
                if self.wants(ApiMode::Custom) {
                    Self::push(&mut out, self.name("custom", &meta.ns), value);
                }
            }
            StreamPart::Event(event) => {
                if self.wants(ApiMode::Events) {
                    let mut data = serde_json::to_value(&event).unwrap_or(Value::Null);
                    event_in_langchain_terms(&mut data, &erased.fields);
                    out.push(GraphPart::Event {
                        name: "events".into(),
                        data,
                    });
                }
            }
            StreamPart::Debug(debug) => self.debug(debug, &[], &mut out),
            StreamPart::Subgraph { ns, part } => self.subgraph(erased, &ns, part, &mut out),
        }
        out
    }

    /// A subgraph's own part (only with `stream_subgraphs`), named `<mode>|<ns>`.
    fn subgraph(
        &mut self,
        erased: &Erased,
        ns: &Namespace,
        part: SubgraphPart,
        out: &mut Vec<GraphPart>,
    ) {
        if !self.subgraphs || ns.is_root() {
            return;
        }
        match part {
            SubgraphPart::Values { mut state } if self.wants(ApiMode::Values) => {
                messages::outgoing(&erased.fields, &mut state);
                Self::push(out, self.name("values", ns), state);
            }
            SubgraphPart::Values { .. } => {}
            SubgraphPart::Updates { node, update } if node == INTERRUPT => {
                let list = update.as_array().cloned().unwrap_or_default();
                let data = json!({ INTERRUPT: with_schema(&list) });
                if self.wants(ApiMode::Updates) {
                    Self::push(out, self.name("updates", ns), data);
                }
            }
            SubgraphPart::Updates { node, mut update } => {
                messages::outgoing(&erased.fields, &mut update);
                if self.wants(ApiMode::Messages) || self.wants(ApiMode::MessagesTuple) {
                    self.whole_messages(&node, &update, ns, out);
                }
                if self.wants(ApiMode::Updates) {
                    let data = if update.as_object().is_some_and(Map::is_empty) {
                        Value::Null
                    } else {
                        update
                    };
                    Self::push(out, self.name("updates", ns), json!({ node: data }));
                }
            }
            SubgraphPart::Debug { event } => self.debug(event, ns, out),
            // A part of a mode this server does not know yet.
            _ => {}
        }
    }

    fn whole_messages(
        &mut self,
        node: &str,
        update: &Value,
        ns: &[String],
        out: &mut Vec<GraphPart>,
    ) {
        if node == "__start__" {
            return;
        }
        for field in &self.fields {
            let Some(list) = update.get(*field).and_then(Value::as_array) else {
                continue;
            };
            for m in list {
                let id = m
                    .get("id")
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .to_owned();
                let kind = m.get("type").and_then(Value::as_str).unwrap_or_default();
                if (!id.is_empty() && !self.seen.insert(id.clone()))
                    || (kind == "ai" && self.streamed_nodes.iter().any(|(n, _)| n == node))
                {
                    continue;
                }
                if id.is_empty() {
                    let body = m.to_string();
                    let sent = if ns.is_empty() {
                        self.seen_in_subgraphs.contains(&body)
                    } else {
                        !self.seen_in_subgraphs.insert(body)
                    };
                    if sent {
                        continue;
                    }
                }
                let meta = self.message_meta(node, -1, &[], ns);
                if self.wants(ApiMode::MessagesTuple) {
                    out.push(GraphPart::Event {
                        name: self.messages_name(ns),
                        data: json!([m, meta]),
                    });
                }
                if self.wants(ApiMode::Messages) {
                    out.push(GraphPart::Event {
                        name: "messages/metadata".into(),
                        data: json!({ id.clone(): {"metadata": meta} }),
                    });
                    out.push(GraphPart::Event {
                        name: "messages/complete".into(),
                        data: json!([m]),
                    });
                }
            }
        }
    }

    fn chunk(
        &mut self,
        chunk: Value,
        node: &str,
        step: i64,
        triggers: &[String],
        ns: &[String],
        out: &mut Vec<GraphPart>,
    ) {
        use agent_llm::ChatChunk;
        let Ok(chunk) = serde_json::from_value::<ChatChunk>(chunk) else {
            return;
        };
        let key = (node.to_owned(), step, ns.to_vec());
        self.streamed_nodes.insert((node.to_owned(), step));
        let fresh_id = || format!("run--{}", uuid::Uuid::new_v4());
        let (piece, calls, last) = match chunk {
            ChatChunk::Start { id, .. } => {
                let id = id.unwrap_or_else(fresh_id);
                self.streamed.insert(key, (id, String::new()));
                return;
            }
            ChatChunk::Text { text } => (text, Vec::new(), false),
            ChatChunk::ToolCall(tc) => (
                String::new(),
                vec![
                    json!({"name": tc.name, "args": tc.args, "id": tc.id, "index": tc.index, "type": "tool_call_chunk"}),
                ],
                false,
            ),
            ChatChunk::Finish { .. } => (String::new(), Vec::new(), true),
            ChatChunk::Reasoning { .. } | ChatChunk::Usage { .. } => return,
        };
        let entry = self
            .streamed
            .entry(key.clone())
            .or_insert_with(|| (fresh_id(), String::new()));
        let first = entry.1.is_empty() && !last;
        entry.1.push_str(&piece);
        let (id, text) = entry.clone();
        if last {
            self.streamed.remove(&key);
            self.seen.insert(id.clone());
        }
        let meta = self.message_meta(node, step, triggers, ns);
        if self.wants(ApiMode::MessagesTuple) {
            out.push(GraphPart::Event {
                name: self.messages_name(ns),
                data: json!([messages::chunk_dict(&id, &piece, calls.clone(), last), meta]),
            });
        }
        if self.wants(ApiMode::Messages) && (!piece.is_empty() || !calls.is_empty()) {
            if first {
                out.push(GraphPart::Event {
                    name: "messages/metadata".into(),
                    data: json!({ id.clone(): {"metadata": meta} }),
                });
            }
            let mut whole = messages::chunk_dict(&id, &text, calls, false);
            whole["type"] = "ai".into();
            out.push(GraphPart::Event {
                name: "messages/partial".into(),
                data: json!([whole]),
            });
        }
    }

    /// `debug`, `tasks` and `checkpoints` events of the graph run under `ns`.
    fn checkpoint_json(
        &self,
        step: i64,
        id: &str,
        next: &[String],
        ns: &[String],
        values: Value,
    ) -> Value {
        json!({
            "config": {"configurable": {"thread_id": self.thread_id, "checkpoint_ns": ns.join("|"), "checkpoint_id": id}},
            "parent_config": null,
            "values": values,
            "metadata": {"source": if step < 0 { "input" } else { "loop" }, "step": step, "parents": {}},
            "next": next,
            "tasks": next.iter().map(|n| json!({"name": n, "interrupts": [], "state": null})).collect::<Vec<_>>(),
        })
    }

    /// Sends the root's held checkpoint with the latest state.
    pub(crate) fn flush_checkpoint(&mut self, out: &mut Vec<GraphPart>) {
        let Some((step, id, next)) = self.pending_checkpoint.take() else {
            return;
        };
        let checkpoint = self.checkpoint_json(step, &id, &next, &[], self.last_values.clone());
        if self.wants(ApiMode::Checkpoints) {
            out.push(GraphPart::Event {
                name: "checkpoints".into(),
                data: checkpoint.clone(),
            });
        }
        if self.wants(ApiMode::Debug) {
            out.push(GraphPart::Event {
                name: "debug".into(),
                data: json!({"step": step, "timestamp": crate::time::now_iso(), "type": "checkpoint", "payload": checkpoint}),
            });
        }
    }

    fn debug(&mut self, debug: DebugEvent, ns: &[String], out: &mut Vec<GraphPart>) {
        let now = crate::time::now_iso();
        let (kind, step, payload) = match debug {
            DebugEvent::Task {
                step,
                node,
                triggers,
            } => {
                let task = json!({"id": format!("{step}:{node}"), "name": node, "input": null, "triggers": triggers});
                if self.wants(ApiMode::Tasks) {
                    Self::push(out, self.name("tasks", ns), task.clone());
                }
                ("task", step, task)
            }
            DebugEvent::TaskResult {
                step,
                node,
                result,
                error,
            } => {
                let mut result = result;
                messages::outgoing(&self.fields, &mut result);
                let task = json!({"id": format!("{step}:{node}"), "name": node, "error": error, "result": result, "interrupts": []});
                if self.wants(ApiMode::Tasks) {
                    Self::push(out, self.name("tasks", ns), task.clone());
                }
                ("task_result", step, task)
            }
            DebugEvent::Checkpoint {
                step,
                checkpoint_id,
                next,
            } => {
                if ns.is_empty() {
                    // Sent with the state of that step, which comes next.
                    self.flush_checkpoint(out);
                    self.pending_checkpoint = Some((step, checkpoint_id, next));
                    return;
                }
                let checkpoint = self.checkpoint_json(step, &checkpoint_id, &next, ns, Value::Null);
                if self.wants(ApiMode::Checkpoints) {
                    Self::push(out, self.name("checkpoints", ns), checkpoint.clone());
                }
                ("checkpoint", step, checkpoint)
            }
        };
        if self.wants(ApiMode::Debug) {
            let data = json!({"step": step, "timestamp": now, "type": kind, "payload": payload});
            Self::push(out, self.name("debug", ns), data);
        }
    }
}

/// Interrupts as the `__interrupt__` entries of `updates` and `values`.
fn with_schema(interrupts: &[Value]) -> Vec<Value> {
    interrupts
        .iter()
        .map(|i| json!({"value": i["value"], "id": i["id"], "response_schema": null}))
        .collect()
}

pub(crate) fn async_stream<S: GraphState, C: Send + Sync + 'static>(
    graph: CompiledGraph<S, C>,
    input: Result<Input<S>, Failure>,
    config: RunConfig,
    modes: StreamModes,
    mut translator: Translator,
    erased: Erased,
) -> BoxStream<'static, GraphPart> {
    let (tx, rx) = tokio::sync::mpsc::channel::<GraphPart>(64);
    let interrupt_before_pause =
        !config.interrupt_before.is_empty() || !config.interrupt_after.is_empty();
    // The graph's run span nests under the span current here (the server's run span).
    let task = tokio::spawn(tracing::Instrument::in_current_span(async move {
        let input = match input {
            Ok(input) => input,
            Err(failure) => {
                let _ = tx
                    .send(GraphPart::Done(Outcome {
                        values: Value::Null,
                        interrupts: Vec::new(),
                        next: Vec::new(),
                        error: Some(failure),
                    }))
                    .await;
                return;
            }
        };
        let mut stream = graph.stream(input, config, modes);
        let mut failure = None;
        while let Some(part) = stream.next().await {
            match part {
                Ok(part) => {
                    for event in translator.translate(&erased, part) {
                        if tx.send(event).await.is_err() {
                            return; // the run's consumer went away: dropping `stream` cancels it
                        }
                    }
                }
                Err(e) => {
                    failure = Some(Failure::of(&e));
                    break;
                }
            }
        }
        // A checkpoint still held (the run's last) goes out with the last state.
        let mut held = Vec::new();
        translator.flush_checkpoint(&mut held);
        for event in held {
            let _ = tx.send(event).await;
        }
        let outcome = match failure {
            Some(f) => Outcome {
                values: translator.last_values.clone(),
                interrupts: Vec::new(),
                next: Vec::new(),
                error: Some(f),
            },
            None => match stream.into_output().await {
                Ok(output) => {
                    let mut values =
                        serde_json::to_value(output.state.into_update()).unwrap_or(Value::Null);
                    messages::outgoing(&erased.fields, &mut values);
                    let interrupts: Vec<Value> =
                        output.interrupts.iter().map(interrupt_json).collect();
                    let paused = !output.next.is_empty();
                    if paused {
                        let with_schema = with_schema(&interrupts);
                        if translator.wants(ApiMode::Updates)
                            && (!with_schema.is_empty() || interrupt_before_pause)
                        {
                            let _ = tx
                                .send(GraphPart::Event {
                                    name: "updates".into(),
                                    data: json!({"__interrupt__": with_schema}),
                                })
                                .await;
                        }
                        if translator.wants(ApiMode::Values) && !with_schema.is_empty() {
                            let mut v = values.clone();
                            if let Some(o) = v.as_object_mut() {
                                o.insert("__interrupt__".into(), Value::Array(with_schema));
                            }
                            let _ = tx
                                .send(GraphPart::Event {
                                    name: "values".into(),
                                    data: v,
                                })
                                .await;
                        }
                    }
                    Outcome {
                        values,
                        interrupts,
                        next: output.next,
                        error: None,
                    }
                }
                Err(e) => Outcome {
                    values: translator.last_values.clone(),
                    interrupts: Vec::new(),
                    next: Vec::new(),
                    error: Some(Failure::of(&e)),
                },
            },
        };
        let _ = tx.send(GraphPart::Done(outcome)).await;
    }));
    // Dropping the parts stops the run at once: the task driving the graph is aborted, so
    // the graph's stream (and with it the node futures of the step in flight) is dropped at
    // its next await, not when it next has something to send.
    let abort = AbortOnDrop(task);
    futures::stream::unfold((rx, abort), |(mut rx, abort)| async move {
        rx.recv().await.map(|p| (p, (rx, abort)))
    })
    .boxed()
}

/// Aborts a task when dropped.
struct AbortOnDrop(tokio::task::JoinHandle<()>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// An astream_events v2 event with LangChain's payloads: a model's stream chunk as an
/// `AIMessageChunk` dict, its output and the graph's messages as message dicts.
fn event_in_langchain_terms(event: &mut Value, fields: &[&'static str]) {
    let kind = event["event"].as_str().unwrap_or_default().to_owned();
    let data = &mut event["data"];
    match kind.as_str() {
        "on_chat_model_stream" => {
            if let Ok(chunk) = serde_json::from_value::<agent_llm::ChatChunk>(data["chunk"].clone())
            {
                let id = event_run_id(&event["run_id"]);
                let (text, calls) = match chunk {
                    agent_llm::ChatChunk::Text { text } => (text, Vec::new()),
                    agent_llm::ChatChunk::ToolCall(tc) => (
                        String::new(),
                        vec![
                            json!({"name": tc.name, "args": tc.args, "id": tc.id, "index": tc.index, "type": "tool_call_chunk"}),
                        ],
                    ),
                    _ => (String::new(), Vec::new()),
                };
                event["data"]["chunk"] = messages::chunk_dict(&id, &text, calls, false);
            }
        }
        "on_chat_model_end" => {
            if data["output"].is_object() {
                let mut m = data["output"].clone();
                if m.get("type").is_none() {
                    m["type"] = "ai".into();
                }
                messages::message_out(&mut m);
                data["output"] = m;
            }
        }
        _ => {
            for key in ["input", "output", "chunk"] {
                if data[key].is_object() {
                    messages::outgoing(fields, &mut data[key]);
                }
            }
        }
    }
}

fn event_run_id(run_id: &Value) -> String {
    format!("run--{}", run_id.as_str().unwrap_or_default())
}
