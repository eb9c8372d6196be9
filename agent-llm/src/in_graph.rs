//! Chat models inside graph nodes: tokens reach the run's stream while the model is still
//! generating, model calls appear in the event stream, and token usage adds up per run.
//!
//! agent-core knows nothing of LLMs; it offers the node context's writers. This module plugs
//! chat-model chunks into them: each chunk goes to the `messages` mode (as JSON of
//! [`ChatChunk`](crate::ChatChunk)) and to `on_chat_model_stream` events. A call tagged
//! [`TAG_NOSTREAM`](agent_core::TAG_NOSTREAM) (its options' or its model's tags) is not
//! streamed as chat messages; its reply's id is the id of its chunks.

use std::time::Instant;

use agent_core::{NodeContext, StreamMode};
use async_trait::async_trait;
use futures::StreamExt;

use crate::error::LlmError;
use crate::message::Message;
use crate::model::ChatModel;
use crate::options::CallOptions;
use crate::reducer::new_message_id;
use crate::stream::{ChatChunk, ChatResponse, ChunkAggregator};

/// Calls `model` from inside a graph node. When the caller streams `messages` or `events`,
/// the reply is streamed and forwarded chunk by chunk; otherwise it is a plain `invoke`.
/// Either way the usage is added to the run's counters (`input_tokens`, `output_tokens`).
///
/// The call's tags are the model's ([`ChatModel::tags`]) and the options'
/// ([`CallOptions::tags`]): with [`TAG_NOSTREAM`](agent_core::TAG_NOSTREAM) among them its
/// chunks stay out of the `messages` mode (LangGraph's `nostream`), and its events carry
/// them.
///
/// The reply always has an id, and it is the id its streamed chunks carry (the
/// [`ChatChunk::Start`] that opens them): the provider's response id when it sent one, else
/// a fresh [`new_message_id`]. So the AI message a node stores from the reply is the
/// message a chat client saw streaming, not a second one.
pub async fn invoke_in_node<M: ChatModel + ?Sized>(
    model: &M,
    messages: &[Message],
    options: &CallOptions,
    ctx: &NodeContext,
) -> Result<ChatResponse, LlmError> {
    let mut tags = model.tags();
    for tag in &options.tags {
        if !tags.contains(tag) {
            tags.push(tag.clone());
        }
    }
    let events = ctx.is_streaming(StreamMode::Events);
    let chat = ctx.streams_messages(&tags);
    // A run id only for the event stream: nobody else reads it.
    let run_id = if events {
        ctx.child_run_id()
    } else {
        String::new()
    };
    let name = model.model_name().to_owned();
    let event = |kind: &'static str, data: serde_json::Value| {
        let (name, run_id, tags) = (&name, &run_id, &tags);
        async move {
            ctx.emit_event_tagged(kind, name, Some(run_id), data, tags)
                .await;
        }
    };
    if events {
        event(
            "on_chat_model_start",
            serde_json::json!({ "input": { "messages": messages } }),
        )
        .await;
    }
    let mut response = if events || chat {
        let started = Instant::now();
        let mut stream = model.stream(messages, options).await?;
        let mut aggregator = ChunkAggregator::new(model.provider()).started_at(started);
        let mut opened = false;
        while let Some(chunk) = stream.next().await {
            let mut chunk = chunk?;
            let mut pieces = Vec::with_capacity(2);
            if !opened {
                opened = true;
                // The reply's id opens its chunks, the provider's or a fresh one.
                match &mut chunk {
                    ChatChunk::Start { id, .. } => {
                        if id.as_deref().is_none_or(str::is_empty) {
                            *id = Some(new_message_id());
                        }
                    }
                    _ => pieces.push(ChatChunk::Start {
                        id: Some(new_message_id()),
                        model: None,
                    }),
                }
            }
            pieces.push(chunk);
            for piece in pieces {
                aggregator.push(&piece);
                let json = serde_json::to_value(&piece).unwrap_or(serde_json::Value::Null);
                if events {
                    event(
                        "on_chat_model_stream",
                        serde_json::json!({ "chunk": json.clone() }),
                    )
                    .await;
                }
                if chat {
                    ctx.write_message_tagged(json, &tags).await;
                }
            }
        }
        aggregator.finish()?
    } else {
        model.invoke(messages, options).await?
    };
    if response.message.id.as_deref().is_none_or(str::is_empty) {
        response.message.id = Some(new_message_id());
    }
    ctx.add_usage("input_tokens", response.usage.input_tokens);
    ctx.add_usage("output_tokens", response.usage.output_tokens);
    if events {
        event(
            "on_chat_model_end",
            serde_json::json!({ "output": response.message }),
        )
        .await;
    }
    Ok(response)
}

/// `model.invoke_in(ctx, messages, options)`: [`invoke_in_node`] as a method.
#[async_trait]
pub trait ChatModelNodeExt: ChatModel {
    /// Calls the model from inside a graph node (see [`invoke_in_node`]).
    async fn invoke_in(
        &self,
        ctx: &NodeContext,
        messages: &[Message],
        options: &CallOptions,
    ) -> Result<ChatResponse, LlmError> {
        invoke_in_node(self, messages, options, ctx).await
    }
}

impl<M: ChatModel + ?Sized> ChatModelNodeExt for M {}
