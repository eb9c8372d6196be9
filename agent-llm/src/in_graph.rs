//! Chat models inside graph nodes: tokens reach the run's stream while the model is still
//! generating, model calls appear in the event stream, and token usage adds up per run.
//!
//! agent-core knows nothing of LLMs; it offers the node context's writers. This module plugs
//! chat-model chunks into them: each chunk goes to the `messages` mode (as JSON of
//! [`ChatChunk`](crate::ChatChunk)) and to `on_chat_model_stream` events.

use std::time::Instant;

use agent_core::{NodeContext, StreamMode};
use async_trait::async_trait;
use futures::StreamExt;

use crate::error::LlmError;
use crate::message::Message;
use crate::model::ChatModel;
use crate::options::CallOptions;
use crate::stream::{ChatResponse, ChunkAggregator};

/// Calls `model` from inside a graph node. When the caller streams `messages` or `events`,
/// the reply is streamed and forwarded chunk by chunk; otherwise it is a plain `invoke`.
/// Either way the usage is added to the run's counters (`input_tokens`, `output_tokens`).
pub async fn invoke_in_node<M: ChatModel + ?Sized>(
    model: &M,
    messages: &[Message],
    options: &CallOptions,
    ctx: &NodeContext,
) -> Result<ChatResponse, LlmError> {
    let events = ctx.is_streaming(StreamMode::Events);
    // A run id only for the event stream: nobody else reads it.
    let run_id = if events {
        ctx.child_run_id()
    } else {
        String::new()
    };
    let name = model.model_name().to_owned();
    if events {
        ctx.emit_event(
            "on_chat_model_start",
            &name,
            Some(&run_id),
            serde_json::json!({ "input": { "messages": messages } }),
        )
        .await;
    }
    let response = if events || ctx.is_streaming(StreamMode::Messages) {
        let started = Instant::now();
        let mut stream = model.stream(messages, options).await?;
        let mut aggregator = ChunkAggregator::new(model.provider()).started_at(started);
        while let Some(chunk) = stream.next().await {
            let chunk = chunk?;
            aggregator.push(&chunk);
            let json = serde_json::to_value(&chunk).unwrap_or(serde_json::Value::Null);
            if events {
                ctx.emit_event(
                    "on_chat_model_stream",
                    &name,
                    Some(&run_id),
                    serde_json::json!({ "chunk": json }),
                )
                .await;
            }
            ctx.write_message(json).await;
        }
        aggregator.finish()?
    } else {
        model.invoke(messages, options).await?
    };
    ctx.add_usage("input_tokens", response.usage.input_tokens);
    ctx.add_usage("output_tokens", response.usage.output_tokens);
    if events {
        ctx.emit_event(
            "on_chat_model_end",
            &name,
            Some(&run_id),
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
