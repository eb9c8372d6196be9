//! The protocol on a WebSocket (`GET /threads/{id}/stream/events` with an upgrade): commands
//! in, answers and events out, one JSON text frame each. Nothing is sent until a
//! subscription asks for it; a subscription first gets what the connection already read
//! of the thread (after its `since`), then what comes. Each event goes out at most once per
//! connection, whichever subscriptions match it.
//!
//! The upgrade passes the API's checks first (auth, origin and host, the thread being the
//! caller's), and the connection holds one of its user's stream places.

use std::collections::{BTreeMap, HashSet, VecDeque};
use std::sync::Arc;

use axum::extract::ws::{CloseFrame, Message, WebSocket, WebSocketUpgrade};
use axum::extract::{Path, State};
use axum::response::Response;
use futures::StreamExt;
use futures::stream::BoxStream;
use serde_json::{Value, json};

use super::commands::{self, error, success};
use super::filter::{Filter, Refused};
use super::tape::{self, Placed};
use super::{envelope, readable};
use crate::api::models::protocol::{ProtocolErrorCode, ProtocolResponse};
use crate::api::{App, Caller, Shared, StreamPermit};
use crate::error::ApiError;

/// How many events a connection keeps for subscriptions that come later.
const KEPT: usize = 10_000;

/// Upgrade to the protocol's WebSocket.
pub(super) async fn upgrade(
    State(app): Shared,
    caller: Caller,
    Path(id): Path<String>,
    ws: WebSocketUpgrade,
) -> Result<Response, ApiError> {
    let (thread_id, grant) = readable(&app, &caller, &id).await?;
    let permit = app.streams.open(&caller, app.limits.streams_per_user)?;
    let max = app.body_limit;
    Ok(ws
        .max_message_size(max)
        .on_upgrade(move |socket| async move {
            let events = tape::follow(app.clone(), thread_id.clone(), grant);
            let mut conn = Connection {
                app,
                caller,
                thread_id,
                socket,
                events,
                kept: VecDeque::new(),
                sent: HashSet::new(),
                subscriptions: BTreeMap::new(),
                seq: 0,
                _permit: permit,
            };
            conn.run().await;
        }))
}

struct Connection {
    app: Arc<App>,
    caller: Caller,
    thread_id: String,
    socket: WebSocket,
    events: BoxStream<'static, Placed>,
    /// What the connection read of the thread, for subscriptions to come.
    kept: VecDeque<Placed>,
    /// Seqs sent (those still in `kept`, and a few older).
    sent: HashSet<u64>,
    subscriptions: BTreeMap<String, Filter>,
    /// The highest seq read.
    seq: u64,
    _permit: StreamPermit,
}

impl Connection {
    async fn run(&mut self) {
        let mut stopping = self.app.shutdown.subscribe();
        loop {
            tokio::select! {
                frame = self.socket.recv() => match frame {
                    Some(Ok(Message::Text(text))) => {
                        let answer = self.command(text.as_str()).await;
                        if !self.send_json(&answer).await {
                            return;
                        }
                    }
                    Some(Ok(Message::Binary(_))) => {
                        let answer = error(None, ProtocolErrorCode::InvalidArgument,
                            "Protocol commands must be valid JSON.");
                        if !self.send_json(&answer).await {
                            return;
                        }
                    }
                    Some(Ok(_)) => {}
                    Some(Err(_)) | None => return,
                },
                placed = self.events.next() => match placed {
                    Some(p) => {
                        self.seq = p.seq;
                        let wanted = self.wanted(&p);
                        if self.kept.len() >= KEPT {
                            self.kept.pop_front();
                            // What left the window cannot be sent again: forget it.
                            if self.sent.len() > 2 * KEPT
                                && let Some(first) = self.kept.front().map(|p| p.seq)
                            {
                                self.sent.retain(|s| *s >= first);
                            }
                        }
                        self.kept.push_back(p.clone());
                        if wanted && !self.deliver(&p).await {
                            return;
                        }
                    }
                    None => {
                        self.close(1011, "thread stream ended").await;
                        return;
                    }
                },
                () = async { let _ = stopping.wait_for(|s| *s).await; } => {
                    self.close(1012, "the server is stopping").await;
                    return;
                }
            }
        }
    }

    fn wanted(&self, p: &Placed) -> bool {
        self.subscriptions
            .values()
            .any(|f| f.wants(p.raw.method, &p.raw.namespace, &p.raw.data))
    }

    async fn deliver(&mut self, p: &Placed) -> bool {
        if !self.sent.insert(p.seq) {
            return true;
        }
        let text = serde_json::to_string(&envelope(p)).unwrap_or_default();
        self.socket.send(Message::Text(text.into())).await.is_ok()
    }

    async fn send_json(&mut self, answer: &ProtocolResponse) -> bool {
        let text = serde_json::to_string(answer).unwrap_or_default();
        self.socket.send(Message::Text(text.into())).await.is_ok()
    }

    async fn close(&mut self, code: u16, reason: &'static str) {
        let _ = self
            .socket
            .send(Message::Close(Some(CloseFrame {
                code,
                reason: reason.into(),
            })))
            .await;
    }

    /// Sends the kept events `filter` wants after `since`; how many.
    async fn replay(&mut self, filter: &Filter, since: u64) -> Option<usize> {
        let due: Vec<Placed> = self
            .kept
            .iter()
            .filter(|p| {
                p.seq > since
                    && !self.sent.contains(&p.seq)
                    && filter.wants(p.raw.method, &p.raw.namespace, &p.raw.data)
            })
            .cloned()
            .collect();
        for p in &due {
            if !self.deliver(p).await {
                return None;
            }
        }
        Some(due.len())
    }

    async fn command(&mut self, text: &str) -> ProtocolResponse {
        let Ok(value) = serde_json::from_str::<Value>(text) else {
            return error(
                None,
                ProtocolErrorCode::InvalidArgument,
                "Protocol commands must be valid JSON.",
            );
        };
        let (id, method) = match super::envelope_of(&value) {
            Ok(c) => c,
            Err(e) => return e,
        };
        let params = value
            .get("params")
            .filter(|p| p.is_object())
            .cloned()
            .unwrap_or(json!({}));
        let seq = self.seq;
        if let Some(answer) = commands::run_command(
            &self.app,
            &self.caller,
            &self.thread_id,
            id,
            &method,
            &params,
            seq,
        )
        .await
        {
            return answer;
        }
        match method.as_str() {
            "subscription.subscribe" | "subscription.reconnect" => {
                let reconnect = method == "subscription.reconnect";
                let filter = match Filter::read(&params) {
                    Ok(f) => f,
                    Err(Refused::Empty) => {
                        return error(
                            Some(id),
                            ProtocolErrorCode::InvalidArgument,
                            format!("{method} requires a non-empty channels array."),
                        );
                    }
                    Err(Refused::Unknown(_)) => {
                        return error(
                            Some(id),
                            ProtocolErrorCode::InvalidArgument,
                            format!("{method} received an unsupported channel."),
                        );
                    }
                };
                let since = params.get("since").and_then(Value::as_u64);
                if reconnect && since.is_none() {
                    return error(
                        Some(id),
                        ProtocolErrorCode::InvalidArgument,
                        "subscription.reconnect requires a non-negative integer since.",
                    );
                }
                let since = since.unwrap_or(0);
                if reconnect
                    && let Some(first) = self.kept.front()
                    && since + 1 < first.seq
                {
                    return error(
                        Some(id),
                        ProtocolErrorCode::ResumeGap,
                        format!(
                            "resume gap: since={since} is older than min_available_seq={}",
                            first.seq
                        ),
                    );
                }
                let sub_id = params
                    .get("subscription_id")
                    .and_then(Value::as_str)
                    .filter(|_| reconnect)
                    .map(|s| s.chars().take(128).collect())
                    .unwrap_or_else(|| uuid::Uuid::new_v4().to_string());
                let Some(replayed) = self.replay(&filter, since).await else {
                    return error(Some(id), ProtocolErrorCode::UnknownError, "send failed");
                };
                self.subscriptions.insert(sub_id.clone(), filter);
                success(
                    id,
                    json!({"subscription_id": sub_id, "replayed_events": replayed}),
                    self.seq,
                )
            }
            "subscription.unsubscribe" => {
                let Some(sub) = params.get("subscription_id").and_then(Value::as_str) else {
                    return error(
                        Some(id),
                        ProtocolErrorCode::InvalidArgument,
                        "subscription.unsubscribe requires a subscription_id.",
                    );
                };
                if self.subscriptions.remove(sub).is_none() {
                    let shown: String = sub.chars().take(128).collect();
                    return error(
                        Some(id),
                        ProtocolErrorCode::NoSuchSubscription,
                        format!("Unknown subscription: {shown}"),
                    );
                }
                success(id, json!({}), self.seq)
            }
            "agent.getTree" => match self.tree() {
                Some(tree) => success(id, json!({"tree": tree}), self.seq),
                None => error(
                    Some(id),
                    ProtocolErrorCode::NoSuchRun,
                    "No active run is bound to this thread.",
                ),
            },
            _ => error(
                Some(id),
                ProtocolErrorCode::UnknownCommand,
                "Unknown protocol command.",
            ),
        }
    }

    /// The agent tree of the latest run this connection read: the root and each subgraph
    /// namespace with its last lifecycle status.
    fn tree(&self) -> Option<Value> {
        let start = self.kept.iter().rposition(|p| {
            p.raw.method == "lifecycle"
                && p.raw.namespace.is_empty()
                && p.raw.data["event"] == "running"
        })?;
        let mut nodes: BTreeMap<Vec<String>, (String, String)> = BTreeMap::new();
        for p in self.kept.iter().skip(start) {
            if p.raw.method != "lifecycle" {
                continue;
            }
            let status = p.raw.data["event"].as_str().unwrap_or_default().to_owned();
            let name = p.raw.data["graph_name"]
                .as_str()
                .unwrap_or_default()
                .to_owned();
            nodes.insert(p.raw.namespace.clone(), (status, name));
        }
        fn build(ns: &[String], nodes: &BTreeMap<Vec<String>, (String, String)>) -> Value {
            let (status, name) = nodes.get(ns).cloned().unwrap_or_default();
            let children: Vec<Value> = nodes
                .keys()
                .filter(|k| k.len() == ns.len() + 1 && k.starts_with(ns))
                .map(|k| build(k, nodes))
                .collect();
            let mut node = json!({"namespace": ns, "status": status, "graph_name": name});
            if !children.is_empty() {
                node["children"] = Value::Array(children);
            }
            node
        }
        Some(build(&[], &nodes))
    }
}
