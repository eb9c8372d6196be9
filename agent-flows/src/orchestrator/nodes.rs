//! The seven nodes of seed 002 and its three routing functions, with the prompts the model
//! nodes send.

use std::collections::BTreeMap;
use std::time::UNIX_EPOCH;

use agent_core::{BoxError, NodeContext, Runtime, StreamMode, node};
use agent_llm::{
    AiMessage, CallOptions, ChatModel, HumanMessage, LlmError, Message, ToolCall, ToolMessage,
    TrimMessages, Usage, count_tokens_approximately, invoke_in_node, new_message_id,
};
use agent_tools::{ToolError, ToolRegistry, content_of};
use serde_json::{Value, json};

use super::memory::{self, MAX_SUMMARY_CHARS};
use super::offline::answer::{RESULTS_BLOCK, VERIFICATION_BLOCK};
use super::offline::planner::SUMMARY_BLOCK;
use super::offline::sql;
use super::redact::redact_text;
use super::relevance::{self, Judged};
use super::safety::{self, Category, SafetyCheck};
use super::tools::{FailureKind, classify, is_empty_result};
use super::{
    MAX_CALLS, NextStep, OrchestratorContext, OrchestratorState, OrchestratorStateUpdate, Phase,
    Planner, RoutedCall, Status, ToolFailure, ToolRecord, UserContext, Verdict, schema, verify,
};
use crate::chat;
use crate::lang::{self, Lang, words};

/// What the planner is told.
pub(crate) const PLANNER_PROMPT: &str = "You plan the next step of a data assistant for US \
    macroeconomic data (quarterly, 1959Q1-2009Q3). Read the conversation and decide: if the \
    user's last message needs data, a definition, a calculation or the time, call the tools \
    that answer it (independent calls at once); if it needs no tool (a greeting, thanks, a \
    question about the conversation), reply in one short sentence without calling any tool. \
    Numbers come from sql_query (one SELECT on the table macrodata, values in params); \
    explanations from doc_search. If a tool call of this turn came back empty or failed, try \
    something different: other words, another tool, a corrected query. Never repeat a call \
    that failed.";

/// What the generator is told.
pub(crate) const GENERATOR_PROMPT: &str = "You are a data assistant for US macroeconomic \
    data (1959Q1-2009Q3). Answer the user's last message briefly, in the answer language, \
    using only the tool results below; give numbers with their units and periods. If the \
    verification says clarify, ask the user what they want instead; if it says give_up or a \
    result is missing, say honestly what could not be found. Never invent numbers.";

/// Tool messages longer than this are cut in what the models see (the state keeps them
/// whole).
const MAX_TOOL_CONTENT: usize = 1500;

/// Rows of a query result shown to the generator.
const MAX_ROWS_SHOWN: usize = 40;

/// The language to answer `text` in: the one it is written in (a SQL statement in it does
/// not count: its keywords are English), else the user's preferred one when the text shows
/// none (digits, a name), else English.
pub fn answer_language(text: &str, preferred: Option<Lang>) -> Lang {
    let prose = match sql::written_statement(text) {
        Some(statement) => text.replace(&statement, " "),
        None => text.to_owned(),
    };
    let detected = lang::detect(&prose);
    if detected != Lang::En {
        return detected;
    }
    let words = words(&prose);
    const SPANISH: &[&str] = &[
        "ejecuta",
        "ejecutar",
        "muestra",
        "muestrame",
        "dime",
        "dame",
        "calcula",
        "busca",
        "explica",
        "lanza",
        "consulta",
    ];
    if words.iter().any(|w| SPANISH.contains(&w.as_str())) {
        return Lang::Es;
    }
    const ENGLISH: &[&str] = &[
        "the", "what", "was", "is", "are", "how", "in", "of", "and", "which", "when", "did",
        "does", "do", "me", "show", "tell", "give", "hello", "hi", "thanks", "please", "run",
        "who", "why", "where", "much", "many", "my", "i", "you", "it", "execute",
    ];
    if words.iter().any(|w| ENGLISH.contains(&w.as_str())) {
        Lang::En
    } else {
        preferred.unwrap_or(Lang::En)
    }
}

/// A refusal in `lang` for `check`.
pub fn refusal(lang: Lang, check: &SafetyCheck) -> String {
    let why = check
        .findings
        .first()
        .map(|f| f.evidence.clone())
        .unwrap_or_default();
    let self_harm = check.findings.iter().any(|f| f.rule == "self_harm");
    if self_harm {
        return lang
            .pick(
                "I can't help with that. If you are thinking about hurting yourself, please reach out now to someone you trust or to your local emergency number or a crisis line; you don't have to face this alone.",
                "No puedo ayudar con eso. Si estás pensando en hacerte daño, habla ahora con alguien de confianza o llama al número de emergencias o a una línea de crisis de tu país; no tienes que pasar por esto solo.",
                "Я не могу с этим помочь. Если вы думаете о том, чтобы причинить себе вред, пожалуйста, прямо сейчас обратитесь к близкому человеку, в экстренную службу или на линию психологической помощи; вы не обязаны справляться с этим в одиночку.",
            )
            .to_owned();
    }
    match (check.category, lang) {
        (Category::InvalidInput, Lang::En) => format!("I can't read that message: {why}. Please send plain text."),
        (Category::InvalidInput, Lang::Es) => format!("No puedo leer ese mensaje: {why}. Envía texto sin más."),
        (Category::InvalidInput, Lang::Ru) => format!("Не могу прочитать это сообщение: {why}. Пришлите обычный текст."),
        (Category::PromptInjection, Lang::En) => "I can't do that: the message tries to change or reveal my instructions. Ask me about the US macro data instead.".to_owned(),
        (Category::PromptInjection, Lang::Es) => "No puedo hacer eso: el mensaje intenta cambiar o revelar mis instrucciones. Pregúntame sobre los datos macroeconómicos de EE. UU.".to_owned(),
        (Category::PromptInjection, Lang::Ru) => "Я не могу этого сделать: сообщение пытается изменить или раскрыть мои инструкции. Спросите меня о макроэкономических данных США.".to_owned(),
        (_, Lang::En) => "I can't help with that request. I can answer questions about US macroeconomic data.".to_owned(),
        (_, Lang::Es) => "No puedo ayudar con esa petición. Puedo responder preguntas sobre datos macroeconómicos de EE. UU.".to_owned(),
        (_, Lang::Ru) => "Я не могу помочь с этим запросом. Я отвечаю на вопросы о макроэкономических данных США.".to_owned(),
    }
}

/// Validates and screens the message, loads the user's profile, starts the turn.
#[node]
pub async fn ingress(
    state: &OrchestratorState,
    rt: &Runtime<OrchestratorContext>,
) -> Result<OrchestratorStateUpdate, BoxError> {
    let context = rt.context();
    let human = state
        .messages
        .iter()
        .rev()
        .find_map(|m| match m {
            Message::Human(h) => Some(h.clone()),
            _ => None,
        })
        .ok_or("ingress needs a user message: the conversation has none; send one as input")?;
    // A pinned user (a served run's) wins over the state's, which an input may set.
    let user_id = match context.user.as_deref().map(str::trim) {
        Some(user) if !user.is_empty() => user.to_owned(),
        _ if state.user_id.trim().is_empty() => super::profiles::DEFAULT_USER.to_owned(),
        _ => state.user_id.trim().to_owned(),
    };
    let user_context = context.profiles.context_for(&user_id)?;
    let session_id = if state.session_id.is_empty() {
        rt.config()
            .thread_id
            .clone()
            .unwrap_or_else(|| rt.run_id().to_owned())
    } else {
        state.session_id.clone()
    };
    let start_time = context
        .clock
        .now()
        .duration_since(UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64());
    let check = match safety::validate(&human.content, context.settings.max_input_chars) {
        Err(finding) => safety::verdict(vec![finding]),
        Ok(()) => safety::check(&human.content),
    };
    let mut update = OrchestratorStateUpdate::default()
        .session_id(session_id)
        .start_time(start_time)
        .turn(state.turn + 1);
    // Long-term memory: the profile kept per user, and a new thread starting from the
    // summary the user's last thread left.
    if let Some(store) = rt.store() {
        super::long_term::keep_profile(&*store, &user_id, &user_context).await?;
        if state.summary.is_empty()
            && let Some(summary) = super::long_term::summary(&*store, &user_id).await?
        {
            update = update.summary(summary);
        }
    }
    update = update.user_id(user_id);
    if check.safe {
        return Ok(update
            .user_context(user_context)
            .safety_check(check)
            .phase(Phase::Ingress));
    }
    let language = if check.category == Category::InvalidInput {
        user_context.preferences.language.unwrap_or(Lang::En)
    } else {
        answer_language(&human.content, user_context.preferences.language)
    };
    let answer = refusal(language, &check);
    let category = serde_json::to_value(check.category)?;
    // The message stays out of the history: same id, placeholder text.
    let withheld = Message::Human(HumanMessage {
        content: format!(
            "[message withheld by the safety policy: {}]",
            category.as_str().unwrap_or("unsafe")
        ),
        content_blocks: None,
        ..human
    });
    update = update
        .user_context(user_context)
        .messages(vec![withheld, chat::answer(answer.clone())])
        .response(answer)
        .safety_check(check)
        .phase(Phase::Refused);
    Ok(update)
}

/// `plan` for a safe message, `refuse` otherwise.
pub fn route_after_ingress(state: &OrchestratorState) -> &'static str {
    if state.safety_check.safe {
        "plan"
    } else {
        "refuse"
    }
}

/// The profile lines of a prompt.
fn profile_lines(state: &OrchestratorState, language: Lang) -> String {
    let user = &state.user_context;
    let mut lines = vec![
        format!("User: {} (role {})", user.display_name, user.role),
        format!("Allowed tools: {}", user.permissions.join(", ")),
        format!("Answer language: {language}"),
    ];
    if let Some(zone) = &user.preferences.timezone {
        lines.push(format!("Time zone: {zone}"));
    }
    let detail = serde_json::to_value(user.preferences.detail)
        .ok()
        .and_then(|v| v.as_str().map(str::to_owned))
        .unwrap_or_else(|| "brief".to_owned());
    lines.push(format!("Detail: {detail}"));
    lines.join("\n")
}

/// The latest human message's text.
fn question(state: &OrchestratorState) -> &str {
    state
        .messages
        .iter()
        .rev()
        .find(|m| m.kind() == "human")
        .map(Message::content)
        .unwrap_or("")
}

/// A message as the models see it: tool results cut at [`MAX_TOOL_CONTENT`].
fn for_model(message: &Message) -> Message {
    match message {
        Message::Tool(tool) if tool.content.chars().count() > MAX_TOOL_CONTENT => {
            let cut: String = tool.content.chars().take(MAX_TOOL_CONTENT).collect();
            Message::Tool(ToolMessage {
                content: format!("{cut}… [cut]"),
                ..tool.clone()
            })
        }
        other => other.clone(),
    }
}

/// The conversation the models see within `budget` tokens: this turn whole (its tool
/// results cut), and the latest earlier turns that fit beside it, starting on a human
/// message. `text_only` leaves tool calls and results out (the generator gets them as a
/// results block).
fn window(messages: &[Message], budget: usize, text_only: bool) -> Vec<Message> {
    let keep = |m: &&Message| {
        !matches!(m, Message::Remove(_))
            && (!text_only
                || matches!(m, Message::Human(_))
                || matches!(m, Message::Ai(ai) if ai.tool_calls.is_empty()))
    };
    let start = messages
        .iter()
        .rposition(|m| m.kind() == "human")
        .unwrap_or(0);
    let current: Vec<Message> = messages[start..]
        .iter()
        .filter(keep)
        .map(for_model)
        .collect();
    let earlier: Vec<Message> = messages[..start]
        .iter()
        .filter(keep)
        .map(for_model)
        .collect();
    let left = budget.saturating_sub(count_tokens_approximately(&current));
    let mut out = TrimMessages::last(left).start_on(["human"]).trim(&earlier);
    out.extend(current);
    out
}

/// `on_chat_model_start` for a call that is not streamed; the call's run id.
async fn model_start(ctx: &NodeContext, name: &str, messages: &[Message]) -> String {
    let run_id = ctx.child_run_id();
    if ctx.is_streaming(StreamMode::Events) {
        ctx.emit_event(
            "on_chat_model_start",
            name,
            Some(&run_id),
            json!({ "input": { "messages": messages } }),
        )
        .await;
    }
    run_id
}

/// `on_chat_model_end` and the run's usage counters for a call that was not streamed.
async fn model_end(ctx: &NodeContext, name: &str, run_id: &str, message: &AiMessage, usage: Usage) {
    ctx.add_usage("input_tokens", usage.input_tokens);
    ctx.add_usage("output_tokens", usage.output_tokens);
    if ctx.is_streaming(StreamMode::Events) {
        ctx.emit_event(
            "on_chat_model_end",
            name,
            Some(run_id),
            json!({ "output": message }),
        )
        .await;
    }
}

/// What the planner decided: the calls (ids not settled yet), its text, the tokens used.
struct Plan {
    calls: Vec<ToolCall>,
    text: String,
    usage: Usage,
}

/// Asks the planner, without streaming its tokens (the seed streams only the generator),
/// with `on_chat_model_start` / `_end` events and the run's usage counters.
async fn ask_planner(
    which: &Planner,
    name: &str,
    messages: &[Message],
    ctx: &NodeContext,
) -> Result<Plan, LlmError> {
    match which {
        Planner::Tools(model) => {
            let run_id = model_start(ctx, name, messages).await;
            let options = CallOptions::new().task("planner").max_tokens(300);
            let response = model.invoke(messages, &options).await?;
            model_end(ctx, name, &run_id, &response.message, response.usage).await;
            Ok(Plan {
                calls: response.tool_calls().to_vec(),
                text: response.text().trim().to_owned(),
                usage: response.usage,
            })
        }
        Planner::Json(model) => {
            let run_id = model_start(ctx, name, messages).await;
            // Bounded strings and lists keep a decision under the cap.
            let options = CallOptions::new()
                .task("PlannerDecision")
                .max_tokens(super::JSON_PLANNER_TOKENS);
            let reply = model.invoke_with(messages, &options).await?;
            model_end(ctx, name, &run_id, &reply.response.message, reply.usage).await;
            let calls = match reply.value.next_step {
                NextStep::Generate => Vec::new(),
                NextStep::ToolUse => reply
                    .value
                    .calls
                    .into_iter()
                    .map(|c| ToolCall::new(String::new(), c.tool, c.args))
                    .collect(),
            };
            Ok(Plan {
                calls,
                text: String::new(),
                usage: reply.usage,
            })
        }
    }
}

/// The calls of a reply, at most [`MAX_CALLS`], with ids unique in the conversation.
fn unique_calls(calls: &[ToolCall], messages: &[Message]) -> Vec<ToolCall> {
    let mut used: Vec<String> = messages
        .iter()
        .flat_map(|m| m.tool_calls().iter().map(|c| c.id.clone()))
        .collect();
    let mut next = used.len() + 1;
    calls
        .iter()
        .take(MAX_CALLS)
        .map(|call| {
            let mut call = call.clone();
            if call.id.trim().is_empty() || used.contains(&call.id) {
                while used.contains(&format!("call_{next}")) {
                    next += 1;
                }
                call.id = format!("call_{next}");
            }
            if call.args.is_null() {
                call.args = json!({});
            }
            used.push(call.id.clone());
            call
        })
        .collect()
}

/// Decides between answering and calling tools.
#[node]
pub async fn planner(
    state: &OrchestratorState,
    rt: &Runtime<OrchestratorContext>,
) -> Result<OrchestratorStateUpdate, BoxError> {
    let context = rt.context();
    let language = answer_language(question(state), state.user_context.preferences.language);
    let mut messages = vec![Message::system(format!(
        "{PLANNER_PROMPT}\n{}",
        profile_lines(state, language)
    ))];
    if !state.summary.is_empty() {
        messages.push(Message::system(format!(
            "{SUMMARY_BLOCK}\n{}",
            state.summary
        )));
    }
    let budget = context
        .settings
        .context_tokens
        .saturating_sub(count_tokens_approximately(&messages));
    messages.extend(window(&state.messages, budget, false));
    // Results that came back but do not answer the question look fine in the conversation:
    // the verifier's reason says what to fix.
    if state.verification.verdict == Verdict::Retry {
        let round = state.retry_count.saturating_sub(1);
        let off: Vec<(&str, &str)> = state
            .scratchpad
            .iter()
            .filter(|(_, r)| r.round == round)
            .filter_map(|(id, r)| match &r.error {
                Some(e) if e.kind == FailureKind::Irrelevant => {
                    Some((id.as_str(), e.message.as_str()))
                }
                _ => None,
            })
            .collect();
        if !off.is_empty() {
            messages.push(Message::system(relevance::replan_block(&off)));
        }
    }
    let plan = ask_planner(
        &context.planner,
        context.generator.model_name(),
        &messages,
        rt,
    )
    .await?;
    let calls = unique_calls(&plan.calls, &state.messages);
    let update = OrchestratorStateUpdate::default()
        .phase(Phase::Plan)
        .tokens_used(plan.usage.total())
        .tool_calls(calls.clone());
    if calls.is_empty() {
        return Ok(update.next_step(NextStep::Generate));
    }
    let decision = AiMessage {
        id: Some(new_message_id()),
        content: plan.text,
        tool_calls: calls,
        usage: Some(plan.usage),
        ..AiMessage::default()
    };
    Ok(update
        .next_step(NextStep::ToolUse)
        .messages(vec![Message::Ai(decision)]))
}

/// `tool_use` when the planner asked for tools, `generate` otherwise.
pub fn route_after_planner(state: &OrchestratorState) -> &'static str {
    match state.next_step {
        NextStep::ToolUse if !state.tool_calls.is_empty() => "tool_use",
        _ => "generate",
    }
}

/// The user a call runs for. A pinned user (a served run's: the authenticated caller or the
/// operator's) has their profile read again from the profile store, the operator's: the
/// state's `user_id` and `user_context` are a copy a client may have written
/// (`update_state`, a command's `update` with a `goto` past `ingress`), never the authority
/// on whose permissions a call runs with. Unpinned, the state's copy (what `ingress` loaded).
fn acting_user(
    state: &OrchestratorState,
    context: &OrchestratorContext,
) -> Result<UserContext, BoxError> {
    match context.user.as_deref().map(str::trim) {
        Some(user) if !user.is_empty() => Ok(context.profiles.context_for(user)?),
        _ => Ok(state.user_context.clone()),
    }
}

/// Why `user` may not make a call of `tool` with `args`, if not: an unknown tool, one their
/// permissions leave out, arguments that do not fit its schema.
fn refusal_of(
    registry: &ToolRegistry,
    user: &UserContext,
    tool: &str,
    args: &Value,
) -> Option<ToolFailure> {
    let reject = |kind: FailureKind, message: String| Some(ToolFailure { kind, message });
    match registry.get(tool) {
        None => reject(
            FailureKind::UnknownTool,
            format!(
                "`{tool}` is not a tool here; the tools are {}",
                registry.names().collect::<Vec<_>>().join(", ")
            ),
        ),
        Some(_) if !user.may_use(tool) => reject(
            FailureKind::Forbidden,
            format!(
                "user `{}` (role {}) may not use `{tool}`; allowed: {}",
                user.user_id,
                user.role,
                user.permissions.join(", ")
            ),
        ),
        Some(found) => {
            let args = if args.is_null() {
                json!({})
            } else {
                args.clone()
            };
            let violations = schema::validate(&found.parameters(), &args, 3);
            (!violations.is_empty()).then(|| {
                let list: Vec<String> = violations.iter().map(ToString::to_string).collect();
                ToolFailure {
                    kind: FailureKind::InvalidArgs,
                    message: format!(
                        "invalid arguments for `{tool}` {}; call it with arguments that match its schema",
                        list.join("; ")
                    ),
                }
            })
        }
    }
}

/// Checks each planned call: known tool, allowed for the user, arguments that fit.
#[node]
pub async fn tool_router(
    state: &OrchestratorState,
    rt: &Runtime<OrchestratorContext>,
) -> Result<OrchestratorStateUpdate, BoxError> {
    let registry = rt.context().tools.registry();
    let user = acting_user(state, rt.context())?;
    let routes: Vec<RoutedCall> = state
        .tool_calls
        .iter()
        .map(|call| {
            let rejection = refusal_of(registry, &user, &call.name, &call.args);
            RoutedCall {
                id: call.id.clone(),
                tool: call.name.clone(),
                args: call.args.clone(),
                allowed: rejection.is_none(),
                rejection,
            }
        })
        .collect();
    Ok(OrchestratorStateUpdate::default()
        .routes(routes)
        .phase(Phase::Route))
}

/// Runs the allowed calls at once; every call gets a result, rejected ones their reason.
#[node]
pub async fn tool_executor(
    state: &OrchestratorState,
    rt: &Runtime<OrchestratorContext>,
) -> Result<OrchestratorStateUpdate, BoxError> {
    let tools = &rt.context().tools;
    // The routes are state too: each call is checked again, for the acting user, so routes
    // a client wrote run nothing the router would refuse.
    let user = acting_user(state, rt.context())?;
    let routes: Vec<RoutedCall> = state
        .routes
        .iter()
        .map(|route| {
            match route
                .rejection
                .clone()
                .or_else(|| refusal_of(tools.registry(), &user, &route.tool, &route.args))
            {
                Some(failure) => RoutedCall {
                    allowed: false,
                    rejection: Some(failure),
                    ..route.clone()
                },
                None => route.clone(),
            }
        })
        .collect();
    let allowed: Vec<ToolCall> = routes
        .iter()
        .filter(|r| r.allowed)
        .map(|r| ToolCall::new(r.id.clone(), r.tool.clone(), r.args.clone()))
        .collect();
    let results = futures::future::join_all(
        allowed
            .iter()
            .map(|call| tools.call_in(call, Some(rt.node_context()))),
    )
    .await;
    let mut results: BTreeMap<String, _> =
        allowed.iter().map(|c| c.id.clone()).zip(results).collect();
    let round = state.retry_count;
    let mut outputs = Vec::with_capacity(routes.len());
    let mut records = BTreeMap::new();
    for route in &routes {
        let record = match (route.rejection.clone(), results.remove(&route.id)) {
            (Some(failure), _) => failed(route, round, failure),
            (None, Some(Ok(output))) => ToolRecord {
                tool: route.tool.clone(),
                args: route.args.clone(),
                round,
                status: if is_empty_result(&route.tool, &output) {
                    Status::Empty
                } else {
                    Status::Ok
                },
                output,
                error: None,
            },
            (None, Some(Err(error))) => failed(
                route,
                round,
                ToolFailure {
                    kind: classify(&error),
                    message: redact_text(&failure_message(&error, &route.args)).0,
                },
            ),
            (None, None) => failed(
                route,
                round,
                ToolFailure {
                    kind: FailureKind::Failed,
                    message: "the call did not run".to_owned(),
                },
            ),
        };
        let message = ToolMessage {
            id: Some(new_message_id()),
            tool_call_id: route.id.clone(),
            name: Some(route.tool.clone()),
            content: match &record.error {
                Some(error) => format!("Error ({}): {}", kind_name(error.kind), error.message),
                None => content_of(&record.output),
            },
            is_error: record.error.is_some(),
            ..ToolMessage::default()
        };
        outputs.push(message);
        records.insert(route.id.clone(), record);
    }
    Ok(OrchestratorStateUpdate::default()
        .messages(
            outputs
                .iter()
                .cloned()
                .map(Message::Tool)
                .collect::<Vec<_>>(),
        )
        .tool_outputs(outputs)
        .scratchpad(records)
        .phase(Phase::Execute))
}

/// What went wrong, without what the record already says: the tool's own message (not
/// "tool `x` failed: ..."), the attempts it took, and no copy of the query text.
pub fn failure_message(error: &ToolError, args: &Value) -> String {
    let text = match error {
        ToolError::Failed { source, .. } => source.to_string(),
        ToolError::RetriesExhausted { attempts, last, .. } => {
            format!("{} ({attempts} attempts)", failure_message(last, args))
        }
        other => other.to_string(),
    };
    // SQLite quotes the statement back ("... in SELECT ... at offset 22").
    match args["sql"].as_str() {
        Some(sql) if !sql.is_empty() => match text.find(&format!(" in {sql}")) {
            Some(at) => text[..at].to_owned(),
            None => text,
        },
        _ => text,
    }
}

fn failed(route: &RoutedCall, round: u32, failure: ToolFailure) -> ToolRecord {
    ToolRecord {
        tool: route.tool.clone(),
        args: route.args.clone(),
        round,
        status: Status::Error,
        output: Value::Null,
        error: Some(failure),
    }
}

/// The snake_case name of a failure kind.
pub fn kind_name(kind: FailureKind) -> String {
    serde_json::to_value(kind)
        .ok()
        .and_then(|v| v.as_str().map(str::to_owned))
        .unwrap_or_default()
}

/// Checks the round's results; sends the flow back to the planner when they fall short:
/// empty, failed, or (judged by the model) not what the question asks.
#[node]
pub async fn verifier(
    state: &OrchestratorState,
    rt: &Runtime<OrchestratorContext>,
) -> Result<OrchestratorStateUpdate, BoxError> {
    let context = rt.context();
    let records: Vec<(&str, &ToolRecord)> = state
        .tool_outputs
        .iter()
        .filter_map(|m| {
            state
                .scratchpad
                .get(&m.tool_call_id)
                .map(|r| (m.tool_call_id.as_str(), r))
        })
        .collect();
    let max_retries = context.settings.max_retries;
    let mut verification = verify::decide(&records, state.retry_count, max_retries);
    let mut update = OrchestratorStateUpdate::default().phase(Phase::Verify);
    let judged: Vec<Judged> = records
        .iter()
        .filter(|(_, r)| r.status == Status::Ok)
        .map(|(id, r)| Judged {
            id: (*id).to_owned(),
            tool: r.tool.clone(),
            args: r.args.clone(),
            output: cut_rows(&r.output),
        })
        .collect();
    if verification.verdict == Verdict::Success && !judged.is_empty() {
        let messages = relevance::prompt(question(state), &state.summary, &judged);
        let options = CallOptions::new()
            .task(relevance::TASK)
            .max_tokens(VERIFIER_TOKENS);
        let reply = context.verifier.invoke_with(&messages, &options).await?;
        rt.add_usage("input_tokens", reply.usage.input_tokens);
        rt.add_usage("output_tokens", reply.usage.output_tokens);
        let judgement = reply.value;
        verification = verify::judged(verification, &judgement, state.retry_count, max_retries);
        if !judgement.relevant {
            // The calls named, or every judged call when the judge names none it ran.
            let named: Vec<&Judged> = judged
                .iter()
                .filter(|j| judgement.off_calls.contains(&j.id))
                .collect();
            let off = if named.is_empty() {
                judged.iter().collect()
            } else {
                named
            };
            let marked: BTreeMap<String, ToolRecord> = off
                .into_iter()
                .filter_map(|j| {
                    let record = state.scratchpad.get(&j.id)?;
                    Some((
                        j.id.clone(),
                        ToolRecord {
                            status: Status::Error,
                            error: Some(ToolFailure {
                                kind: FailureKind::Irrelevant,
                                message: judgement.reason.clone(),
                            }),
                            ..record.clone()
                        },
                    ))
                })
                .collect();
            update = update.scratchpad(marked);
        }
        update = update.tokens_used(reply.usage.total());
    }
    if verification.verdict == Verdict::Retry {
        let retry_count = state.retry_count + 1;
        let payload = json!({
            "status": "planning_retry",
            "retry_count": retry_count,
            "reasons": verification.reasons,
        });
        rt.emit_event("on_custom_event", "planning_retry", None, payload.clone())
            .await;
        rt.write_custom(payload).await;
        update = update.retry_count(retry_count);
    }
    Ok(update.verification(verification))
}

/// The token cap of the verifier's judgement (a verdict, a sentence, a few ids).
const VERIFIER_TOKENS: u32 = 200;

/// A result with at most [`MAX_ROWS_SHOWN`] rows, as the models are shown it.
fn cut_rows(output: &Value) -> Value {
    let mut output = output.clone();
    if let Some(rows) = output.get_mut("rows").and_then(Value::as_array_mut)
        && rows.len() > MAX_ROWS_SHOWN
    {
        rows.truncate(MAX_ROWS_SHOWN);
        output["truncated"] = Value::Bool(true);
    }
    output
}

/// `success`, `retry`, `clarify` or `give_up`, per the verifier.
pub fn route_after_verifier(state: &OrchestratorState) -> &'static str {
    match state.verification.verdict {
        Verdict::Retry => "retry",
        Verdict::Clarify => "clarify",
        Verdict::GiveUp => "give_up",
        Verdict::Success | Verdict::None => "success",
    }
}

/// The scratchpad as the generator's prompt lists it: every call of the turn in order, long
/// results cut.
pub fn results_for_prompt(scratchpad: &BTreeMap<String, ToolRecord>) -> Value {
    let mut records: Vec<(&String, &ToolRecord)> = scratchpad.iter().collect();
    records.sort_by_key(|(id, r)| {
        let n: u64 = id
            .rsplit('_')
            .next()
            .and_then(|n| n.parse().ok())
            .unwrap_or(u64::MAX);
        (r.round, n, (*id).clone())
    });
    Value::Array(
        records
            .into_iter()
            .map(|(id, r)| {
                let output = cut_rows(&r.output);
                json!({
                    "id": id,
                    "tool": r.tool,
                    "args": r.args,
                    "round": r.round,
                    "status": r.status,
                    "output": output,
                    "error": r.error,
                })
            })
            .collect(),
    )
}

/// Writes the answer from the results, streaming its tokens.
#[node]
pub async fn generator(
    state: &OrchestratorState,
    rt: &Runtime<OrchestratorContext>,
) -> Result<OrchestratorStateUpdate, BoxError> {
    let context = rt.context();
    let language = answer_language(question(state), state.user_context.preferences.language);
    let mut messages = vec![Message::system(format!(
        "{GENERATOR_PROMPT}\n{}",
        profile_lines(state, language)
    ))];
    if !state.summary.is_empty() {
        messages.push(Message::system(format!(
            "{SUMMARY_BLOCK}\n{}",
            state.summary
        )));
    }
    let mut blocks = Vec::new();
    if !state.scratchpad.is_empty() {
        blocks.push(Message::system(format!(
            "{RESULTS_BLOCK} {}",
            results_for_prompt(&state.scratchpad)
        )));
        blocks.push(Message::system(format!(
            "{VERIFICATION_BLOCK} {}",
            serde_json::to_string(&state.verification)?
        )));
    }
    let budget = context.settings.context_tokens.saturating_sub(
        count_tokens_approximately(&messages) + count_tokens_approximately(&blocks),
    );
    messages.extend(window(&state.messages, budget, true));
    messages.extend(blocks);
    let response = invoke_in_node(
        &*context.generator,
        &messages,
        &CallOptions::new().task("generator").max_tokens(300),
        rt,
    )
    .await?;
    let mut text = response.text().trim().to_owned();
    if text.is_empty() {
        text = language
            .pick(
                "(The model returned no text.)",
                "(El modelo no devolvió texto.)",
                "(Модель не вернула текст.)",
            )
            .to_owned();
    }
    // The answer keeps the id its tokens streamed under.
    let answer = chat::model_answer(
        AiMessage {
            tool_calls: Vec::new(),
            ..response.message
        },
        text.clone(),
    );
    Ok(OrchestratorStateUpdate::default()
        .messages(vec![answer])
        .response(text)
        .tokens_used(response.usage.total())
        .phase(Phase::Generate))
}

/// Adds the turn to the summary and removes what no longer fits the token budget.
#[node]
pub async fn summarizer(
    state: &OrchestratorState,
    rt: &Runtime<OrchestratorContext>,
) -> Result<OrchestratorStateUpdate, BoxError> {
    let line = if state.safety_check.safe {
        let mut records: Vec<(&String, &ToolRecord)> = state.scratchpad.iter().collect();
        records.sort_by_key(|(id, r)| (r.round, (*id).clone()));
        let records: Vec<&ToolRecord> = records.into_iter().map(|(_, r)| r).collect();
        let language = answer_language(question(state), state.user_context.preferences.language);
        memory::turn_line(
            state.turn,
            language,
            question(state),
            &records,
            &state.response,
        )
    } else {
        memory::refused_line(state.turn, &state.safety_check)
    };
    let summary = memory::add_line(&state.summary, line, MAX_SUMMARY_CHARS);
    if let Some(store) = rt.store() {
        // Under the pinned user's id, not the state's (which a client may have written).
        let user = match rt.context().user.as_deref().map(str::trim) {
            Some(user) if !user.is_empty() => user,
            _ => state.user_id.as_str(),
        };
        super::long_term::keep_summary(&*store, user, &summary, &state.session_id, state.turn)
            .await?;
    }
    let removals = memory::trim_removals(&state.messages, rt.context().settings.context_tokens);
    let phase = if state.safety_check.safe {
        Phase::Done
    } else {
        Phase::Refused
    };
    let mut update = OrchestratorStateUpdate::default()
        .summary(summary)
        .phase(phase);
    if !removals.is_empty() {
        update = update.messages(removals);
    }
    Ok(update)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn answer_language_falls_back_to_the_preference() {
        assert_eq!(answer_language("¿Cuál fue el PIB en 2008?", None), Lang::Es);
        assert_eq!(
            answer_language("What was GDP in 2008?", Some(Lang::Es)),
            Lang::En
        );
        assert_eq!(answer_language("PIB 2008", Some(Lang::Es)), Lang::Es);
        assert_eq!(answer_language("GDP 2008", Some(Lang::Ru)), Lang::Ru);
        assert_eq!(answer_language("GDP 2008", None), Lang::En);
        assert_eq!(answer_language("ВВП 2008", Some(Lang::Es)), Lang::Ru);
        assert_eq!(
            answer_language("Ejecuta DELETE FROM macrodata WHERE year < 1970", None),
            Lang::Es
        );
        assert_eq!(
            answer_language("SELECT max(unemp) FROM macrodata", Some(Lang::Ru)),
            Lang::Ru
        );
        assert_eq!(
            answer_language("Run SELECT max(unemp) FROM macrodata", Some(Lang::Ru)),
            Lang::En
        );
    }

    #[test]
    fn call_ids_are_unique_in_the_conversation() {
        let history = vec![Message::ai_tool_calls([ToolCall::new(
            "call_1",
            "doc_search",
            json!({}),
        )])];
        let calls = unique_calls(
            &[
                ToolCall::new("call_1", "sql_query", json!({"sql": "x"})),
                ToolCall::new("", "calculator", Value::Null),
                ToolCall::new("abc", "datetime", json!({})),
            ],
            &history,
        );
        let ids: Vec<&str> = calls.iter().map(|c| c.id.as_str()).collect();
        assert_eq!(ids, ["call_2", "call_3", "abc"]);
        assert_eq!(calls[1].args, json!({}));
        let many: Vec<ToolCall> = (0..10)
            .map(|i| ToolCall::new(format!("c{i}"), "calculator", json!({})))
            .collect();
        assert_eq!(unique_calls(&many, &[]).len(), MAX_CALLS);
    }

    #[test]
    fn the_window_keeps_this_turn_and_what_fits_before_it() {
        let messages: Vec<Message> = vec![
            Message::human("old question ".repeat(20)).with_id("h1"),
            Message::ai("old answer ".repeat(20)).with_id("a1"),
            Message::human("new question").with_id("h2"),
            Message::ai_tool_calls([ToolCall::new("c", "sql_query", json!({}))]).with_id("a2"),
            Message::tool("c", "x".repeat(5000)).with_id("t2"),
        ];
        let window = window(&messages, 450, false);
        let ids: Vec<&str> = window.iter().filter_map(Message::id).collect();
        assert_eq!(ids, ["h2", "a2", "t2"]);
        assert!(window[2].content().ends_with("… [cut]"));
        let text = super::window(&messages, 10_000, true);
        let ids: Vec<&str> = text.iter().filter_map(Message::id).collect();
        assert_eq!(ids, ["h1", "a1", "h2"]);
    }
}
