//! Remote agents of the Agent2Agent protocol (A2A) as tools: discover an agent's card, and
//! call it with `message/send` (or `message/stream`) from a model's tool call, so
//! `create_react_agent`, `ToolNode` and the flows delegate to agents built on any stack
//! (LangGraph servers, `agent serve`, Google ADK, the `a2a-sdk` servers) as they call any
//! tool.
//!
//! Why here, and hand-written on reqwest: tools are this crate's subject; A2A 0.3 over
//! JSON-RPC is four small methods and an event stream, which the HTTP client the crate
//! already has for MCP speaks without another SDK. Behind the `a2a` feature.
//!
//! - [`A2aAgent::connect`] fetches the card from the URL the operator gives: a card's own
//!   URL (`…/agent-card.json`), or an agent's URL, whose `/.well-known/agent-card.json` (then
//!   the older `agent.json`, then the URL itself) holds it. [`A2aAgent::send`] and
//!   [`A2aAgent::stream`] talk to it; [`A2aAgent::tool`] is the agent as one [`A2aTool`].
//! - The tool takes `message` (what to ask, in plain words) and, to go on with a
//!   conversation, the `context_id` and `task_id` an earlier answer gave. Its result is the
//!   agent's answer (text; data as JSON) followed by the ids to continue with. An agent that
//!   asks for input (`input-required`) is not an error: the result says what it asks and how
//!   to answer (call again with the task's id), so the model can act on it. A failed,
//!   cancelled or refused task, an HTTP or JSON-RPC error, and a call that outlives the
//!   timeout are [`ToolError`]s, which `ToolNode` hands the model as error tool messages.
//!
//! # Where requests go
//!
//! Only to the origin (scheme, host, port) the operator named: the card's `url` gives the
//! endpoint's path, which is called on that origin even when the card names another host
//! (a server behind a proxy often does; a card cannot send calls elsewhere). No redirect is
//! followed. Requests carry only the headers the operator gave ([`A2aConfig::header`]),
//! answers are read up to [`MAX_ANSWER_BYTES`], and each call has a timeout
//! ([`DEFAULT_TIMEOUT`]).

use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use reqwest::header::{ACCEPT, CONTENT_TYPE, HeaderMap, HeaderName, HeaderValue};
use serde_json::{Map, Value, json};

use crate::error::{BoxError, ToolError};
use crate::registry::is_valid_tool_name;
use crate::tool::{BoxFuture, DynTool};

/// How long one call (a send, a whole stream) may take by default.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(300);

/// The most bytes read of a card, an answer, or one streamed event.
pub const MAX_ANSWER_BYTES: usize = 16 * 1024 * 1024;

/// What went wrong reaching an agent.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum A2aError {
    /// The URL or a header the operator gave is not usable.
    #[error("A2A agent {url}: {message}")]
    Config {
        /// The URL given.
        url: String,
        /// What is wrong.
        message: String,
    },
    /// No card could be read.
    #[error(
        "A2A agent {url}: no agent card found ({message}); give the agent's URL (its card at /.well-known/agent-card.json) or the card's own URL"
    )]
    Card {
        /// The URL given.
        url: String,
        /// What each place answered.
        message: String,
    },
    /// The HTTP request failed or was answered with an error status.
    #[error("A2A agent {url}: {message}")]
    Http {
        /// The endpoint.
        url: String,
        /// What happened.
        message: String,
    },
    /// The agent answered with a JSON-RPC error.
    #[error("A2A agent answered with error {code}: {message}")]
    Rpc {
        /// The JSON-RPC error code (-32001: no such task, -32602: invalid params...).
        code: i64,
        /// Its message.
        message: String,
    },
    /// The answer is not what A2A says it is.
    #[error("A2A agent {url}: {message}")]
    Protocol {
        /// The endpoint.
        url: String,
        /// What was wrong with the answer.
        message: String,
    },
    /// The call took longer than its timeout.
    #[error("A2A agent {url}: no answer within {after:?}")]
    TimedOut {
        /// The endpoint.
        url: String,
        /// The timeout.
        after: Duration,
    },
}

/// How to reach an agent: its URL, headers to send (credentials), the timeout, and whether
/// calls stream.
#[derive(Clone, Debug)]
pub struct A2aConfig {
    url: String,
    headers: Vec<(String, String)>,
    timeout: Duration,
    streaming: bool,
    name: Option<String>,
}

impl A2aConfig {
    /// The agent at `url` (its URL, or its card's).
    pub fn new(url: impl Into<String>) -> A2aConfig {
        A2aConfig {
            url: url.into(),
            headers: Vec::new(),
            timeout: DEFAULT_TIMEOUT,
            streaming: false,
            name: None,
        }
    }

    /// A header sent with every request (`Authorization: Bearer ...`, `x-api-key: ...`).
    pub fn header(mut self, name: impl Into<String>, value: impl Into<String>) -> A2aConfig {
        self.headers.push((name.into(), value.into()));
        self
    }

    /// How long one call may take.
    pub fn timeout(mut self, timeout: Duration) -> A2aConfig {
        self.timeout = timeout;
        self
    }

    /// Whether the tool's calls use `message/stream` (when the card says the agent streams).
    pub fn streaming(mut self, on: bool) -> A2aConfig {
        self.streaming = on;
        self
    }

    /// The tool's name (default: the agent's name, made a valid tool name).
    pub fn name(mut self, name: impl Into<String>) -> A2aConfig {
        self.name = Some(name.into());
        self
    }
}

/// Where a task is, as the agent said.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum TaskState {
    /// Queued.
    Submitted,
    /// Running.
    Working,
    /// Waiting for the client's answer.
    InputRequired,
    /// Done.
    Completed,
    /// Cancelled.
    Canceled,
    /// Failed.
    Failed,
    /// Refused.
    Rejected,
    /// Waiting for credentials.
    AuthRequired,
    /// Anything else.
    Unknown,
}

impl TaskState {
    fn parse(state: &str) -> TaskState {
        let s = state
            .trim_start_matches("TASK_STATE_")
            .to_ascii_lowercase()
            .replace('_', "-");
        match s.as_str() {
            "submitted" => TaskState::Submitted,
            "working" => TaskState::Working,
            "input-required" => TaskState::InputRequired,
            "completed" => TaskState::Completed,
            "canceled" | "cancelled" => TaskState::Canceled,
            "failed" => TaskState::Failed,
            "rejected" => TaskState::Rejected,
            "auth-required" => TaskState::AuthRequired,
            _ => TaskState::Unknown,
        }
    }

    /// The protocol's name for it.
    pub fn as_str(self) -> &'static str {
        match self {
            TaskState::Submitted => "submitted",
            TaskState::Working => "working",
            TaskState::InputRequired => "input-required",
            TaskState::Completed => "completed",
            TaskState::Canceled => "canceled",
            TaskState::Failed => "failed",
            TaskState::Rejected => "rejected",
            TaskState::AuthRequired => "auth-required",
            TaskState::Unknown => "unknown",
        }
    }
}

/// An agent's answer to one message.
#[derive(Debug, Clone)]
pub struct Reply {
    /// The task's id (`None` when the agent answered with a plain message).
    pub task_id: Option<String>,
    /// The conversation's id.
    pub context_id: Option<String>,
    /// Where the task is (`Completed` for a plain message).
    pub state: TaskState,
    /// The answer: the artifacts' text (data parts as JSON), else the last agent message's.
    pub text: String,
    /// What the status says (the question of an `input-required` task, the error of a
    /// failed one).
    pub status_text: String,
    /// The task (or message) as the agent sent it, with the streamed artifacts merged.
    pub raw: Value,
}

/// A connected agent: its card and how to call it.
#[derive(Clone, Debug)]
pub struct A2aAgent {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    card: Value,
    endpoint: String,
    http: reqwest::Client,
    timeout: Duration,
    streaming: bool,
    tool_name: Option<String>,
}

/// `scheme://host[:port]` of a URL.
fn origin(url: &reqwest::Url) -> String {
    let mut o = format!("{}://{}", url.scheme(), url.host_str().unwrap_or_default());
    if let Some(port) = url.port() {
        o.push_str(&format!(":{port}"));
    }
    o
}

impl A2aAgent {
    /// Fetches the card of the agent at `url`.
    pub async fn connect(url: impl Into<String>) -> Result<A2aAgent, A2aError> {
        A2aAgent::connect_with(A2aConfig::new(url)).await
    }

    /// Fetches the card of the agent `config` names.
    pub async fn connect_with(config: A2aConfig) -> Result<A2aAgent, A2aError> {
        let url = config.url.trim().to_owned();
        let bad = |message: String| A2aError::Config {
            url: url.clone(),
            message,
        };
        let given = reqwest::Url::parse(&url).map_err(|e| bad(format!("not a URL: {e}")))?;
        if !matches!(given.scheme(), "http" | "https") || given.host_str().is_none() {
            return Err(bad("only http(s) URLs with a host are supported".to_owned()));
        }
        let mut headers = HeaderMap::new();
        for (k, v) in &config.headers {
            let name = HeaderName::from_bytes(k.as_bytes())
                .map_err(|_| bad(format!("`{k}` is not a valid header name")))?;
            let value = HeaderValue::from_str(v)
                .map_err(|_| bad(format!("the value of header `{k}` is not valid")))?;
            headers.insert(name, value);
        }
        // reqwest's rustls comes without a crypto provider; ring's is installed once per
        // process (agent-llm and the MCP client do the same), else building the client panics.
        let _ = rustls::crypto::ring::default_provider().install_default();
        let http = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .connect_timeout(Duration::from_secs(10))
            .default_headers(headers)
            .build()
            .map_err(|e| bad(format!("cannot build an HTTP client: {e}")))?;

        let base = url.trim_end_matches('/');
        let candidates: Vec<String> = if given.path().ends_with(".json") {
            vec![url.clone()]
        } else {
            vec![
                format!("{base}/.well-known/agent-card.json"),
                format!("{base}/.well-known/agent.json"),
                url.clone(),
            ]
        };
        let mut tried = Vec::new();
        let mut card = None;
        for candidate in candidates {
            match get_json(&http, &candidate, config.timeout).await {
                Ok(v)
                    if v["name"].is_string()
                        && (v["url"].is_string() || v["supportedInterfaces"].is_array()) =>
                {
                    card = Some(v);
                    break;
                }
                Ok(_) => tried.push(format!("{candidate}: not an agent card")),
                Err(e) => tried.push(e),
            }
        }
        let card = card.ok_or_else(|| A2aError::Card {
            url: url.clone(),
            message: tried.join("; "),
        })?;
        // The endpoint: the card's path, on the operator's origin.
        let named = card["url"]
            .as_str()
            .or_else(|| card["supportedInterfaces"][0]["url"].as_str())
            .unwrap_or_default();
        let endpoint = match reqwest::Url::parse(named).or_else(|_| given.join(named)) {
            Ok(card_url) => {
                let mut path = card_url.path().to_owned();
                if let Some(q) = card_url.query() {
                    path.push('?');
                    path.push_str(q);
                }
                format!("{}{path}", origin(&given))
            }
            Err(_) => {
                return Err(A2aError::Card {
                    url: url.clone(),
                    message: "the card names no usable endpoint URL".to_owned(),
                });
            }
        };
        Ok(A2aAgent {
            inner: Arc::new(Inner {
                card,
                endpoint,
                http,
                timeout: config.timeout,
                streaming: config.streaming,
                tool_name: config.name,
            }),
        })
    }

    /// The card, as the agent serves it.
    pub fn card(&self) -> &Value {
        &self.inner.card
    }

    /// The agent's name.
    pub fn name(&self) -> &str {
        self.inner.card["name"].as_str().unwrap_or("agent")
    }

    /// The agent's description.
    pub fn description(&self) -> &str {
        self.inner.card["description"].as_str().unwrap_or_default()
    }

    /// The JSON-RPC endpoint calls go to.
    pub fn endpoint(&self) -> &str {
        &self.inner.endpoint
    }

    /// Whether the card says the agent streams.
    pub fn streams(&self) -> bool {
        self.inner.card["capabilities"]["streaming"] == true
    }

    /// Sends `text` (in the conversation `context_id`, answering the task `task_id` when
    /// given) with `message/send`, and waits for the answer.
    pub async fn send(
        &self,
        text: &str,
        context_id: Option<&str>,
        task_id: Option<&str>,
    ) -> Result<Reply, A2aError> {
        let params = json!({"message": message(text, context_id, task_id),
                            "configuration": {"blocking": true}});
        let timeout = self.inner.timeout;
        let call = self.call("message/send", params);
        let result = tokio::time::timeout(timeout, call)
            .await
            .map_err(|_| self.timed_out())??;
        Ok(reply_of(result))
    }

    /// Sends `text` with `message/stream`: `on_text` gets the answer's text as it comes
    /// (artifact updates), the reply is the task as it ended.
    pub async fn stream(
        &self,
        text: &str,
        context_id: Option<&str>,
        task_id: Option<&str>,
        mut on_text: impl FnMut(&str) + Send,
    ) -> Result<Reply, A2aError> {
        let params = json!({"message": message(text, context_id, task_id)});
        let timeout = self.inner.timeout;
        let run = async {
            let body = json!({"jsonrpc": "2.0", "id": request_id(), "method": "message/stream", "params": params});
            let response = self
                .inner
                .http
                .post(&self.inner.endpoint)
                .header(ACCEPT, "text/event-stream")
                .header(CONTENT_TYPE, "application/json")
                .body(body.to_string())
                .send()
                .await
                .map_err(|e| self.http(format!("the request failed: {e}")))?;
            let status = response.status();
            if !status.is_success() {
                return Err(self.http(format!("HTTP {status}")));
            }
            let mut task = Task::default();
            let mut lines = Lines::default();
            let mut bytes = response.bytes_stream();
            let mut done = false;
            while !done {
                let Some(chunk) = bytes.next().await else {
                    break;
                };
                let chunk = chunk.map_err(|e| self.http(format!("the stream broke: {e}")))?;
                lines.push(&chunk);
                while let Some(data) = lines.next_event() {
                    if lines.too_long() {
                        return Err(self.protocol("an event is larger than the client reads"));
                    }
                    let event: Value = serde_json::from_str(&data)
                        .map_err(|_| self.protocol("an event is not JSON"))?;
                    if let Some(e) = event.get("error") {
                        return Err(rpc_error(e));
                    }
                    let result = unwrap_event(&event["result"]);
                    if let Some(text) = task.apply(result) {
                        on_text(&text);
                    }
                    done = task.finished;
                }
                if lines.too_long() {
                    return Err(self.protocol("an event is larger than the client reads"));
                }
            }
            if !done && task.state.is_none() {
                return Err(self.protocol("the stream ended before the task"));
            }
            Ok(reply_of(task.into_value()))
        };
        tokio::time::timeout(timeout, run)
            .await
            .map_err(|_| self.timed_out())?
    }

    /// `tasks/get`: the task as it is now.
    pub async fn get_task(&self, task_id: &str) -> Result<Reply, A2aError> {
        let result = self.call("tasks/get", json!({"id": task_id})).await?;
        Ok(reply_of(result))
    }

    /// `tasks/cancel`.
    pub async fn cancel_task(&self, task_id: &str) -> Result<Reply, A2aError> {
        let result = self.call("tasks/cancel", json!({"id": task_id})).await?;
        Ok(reply_of(result))
    }

    /// The agent as a tool (see the module docs).
    pub fn tool(&self) -> A2aTool {
        let name = self
            .inner
            .tool_name
            .clone()
            .unwrap_or_else(|| tool_name(self.name()));
        let mut description = format!(
            "Ask the remote agent `{}`: {}",
            self.name(),
            self.description().trim()
        );
        let skills: Vec<String> = self.inner.card["skills"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|s| {
                let name = s["name"].as_str()?;
                let d = s["description"].as_str().unwrap_or_default();
                (d != self.description()).then(|| format!("{name}: {d}"))
            })
            .collect();
        if !skills.is_empty() {
            description.push_str(&format!(" Skills: {}.", skills.join("; ")));
        }
        description.push_str(
            " It answers in text. To go on with the same conversation, pass the context_id its last answer gave; when it asks for input, answer with the task_id it gave.",
        );
        A2aTool {
            name,
            description,
            agent: self.clone(),
        }
    }

    /// One JSON-RPC call: its result.
    async fn call(&self, method: &str, params: Value) -> Result<Value, A2aError> {
        let body =
            json!({"jsonrpc": "2.0", "id": request_id(), "method": method, "params": params});
        let response = self
            .inner
            .http
            .post(&self.inner.endpoint)
            .header(ACCEPT, "application/json")
            .header(CONTENT_TYPE, "application/json")
            .body(body.to_string())
            .send()
            .await
            .map_err(|e| self.http(format!("the request failed: {e}")))?;
        let status = response.status();
        let bytes = read_capped(response).await.map_err(|e| self.http(e))?;
        if !status.is_success() {
            return Err(self.http(format!("HTTP {status}")));
        }
        let answer: Value =
            serde_json::from_slice(&bytes).map_err(|_| self.protocol("the answer is not JSON"))?;
        if let Some(e) = answer.get("error") {
            return Err(rpc_error(e));
        }
        match answer.get("result") {
            Some(r) => Ok(unwrap_event(r).clone()),
            None => Err(self.protocol("the answer has neither result nor error")),
        }
    }

    fn http(&self, message: String) -> A2aError {
        A2aError::Http {
            url: self.inner.endpoint.clone(),
            message,
        }
    }

    fn protocol(&self, message: &str) -> A2aError {
        A2aError::Protocol {
            url: self.inner.endpoint.clone(),
            message: message.to_owned(),
        }
    }

    fn timed_out(&self) -> A2aError {
        A2aError::TimedOut {
            url: self.inner.endpoint.clone(),
            after: self.inner.timeout,
        }
    }
}

/// A request id (unique in this process).
fn request_id() -> u64 {
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);
    NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
}

/// A user message of `text`.
fn message(text: &str, context_id: Option<&str>, task_id: Option<&str>) -> Value {
    let mut m = json!({
        "kind": "message", "role": "user", "messageId": agent_llm::new_message_id(),
        "parts": [{"kind": "text", "text": text}],
    });
    if let Some(c) = context_id {
        m["contextId"] = c.into();
    }
    if let Some(t) = task_id {
        m["taskId"] = t.into();
    }
    m
}

/// A JSON-RPC error object as an error.
fn rpc_error(e: &Value) -> A2aError {
    A2aError::Rpc {
        code: e["code"].as_i64().unwrap_or_default(),
        message: e["message"].as_str().unwrap_or("unknown error").to_owned(),
    }
}

/// A result as A2A 0.3 writes it: A2A 1.0 wraps a task in `task` (and stream events in
/// `statusUpdate`, `artifactUpdate`).
fn unwrap_event(result: &Value) -> &Value {
    for key in ["task", "message", "statusUpdate", "artifactUpdate"] {
        if let Some(inner) = result.get(key)
            && result.as_object().is_some_and(|o| o.len() == 1)
        {
            return inner;
        }
    }
    result
}

/// GETs `url` as JSON (within the size cap); a readable error otherwise.
async fn get_json(http: &reqwest::Client, url: &str, timeout: Duration) -> Result<Value, String> {
    let fetch = async {
        let response = http
            .get(url)
            .header(ACCEPT, "application/json")
            .send()
            .await
            .map_err(|e| format!("{url}: {e}"))?;
        let status = response.status();
        if !status.is_success() {
            return Err(format!("{url}: HTTP {status}"));
        }
        let bytes = read_capped(response)
            .await
            .map_err(|e| format!("{url}: {e}"))?;
        serde_json::from_slice(&bytes).map_err(|_| format!("{url}: not JSON"))
    };
    tokio::time::timeout(timeout, fetch)
        .await
        .map_err(|_| format!("{url}: no answer within {timeout:?}"))?
}

/// A response's body, up to [`MAX_ANSWER_BYTES`].
async fn read_capped(response: reqwest::Response) -> Result<Vec<u8>, String> {
    let mut out = Vec::new();
    let mut bytes = response.bytes_stream();
    while let Some(chunk) = bytes.next().await {
        let chunk = chunk.map_err(|e| format!("reading the answer failed: {e}"))?;
        if out.len() + chunk.len() > MAX_ANSWER_BYTES {
            return Err(format!(
                "the answer is larger than {MAX_ANSWER_BYTES} bytes"
            ));
        }
        out.extend_from_slice(&chunk);
    }
    Ok(out)
}

/// SSE cut into events' data (the `data:` lines of an event joined by newlines).
#[derive(Default)]
struct Lines {
    buffer: Vec<u8>,
    data: Option<String>,
    long: bool,
}

impl Lines {
    fn push(&mut self, bytes: &[u8]) {
        self.buffer.extend_from_slice(bytes);
        if self.buffer.len() > MAX_ANSWER_BYTES {
            self.long = true;
        }
    }

    fn too_long(&self) -> bool {
        self.long
    }

    /// The next whole event's data.
    fn next_event(&mut self) -> Option<String> {
        loop {
            let end = self.buffer.iter().position(|b| *b == b'\n')?;
            let mut line: Vec<u8> = self.buffer.drain(..=end).collect();
            line.pop();
            if line.last() == Some(&b'\r') {
                line.pop();
            }
            let line = String::from_utf8_lossy(&line).into_owned();
            if line.is_empty() {
                if let Some(data) = self.data.take() {
                    return Some(data);
                }
                continue;
            }
            if let Some(rest) = line.strip_prefix("data:") {
                let rest = rest.strip_prefix(' ').unwrap_or(rest);
                match &mut self.data {
                    Some(d) => {
                        d.push('\n');
                        d.push_str(rest);
                    }
                    None => self.data = Some(rest.to_owned()),
                }
                if self
                    .data
                    .as_ref()
                    .is_some_and(|d| d.len() > MAX_ANSWER_BYTES)
                {
                    self.long = true;
                    return None;
                }
            }
        }
    }
}

/// A task put together from stream events.
#[derive(Default)]
struct Task {
    id: Option<String>,
    context_id: Option<String>,
    state: Option<String>,
    status: Value,
    /// Artifacts by id, in order.
    artifacts: Vec<(String, Value)>,
    finished: bool,
}

impl Task {
    /// Applies one event; the text it adds to the answer, if any.
    fn apply(&mut self, event: &Value) -> Option<String> {
        let kind = event["kind"].as_str().unwrap_or_else(|| {
            if event.get("artifact").is_some() {
                "artifact-update"
            } else if event.get("status").is_some() && event.get("taskId").is_some() {
                "status-update"
            } else {
                "task"
            }
        });
        match kind {
            "task" => {
                self.id = event["id"].as_str().map(str::to_owned);
                self.context_id = event["contextId"].as_str().map(str::to_owned);
                self.state = event["status"]["state"].as_str().map(str::to_owned);
                self.status = event["status"].clone();
                for a in event["artifacts"].as_array().into_iter().flatten() {
                    let id = a["artifactId"].as_str().unwrap_or_default().to_owned();
                    self.artifacts.push((id, a.clone()));
                }
                None
            }
            "message" => {
                // A plain message answers the whole request.
                self.context_id = event["contextId"].as_str().map(str::to_owned);
                self.state = Some("completed".to_owned());
                self.status = json!({"state": "completed", "message": event});
                self.finished = true;
                None
            }
            "status-update" => {
                self.id = self
                    .id
                    .take()
                    .or_else(|| event["taskId"].as_str().map(str::to_owned));
                self.context_id = self
                    .context_id
                    .take()
                    .or_else(|| event["contextId"].as_str().map(str::to_owned));
                self.state = event["status"]["state"].as_str().map(str::to_owned);
                self.status = event["status"].clone();
                if event["final"] == true {
                    self.finished = true;
                }
                None
            }
            "artifact-update" => {
                let artifact = &event["artifact"];
                let id = artifact["artifactId"]
                    .as_str()
                    .unwrap_or_default()
                    .to_owned();
                let parts = artifact["parts"].as_array().cloned().unwrap_or_default();
                let added = parts_text(&parts);
                match self.artifacts.iter_mut().find(|(a, _)| *a == id) {
                    Some((_, existing)) if event["append"] == true => {
                        if let Some(list) = existing["parts"].as_array_mut() {
                            list.extend(parts);
                        }
                        Some(added)
                    }
                    Some((_, existing)) => {
                        *existing = artifact.clone();
                        None
                    }
                    None => {
                        self.artifacts.push((id, artifact.clone()));
                        (event["lastChunk"] != true).then_some(added)
                    }
                }
                .filter(|t| !t.is_empty())
            }
            _ => None,
        }
    }

    fn into_value(self) -> Value {
        json!({
            "kind": "task", "id": self.id, "contextId": self.context_id,
            "status": self.status,
            "artifacts": self.artifacts.into_iter().map(|(_, a)| a).collect::<Vec<_>>(),
        })
    }
}

/// The text of parts: text as is, data as JSON, files as a note.
fn parts_text(parts: &[Value]) -> String {
    let mut out = String::new();
    for p in parts {
        if let Some(t) = p["text"].as_str() {
            out.push_str(t);
        } else if let Some(d) = p.get("data") {
            if !out.is_empty() {
                out.push('\n');
            }
            out.push_str(&d.to_string());
        } else if let Some(f) = p.get("file") {
            let name = f["name"].as_str().or(f["uri"].as_str()).unwrap_or("a file");
            out.push_str(&format!("[file: {name}]"));
        }
    }
    out
}

/// The reply a task (or message) makes.
fn reply_of(result: Value) -> Reply {
    if result["kind"] == "message"
        || (result.get("parts").is_some() && result.get("status").is_none())
    {
        let text = parts_text(result["parts"].as_array().map_or(&[][..], Vec::as_slice));
        return Reply {
            task_id: result["taskId"].as_str().map(str::to_owned),
            context_id: result["contextId"].as_str().map(str::to_owned),
            state: TaskState::Completed,
            status_text: String::new(),
            text,
            raw: result,
        };
    }
    let state = TaskState::parse(result["status"]["state"].as_str().unwrap_or_default());
    let status_text = parts_text(
        result["status"]["message"]["parts"]
            .as_array()
            .map_or(&[][..], Vec::as_slice),
    );
    let answers: Vec<String> = result["artifacts"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|a| a["name"] != "Interrupt")
        .map(|a| parts_text(a["parts"].as_array().map_or(&[][..], Vec::as_slice)))
        .filter(|t| !t.is_empty())
        .collect();
    let mut text = answers.join("\n\n");
    if text.is_empty() && state == TaskState::Completed {
        // An agent that answers in its history only.
        text = result["history"]
            .as_array()
            .into_iter()
            .flatten()
            .rev()
            .find(|m| m["role"] == "agent" || m["role"] == "ROLE_AGENT")
            .map(|m| parts_text(m["parts"].as_array().map_or(&[][..], Vec::as_slice)))
            .unwrap_or_else(|| status_text.clone());
    }
    Reply {
        task_id: result["id"].as_str().map(str::to_owned),
        context_id: result["contextId"].as_str().map(str::to_owned),
        state,
        text,
        status_text,
        raw: result,
    }
}

/// An agent's name as a tool name (`A-Za-z0-9_-`, at most 64).
pub fn tool_name(name: &str) -> String {
    let mut out: String = name
        .trim()
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                c
            } else {
                '_'
            }
        })
        .take(64)
        .collect();
    if out.is_empty() {
        out = "a2a_agent".to_owned();
    }
    out
}

/// A remote A2A agent as a tool (see the module docs).
#[derive(Clone, Debug)]
pub struct A2aTool {
    name: String,
    description: String,
    agent: A2aAgent,
}

impl A2aTool {
    /// The agent it calls.
    pub fn agent(&self) -> &A2aAgent {
        &self.agent
    }

    /// This tool under another name.
    pub fn renamed(mut self, name: impl Into<String>) -> A2aTool {
        self.name = name.into();
        self
    }

    fn failed(&self, message: String) -> ToolError {
        ToolError::Failed {
            tool: self.name.clone(),
            source: BoxError::from(message),
        }
    }

    async fn ask(&self, args: Value) -> Result<Value, ToolError> {
        let args = match args {
            Value::Object(m) => m,
            Value::String(s) => Map::from_iter([("message".to_owned(), Value::String(s))]),
            Value::Null => Map::new(),
            other => {
                return Err(ToolError::InvalidArguments {
                    tool: self.name.clone(),
                    path: ".".to_owned(),
                    message: format!("expected an object of arguments, got {other}"),
                });
            }
        };
        let text = match args.get("message") {
            Some(Value::String(s)) if !s.trim().is_empty() => s.clone(),
            _ => {
                return Err(ToolError::InvalidArguments {
                    tool: self.name.clone(),
                    path: "message".to_owned(),
                    message: "a non-empty string is required: what to ask the agent".to_owned(),
                });
            }
        };
        let id = |key: &str| {
            args.get(key)
                .and_then(Value::as_str)
                .map(str::trim)
                .filter(|s| !s.is_empty())
                .map(str::to_owned)
        };
        let (context_id, task_id) = (id("context_id"), id("task_id"));
        let agent = &self.agent;
        let reply = if agent.inner.streaming && agent.streams() {
            agent
                .stream(&text, context_id.as_deref(), task_id.as_deref(), |_| {})
                .await
        } else {
            agent
                .send(&text, context_id.as_deref(), task_id.as_deref())
                .await
        };
        let reply = match reply {
            Ok(r) => r,
            Err(A2aError::TimedOut { after, .. }) => {
                return Err(ToolError::TimedOut {
                    tool: self.name.clone(),
                    after,
                });
            }
            Err(e) => return Err(self.failed(e.to_string())),
        };
        let ids = |r: &Reply| {
            let mut s = String::new();
            if let Some(c) = &r.context_id {
                s.push_str(&format!("context_id: {c}"));
            }
            s
        };
        match reply.state {
            TaskState::Completed => {
                let mut out = reply.text.clone();
                let ids = ids(&reply);
                if !ids.is_empty() {
                    out.push_str(&format!("\n\n[{ids}]"));
                }
                Ok(Value::String(out))
            }
            TaskState::InputRequired | TaskState::AuthRequired => {
                let asked = if reply.status_text.is_empty() {
                    reply.text.clone()
                } else {
                    reply.status_text.clone()
                };
                let task = reply.task_id.clone().unwrap_or_default();
                let context = reply.context_id.clone().unwrap_or_default();
                Ok(Value::String(format!(
                    "The agent `{}` needs more input before it can finish ({}): {asked}\nTo answer, call `{}` again with your answer as message, task_id \"{task}\" and context_id \"{context}\".",
                    agent.name(),
                    reply.state.as_str(),
                    self.name
                )))
            }
            TaskState::Submitted | TaskState::Working => Ok(Value::String(format!(
                "The agent `{}` is still working on task \"{}\" ({}).",
                agent.name(),
                reply.task_id.clone().unwrap_or_default(),
                reply.state.as_str()
            ))),
            state => {
                let why = if reply.status_text.is_empty() {
                    reply.text.clone()
                } else {
                    reply.status_text.clone()
                };
                Err(self.failed(format!(
                    "the agent `{}` ended the task {}: {why}",
                    agent.name(),
                    state.as_str()
                )))
            }
        }
    }
}

impl DynTool for A2aTool {
    fn name(&self) -> &str {
        &self.name
    }

    fn description(&self) -> &str {
        &self.description
    }

    fn parameters(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "message": {"type": "string", "description": "What to ask or tell the agent, in plain words."},
                "context_id": {"type": "string", "description": "To go on with a conversation: the context_id an earlier answer of this agent gave."},
                "task_id": {"type": "string", "description": "To answer a question the agent asked: the task_id it gave."},
            },
            "required": ["message"],
        })
    }

    fn call(&self, args: Value) -> BoxFuture<'_, Result<Value, ToolError>> {
        Box::pin(self.ask(args))
    }
}

/// Connects to every agent of `configs` at once; the tools named so that none takes a
/// name of `taken` or another's (a clash gets `_2`, `_3`...).
pub async fn connect_all(
    configs: Vec<A2aConfig>,
    taken: &[&str],
) -> Result<Vec<A2aTool>, A2aError> {
    let agents =
        futures::future::try_join_all(configs.into_iter().map(A2aAgent::connect_with)).await?;
    let mut used: Vec<String> = taken.iter().map(|t| (*t).to_owned()).collect();
    let mut tools = Vec::new();
    for agent in agents {
        let tool = agent.tool();
        let base = tool.name.clone();
        let mut name = base.clone();
        let mut n = 2;
        while used.contains(&name) || !is_valid_tool_name(&name) {
            let suffix = format!("_{n}");
            let keep = 64usize.saturating_sub(suffix.len());
            name = format!("{}{suffix}", &base[..base.len().min(keep)]);
            n += 1;
        }
        used.push(name.clone());
        tools.push(tool.renamed(name));
    }
    Ok(tools)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sse_events_are_cut_on_blank_lines() {
        let mut l = Lines::default();
        l.push(b"event: message\r\ndata: {\"a\":");
        assert_eq!(l.next_event(), None);
        l.push(b"1}\r\n\r\n: heartbeat\r\n\r\ndata: 2\ndata: 3\n\n");
        assert_eq!(l.next_event().as_deref(), Some("{\"a\":1}"));
        assert_eq!(l.next_event().as_deref(), Some("2\n3"));
        assert_eq!(l.next_event(), None);
    }

    #[test]
    fn streamed_artifacts_are_appended_then_replaced() {
        let mut t = Task::default();
        t.apply(
            &json!({"kind": "task", "id": "t", "contextId": "c", "status": {"state": "submitted"}}),
        );
        let chunk = |text: &str, append: bool, last: bool| {
            json!({"kind": "artifact-update", "taskId": "t", "contextId": "c", "append": append, "lastChunk": last,
                   "artifact": {"artifactId": "a", "parts": [{"kind": "text", "text": text}]}})
        };
        assert_eq!(t.apply(&chunk("he", false, false)).as_deref(), Some("he"));
        assert_eq!(t.apply(&chunk("llo", true, false)).as_deref(), Some("llo"));
        assert_eq!(t.apply(&chunk("hello!", false, true)), None);
        t.apply(
            &json!({"kind": "status-update", "taskId": "t", "contextId": "c", "final": true,
                        "status": {"state": "completed"}}),
        );
        assert!(t.finished);
        let r = reply_of(t.into_value());
        assert_eq!(r.state, TaskState::Completed);
        assert_eq!(r.text, "hello!");
        assert_eq!(r.context_id.as_deref(), Some("c"));
    }

    #[test]
    fn states_in_both_spellings() {
        assert_eq!(TaskState::parse("input-required"), TaskState::InputRequired);
        assert_eq!(
            TaskState::parse("TASK_STATE_INPUT_REQUIRED"),
            TaskState::InputRequired
        );
        assert_eq!(
            TaskState::parse("TASK_STATE_COMPLETED"),
            TaskState::Completed
        );
        assert_eq!(TaskState::parse("what"), TaskState::Unknown);
    }

    #[test]
    fn names() {
        assert_eq!(tool_name("Currency Agent"), "Currency_Agent");
        assert_eq!(tool_name(""), "a2a_agent");
        assert_eq!(tool_name(&"x".repeat(80)).len(), 64);
    }
}
