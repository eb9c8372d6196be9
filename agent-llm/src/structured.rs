//! Typed structured output: ask a model for JSON matching a Rust type's schema and parse it,
//! with one corrective retry that shows the model why its reply did not fit.

use std::any::type_name;
use std::fmt;
use std::marker::PhantomData;

use agent_core::NodeContext;
use schemars::JsonSchema;
use serde::de::DeserializeOwned;

use crate::error::LlmError;
use crate::message::{Message, Usage};
use crate::model::ChatModel;
use crate::options::{CallOptions, ResponseFormat};
use crate::stream::ChatResponse;

/// How many replies a structured call tries: the first and one corrective retry.
const ATTEMPTS: u32 = 2;

/// A model that answers with a `T`; see
/// [`ChatModelExt::with_structured_output`](crate::ChatModelExt::with_structured_output).
pub struct StructuredModel<M, T> {
    inner: M,
    format: ResponseFormat,
    _type: PhantomData<fn() -> T>,
}

impl<M: Clone, T> Clone for StructuredModel<M, T> {
    fn clone(&self) -> Self {
        StructuredModel {
            inner: self.inner.clone(),
            format: self.format.clone(),
            _type: PhantomData,
        }
    }
}

impl<M: fmt::Debug, T> fmt::Debug for StructuredModel<M, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("StructuredModel")
            .field("inner", &self.inner)
            .field("type", &type_name::<T>())
            .field("format", &self.format.name)
            .finish()
    }
}

/// A parsed structured reply with the raw reply it came from.
#[derive(Clone, Debug, PartialEq)]
pub struct StructuredReply<T> {
    /// The parsed value.
    pub value: T,
    /// The reply that parsed.
    pub response: ChatResponse,
    /// How many replies were needed (1, or 2 after a corrective retry).
    pub attempts: u32,
    /// Tokens of all attempts together.
    pub usage: Usage,
}

impl<M: ChatModel, T: JsonSchema + DeserializeOwned> StructuredModel<M, T> {
    /// Wraps `inner`; the schema is generated from `T`.
    pub fn new(inner: M) -> Self {
        StructuredModel {
            inner,
            format: ResponseFormat::for_type::<T>(),
            _type: PhantomData,
        }
    }

    /// Asks for strict schema adherence where the provider supports it (OpenAI `strict`).
    pub fn strict(mut self, strict: bool) -> Self {
        self.format.strict = strict;
        self
    }

    /// Describes the expected reply to the model.
    pub fn description(mut self, description: impl Into<String>) -> Self {
        self.format.description = Some(description.into());
        self
    }

    /// Sends `schema` instead of the one generated from `T`: a tighter schema built at run
    /// time (the tools of a registry, an enum of known names...) for models that need the
    /// grammar to keep to the point. Replies must still deserialize into `T`.
    pub fn with_schema(mut self, schema: serde_json::Value) -> Self {
        self.format.schema = schema;
        self
    }

    /// The response format sent to the provider.
    pub fn format(&self) -> &ResponseFormat {
        &self.format
    }

    /// Asks for a `T`.
    pub async fn invoke(&self, messages: &[Message]) -> Result<T, LlmError> {
        Ok(self
            .invoke_with(messages, &CallOptions::default())
            .await?
            .value)
    }

    /// Asks for a `T` with extra options, and returns the raw reply too.
    pub async fn invoke_with(
        &self,
        messages: &[Message],
        options: &CallOptions,
    ) -> Result<StructuredReply<T>, LlmError> {
        self.ask(messages, options, None).await
    }

    /// Asks for a `T` from inside a graph node: the call shows in the run's event stream,
    /// its tokens in the `messages` stream, and its usage in the run's counters (see
    /// [`invoke_in_node`](crate::invoke_in_node)).
    pub async fn invoke_in(
        &self,
        ctx: &NodeContext,
        messages: &[Message],
        options: &CallOptions,
    ) -> Result<StructuredReply<T>, LlmError> {
        self.ask(messages, options, Some(ctx)).await
    }

    /// The structured-output loop; inside a node when `ctx` is given.
    async fn ask(
        &self,
        messages: &[Message],
        options: &CallOptions,
        ctx: Option<&NodeContext>,
    ) -> Result<StructuredReply<T>, LlmError> {
        let mut options = options.clone().response_format(self.format.clone());
        if options.task.is_none() {
            options.task = Some(self.format.name.clone());
        }
        let mut conversation = messages.to_vec();
        let mut usage = Usage::default();
        let mut attempt = 0;
        loop {
            attempt += 1;
            let response = match ctx {
                Some(ctx) => {
                    crate::in_graph::invoke_in_node(&self.inner, &conversation, &options, ctx)
                        .await?
                }
                None => self.inner.invoke(&conversation, &options).await?,
            };
            usage += response.usage;
            match parse_json::<T>(response.text()) {
                Ok(value) => {
                    return Ok(StructuredReply {
                        value,
                        response,
                        attempts: attempt,
                        usage,
                    });
                }
                Err(reason) if attempt < ATTEMPTS => {
                    tracing::debug!(
                        target: "agent_llm",
                        r#type = type_name::<T>(),
                        %reason,
                        "structured output did not parse; asking the model to correct it"
                    );
                    conversation.push(Message::ai(response.text()));
                    conversation.push(Message::human(format!(
                        "Your reply could not be used: {reason}. Reply again with only a JSON \
                         value that matches the requested schema, without any other text."
                    )));
                }
                Err(reason) => {
                    return Err(LlmError::StructuredOutput {
                        type_name: type_name::<T>(),
                        attempts: attempt,
                        reason,
                        raw: response.message.content,
                        usage,
                    });
                }
            }
        }
    }
}

/// Parses a reply as `T`, tolerating surrounding whitespace and a Markdown code fence.
fn parse_json<T: DeserializeOwned>(text: &str) -> Result<T, String> {
    let mut body = text.trim();
    if let Some(rest) = body.strip_prefix("```") {
        let rest = rest.trim_start_matches(|c: char| c.is_ascii_alphanumeric());
        body = rest.strip_suffix("```").unwrap_or(rest).trim();
    }
    if body.is_empty() {
        return Err("the reply was empty".into());
    }
    serde_json::from_str(body).map_err(|e| format!("it does not match the schema ({e})"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(serde::Deserialize, Debug, PartialEq)]
    struct P {
        x: i32,
    }

    #[test]
    fn parses_fenced_json() {
        assert_eq!(parse_json::<P>("```json\n{\"x\":1}\n```"), Ok(P { x: 1 }));
        assert_eq!(parse_json::<P>("  {\"x\":2} "), Ok(P { x: 2 }));
        assert!(
            parse_json::<P>("{\"y\":2}")
                .unwrap_err()
                .contains("missing field `x`")
        );
        assert!(parse_json::<P>("").is_err());
    }
}
