//! Chat models inside graph nodes, through the public API: a reply's id is the id of its
//! streamed chunks, and a call tagged `nostream` (its options' or its bound model's) stays out
//! of the `messages` stream mode while its events still go out.

use std::sync::Arc;

use agent_core::{
    END, GraphState, NodeContext, RunConfig, START, StateGraph, StreamMode, StreamModes,
    StreamPart, TAG_NOSTREAM,
};
use agent_llm::{
    CallOptions, ChatChunk, ChatModel, ChatModelExt, Message, Reply, ScriptedModel, add_messages,
    invoke_in_node,
};
use futures::StreamExt;
use serde_json::json;

#[derive(GraphState, Clone, Default, Debug)]
struct Chat {
    #[reducer(agent_llm::add_messages)]
    messages: Vec<Message>,
}

/// One node: a router call (internal, tagged `nostream` as `how` says), then the answer.
fn graph(
    router: Arc<dyn ChatModel>,
    answer: Arc<dyn ChatModel>,
    router_options: CallOptions,
) -> agent_core::CompiledGraph<Chat> {
    StateGraph::new()
        .add_node("respond", move |state: Arc<Chat>, ctx: NodeContext| {
            let (router, answer, options) =
                (router.clone(), answer.clone(), router_options.clone());
            async move {
                let decision = invoke_in_node(&*router, &state.messages, &options, &ctx)
                    .await
                    .unwrap();
                assert!(decision.message.id.is_some(), "every reply has an id");
                let reply = invoke_in_node(&*answer, &state.messages, &CallOptions::new(), &ctx)
                    .await
                    .unwrap();
                ChatUpdate::default().messages(vec![reply.into_message()])
            }
        })
        .add_edge(START, "respond")
        .add_edge("respond", END)
        .compile()
        .unwrap()
}

fn model(reply: Reply) -> Arc<dyn ChatModel> {
    Arc::new(ScriptedModel::new([reply]))
}

struct Seen {
    /// The text of every streamed text chunk.
    texts: Vec<String>,
    /// The ids of the streamed replies (their start chunks).
    ids: Vec<String>,
    /// The tags of the `on_chat_model_start` events, in order.
    event_tags: Vec<Vec<String>>,
    /// The AI message kept.
    kept: Message,
}

async fn run(graph: &agent_core::CompiledGraph<Chat>, modes: StreamModes) -> Seen {
    let input = ChatUpdate::default().messages(vec![Message::human("time in Tokyo?")]);
    let mut stream = graph.stream(input, RunConfig::default(), modes);
    let (mut texts, mut ids, mut event_tags) = (Vec::new(), Vec::new(), Vec::new());
    while let Some(part) = stream.next().await {
        match part.unwrap() {
            StreamPart::Messages { chunk, .. } => {
                match serde_json::from_value::<ChatChunk>(chunk).unwrap() {
                    ChatChunk::Start { id, .. } => ids.push(id.unwrap()),
                    ChatChunk::Text { text } => texts.push(text),
                    _ => {}
                }
            }
            StreamPart::Event(e) if e.event == "on_chat_model_start" => event_tags.push(e.tags),
            _ => {}
        }
    }
    let output = stream.into_output().await.unwrap();
    let kept = output.state.messages.last().unwrap().clone();
    Seen {
        texts,
        ids,
        event_tags,
        kept,
    }
}

#[tokio::test]
async fn a_nostream_call_is_not_streamed_and_the_answer_keeps_its_chunks_id() {
    let router = model(Reply::json(json!({"calls": [{"tool": "datetime"}]})));
    let answer = model(Reply::text("It is noon in Tokyo."));
    let graph = graph(router, answer, CallOptions::new().nostream());
    let seen = run(
        &graph,
        StreamModes::from([StreamMode::Messages, StreamMode::Events]),
    )
    .await;
    assert!(
        !seen.texts.concat().contains("calls"),
        "the router's output is not streamed: {:?}",
        seen.texts
    );
    assert_eq!(seen.texts.concat(), "It is noon in Tokyo.");
    assert_eq!(seen.ids.len(), 1, "one streamed reply: {:?}", seen.ids);
    assert_eq!(seen.kept.id(), Some(seen.ids[0].as_str()));
    // Both calls are in the event stream; the router's events carry its tag.
    assert_eq!(seen.event_tags, [vec![TAG_NOSTREAM.to_owned()], vec![]]);
}

#[tokio::test]
async fn a_bound_model_tagged_nostream_is_not_streamed() {
    let router: Arc<dyn ChatModel> = Arc::new(
        ScriptedModel::new([Reply::json(json!({"route": "direct"}))])
            .bind(CallOptions::new().nostream()),
    );
    assert_eq!(router.tags(), [TAG_NOSTREAM]);
    let answer = model(Reply::text("Hello!").with_id("chatcmpl-42"));
    let seen = run(
        &graph(router, answer, CallOptions::new()),
        StreamMode::Messages.into(),
    )
    .await;
    assert_eq!(seen.texts.concat(), "Hello!");
    // The provider's id is the reply's id and its chunks'.
    assert_eq!(seen.ids, ["chatcmpl-42"]);
    assert_eq!(seen.kept.id(), Some("chatcmpl-42"));
}

#[tokio::test]
async fn a_reply_has_an_id_when_nothing_streams() {
    let router = model(Reply::json(json!({})));
    let answer = model(Reply::text("Hi."));
    let graph = graph(router, answer, CallOptions::new().nostream());
    let output = graph
        .invoke(
            ChatUpdate::default().messages(vec![Message::human("hi")]),
            RunConfig::default(),
        )
        .await
        .unwrap();
    let kept = output.state.messages.last().unwrap();
    assert!(kept.id().is_some_and(|id| !id.is_empty()));
    // The id is given before the message reaches `add_messages`, which keeps it.
    let mut conversation = Vec::new();
    add_messages(&mut conversation, vec![kept.clone()]).unwrap();
    assert_eq!(conversation[0].id(), kept.id());
}
