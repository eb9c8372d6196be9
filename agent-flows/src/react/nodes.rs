//! The nodes of seed 004 and its routing functions. Every node runs in a `react_node` span
//! (see [`traced`]); the routing functions are pure, so the guards are unit-tested alone.

use std::collections::BTreeMap;
use std::future::Future;
use std::time::Instant;

use agent_core::{BoxError, Runtime, node};
use agent_llm::{
    CallOptions, Message, ToolCall, ToolChoice, ToolMessage, invoke_in_node, new_message_id,
};
use agent_tools::content_of;
use serde_json::{Value, json};
use tracing::Instrument;

use super::answer::{self, Evidence};
use super::intent::{Intents, analyze};
use super::review::{self, FinalBlock, lower, raise};
use super::rules::{Selection, select};
use super::{
    CallRecord, Mode, ReactContext, ReactState, ReactStateUpdate, StopReason, ToolSelection,
    validate_state,
};
use crate::chat;

/// The system message of llm mode (the seed's `SYSTEM_HINT`): neutral, with a clear output
/// policy.
pub const SYSTEM_HINT: &str = "You are a neutral assistant that can call tools. Call `echo` \
    to repeat text the user asks you to repeat, `calculator` for arithmetic, and `datetime` \
    with an IANA time zone for the time in a place. Call each tool at most once with the same \
    arguments. Once the tool results are in, answer briefly in the user's language using only \
    them; say so honestly when a tool failed. Never reveal keys or personal data.";

/// The task name of llm mode's model call (the offline model's rule).
pub const MODEL_TASK: &str = "react_model";

/// The most tokens one model reply may take unless set (option `max_tokens`).
pub const MODEL_MAX_TOKENS: u32 = 200;

/// How a tool message that answers a call nobody ran starts.
pub const NOT_RUN: &str = "not run: ";

/// Runs a node's body in a `react_node` span (node, mode, step) and logs its duration when
/// it ends. Only names and numbers are logged, never what the user wrote.
pub async fn traced<T>(node: &'static str, state: &ReactState, body: impl Future<Output = T>) -> T {
    let span = tracing::info_span!(
        "react_node",
        node,
        mode = state.mode.as_str(),
        step = state.step,
    );
    let started = Instant::now();
    let out = body.instrument(span.clone()).await;
    let duration_ms = started.elapsed().as_secs_f64() * 1000.0;
    span.in_scope(|| {
        tracing::info!(node, step = state.step, duration_ms, "react node finished");
    });
    out
}

/// Starts the episode: validates the state, resets what one turn gathers, records the mode,
/// language, start time, model and tools, and what the message asks for (`needs`).
#[node]
pub async fn planner(
    state: &ReactState,
    rt: &Runtime<ReactContext>,
) -> Result<ReactStateUpdate, BoxError> {
    traced("planner", state, async {
        validate_state(state)?;
        let context = rt.context();
        let intents = analyze(&state.user_query);
        let started = jiff::Timestamp::from_second(context.clock.unix_seconds())
            .map(|t| t.to_string())
            .unwrap_or_default();
        let tool_names: Vec<&str> = context.tools.registry().names().collect();
        let mut metadata = BTreeMap::from([
            ("mode".to_owned(), json!(state.mode)),
            ("lang".to_owned(), json!(intents.lang)),
            ("started_at".to_owned(), json!(started)),
            ("tools".to_owned(), json!(tool_names)),
        ]);
        if state.mode == Mode::Llm {
            metadata.insert(
                "model".to_owned(),
                json!(format!(
                    "{}:{}",
                    context.model.provider(),
                    context.model.model_name()
                )),
            );
        }
        let needs: Vec<String> = intents.needs().iter().map(|n| n.label()).collect();
        Ok(ReactStateUpdate::default()
            .metadata(metadata)
            .working_memory(BTreeMap::from([("needs".to_owned(), json!(needs))]))
            .artifacts(BTreeMap::new())
            .errors(Vec::new())
            .confidence(0.0)
            .step(0)
            .selected(None::<ToolSelection>)
            .calls(Vec::new())
            .ready_to_answer(false)
            .stop(None::<StopReason>)
            .review(None::<review::Review>)
            .final_block(None::<FinalBlock>))
    })
    .await
}

/// `static` or `llm`: which loop the turn runs.
pub fn route_mode(state: &ReactState) -> &'static str {
    state.mode.as_str()
}

/// Counts a step and decides: act again, or close (nothing left, or a guard: the step limit,
/// the cap on tool calls).
#[node]
pub async fn reasoner(state: &ReactState, rt: &Runtime<ReactContext>) -> ReactStateUpdate {
    traced("reasoner", state, async {
        let context = rt.context();
        let step = state.step + 1;
        let update = ReactStateUpdate::default().step(step);
        if state.ready_to_answer || state.stop.is_some() {
            return update
                .ready_to_answer(true)
                .stop(state.stop.unwrap_or(StopReason::Answered));
        }
        let intents = analyze(&state.user_query);
        let work = select(state, &intents, &context.rules, context.tools.registry());
        if work == Selection::Nothing {
            return update.ready_to_answer(true).stop(StopReason::Answered);
        }
        let guard = if step >= state.max_steps {
            Some((
                StopReason::StepLimit,
                format!(
                    "step limit: step {step} of {} reached with work left",
                    state.max_steps
                ),
            ))
        } else if state.calls.len() >= state.max_tool_calls as usize {
            Some((
                StopReason::ToolCallCap,
                format!(
                    "tool-call cap: {} of {} calls made with work left",
                    state.calls.len(),
                    state.max_tool_calls
                ),
            ))
        } else {
            None
        };
        match guard {
            Some((stop, error)) => update
                .ready_to_answer(true)
                .stop(stop)
                .errors(with(&state.errors, error)),
            None => update,
        }
    })
    .await
}

/// `close` once the reasoner is done, `act` otherwise.
pub fn route_after_reasoner(state: &ReactState) -> &'static str {
    if state.ready_to_answer {
        "close"
    } else {
        "act"
    }
}

/// Picks the next tool: `echo` on the first pass, then the rules; stops a repeated call.
#[node]
pub async fn tool_selector(state: &ReactState, rt: &Runtime<ReactContext>) -> ReactStateUpdate {
    traced("tool_selector", state, async {
        let context = rt.context();
        let intents = analyze(&state.user_query);
        match select(state, &intents, &context.rules, context.tools.registry()) {
            Selection::Call { proposal, origin } => {
                ReactStateUpdate::default().selected(Some(ToolSelection {
                    tool: proposal.tool,
                    args: proposal.args,
                    origin,
                }))
            }
            Selection::Repeated { proposal, origin } => ReactStateUpdate::default()
                .selected(None::<ToolSelection>)
                .ready_to_answer(true)
                .stop(StopReason::RepeatedCall)
                .errors(with(
                    &state.errors,
                    format!(
                        "repeated call stopped: {origin} asked again for {} {}",
                        proposal.tool, proposal.args
                    ),
                )),
            Selection::Nothing => ReactStateUpdate::default()
                .selected(None::<ToolSelection>)
                .ready_to_answer(true)
                .stop(StopReason::Answered),
        }
    })
    .await
}

/// `execute` when a tool was selected, `reason` otherwise.
pub fn route_after_selector(state: &ReactState) -> &'static str {
    if state.selected.is_some() {
        "execute"
    } else {
        "reason"
    }
}

/// Runs the selected tool, records its result as evidence (or its error), and clears the
/// selection. The chat gets the call as an AI message and its result as a tool message.
#[node]
pub async fn tool_executor(state: &ReactState, rt: &Runtime<ReactContext>) -> ReactStateUpdate {
    traced("tool_executor", state, async {
        let Some(selection) = &state.selected else {
            return ReactStateUpdate::default();
        };
        let key = format!("{}_{}", selection.tool, state.calls.len() + 1);
        let call = ToolCall::new(
            chat::call_id(),
            selection.tool.clone(),
            selection.args.clone(),
        );
        let outcome = rt
            .context()
            .tools
            .call_in(&call, Some(rt.node_context()))
            .await
            .map_err(|e| e.to_string());
        let exchange = vec![
            chat::tool_call_message(vec![call.clone()]),
            chat::tool_result(
                &call,
                outcome.as_ref().map(content_of).map_err(Clone::clone),
            ),
        ];
        let evidence = Evidence {
            key: key.clone(),
            tool: selection.tool.clone(),
            args: selection.args.clone(),
            outcome,
            origin: selection.origin.clone(),
            step: state.step,
        };
        let mut calls = state.calls.clone();
        calls.push(CallRecord {
            key,
            tool: call.name,
            args: call.args,
            call_id: call.id,
            step: state.step,
            origin: selection.origin.clone(),
        });
        record(state, &[evidence])
            .calls(calls)
            .messages(exchange)
            .selected(None::<ToolSelection>)
    })
    .await
}

/// The update that records `evidence`: artifacts, working memory, errors, confidence.
fn record(state: &ReactState, evidence: &[Evidence]) -> ReactStateUpdate {
    let mut artifacts = state.artifacts.clone();
    let mut memory = state.working_memory.clone();
    let mut errors = state.errors.clone();
    let mut confidence = state.confidence;
    for e in evidence {
        artifacts.insert(e.key.clone(), e.to_artifact());
        match &e.outcome {
            Ok(output) => {
                memory.insert(e.key.clone(), output.clone());
                confidence = raise(confidence);
            }
            Err(error) => {
                let error = answer::clean_error(error);
                memory.insert(e.key.clone(), json!({ "error": error }));
                errors.push(format!("{}: {error}", e.key));
                confidence = lower(confidence);
            }
        }
    }
    ReactStateUpdate::default()
        .artifacts(artifacts)
        .working_memory(memory)
        .errors(errors)
        .confidence(confidence)
}

fn with(errors: &[String], error: String) -> Vec<String> {
    let mut errors = errors.to_vec();
    errors.push(error);
    errors
}

/// The messages of this turn: those after the last human message.
pub fn episode(messages: &[Message]) -> &[Message] {
    match messages.iter().rposition(|m| m.kind() == "human") {
        Some(at) => &messages[at + 1..],
        None => messages,
    }
}

/// The calls of the turn's last message when it is an AI message asking for tools (so not
/// answered yet).
pub fn pending_calls(messages: &[Message]) -> &[ToolCall] {
    match episode(messages).last() {
        Some(Message::Ai(ai)) => &ai.tool_calls,
        _ => &[],
    }
}

/// Calls the model: the turn starts with System + Human (the seed's) — the system hint opens
/// every call (unless the conversation has a system message of its own) without being
/// stored, and the user's message is in the conversation from the turn's input (an input
/// built without it gets the seed's Human from `user_query`); tool messages are kept; the
/// step is counted. With no tool round or step left, the model is asked to answer
/// (`tool_choice: none`). Its reply streams, and is kept under the id it streamed with.
#[node]
pub async fn model(
    state: &ReactState,
    rt: &Runtime<ReactContext>,
) -> Result<ReactStateUpdate, BoxError> {
    traced("model", state, async {
        let context = rt.context();
        let mut new = Vec::new();
        if state.step == 0 && !matches!(state.messages.last(), Some(Message::Human(_))) {
            new.push(chat::with_id(Message::human(state.user_query.clone())));
        }
        let mut conversation = Vec::with_capacity(state.messages.len() + new.len() + 1);
        if !state.messages.iter().any(|m| m.kind() == "system") {
            conversation.push(Message::system(context.system_hint.clone()));
        }
        conversation.extend(state.messages.iter().cloned());
        conversation.extend(new.iter().cloned());
        // Tools asked for now run only with a round and a later step left for their results.
        let can_act =
            tool_rounds(state) < state.max_tool_rounds as usize && state.step + 1 < state.max_steps;
        let mut options = CallOptions::new()
            .task(MODEL_TASK)
            .max_tokens(context.max_tokens)
            .tools(context.tools.registry().specs());
        options.tool_choice = if can_act {
            context.tool_choice.clone()
        } else {
            Some(ToolChoice::None)
        };
        let reply = invoke_in_node(&*context.model, &conversation, &options, rt).await?;
        let mut message = reply.message;
        message.content = message.content.trim().to_owned();
        new.push(Message::Ai(message));
        Ok(ReactStateUpdate::default()
            .messages(new)
            .step(state.step + 1))
    })
    .await
}

/// Where llm mode goes after the model.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LlmNext {
    /// Run the calls the model asked for.
    Tools,
    /// Run the deterministic echo fallback.
    Fallback,
    /// Close the loop, for this reason.
    Close(StopReason),
}

/// The seed's `model_router` with the guards, in order: close once the allowed tool rounds are
/// answered (the seed: one) or the steps run out; the fallback when the prompt asks for `echo`
/// and it is on; then `tools_condition` — no calls closes; calls that would pass the cap on
/// tool calls, or repeat one already made (or each other), close; otherwise the tools.
pub fn llm_next(state: &ReactState) -> LlmNext {
    let pending = pending_calls(&state.messages);
    let pending_or = |reason: StopReason| {
        if pending.is_empty() {
            StopReason::Answered
        } else {
            reason
        }
    };
    let rounds = tool_rounds(state);
    if rounds > 0 && rounds >= state.max_tool_rounds as usize {
        return LlmNext::Close(pending_or(StopReason::ToolRounds));
    }
    if state.step >= state.max_steps {
        return LlmNext::Close(pending_or(StopReason::StepLimit));
    }
    if state.llm_fallback && analyze(&state.user_query).asks_echo() {
        return LlmNext::Fallback;
    }
    if pending.is_empty() {
        return LlmNext::Close(StopReason::Answered);
    }
    if state.calls.len() + pending.len() > state.max_tool_calls as usize {
        return LlmNext::Close(StopReason::ToolCallCap);
    }
    let repeated = pending.iter().enumerate().any(|(i, call)| {
        state.calls.iter().any(|c| c.is(&call.name, &call.args))
            || pending[..i]
                .iter()
                .any(|other| other.name == call.name && other.args == call.args)
    });
    if repeated {
        return LlmNext::Close(StopReason::RepeatedCall);
    }
    LlmNext::Tools
}

/// How many rounds of the model's tool calls ran this turn.
pub fn tool_rounds(state: &ReactState) -> usize {
    let mut rounds: Vec<u32> = state
        .calls
        .iter()
        .filter(|c| c.origin == "model")
        .map(|c| c.step)
        .collect();
    rounds.dedup();
    rounds.len()
}

/// `tools`, `fallback` or `close` (see [`llm_next`]).
pub fn model_router(state: &ReactState) -> &'static str {
    match llm_next(state) {
        LlmNext::Tools => "tools",
        LlmNext::Fallback => "fallback",
        LlmNext::Close(_) => "close",
    }
}

/// Records the calls of the last AI message under their evidence keys (`<tool>_<n>`).
fn records(state: &ReactState, calls: &[ToolCall], origin: &str) -> Vec<CallRecord> {
    let mut records = state.calls.clone();
    for call in calls {
        let n = records.len() + 1;
        records.push(CallRecord {
            key: format!("{}_{n}", call.name),
            tool: call.name.clone(),
            args: call.args.clone(),
            call_id: call.id.clone(),
            step: state.step,
            origin: origin.to_owned(),
        });
    }
    records
}

/// Runs the model's calls through the context's `ToolNode` (concurrently; a failing call
/// becomes an error message the model reads) and records them for the guards.
#[node]
pub async fn tools(
    state: &ReactState,
    rt: &Runtime<ReactContext>,
) -> Result<ReactStateUpdate, BoxError> {
    traced("tools", state, async {
        let pending = pending_calls(&state.messages);
        let answers: Vec<Message> = rt
            .context()
            .tools
            .run_in(&state.messages, Some(rt.node_context()))
            .await?
            .into_iter()
            .map(chat::with_id)
            .collect();
        Ok(ReactStateUpdate::default()
            .calls(records(state, pending, "model"))
            .messages(answers))
    })
    .await
}

/// A tool message for a call that did not run.
fn not_run(call: &ToolCall, why: &str) -> Message {
    Message::Tool(ToolMessage {
        id: Some(new_message_id()),
        tool_call_id: call.id.clone(),
        name: Some(call.name.clone()),
        content: format!("{NOT_RUN}{why}"),
        is_error: true,
        ..ToolMessage::default()
    })
}

/// Runs `echo` on the text the prompt asks to echo, deterministically, once; answers the
/// model's own calls as not run; marks the turn ready to answer.
#[node]
pub async fn fallback(
    state: &ReactState,
    rt: &Runtime<ReactContext>,
) -> Result<ReactStateUpdate, BoxError> {
    traced("fallback", state, async {
        let text = analyze(&state.user_query).echo.unwrap_or_default();
        let mut new: Vec<Message> = pending_calls(&state.messages)
            .iter()
            .map(|call| {
                not_run(
                    call,
                    "the deterministic echo fallback (LLM_FALLBACK=1) answered this turn",
                )
            })
            .collect();
        let call = ToolCall::new(chat::call_id(), "echo", json!({ "text": text }));
        let answer = rt
            .context()
            .tools
            .answer_in(&call, Some(rt.node_context()))
            .await?;
        let calls = records(state, std::slice::from_ref(&call), "fallback");
        new.push(chat::tool_call_message(vec![call]));
        new.push(chat::with_id(Message::Tool(answer)));
        Ok(ReactStateUpdate::default()
            .messages(new)
            .calls(calls)
            .ready_to_answer(true)
            .stop(StopReason::Fallback))
    })
    .await
}

/// Copies the turn's tool results into `artifacts` and `working_memory` (and the model's final
/// text as `answer`), raises the confidence per result, records errors and the guard that
/// closed the loop, answers calls left pending, and marks the turn ready.
#[node]
pub async fn sync(state: &ReactState) -> ReactStateUpdate {
    traced("sync", state, async {
        let stop = state.stop.unwrap_or(match llm_next(state) {
            LlmNext::Close(reason) => reason,
            LlmNext::Tools | LlmNext::Fallback => StopReason::Answered,
        });
        let mut new = Vec::new();
        let mut errors_extra = Vec::new();
        if stop.is_guard() {
            let why = guard_message(state, stop);
            for call in pending_calls(&state.messages) {
                new.push(not_run(call, &why));
            }
            errors_extra.push(why);
        }
        let evidence = tool_evidence(state);
        let mut update = record(state, &evidence);
        if let Some(errors) = update.errors.as_mut() {
            errors.extend(errors_extra);
        }
        if let Some(Message::Ai(ai)) = episode(&state.messages).last()
            && ai.tool_calls.is_empty()
            && !ai.content.trim().is_empty()
            && let Some(memory) = update.working_memory.as_mut()
        {
            memory.insert("answer".to_owned(), json!(ai.content.trim()));
        }
        if !new.is_empty() {
            update = update.messages(new);
        }
        update.ready_to_answer(true).stop(stop)
    })
    .await
}

/// What a guard stop means, for `errors` and for the calls it left unanswered.
fn guard_message(state: &ReactState, stop: StopReason) -> String {
    let pending = pending_calls(&state.messages);
    let asked: Vec<String> = pending
        .iter()
        .map(|c| format!("{} {}", c.name, c.args))
        .collect();
    match stop {
        StopReason::StepLimit => format!(
            "step limit: step {} of {} reached with {} call(s) pending",
            state.step,
            state.max_steps,
            pending.len()
        ),
        StopReason::ToolCallCap => format!(
            "tool-call cap: {} call(s) asked with {} of {} made",
            pending.len(),
            state.calls.len(),
            state.max_tool_calls
        ),
        StopReason::RepeatedCall => format!(
            "repeated call stopped: the model asked again for {}",
            asked.join(", ")
        ),
        StopReason::ToolRounds => format!(
            "tool rounds: the model asked for more tools after {} round(s)",
            state.max_tool_rounds
        ),
        StopReason::Answered | StopReason::Fallback => String::new(),
    }
}

/// The turn's tool results (tool messages of calls that ran), as evidence.
fn tool_evidence(state: &ReactState) -> Vec<Evidence> {
    let episode = episode(&state.messages);
    let mut out = Vec::new();
    for message in episode {
        let Message::Tool(tool) = message else {
            continue;
        };
        if tool.is_error && tool.content.starts_with(NOT_RUN) {
            continue;
        }
        let record = state
            .calls
            .iter()
            .rev()
            .find(|c| c.call_id == tool.tool_call_id);
        let (key, name, args, origin, step) = match record {
            Some(r) => (
                r.key.clone(),
                r.tool.clone(),
                r.args.clone(),
                r.origin.clone(),
                r.step,
            ),
            None => {
                let name = tool.name.clone().unwrap_or_else(|| "tool".to_owned());
                (
                    format!("{name}_{}", state.calls.len() + out.len() + 1),
                    name,
                    Value::Null,
                    "model".to_owned(),
                    state.step,
                )
            }
        };
        let outcome = if tool.is_error {
            Err(tool.content.clone())
        } else {
            Ok(serde_json::from_str(&tool.content).unwrap_or_else(|_| json!(tool.content)))
        };
        out.push(Evidence {
            key,
            tool: name,
            args,
            outcome,
            origin,
            step,
        });
    }
    out
}

/// Reviews the evidence: which requests it covers, what failed, and the confidence. Static
/// mode holds it against what the rules read in the message; llm mode against the calls the
/// model made (see [`review`]).
#[node]
pub async fn critic(state: &ReactState) -> ReactStateUpdate {
    traced("critic", state, async {
        let intents = analyze(&state.user_query);
        let review = match state.mode {
            Mode::Static => review::review(state, &intents),
            Mode::Llm => review::review_run(state, &intents),
        };
        ReactStateUpdate::default()
            .confidence(review.confidence)
            .review(Some(review))
    })
    .await
}

/// Writes the final block — summary, evidence keys, confidence — and the summary as the
/// chat's answer: always in static mode, in llm mode when the model did not end with it.
#[node]
pub async fn finalizer(state: &ReactState) -> ReactStateUpdate {
    traced("finalizer", state, async {
        let intents: Intents = analyze(&state.user_query);
        let evidence = Evidence::from_artifacts(&state.artifacts);
        let missing: Vec<_> = intents
            .needs()
            .into_iter()
            .filter(|need| !evidence.iter().any(|e| e.meets(need)))
            .collect();
        let summary = answer::summary(state, &intents, &missing);
        let (evidence_keys, verdict) = match &state.review {
            Some(review) => (review.evidence_keys.clone(), review.verdict),
            None => (
                evidence
                    .iter()
                    .filter(|e| e.is_ok())
                    .map(|e| e.key.clone())
                    .collect(),
                review::Verdict::Unsupported,
            ),
        };
        let block = FinalBlock {
            summary: summary.clone(),
            evidence_keys,
            confidence: state.confidence,
            stop: state.stop.unwrap_or(StopReason::Answered),
            verdict,
        };
        let ended_with_it = state.mode == Mode::Llm
            && matches!(
                episode(&state.messages).last(),
                Some(Message::Ai(ai)) if ai.tool_calls.is_empty() && ai.content.trim() == summary
            );
        let update = ReactStateUpdate::default().final_block(Some(block));
        if ended_with_it {
            update
        } else {
            update.messages(vec![chat::answer(summary)])
        }
    })
    .await
}

#[cfg(test)]
mod tests {
    use super::*;

    fn call(id: &str, name: &str, args: Value) -> ToolCall {
        ToolCall::new(id, name, args)
    }

    fn llm_state(query: &str, messages: Vec<Message>) -> ReactState {
        ReactState {
            user_query: query.into(),
            mode: Mode::Llm,
            step: 1,
            messages,
            ..ReactState::default()
        }
    }

    fn made(state: &mut ReactState, calls: &[ToolCall]) {
        state.calls = records(state, calls, "model");
    }

    #[test]
    fn model_router_follows_the_seed_then_the_guards() {
        let q = "echo hi";
        let ask = |calls: Vec<ToolCall>| vec![Message::human(q), Message::ai_tool_calls(calls)];
        // A text answer closes.
        let s = llm_state(q, vec![Message::human(q), Message::ai("hi")]);
        assert_eq!(llm_next(&s), LlmNext::Close(StopReason::Answered));
        // Calls go to the tools.
        let s = llm_state(q, ask(vec![call("a", "echo", json!({"text": "hi"}))]));
        assert_eq!(llm_next(&s), LlmNext::Tools);
        assert_eq!(model_router(&s), "tools");
        // With the fallback on and an echo asked, the fallback wins over the model's calls.
        let mut f = s.clone();
        f.llm_fallback = true;
        assert_eq!(llm_next(&f), LlmNext::Fallback);
        f.user_query = "what is 2+2?".into();
        assert_eq!(llm_next(&f), LlmNext::Tools, "no echo asked: no fallback");
        // Steps run out: close, the calls pending.
        let mut s2 = s.clone();
        s2.max_steps = 1;
        assert_eq!(llm_next(&s2), LlmNext::Close(StopReason::StepLimit));
        // One tool round answered: close (the seed), whatever the model asks next.
        let mut s3 = llm_state(
            q,
            vec![
                Message::human(q),
                Message::ai_tool_calls([call("a", "echo", json!({"text": "hi"}))]),
                Message::tool("a", "hi"),
                Message::ai_tool_calls([call("b", "echo", json!({"text": "again"}))]),
            ],
        );
        made(&mut s3, &[call("a", "echo", json!({"text": "hi"}))]);
        s3.step = 2;
        assert_eq!(llm_next(&s3), LlmNext::Close(StopReason::ToolRounds));
        s3.max_tool_rounds = 3;
        assert_eq!(llm_next(&s3), LlmNext::Tools);
        // A repeated call closes.
        s3.messages.push(Message::tool("b", "again"));
        s3.messages.push(Message::ai_tool_calls([call(
            "c",
            "echo",
            json!({"text": "hi"}),
        )]));
        assert_eq!(llm_next(&s3), LlmNext::Close(StopReason::RepeatedCall));
    }

    #[test]
    fn the_cap_on_tool_calls_and_duplicates_in_one_reply() {
        let q = "time in Tokyo, London, Paris and Sydney";
        let zones = [
            "Asia/Tokyo",
            "Europe/London",
            "Europe/Paris",
            "Australia/Sydney",
        ];
        let calls: Vec<ToolCall> = zones
            .iter()
            .enumerate()
            .map(|(i, z)| call(&format!("c{i}"), "datetime", json!({"timezone": z})))
            .collect();
        let mut s = llm_state(
            q,
            vec![Message::human(q), Message::ai_tool_calls(calls.clone())],
        );
        s.max_tool_calls = 3;
        assert_eq!(llm_next(&s), LlmNext::Close(StopReason::ToolCallCap));
        s.max_tool_calls = 4;
        assert_eq!(llm_next(&s), LlmNext::Tools);
        let twice = vec![
            calls[0].clone(),
            call("x", "datetime", json!({"timezone": "Asia/Tokyo"})),
        ];
        let s = llm_state(q, vec![Message::human(q), Message::ai_tool_calls(twice)]);
        assert_eq!(llm_next(&s), LlmNext::Close(StopReason::RepeatedCall));
    }

    #[test]
    fn the_episode_starts_after_the_last_human_message() {
        let messages = vec![
            Message::system("s"),
            Message::human("one"),
            Message::ai_tool_calls([call("a", "echo", json!({"text": "x"}))]),
            Message::tool("a", "x"),
            Message::ai("done"),
            Message::human("two"),
            Message::ai_tool_calls([call("b", "echo", json!({"text": "y"}))]),
        ];
        assert_eq!(episode(&messages).len(), 1);
        assert_eq!(pending_calls(&messages)[0].id, "b");
        assert!(pending_calls(&messages[..5]).is_empty());
    }

    #[test]
    fn routes_of_the_static_loop() {
        let mut s = ReactState::default();
        assert_eq!(route_mode(&s), "static");
        assert_eq!(route_after_reasoner(&s), "act");
        assert_eq!(route_after_selector(&s), "reason");
        s.ready_to_answer = true;
        s.selected = Some(ToolSelection {
            tool: "echo".into(),
            args: json!({}),
            origin: "forced".into(),
        });
        assert_eq!(route_after_reasoner(&s), "close");
        assert_eq!(route_after_selector(&s), "execute");
        s.mode = Mode::Llm;
        assert_eq!(route_mode(&s), "llm");
    }
}
