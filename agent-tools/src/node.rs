//! [`ToolNode`]: LangGraph's prebuilt tool node. It reads the tool calls of the last AI
//! message, runs them concurrently (bounded), and answers each with a [`ToolMessage`] linked
//! by call id, in call order.
//!
//! Failures of single calls — unknown tool, bad arguments, the tool's error, a time-out, a
//! panic — become error `ToolMessage`s by default so the model can correct itself
//! ([`HandleErrors`] decides). Per-call timeout and retry are the [`Timeout`] and [`Retry`]
//! wrappers, applied to each call; every call runs in an `execute_tool` tracing span (the
//! OpenTelemetry GenAI conventions' execute-tool span: `execute_tool {tool}`, with the tool's
//! name, the call id and, on failure, `error.type`), and its
//! arguments are logged through [`DynTool::redact_args`] (wrap tools in
//! [`Redacted`](crate::Redacted) to mask secrets).
//!
//! Calls run as concurrent futures inside the node's task, not as spawned tasks: dropping the
//! node (a node timeout, a failed sibling) cancels them. A tool that blocks a thread for long
//! should move its work to `tokio::task::spawn_blocking`.

use std::marker::PhantomData;
use std::sync::Arc;
use std::time::{Duration, Instant};

use agent_core::{
    BoxFuture as NodeFuture, GraphState, IntoNode, Node, NodeContext, NodeError, NodeOutput,
    NodeSpec,
};
use agent_llm::{Message, ToolCall, ToolMessage};
use futures::{StreamExt, TryStreamExt};
use serde_json::Value;
use tracing::Instrument;

use crate::condition::TOOLS;
use crate::error::ToolError;
use crate::layers::{CatchPanic, Retry, Timeout, ToolRetryPolicy};
use crate::registry::ToolRegistry;
use crate::state::{MessagesState, last_ai_message};
use crate::tool::{DynTool, content_of, into_content};

/// How many calls of one AI message run at once unless set with
/// [`ToolNode::max_concurrency`].
pub const DEFAULT_MAX_CONCURRENCY: usize = 16;

/// Turns a call's error into the text of its error message, or `None` to fail the node.
pub type ErrorFormatter = Arc<dyn Fn(&ToolError) -> Option<String> + Send + Sync>;

/// What a [`ToolNode`] does when a call fails.
#[derive(Clone, Default)]
pub enum HandleErrors {
    /// Answer with an error `ToolMessage`: `Error: <error>\n Please fix your mistakes.`
    /// (LangGraph's template). The default.
    #[default]
    Report,
    /// Answer with an error `ToolMessage` holding this text.
    Message(String),
    /// Answer with the text `f` returns; when it returns `None`, the node fails instead.
    With(ErrorFormatter),
    /// Fail the node (and so the run) with the first error, in call order.
    Propagate,
}

impl std::fmt::Debug for HandleErrors {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            HandleErrors::Report => f.write_str("Report"),
            HandleErrors::Message(text) => f.debug_tuple("Message").field(text).finish(),
            HandleErrors::With(_) => f.write_str("With(..)"),
            HandleErrors::Propagate => f.write_str("Propagate"),
        }
    }
}

impl HandleErrors {
    /// [`HandleErrors::With`] from a closure.
    pub fn with(f: impl Fn(&ToolError) -> Option<String> + Send + Sync + 'static) -> Self {
        HandleErrors::With(Arc::new(f))
    }

    /// The error message's text, or `None` to propagate.
    pub fn render(&self, error: &ToolError) -> Option<String> {
        match self {
            HandleErrors::Report => Some(format!("Error: {error}\n Please fix your mistakes.")),
            HandleErrors::Message(text) => Some(text.clone()),
            HandleErrors::With(f) => f(error),
            HandleErrors::Propagate => None,
        }
    }
}

/// Runs the tool calls of the last AI message; a graph node over any [`MessagesState`].
///
/// ```
/// use std::time::Duration;
/// use agent_core::{GraphState, StateGraph, START, END};
/// use agent_llm::Message;
/// use agent_tools::{messages_state, tools_condition, ToolNode, ToolRegistry, ToolRetryPolicy};
///
/// #[derive(GraphState, Clone, Default, Debug)]
/// struct Chat {
///     #[reducer(agent_llm::add_messages)]
///     messages: Vec<Message>,
/// }
/// messages_state!(Chat, messages);
///
/// let tools = ToolNode::new(ToolRegistry::builtins())
///     .max_concurrency(4)
///     .call_timeout(Duration::from_secs(10))
///     .call_retry(ToolRetryPolicy::new().max_attempts(2));
///
/// let graph = StateGraph::<Chat>::new()
///     .add_node("agent", |_: std::sync::Arc<Chat>| async { ChatUpdate::default() })
///     .add_node("tools", tools)
///     .add_edge(START, "agent")
///     .add_conditional_edges("agent", tools_condition, ["tools", END])
///     .add_edge("tools", "agent")
///     .compile();
/// assert!(graph.is_ok());
/// ```
#[derive(Clone)]
pub struct ToolNode {
    registry: ToolRegistry,
    max_concurrency: usize,
    timeout: Option<Duration>,
    retry: Option<ToolRetryPolicy>,
    handle_errors: HandleErrors,
}

impl std::fmt::Debug for ToolNode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ToolNode")
            .field("tools", &self.registry.names().collect::<Vec<_>>())
            .field("max_concurrency", &self.max_concurrency)
            .field("timeout", &self.timeout)
            .field("retry", &self.retry)
            .field("handle_errors", &self.handle_errors)
            .finish()
    }
}

impl ToolNode {
    /// A node that runs the tools of `registry`.
    pub fn new(registry: ToolRegistry) -> Self {
        ToolNode {
            registry,
            max_concurrency: DEFAULT_MAX_CONCURRENCY,
            timeout: None,
            retry: None,
            handle_errors: HandleErrors::Report,
        }
    }

    /// Runs at most `n` calls at once (at least 1).
    pub fn max_concurrency(mut self, n: usize) -> Self {
        self.max_concurrency = n.max(1);
        self
    }

    /// Fails each attempt of a call that takes longer than `after` ([`ToolError::TimedOut`]).
    pub fn call_timeout(mut self, after: Duration) -> Self {
        self.timeout = Some(after);
        self
    }

    /// Retries failed calls with `policy` (each attempt gets the call timeout).
    pub fn call_retry(mut self, policy: ToolRetryPolicy) -> Self {
        self.retry = Some(policy);
        self
    }

    /// Sets what a failed call produces (default [`HandleErrors::Report`]).
    pub fn handle_errors(mut self, policy: HandleErrors) -> Self {
        self.handle_errors = policy;
        self
    }

    /// The tools.
    pub fn registry(&self) -> &ToolRegistry {
        &self.registry
    }

    /// Runs one call through the node's layers (panic catching, timeout, retry) and returns
    /// the tool's JSON result.
    pub async fn invoke(&self, call: &ToolCall) -> Result<Value, ToolError> {
        let tool = self.registry.lookup(&call.name)?;
        tracing::debug!(args = %tool.redact_args(&call.args), "tool call started");
        let guarded = CatchPanic {
            inner: Arc::clone(tool),
        };
        match (self.timeout, &self.retry) {
            (None, None) => guarded.call(call.args.clone()).await,
            (Some(after), None) => Timeout::new(guarded, after).call(call.args.clone()).await,
            (None, Some(policy)) => {
                Retry::new(guarded, policy.clone())
                    .call(call.args.clone())
                    .await
            }
            (Some(after), Some(policy)) => {
                Retry::new(Timeout::new(guarded, after), policy.clone())
                    .call(call.args.clone())
                    .await
            }
        }
    }

    /// Runs one call and answers it with a `ToolMessage` (an error message per
    /// [`HandleErrors`]; `Err` only when the policy propagates).
    pub async fn answer(&self, call: &ToolCall) -> Result<ToolMessage, ToolError> {
        self.answer_in(call, None).await
    }

    /// [`answer`](Self::answer) from inside a graph node: the call also appears in the run's
    /// event stream (`on_tool_start` / `on_tool_end`, arguments redacted).
    pub async fn answer_in(
        &self,
        call: &ToolCall,
        ctx: Option<&NodeContext>,
    ) -> Result<ToolMessage, ToolError> {
        let (content, is_error) = match self.call_in(call, ctx).await {
            Ok(value) => (into_content(value), false),
            Err(error) => match self.handle_errors.render(&error) {
                Some(text) => (text, true),
                None => return Err(error),
            },
        };
        Ok(ToolMessage {
            tool_call_id: call.id.clone(),
            name: Some(call.name.clone()),
            content,
            is_error,
            ..ToolMessage::default()
        })
    }

    /// Runs one call like [`invoke`](Self::invoke), traced (span `execute_tool`, latency) and,
    /// inside a graph node, shown in the run's event stream (`on_tool_start` /
    /// `on_tool_end`, arguments redacted): for nodes that want the tool's JSON result
    /// rather than a `ToolMessage`.
    pub async fn call_in(
        &self,
        call: &ToolCall,
        ctx: Option<&NodeContext>,
    ) -> Result<Value, ToolError> {
        let span = tool_span(call, &self.registry);
        // A run id only for the event stream: nobody else reads it.
        let run_id = ctx
            .filter(|ctx| ctx.is_streaming(agent_core::StreamMode::Events))
            .map(NodeContext::child_run_id);
        if let (Some(ctx), Some(run_id)) = (ctx, &run_id) {
            let args = match self.registry.get(&call.name) {
                Some(tool) => tool.redact_args(&call.args),
                None => call.args.clone(),
            };
            ctx.emit_event(
                "on_tool_start",
                &call.name,
                Some(run_id),
                serde_json::json!({ "input": args }),
            )
            .await;
        }
        let recorded = span.clone();
        let timed = async {
            let started = Instant::now();
            let result = self.invoke(call).await;
            let latency_ms = started.elapsed().as_secs_f64() * 1000.0;
            match &result {
                Ok(_) => tracing::info!(latency_ms, "tool call finished"),
                Err(error) => tracing::warn!(latency_ms, %error, "tool call failed"),
            }
            result
        }
        .instrument(span);
        // The tool reads its node's context (config, store) with `current_context()`.
        let result = match ctx {
            Some(ctx) => crate::tool_context::with_context(ctx.clone(), timed).await,
            None => timed.await,
        };
        record_outcome(&recorded, &result);
        if let (Some(ctx), Some(run_id)) = (ctx, &run_id) {
            let (output, is_error) = match &result {
                Ok(value) => (content_of(value), false),
                Err(error) => (
                    self.handle_errors
                        .render(error)
                        .unwrap_or_else(|| error.to_string()),
                    true,
                ),
            };
            ctx.emit_event(
                "on_tool_end",
                &call.name,
                Some(run_id),
                serde_json::json!({ "output": output, "is_error": is_error }),
            )
            .await;
        }
        result
    }

    /// Runs `calls` concurrently (at most [`max_concurrency`](Self::max_concurrency) at
    /// once) and answers each, in call order whatever the completion order.
    pub async fn run_calls(&self, calls: &[ToolCall]) -> Result<Vec<ToolMessage>, ToolError> {
        self.run_calls_in(calls, None).await
    }

    /// [`run_calls`](Self::run_calls) from inside a graph node (calls appear in the run's
    /// event stream).
    pub async fn run_calls_in(
        &self,
        calls: &[ToolCall],
        ctx: Option<&NodeContext>,
    ) -> Result<Vec<ToolMessage>, ToolError> {
        // Collected first: a stream over a borrowing closure would not be `Send` (the
        // compiler cannot see the closure is general over the borrow's lifetime).
        let answers: Vec<_> = calls.iter().map(|call| self.answer_in(call, ctx)).collect();
        futures::stream::iter(answers)
            .buffered(self.max_concurrency)
            .try_collect()
            .await
    }

    /// Answers the tool calls of the last AI message of `messages` (none when it has none).
    /// Fails with [`ToolError::NoAiMessage`] when there is no AI message at all.
    pub async fn run(&self, messages: &[Message]) -> Result<Vec<Message>, ToolError> {
        self.run_in(messages, None).await
    }

    /// [`run`](Self::run) from inside a graph node (calls appear in the run's event stream).
    pub async fn run_in(
        &self,
        messages: &[Message],
        ctx: Option<&NodeContext>,
    ) -> Result<Vec<Message>, ToolError> {
        let ai = last_ai_message(messages).ok_or(ToolError::NoAiMessage {
            count: messages.len(),
        })?;
        let answers = self.run_calls_in(&ai.tool_calls, ctx).await?;
        Ok(answers.into_iter().map(Message::Tool).collect())
    }

    /// This node over a state that is not a [`MessagesState`]: `read` finds the conversation,
    /// `write` turns the answers into an update.
    ///
    /// ```
    /// # use agent_core::{GraphState, NodeSpec};
    /// # use agent_llm::Message;
    /// # use agent_tools::{ToolNode, ToolRegistry};
    /// #[derive(GraphState, Clone, Default)]
    /// struct Chat {
    ///     #[reducer(append)]
    ///     history: Vec<Message>,
    /// }
    ///
    /// let node: NodeSpec<Chat> = ToolNode::new(ToolRegistry::builtins())
    ///     .into_node_with(|s: &Chat| &s.history, |answers| ChatUpdate::default().history(answers));
    /// ```
    pub fn into_node_with<S, R, W>(self, read: R, write: W) -> NodeSpec<S>
    where
        S: GraphState,
        R: Fn(&S) -> &[Message] + Send + Sync + 'static,
        W: Fn(Vec<Message>) -> S::Update + Send + Sync + 'static,
    {
        NodeSpec::new(ToolNodeTask {
            shared: Arc::new(Shared {
                node: self,
                read,
                write,
            }),
            _state: PhantomData,
        })
        .named(TOOLS)
    }
}

/// The span of one tool call, per the OpenTelemetry GenAI conventions' execute-tool span:
/// `execute_tool {tool}` with `gen_ai.operation.name`, `gen_ai.tool.name`,
/// `gen_ai.tool.call.id`, `gen_ai.tool.description` and `gen_ai.tool.type`; with content
/// capture on ([`agent_llm::capture_content`]), the arguments (redacted, see
/// [`DynTool::redact_args`]) and the result. Disabled, and nothing formatted, when nobody
/// listens.
fn tool_span(call: &ToolCall, registry: &ToolRegistry) -> tracing::Span {
    let span = tracing::info_span!(
        "execute_tool",
        otel.name = tracing::field::Empty,
        otel.kind = "internal",
        gen_ai.operation.name = "execute_tool",
        gen_ai.tool.name = call.name.as_str(),
        gen_ai.tool.call.id = call.id.as_str(),
        gen_ai.tool.description = tracing::field::Empty,
        gen_ai.tool.type = "function",
        gen_ai.tool.call.arguments = tracing::field::Empty,
        gen_ai.tool.call.result = tracing::field::Empty,
        "error.type" = tracing::field::Empty,
        otel.status_code = tracing::field::Empty,
        otel.status_description = tracing::field::Empty,
    );
    if span.is_disabled() {
        return span;
    }
    span.record("otel.name", format!("execute_tool {}", call.name));
    let tool = registry.get(&call.name);
    if let Some(tool) = tool {
        span.record("gen_ai.tool.description", tool.description());
    }
    if agent_llm::capture_content() {
        let args = match tool {
            Some(tool) => tool.redact_args(&call.args),
            None => call.args.clone(),
        };
        span.record("gen_ai.tool.call.arguments", args.to_string());
    }
    span
}

/// Records how a tool call ended on its span: the result (with content capture on), or the
/// failure's `error.type` and an error status.
fn record_outcome(span: &tracing::Span, result: &Result<Value, ToolError>) {
    if span.is_disabled() {
        return;
    }
    match result {
        Ok(value) => {
            if agent_llm::capture_content() {
                span.record("gen_ai.tool.call.result", content_of(value));
            }
        }
        Err(error) => agent_core::telemetry::record_error(span, error_type(error), error),
    }
}

/// The `error.type` of a failed tool call: `timeout`, `invalid_arguments`, `unknown_tool`,
/// `panic`, `tool_error` (the tool's own failure)...; the last attempt's when retries gave
/// up.
fn error_type(error: &ToolError) -> &'static str {
    match error {
        ToolError::TimedOut { .. } => "timeout",
        ToolError::RetriesExhausted { last, .. } => error_type(last),
        ToolError::InvalidArguments { .. } => "invalid_arguments",
        ToolError::UnknownTool { .. } => "unknown_tool",
        ToolError::Failed { .. } => "tool_error",
        ToolError::Panicked { .. } => "panic",
        ToolError::InvalidOutput { .. } => "invalid_output",
        _ => "_OTHER",
    }
}

/// Marker for [`ToolNode`]'s `IntoNode` impl; callers never name it.
#[doc(hidden)]
pub struct ToolNodeMarker;

impl<C> agent_core::CompatibleContext<C> for ToolNodeMarker {}

impl<S: MessagesState> IntoNode<S, ToolNodeMarker> for ToolNode {
    fn into_node(self) -> NodeSpec<S> {
        self.into_node_with(S::messages, S::messages_update)
    }
}

struct Shared<R, W> {
    node: ToolNode,
    read: R,
    write: W,
}

struct ToolNodeTask<S, R, W> {
    shared: Arc<Shared<R, W>>,
    _state: PhantomData<fn() -> S>,
}

impl<S, R, W> Node<S> for ToolNodeTask<S, R, W>
where
    S: GraphState,
    R: Fn(&S) -> &[Message] + Send + Sync + 'static,
    W: Fn(Vec<Message>) -> S::Update + Send + Sync + 'static,
{
    fn call(
        &self,
        state: Arc<S>,
        ctx: NodeContext,
    ) -> NodeFuture<Result<NodeOutput<S>, NodeError>> {
        let shared = Arc::clone(&self.shared);
        Box::pin(async move {
            let messages = shared
                .node
                .run_in((shared.read)(&state), Some(&ctx))
                .await
                .map_err(|error| NodeError::Failed(Box::new(error)))?;
            if messages.is_empty() {
                // No calls: write nothing rather than an empty list.
                return Ok(NodeOutput::Update(S::Update::default()));
            }
            Ok(NodeOutput::Update((shared.write)(messages)))
        })
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Mutex;
    use std::sync::atomic::{AtomicUsize, Ordering};

    use schemars::JsonSchema;
    use serde::Deserialize;
    use serde_json::json;
    use tokio::time::Instant as TokioInstant;

    use super::*;
    use crate::builtin::{Calculator, Echo};
    use crate::tool::tool_fn;

    #[derive(Deserialize, JsonSchema)]
    struct Wait {
        ms: u64,
    }

    fn call(id: &str, name: &str, args: Value) -> ToolCall {
        ToolCall::new(id, name, args)
    }

    /// A registry with `sleep` (sleeps `ms`, records completions and the most calls in
    /// flight at once), `echo` and `calculator`.
    fn sleepy_registry(done: Arc<Mutex<Vec<u64>>>, peak: Arc<AtomicUsize>) -> ToolRegistry {
        let in_flight = Arc::new(AtomicUsize::new(0));
        let sleep = tool_fn("sleep", "Sleeps.", move |w: Wait| {
            let (done, peak, in_flight) = (done.clone(), peak.clone(), in_flight.clone());
            async move {
                let now = in_flight.fetch_add(1, Ordering::SeqCst) + 1;
                peak.fetch_max(now, Ordering::SeqCst);
                tokio::time::sleep(Duration::from_millis(w.ms)).await;
                in_flight.fetch_sub(1, Ordering::SeqCst);
                done.lock().unwrap().push(w.ms);
                Ok::<_, String>(format!("slept {}ms", w.ms))
            }
        });
        ToolRegistry::new()
            .with_tool(sleep)
            .unwrap()
            .with_tool(Echo)
            .unwrap()
            .with_tool(Calculator)
            .unwrap()
    }

    #[tokio::test(start_paused = true)]
    async fn calls_overlap_and_answers_keep_call_order() {
        let done = Arc::new(Mutex::new(Vec::new()));
        let peak = Arc::new(AtomicUsize::new(0));
        let node = ToolNode::new(sleepy_registry(done.clone(), peak.clone()));
        let calls = [
            call("c1", "sleep", json!({"ms": 300})),
            call("c2", "sleep", json!({"ms": 100})),
            call("c3", "sleep", json!({"ms": 200})),
        ];
        let started = TokioInstant::now();
        let answers = node.run_calls(&calls).await.unwrap();
        // Run one after another they would take 600 ms of (paused, virtual) time.
        assert_eq!(started.elapsed(), Duration::from_millis(300));
        assert_eq!(peak.load(Ordering::SeqCst), 3);
        assert_eq!(*done.lock().unwrap(), [100, 200, 300]);
        let ids: Vec<&str> = answers.iter().map(|m| m.tool_call_id.as_str()).collect();
        assert_eq!(ids, ["c1", "c2", "c3"]);
        let contents: Vec<&str> = answers.iter().map(|m| m.content.as_str()).collect();
        assert_eq!(contents, ["slept 300ms", "slept 100ms", "slept 200ms"]);
        assert!(
            answers
                .iter()
                .all(|m| !m.is_error && m.name.as_deref() == Some("sleep"))
        );
    }

    #[tokio::test]
    async fn calls_of_one_message_meet_at_a_barrier() {
        // Each call waits until the other has started: this only finishes if they overlap.
        let barrier = Arc::new(tokio::sync::Barrier::new(2));
        let meet = tool_fn("meet", "Waits for the other call.", move |w: Wait| {
            let barrier = barrier.clone();
            async move {
                barrier.wait().await;
                Ok::<_, String>(w.ms)
            }
        });
        let node = ToolNode::new(ToolRegistry::new().with_tool(meet).unwrap());
        let calls = [
            call("a", "meet", json!({"ms": 1})),
            call("b", "meet", json!({"ms": 2})),
        ];
        let answers = tokio::time::timeout(Duration::from_secs(10), node.run_calls(&calls))
            .await
            .expect("the two calls never overlapped")
            .unwrap();
        assert_eq!(answers[0].content, "1");
        assert_eq!(answers[1].content, "2");
    }

    #[tokio::test(start_paused = true)]
    async fn max_concurrency_bounds_calls_in_flight() {
        let done = Arc::new(Mutex::new(Vec::new()));
        let peak = Arc::new(AtomicUsize::new(0));
        let node = ToolNode::new(sleepy_registry(done, peak.clone())).max_concurrency(2);
        let calls: Vec<ToolCall> = (0..5)
            .map(|i| call(&format!("c{i}"), "sleep", json!({"ms": 100})))
            .collect();
        let started = TokioInstant::now();
        let answers = node.run_calls(&calls).await.unwrap();
        assert_eq!(answers.len(), 5);
        assert_eq!(peak.load(Ordering::SeqCst), 2);
        assert_eq!(started.elapsed(), Duration::from_millis(300));
    }

    #[tokio::test(start_paused = true)]
    async fn every_kind_of_failure_becomes_an_error_message() {
        #[derive(Deserialize, JsonSchema)]
        struct Nothing {}
        let boom = tool_fn("boom", "Panics.", |_: Nothing| async {
            if true {
                panic!("kaboom");
            }
            Ok::<u8, String>(0)
        });
        let mut registry = sleepy_registry(Default::default(), Default::default());
        registry.register(boom).unwrap();
        let node = ToolNode::new(registry).call_timeout(Duration::from_millis(50));
        let calls = [
            call("ok", "echo", json!({"text": "fine"})),
            call("unknown", "search", json!({"q": "rust"})),
            call("bad_args", "echo", json!({"txt": "typo"})),
            call("tool_error", "calculator", json!({"expression": "1/0"})),
            call("panic", "boom", json!({})),
            call("slow", "sleep", json!({"ms": 1000})),
        ];
        let answers = node.run_calls(&calls).await.unwrap();
        let ids: Vec<&str> = answers.iter().map(|m| m.tool_call_id.as_str()).collect();
        assert_eq!(
            ids,
            ["ok", "unknown", "bad_args", "tool_error", "panic", "slow"]
        );
        assert_eq!(answers[0].content, "fine");
        assert!(!answers[0].is_error);
        let expected = [
            "Error: `search` is not a valid tool; try one of: `sleep`, `echo`, `calculator`",
            "Error: invalid arguments for tool `echo` at `.`: missing field `text`",
            "Error: tool `calculator` failed: cannot evaluate `1/0`: division by zero at position 2",
            "Error: tool `boom` panicked: kaboom",
            "Error: tool `sleep` timed out after 50ms",
        ];
        for (answer, start) in answers[1..].iter().zip(expected) {
            assert!(answer.is_error, "{answer:?}");
            assert!(answer.content.starts_with(start), "{}", answer.content);
            assert!(answer.content.ends_with("\n Please fix your mistakes."));
        }
        assert_eq!(answers[1].name.as_deref(), Some("search"));
    }

    #[tokio::test]
    async fn handle_errors_policies() {
        let calls = [
            call("a", "echo", json!({"text": "ok"})),
            call("b", "calculator", json!({"expression": "2 +"})),
            call("c", "nope", json!({})),
        ];
        let registry = ToolRegistry::builtins();

        let fixed = ToolNode::new(registry.clone())
            .handle_errors(HandleErrors::Message("tool failed".into()));
        let answers = fixed.run_calls(&calls).await.unwrap();
        assert_eq!(answers[1].content, "tool failed");
        assert!(answers[1].is_error && answers[2].is_error && !answers[0].is_error);

        // Only unknown tools are reported; anything else fails the node.
        let selective = ToolNode::new(registry.clone()).handle_errors(HandleErrors::with(|e| {
            matches!(e, ToolError::UnknownTool { .. }).then(|| format!("no such tool: {e}"))
        }));
        let error = selective.run_calls(&calls).await.unwrap_err();
        assert!(
            matches!(error, ToolError::Failed { ref tool, .. } if tool == "calculator"),
            "{error}"
        );
        let answers = selective
            .run_calls(&[calls[0].clone(), calls[2].clone()])
            .await
            .unwrap();
        assert!(answers[1].content.starts_with("no such tool: `nope`"));

        let strict = ToolNode::new(registry).handle_errors(HandleErrors::Propagate);
        let error = strict.run_calls(&calls).await.unwrap_err();
        assert!(
            error.to_string().starts_with("tool `calculator` failed"),
            "{error}"
        );
    }

    #[tokio::test(start_paused = true)]
    async fn node_retries_flaky_tools() {
        let attempts = Arc::new(AtomicUsize::new(0));
        let counter = attempts.clone();
        let flaky = tool_fn("flaky", "Fails once.", move |w: Wait| {
            let n = counter.fetch_add(1, Ordering::SeqCst);
            async move {
                if n == 0 {
                    Err("temporarily unavailable".to_owned())
                } else {
                    Ok(w.ms)
                }
            }
        });
        let node = ToolNode::new(ToolRegistry::new().with_tool(flaky).unwrap())
            .call_retry(ToolRetryPolicy::new().jitter(false));
        let answers = node
            .run_calls(&[call("x", "flaky", json!({"ms": 5}))])
            .await
            .unwrap();
        assert_eq!(answers[0].content, "5");
        assert!(!answers[0].is_error);
        assert_eq!(attempts.load(Ordering::SeqCst), 2);

        // With timeout and retry, each attempt gets the timeout.
        let done = Arc::new(Mutex::new(Vec::new()));
        let node = ToolNode::new(sleepy_registry(done, Default::default()))
            .call_timeout(Duration::from_millis(10))
            .call_retry(ToolRetryPolicy::new().jitter(false).max_attempts(2));
        let answers = node
            .run_calls(&[call("s", "sleep", json!({"ms": 100}))])
            .await
            .unwrap();
        assert!(
            answers[0].content.starts_with(
                "Error: tool `sleep` gave up after 2 attempts: tool `sleep` timed out after 10ms"
            ),
            "{}",
            answers[0].content
        );
    }

    #[tokio::test]
    async fn run_reads_the_last_ai_message() {
        let node = ToolNode::new(ToolRegistry::builtins());
        let error = node.run(&[Message::human("hi")]).await.unwrap_err();
        assert!(
            matches!(error, ToolError::NoAiMessage { count: 1 }),
            "{error}"
        );
        assert!(
            node.run(&[Message::ai("no tools")])
                .await
                .unwrap()
                .is_empty()
        );

        let messages = [
            Message::ai_tool_calls([call("old", "echo", json!({"text": "old"}))]),
            Message::tool("old", "old"),
            Message::ai_tool_calls([call("new", "echo", json!({"text": "new"}))]),
        ];
        let answers = node.run(&messages).await.unwrap();
        assert_eq!(
            answers,
            [Message::Tool(ToolMessage {
                tool_call_id: "new".into(),
                name: Some("echo".into()),
                content: "new".into(),
                ..ToolMessage::default()
            })]
        );
    }
}
