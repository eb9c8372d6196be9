//! The five nodes of seed 003 — `intent` (`classify_intent`), `parser` (`parse_question`),
//! `planner` (`plan_execution`), `executor` (`execute_query`), `end` (`handle_end`) — and
//! `route_after_intent`.

use agent_core::{BoxError, Runtime, node};
use agent_llm::{CallOptions, LlmError, Message, invoke_in_node};

use super::glossary::{Measure, lookup};
use super::query::{Intent, MAX_ATOMS, MAX_STEPS};
use super::usage::UsageLedger;
use super::{DataContext, DataState, DataStateUpdate, MAX_QUESTION_CHARS, answer, plan, sql};
use crate::chat;
use crate::lang::Lang;

/// What the intent model is told.
pub(crate) const INTENT_PROMPT: &str = "You classify messages for an assistant that answers \
    questions about US macroeconomic quarterly data, 1959 Q1 to 2009 Q3 (real GDP, consumption, \
    investment, federal government spending, disposable income, consumer price index, M1 money \
    stock, 3-month treasury bill rate, unemployment rate, population, inflation, real interest \
    rate). Reply with JSON. intent: \"data\" when the user asks for numbers from this data, \
    \"concept\" when they ask what one of these terms means, \"chitchat\" otherwise. lang: the \
    language of the user's last message, \"ru\" or \"en\". internal_query: that message in \
    English, with what a follow-up leaves out taken from the conversation.";

/// What the parser model is told.
pub(crate) const PARSER_PROMPT: &str = "You turn a question about US quarterly macroeconomic \
    data (1959Q1-2009Q3) into steps of atoms, as JSON {\"thoughts\": \"...\", \"steps\": \
    [{\"atoms\": [...]}]}. Measures: realgdp (real GDP), realcons (consumption), realinv \
    (investment), realgovt (government spending), realdpi (disposable income), cpi (consumer \
    prices), m1 (money stock), tbilrate (treasury bill rate), unemp (unemployment rate), pop \
    (population), infl (inflation), realint (real interest rate). Atoms: {\"atom\": \"metric\", \
    \"name\": measure}; {\"atom\": \"time_range\", \"from\": \"1990\", \"to\": \"1999Q4\"}; \
    {\"atom\": \"filter\", \"column\": measure, \"op\": \"gt\", \"value\": 8}; {\"atom\": \
    \"aggregate\", \"function\": \"avg\"} (avg, sum, min, max, count, change, first, last); \
    {\"atom\": \"group_by\", \"by\": \"year\"}; {\"atom\": \"order\", \"direction\": \"desc\"}; \
    {\"atom\": \"limit\", \"count\": 5}. Several measures or periods go in one step as several \
    atoms. If the question names something the data does not have, use its name as the metric.";

/// What the `end` model is told.
pub(crate) const END_PROMPT: &str = "You are the assistant of a data set of US macroeconomic \
    quarterly series (1959 Q1 to 2009 Q3). Reply briefly, in the language given. For a concept \
    question, explain the term using only the glossary entry given. For small talk, answer \
    politely and say what you can do: answer questions about the data's numbers and explain its \
    terms.";

/// How the parser's message gives the original question.
pub(crate) const QUESTION_LINE: &str = "Question:";
/// How the `end` node tells the model the reply's language.
pub(crate) const LANG_BLOCK: &str = "Reply in:";
/// How the `end` node tells the model the intent.
pub(crate) const INTENT_BLOCK: &str = "Intent:";
/// How the `end` node passes the glossary entry (`Glossary: [key] title: definition`).
pub(crate) const GLOSSARY_BLOCK: &str = "Glossary:";

/// The earlier conversation a model sees: the last `n` messages before the current question,
/// long ones cut.
fn recent(state: &DataState, n: usize) -> Vec<Message> {
    let before = state.messages.len().saturating_sub(1);
    state.messages[before.saturating_sub(n)..before]
        .iter()
        .filter(|m| matches!(m.kind(), "human" | "ai"))
        .map(|m| {
            let text: String = m.content().chars().take(300).collect();
            if m.kind() == "human" {
                Message::human(text)
            } else {
                Message::ai(text)
            }
        })
        .collect()
}

/// The current question: the last human message.
fn question(state: &DataState) -> Result<String, BoxError> {
    let text = state
        .messages
        .iter()
        .rev()
        .find(|m| m.kind() == "human")
        .map(|m| m.content().to_owned())
        .ok_or("the data flow needs a question: the conversation has no human message")?;
    let length = text.chars().count();
    if length > MAX_QUESTION_CHARS {
        return Err(format!(
            "the question is {length} characters long; the data flow takes at most {MAX_QUESTION_CHARS} — shorten it"
        )
        .into());
    }
    Ok(text)
}

/// Classifies the question, detects its language, writes it in English.
#[node(name = "intent")]
pub async fn classify_intent(
    state: &DataState,
    rt: &Runtime<DataContext>,
) -> Result<DataStateUpdate, BoxError> {
    let question = question(state)?;
    let context = rt.context();
    let mut messages = vec![Message::system(INTENT_PROMPT)];
    messages.extend(recent(state, 4));
    messages.push(Message::human(question));
    let reply = context
        .intent
        .model
        .invoke_in(
            rt,
            &messages,
            &CallOptions::new()
                .task("IntentDecision")
                .max_tokens(120)
                .nostream(),
        )
        .await?;
    let decision = reply.value;
    // The flow answers in Russian or English (the seed's languages).
    let lang = match decision.lang {
        Lang::Ru => Lang::Ru,
        _ => Lang::En,
    };
    let internal_query: String = decision.internal_query.trim().chars().take(300).collect();
    Ok(DataStateUpdate::default()
        .intent(Some(decision.intent))
        .lang(lang)
        .internal_query(internal_query)
        .usage(UsageLedger::call(
            rt.node(),
            &context.intent.name,
            reply.usage,
        )))
}

/// `data` to the parser, `chitchat` and `concept` to `end` (the seed's route).
pub fn route_after_intent(state: &DataState) -> &'static str {
    state.intent.unwrap_or(Intent::Chitchat).as_str()
}

/// Turns the question into steps of atoms.
#[node(name = "parser")]
pub async fn parse_question(
    state: &DataState,
    rt: &Runtime<DataContext>,
) -> Result<DataStateUpdate, BoxError> {
    let question = question(state)?;
    let context = rt.context();
    let mut messages = vec![Message::system(PARSER_PROMPT)];
    // Earlier questions, for follow-ups ("and in 1990?").
    let earlier: Vec<Message> = recent(state, 6)
        .into_iter()
        .filter(|m| m.kind() == "human")
        .collect();
    let skip = earlier.len().saturating_sub(3);
    messages.extend(earlier.into_iter().skip(skip));
    messages.push(Message::human(format!(
        "{QUESTION_LINE} {question}\nIn English: {}",
        state.internal_query
    )));
    let reply = context
        .parser
        .model
        .invoke_in(
            rt,
            &messages,
            &CallOptions::new()
                .task("ParsedQuery")
                .max_tokens(400)
                .nostream(),
        )
        .await;
    let reply = match reply {
        Ok(reply) => reply,
        // A reply that is not a parse (after the corrective retry) is the model's failure to
        // read the question: no steps, the reason in the thoughts, and the planner says so.
        Err(LlmError::StructuredOutput {
            attempts,
            reason,
            usage,
            ..
        }) => {
            return Ok(DataStateUpdate::default()
                .parsed_query(Vec::new())
                .parser_thoughts(format!(
                    "the model's reply could not be read as steps after {attempts} attempts: {reason}"
                ))
                .usage(UsageLedger::call(rt.node(), &context.parser.name, usage)));
        }
        Err(other) => return Err(other.into()),
    };
    let mut parsed = reply.value;
    parsed.steps.truncate(MAX_STEPS);
    for step in &mut parsed.steps {
        step.atoms.truncate(MAX_ATOMS);
    }
    let thoughts: String = parsed.thoughts.trim().chars().take(1000).collect();
    Ok(DataStateUpdate::default()
        .parsed_query(parsed.steps)
        .parser_thoughts(thoughts)
        .usage(UsageLedger::call(
            rt.node(),
            &context.parser.name,
            reply.usage,
        )))
}

/// Checks the steps against the data set and makes the execution plan.
#[node(name = "planner")]
pub async fn plan_execution(state: &DataState) -> DataStateUpdate {
    let plan = plan::plan(&state.parsed_query, state.lang);
    DataStateUpdate::default()
        .execution_plan(plan.requests)
        .plan_errors(plan.errors)
}

/// Runs the plan on the data set and writes the answer from the rows.
#[node(name = "executor")]
pub async fn execute_query(
    state: &DataState,
    rt: &Runtime<DataContext>,
) -> Result<DataStateUpdate, BoxError> {
    let context = rt.context();
    let dataset = context.dataset;
    let limits = context.limits;
    let requests = state.execution_plan.clone();
    // SQLite calls block: off the async workers.
    let data = tokio::task::spawn_blocking(move || {
        requests
            .iter()
            .map(|request| sql::execute(request, dataset, limits))
            .collect::<Vec<_>>()
    })
    .await?;
    for result in &data {
        rt.write_custom(serde_json::json!({
            "request": result.request,
            "rows": result.rows.len(),
            "error": result.error,
        }))
        .await;
    }
    let response = answer::render(state.lang, &state.execution_plan, &data, &state.plan_errors);
    Ok(DataStateUpdate::default()
        .data(data)
        .messages(vec![chat::answer(response.clone())])
        .response(response))
}

/// Replies to small talk and concept questions, in the user's language.
#[node(name = "end")]
pub async fn handle_end(
    state: &DataState,
    rt: &Runtime<DataContext>,
) -> Result<DataStateUpdate, BoxError> {
    let question = question(state)?;
    let context = rt.context();
    let intent = state.intent.unwrap_or(Intent::Chitchat);
    let mut messages = vec![
        Message::system(END_PROMPT),
        Message::system(format!("{LANG_BLOCK} {}", state.lang.code())),
        Message::system(format!("{INTENT_BLOCK} {}", intent.as_str())),
    ];
    if intent == Intent::Concept {
        messages.push(Message::system(format!(
            "{GLOSSARY_BLOCK} {}",
            glossary_entry(&question, &state.internal_query, state.lang)
        )));
    }
    messages.extend(recent(state, 4));
    messages.push(Message::human(question));
    let reply = invoke_in_node(
        &*context.end,
        &messages,
        &CallOptions::new().task("handle_end").max_tokens(200),
        rt,
    )
    .await?;
    let text = reply.text().trim().to_owned();
    // The answer keeps the id its tokens streamed under.
    let answer = chat::model_answer(reply.message.clone(), text.clone());
    Ok(DataStateUpdate::default()
        .messages(vec![answer])
        .response(text)
        .usage(UsageLedger::call(
            rt.node(),
            context.end.model_name(),
            reply.usage,
        )))
}

/// The glossary entry a concept question is about, for the `end` model: `[key] title:
/// definition (column, unit)`, or `missing: name` for a quantity the data set lacks, or the
/// list of terms.
pub(crate) fn glossary_entry(question: &str, internal_query: &str, lang: Lang) -> String {
    let found = lookup(question);
    let found = if found.terms.is_empty() && found.missing.is_empty() {
        lookup(internal_query)
    } else {
        found
    };
    if let Some(term) = found.terms.first() {
        let text = term.text(lang);
        let column = term
            .measure
            .map(|m: Measure| format!(" (column {}, {})", m.column(), m.unit(lang)))
            .unwrap_or_default();
        return format!("[{}] {}: {}{column}", term.key, text.title, text.definition);
    }
    if let Some(missing) = found.missing.first() {
        return format!("missing: {}", missing.name(lang));
    }
    let names: Vec<&str> = super::glossary::GLOSSARY
        .iter()
        .map(|t| t.text(lang).name)
        .collect();
    format!("no entry; the glossary has: {}", names.join(", "))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_glossary_entry_names_its_key() {
        assert!(
            glossary_entry("Что такое ИПЦ?", "", Lang::Ru)
                .starts_with("[cpi] индекс потребительских цен")
        );
        assert!(
            glossary_entry("what is that?", "What is the real interest rate?", Lang::En)
                .starts_with("[realint]")
        );
        assert_eq!(
            glossary_entry("what is gold?", "", Lang::En),
            "missing: gold price"
        );
        assert!(glossary_entry("what is love?", "", Lang::En).starts_with("no entry"));
    }
}
