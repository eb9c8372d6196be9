//! The floor: each shape as a hand-written tokio program — the same node bodies and the same
//! state updates (the same reducer functions, the same scripted model and tool node), with no
//! graph runtime: no scheduling, no snapshots, no per-task context.
//!
//! Concurrency is what a careful hand-written program would do: `Send` fan-outs
//! (`send_fanout`, `fanout_to_subgraph`) spawn one task per item on a `JoinSet` and apply the
//! results in item order, as the graph does; the two-branch step of `wide_state`
//! (`three` and `four`) computes both updates from the same state, then applies them.

use std::sync::Arc;

use agent_core::{BoxError, BoxFuture, END, RunConfig};
use agent_llm::{CallOptions, ChatModel, ChatModelExt, Message, add_messages};
use agent_tools::{ToolNode, route_tools};
use serde_json::json;
use tokio::task::JoinSet;

use crate::graphs::{
    BUMPED, Doc, Wide, if_truthy, non_null, or_keep, overwrite, random_letters, react_model,
    react_tools, subjects, wide_message,
};
use crate::{Outcome, Runner, Shape};

/// The hand-written runner of `shape`.
pub fn build(shape: Shape) -> Result<Runner, BoxError> {
    Ok(match shape {
        Shape::Sequential(n) => prepared((), move |()| sequential(n)),
        Shape::SendFanout(n) => prepared((), move |()| send_fanout(n)),
        Shape::ReactAgent(n) => {
            let tools = Arc::new(ToolNode::new(react_tools()?));
            let model = Arc::new(react_model(n).bind_tools(tools.registry().specs()));
            prepared((), move |()| react_agent(model.clone(), tools.clone()))
        }
        Shape::WideState { n, outer, inner } => {
            prepared(wide_message(outer, inner), move |doc| wide_state(n, doc))
        }
        Shape::FanoutToSubgraph(n) => prepared(subjects(n), fanout_to_subgraph),
    })
}

/// A runner that clones `input` before the clock starts.
fn prepared<I, F, Fut>(input: I, run: F) -> Runner
where
    I: Clone + Send + Sync + 'static,
    F: Fn(I) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<Outcome, BoxError>> + Send + 'static,
{
    let run = Arc::new(run);
    Box::new(move || {
        let input = input.clone();
        let run = run.clone();
        Box::new(
            move |_: RunConfig| -> BoxFuture<Result<Outcome, BoxError>> { Box::pin(run(input)) },
        )
    })
}

async fn noop(_: &[Message]) -> Option<Vec<Message>> {
    None
}

async fn sequential(n: usize) -> Result<Outcome, BoxError> {
    let mut messages: Vec<Message> = Vec::new();
    for _ in 0..n {
        if let Some(update) = noop(std::hint::black_box(&messages)).await {
            add_messages(&mut messages, update)?;
        }
    }
    Ok(Outcome {
        steps: n,
        tasks: n,
        check: json!({ "messages": messages.len() }),
    })
}

async fn send_fanout(n: usize) -> Result<Outcome, BoxError> {
    let mut results: Vec<String> = Vec::new();
    let mut set = JoinSet::new();
    for index in 0..n {
        set.spawn(async move { (index, vec![format!("result {index}")]) });
    }
    let mut done: Vec<Option<Vec<String>>> = (0..n).map(|_| None).collect();
    while let Some(joined) = set.join_next().await {
        let (index, update) = joined?;
        done[index] = Some(update);
    }
    for update in done.into_iter().flatten() {
        results.extend(update);
    }
    Ok(Outcome {
        steps: 1,
        tasks: n,
        check: json!({ "results": results.len() }),
    })
}

async fn react_agent(
    model: Arc<agent_llm::BoundModel<agent_llm::ScriptedModel>>,
    tools: Arc<ToolNode>,
) -> Result<Outcome, BoxError> {
    let mut messages = Vec::new();
    add_messages(&mut messages, vec![Message::human("hi?")])?;
    let mut steps = 0;
    loop {
        let reply = model.invoke(&messages, &CallOptions::default()).await?;
        add_messages(&mut messages, vec![reply.into()])?;
        steps += 1;
        if route_tools(&messages) == END {
            break;
        }
        let answers = tools.run(&messages).await?;
        add_messages(&mut messages, answers)?;
        steps += 1;
    }
    Ok(Outcome {
        steps,
        tasks: steps,
        check: json!({ "messages": messages.len() }),
    })
}

async fn wide_state(n: usize, message: Doc) -> Result<Outcome, BoxError> {
    let mut s = Wide::default();
    s.messages.push(message);
    let mut rounds = 0;
    loop {
        rounds += 1;
        // one
        let (events, medium) = async { (s.messages.clone(), random_letters(n)) }.await;
        s.trigger_events.extend(events);
        or_keep(&mut s.primary_issue_medium, medium);
        // two
        let doc = async { s.trigger_events.last().cloned() }.await;
        overwrite(&mut s.autoresponse, doc.clone());
        if_truthy(&mut s.issue, doc);
        // three and four, from the same state
        let rules = async { s.autoresponse.clone().map(|d| vec![d]) }.await;
        let (categorizations, responses, memory) = async {
            let events = &s.trigger_events;
            (events.clone(), events.clone(), Some(events.clone()))
        }
        .await;
        s.relevant_rules = rules;
        s.categorizations.extend(categorizations);
        s.responses.extend(responses);
        s.memory_docs = memory;
        // five
        let doc = async { s.categorizations.last().cloned() }.await;
        let entries = |d: &Option<Doc>| d.as_ref().map(|d| (**d).clone()).unwrap_or_default();
        non_null(&mut s.user_info, doc.clone());
        non_null(&mut s.crm_info, doc.clone());
        non_null(&mut s.email_thread_id, Some(random_letters(n)));
        s.slack_participants.extend(entries(&doc));
        s.bot_id = Some(random_letters(n));
        s.notified_assignees.extend(entries(&doc));
        // six
        let messages = async { s.responses.clone() }.await;
        s.messages.extend(messages);
        if s.messages.len() > n {
            break;
        }
    }
    Ok(Outcome {
        steps: rounds * 5,
        tasks: rounds * 6,
        check: json!({ "messages": s.messages.len() }),
    })
}

async fn joke(letters: Vec<char>) -> (String, usize) {
    let subject = format!("{letters:?} - hohoho");
    let mut jokes = vec![format!("Joke about {subject}")];
    let mut steps = 2;
    loop {
        jokes = vec![format!("{} a", jokes[0])];
        steps += 1;
        if jokes[0].ends_with(BUMPED) {
            break;
        }
    }
    let joke = jokes.pop().unwrap_or_default();
    (joke, steps)
}

async fn fanout_to_subgraph(subjects: Vec<Vec<char>>) -> Result<Outcome, BoxError> {
    let n = subjects.len();
    let mut set = JoinSet::new();
    for (index, letters) in subjects.into_iter().enumerate() {
        set.spawn(async move { (index, joke(letters).await) });
    }
    let mut done: Vec<Option<String>> = (0..n).map(|_| None).collect();
    let mut inner_steps = 0;
    while let Some(joined) = set.join_next().await {
        let (index, (joke, steps)) = joined?;
        inner_steps += steps;
        done[index] = Some(joke);
    }
    let jokes: Vec<String> = done.into_iter().flatten().collect();
    Ok(Outcome {
        steps: 1 + inner_steps,
        tasks: n + inner_steps,
        check: json!({
            "jokes": jokes.len(),
            "joke_chars": jokes.first().map_or(0, String::len),
        }),
    })
}
