//! `add_messages` semantics (LangGraph's) and message serialization round trips.

use agent_llm::{
    AiMessage, HumanMessage, LlmError, Message, REMOVE_ALL_MESSAGES, ToolCall, Usage, add_messages,
};
use serde_json::json;

fn ids(messages: &[Message]) -> Vec<&str> {
    messages
        .iter()
        .map(|m| m.id().unwrap_or("<none>"))
        .collect()
}

#[test]
fn appends_new_messages_in_order() {
    let mut current = vec![Message::human("a").with_id("1")];
    add_messages(
        &mut current,
        vec![
            Message::ai("b").with_id("2"),
            Message::human("c").with_id("3"),
        ],
    )
    .unwrap();
    assert_eq!(ids(&current), ["1", "2", "3"]);
    assert_eq!(current[2].content(), "c");
}

#[test]
fn same_id_replaces_in_place() {
    let mut current = vec![
        Message::human("a").with_id("1"),
        Message::ai("b").with_id("2"),
        Message::human("c").with_id("3"),
    ];
    add_messages(&mut current, vec![Message::ai("B!").with_id("2")]).unwrap();
    assert_eq!(ids(&current), ["1", "2", "3"]);
    assert_eq!(current[1].content(), "B!");
}

#[test]
fn messages_without_id_get_a_uuid_v7() {
    let mut current = vec![Message::human("old")];
    add_messages(&mut current, vec![Message::ai("x"), Message::ai("y")]).unwrap();
    assert_eq!(current.len(), 3);
    let got: Vec<&str> = current.iter().map(|m| m.id().unwrap()).collect();
    for id in &got {
        let uuid = uuid::Uuid::parse_str(id).unwrap();
        assert_eq!(uuid.get_version_num(), 7, "{id}");
    }
    assert_ne!(got[1], got[2]);
}

#[test]
fn remove_deletes_and_unknown_id_is_an_error_that_changes_nothing() {
    let mut current = vec![
        Message::human("a").with_id("1"),
        Message::ai("b").with_id("2"),
    ];
    add_messages(&mut current, vec![Message::remove("1")]).unwrap();
    assert_eq!(ids(&current), ["2"]);

    let before = current.clone();
    let err = add_messages(
        &mut current,
        vec![Message::human("new").with_id("9"), Message::remove("nope")],
    )
    .unwrap_err();
    assert!(matches!(&err, LlmError::UnknownMessageId { id } if id == "nope"));
    assert!(
        err.to_string().contains("cannot remove message `nope`"),
        "{err}"
    );
    assert_eq!(
        current, before,
        "a failed update must leave the list untouched"
    );
}

#[test]
fn remove_can_target_a_message_added_earlier_in_the_same_update() {
    let mut current = vec![Message::human("a").with_id("1")];
    add_messages(
        &mut current,
        vec![Message::ai("tmp").with_id("t"), Message::remove("t")],
    )
    .unwrap();
    assert_eq!(ids(&current), ["1"]);
}

#[test]
fn remove_then_readd_keeps_the_position() {
    let mut current = vec![
        Message::human("a").with_id("1"),
        Message::ai("b").with_id("2"),
        Message::human("c").with_id("3"),
    ];
    add_messages(
        &mut current,
        vec![Message::remove("2"), Message::ai("b2").with_id("2")],
    )
    .unwrap();
    assert_eq!(ids(&current), ["1", "2", "3"]);
    assert_eq!(current[1].content(), "b2");
}

#[test]
fn remove_all_clears_and_keeps_what_follows() {
    let mut current = vec![
        Message::human("a").with_id("1"),
        Message::ai("b").with_id("2"),
    ];
    add_messages(
        &mut current,
        vec![
            Message::human("dropped").with_id("x"),
            Message::remove_all(),
            Message::system("fresh start").with_id("s"),
            Message::human("hi").with_id("h"),
        ],
    )
    .unwrap();
    assert_eq!(ids(&current), ["s", "h"]);
    assert_eq!(Message::remove_all().id(), Some(REMOVE_ALL_MESSAGES));

    add_messages(&mut current, vec![Message::remove_all()]).unwrap();
    assert!(current.is_empty());
}

#[test]
fn messages_already_in_the_list_without_id_get_one() {
    let mut current = vec![Message::human("legacy")];
    add_messages(&mut current, vec![]).unwrap();
    assert!(current[0].id().is_some());
}

#[test]
fn reducer_fits_the_agent_core_contract() {
    // agent-core's `#[reducer(path)]` takes `fn(&mut T, T) -> Result<Written, E>` (saying
    // whether it only appended) with `E: std::error::Error + Send + Sync + 'static`.
    fn assert_reducer<T, E: std::error::Error + Send + Sync + 'static>(
        _: fn(&mut T, T) -> Result<agent_core::reducers::Written, E>,
    ) {
    }
    assert_reducer(add_messages);
    fn assert_state<
        T: Clone
            + std::fmt::Debug
            + PartialEq
            + serde::Serialize
            + serde::de::DeserializeOwned
            + Send
            + Sync
            + 'static,
    >() {
    }
    assert_state::<Message>();
    assert_state::<Vec<Message>>();
}

fn sample() -> Vec<Message> {
    let mut ai = AiMessage {
        id: Some("ai-1".into()),
        content: "calling".into(),
        tool_calls: vec![ToolCall::new(
            "call_1",
            "search",
            json!({"q": "rust", "n": 3}),
        )],
        usage: Some(Usage::new(12, 7)),
        ..Default::default()
    };
    ai.extra
        .insert("reasoning_content".into(), json!("the user wants rust"));
    vec![
        Message::system("be brief").with_id("s"),
        Message::human("find rust").with_id("h"),
        Message::Ai(ai),
        Message::tool("call_1", "3 results").with_id("t"),
        Message::tool_error("call_2", "boom").with_id("te"),
        Message::remove("gone"),
    ]
}

#[test]
fn json_round_trip_keeps_extra_fields() {
    let messages = sample();
    let text = serde_json::to_string(&messages).unwrap();
    let back: Vec<Message> = serde_json::from_str(&text).unwrap();
    assert_eq!(back, messages);
    let v: serde_json::Value = serde_json::from_str(&text).unwrap();
    assert_eq!(v[2]["type"], "ai");
    assert_eq!(v[2]["extra"]["reasoning_content"], "the user wants rust");
    assert_eq!(v[2]["tool_calls"][0]["args"]["q"], "rust");
    assert_eq!(v[3]["tool_call_id"], "call_1");
}

#[test]
fn messagepack_round_trip_both_encodings() {
    let messages = sample();
    let named = rmp_serde::to_vec_named(&messages).unwrap();
    assert_eq!(
        rmp_serde::from_slice::<Vec<Message>>(&named).unwrap(),
        messages
    );
    let compact = rmp_serde::to_vec(&messages).unwrap();
    assert_eq!(
        rmp_serde::from_slice::<Vec<Message>>(&compact).unwrap(),
        messages
    );
}

#[test]
fn a_human_message_of_blocks_round_trips_and_old_ones_still_read() {
    let blocks = vec![
        json!({"type": "text", "text": "what is "}),
        json!("this?"),
        json!({"type": "image", "source_type": "url", "url": "https://example.com/a.png"}),
    ];
    let message = Message::from(HumanMessage::blocks(blocks.clone()).with_id("client-1"));
    assert_eq!(message.content(), "what is this?");
    let json = serde_json::to_value(&message).unwrap();
    assert_eq!(json["content_blocks"], json!(blocks));
    assert_eq!(serde_json::from_value::<Message>(json).unwrap(), message);
    for bytes in [
        rmp_serde::to_vec_named(&message).unwrap(),
        rmp_serde::to_vec(&message).unwrap(),
    ] {
        assert_eq!(rmp_serde::from_slice::<Message>(&bytes).unwrap(), message);
    }
    // A message stored before `content_blocks` existed (a checkpoint's named map).
    #[derive(serde::Serialize)]
    struct Before<'a> {
        #[serde(rename = "type")]
        kind: &'a str,
        id: Option<&'a str>,
        content: &'a str,
        name: Option<&'a str>,
        extra: serde_json::Map<String, serde_json::Value>,
    }
    let before = Before {
        kind: "human",
        id: Some("h1"),
        content: "hi",
        name: None,
        extra: Default::default(),
    };
    let read: Message = rmp_serde::from_slice(&rmp_serde::to_vec_named(&before).unwrap()).unwrap();
    assert_eq!(read, Message::human("hi").with_id("h1"));
    let read: Message = serde_json::from_value(serde_json::to_value(&before).unwrap()).unwrap();
    assert_eq!(read, Message::human("hi").with_id("h1"));
}

#[test]
fn accessors() {
    let m = Message::ai_tool_calls([ToolCall::new("c", "echo", json!({}))]);
    assert_eq!(m.kind(), "ai");
    assert_eq!(m.tool_calls().len(), 1);
    assert!(m.as_ai().unwrap().has_tool_calls());
    assert!(Message::human("x").tool_calls().is_empty());
    assert_eq!(Usage::new(1, 2) + Usage::new(3, 4), Usage::new(4, 6));
    assert_eq!(Usage::new(1, 2).total(), 3);
}

#[test]
fn appends_say_so_and_rewrites_do_not() {
    use agent_core::reducers::Written;

    let mut current = vec![Message::human("a").with_id("1")];
    let written = add_messages(&mut current, vec![Message::ai("b"), Message::ai("c")]).unwrap();
    assert_eq!(written, Written::Appended);
    let written = add_messages(&mut current, vec![Message::human("A").with_id("1")]).unwrap();
    assert_eq!(written, Written::Rewritten);
    let written = add_messages(&mut current, vec![Message::remove("1")]).unwrap();
    assert_eq!(written, Written::Rewritten);
    let written = add_messages(&mut current, vec![Message::remove_all()]).unwrap();
    assert_eq!(written, Written::Rewritten);
    let mut unnamed = vec![Message::human("no id")];
    let written = add_messages(&mut unnamed, vec![Message::ai("x").with_id("2")]).unwrap();
    assert_eq!(written, Written::Rewritten, "the old message got an id");
    assert_eq!(unnamed.len(), 2);
}

/// A conversation on a thread: appends are stored as deltas and a replacement or removal
/// later still restores exactly, on every durability.
#[tokio::test]
async fn a_conversation_restores_exactly_after_appends_replacements_and_removals() {
    use std::sync::Arc;

    use agent_core::{
        Durability, END, GraphState, InMemorySaver, ListFilter, RunConfig, START, StateGraph,
    };

    #[derive(GraphState, Clone, Debug, Default, PartialEq)]
    struct Chat {
        #[reducer(agent_llm::add_messages)]
        messages: Vec<Message>,
    }

    for durability in [Durability::Sync, Durability::Async, Durability::Exit] {
        let saver = Arc::new(InMemorySaver::new());
        let graph = StateGraph::new()
            .add_node("reply", |s: Arc<Chat>| async move {
                let n = s.messages.len();
                ChatUpdate::default().messages(vec![Message::ai(format!("reply {n}"))])
            })
            .add_edge(START, "reply")
            .add_edge("reply", END)
            .compile_with(saver)
            .unwrap();
        let config = RunConfig::default()
            .thread_id("chat")
            .durability(durability);
        let turn = |text: &str| ChatUpdate::default().messages(vec![Message::human(text)]);
        for n in 0..4 {
            graph
                .invoke(turn(&format!("question {n}")), config.clone())
                .await
                .unwrap();
        }
        let first_id = {
            let state = graph.get_state(&config).await.unwrap().unwrap().values;
            state.messages[0].id().unwrap().to_owned()
        };
        // Replace the first question in place, then remove the second message.
        graph
            .update_state(
                &config,
                ChatUpdate::default()
                    .messages(vec![Message::human("edited").with_id(first_id.clone())]),
                None,
            )
            .await
            .unwrap();
        let second = graph
            .get_state(&config)
            .await
            .unwrap()
            .unwrap()
            .values
            .messages[1]
            .id()
            .unwrap()
            .to_owned();
        graph
            .update_state(
                &config,
                ChatUpdate::default().messages(vec![Message::remove(second)]),
                None,
            )
            .await
            .unwrap();
        let out = graph
            .invoke(turn("last"), config.clone())
            .await
            .unwrap()
            .state;
        assert_eq!(out.messages.len(), 9, "{durability:?}");
        assert_eq!(out.messages[0].content(), "edited");
        let stored = graph.get_state(&config).await.unwrap().unwrap().values;
        assert_eq!(stored, out, "{durability:?}");
        // Every checkpoint in the history restores (deltas follow their bases).
        let history = graph
            .get_state_history(&config, &ListFilter::default())
            .await
            .unwrap();
        assert!(history.len() >= 6, "{durability:?}: {}", history.len());
    }
}
