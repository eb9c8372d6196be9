//! What a call asks of a model besides the messages: tools, tool choice, structured output,
//! sampling settings.
//!
//! Providers translate [`CallOptions`] into their own wire format; a field a provider cannot
//! honour is documented on the provider.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// Per-call settings. `Default` asks for nothing special.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct CallOptions {
    /// Tools the model may call.
    pub tools: Vec<ToolSpec>,
    /// Whether and which tool the model must call (providers' default when `None`: auto).
    pub tool_choice: Option<ToolChoice>,
    /// Whether the model may ask for several tool calls in one reply.
    pub parallel_tool_calls: Option<bool>,
    /// Ask for a JSON reply that matches a schema.
    pub response_format: Option<ResponseFormat>,
    /// Sampling temperature.
    pub temperature: Option<f32>,
    /// Upper bound on generated tokens.
    pub max_tokens: Option<u32>,
    /// Stop sequences.
    pub stop: Vec<String>,
    /// Sampling seed, where the provider supports one.
    pub seed: Option<u64>,
    /// Use this model instead of the one the provider was built with.
    pub model: Option<String>,
    /// What the call is for (`router`, `generator`...): a label for logs and traces, and
    /// what rule-based offline models answer by. Never sent to a provider.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task: Option<String>,
    /// Tags of the call (LangChain's run tags): inside a graph node,
    /// [`TAG_NOSTREAM`](agent_core::TAG_NOSTREAM) keeps its tokens out of the run's
    /// `messages` stream (an internal call: a router, a classifier, a verifier); every tag
    /// travels with the call's events. Never sent to a provider.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tags: Vec<String>,
}

impl CallOptions {
    /// Options that ask for nothing special.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds tools the model may call.
    pub fn tools(mut self, tools: impl IntoIterator<Item = ToolSpec>) -> Self {
        self.tools.extend(tools);
        self
    }

    /// Sets the tool choice.
    pub fn tool_choice(mut self, choice: ToolChoice) -> Self {
        self.tool_choice = Some(choice);
        self
    }

    /// Allows or forbids several tool calls in one reply.
    pub fn parallel_tool_calls(mut self, allow: bool) -> Self {
        self.parallel_tool_calls = Some(allow);
        self
    }

    /// Asks for a JSON reply matching `format`.
    pub fn response_format(mut self, format: ResponseFormat) -> Self {
        self.response_format = Some(format);
        self
    }

    /// Sets the temperature.
    pub fn temperature(mut self, temperature: f32) -> Self {
        self.temperature = Some(temperature);
        self
    }

    /// Sets the maximum number of generated tokens.
    pub fn max_tokens(mut self, max_tokens: u32) -> Self {
        self.max_tokens = Some(max_tokens);
        self
    }

    /// Sets the seed.
    pub fn seed(mut self, seed: u64) -> Self {
        self.seed = Some(seed);
        self
    }

    /// Adds a stop sequence.
    pub fn stop(mut self, stop: impl Into<String>) -> Self {
        self.stop.push(stop.into());
        self
    }

    /// Overrides the model name for this call.
    pub fn model(mut self, model: impl Into<String>) -> Self {
        self.model = Some(model.into());
        self
    }

    /// Labels the call with what it is for (see [`CallOptions::task`]).
    pub fn task(mut self, task: impl Into<String>) -> Self {
        self.task = Some(task.into());
        self
    }

    /// Adds a tag to the call (see [`CallOptions::tags`]).
    pub fn tag(mut self, tag: impl Into<String>) -> Self {
        let tag = tag.into();
        if !self.tags.contains(&tag) {
            self.tags.push(tag);
        }
        self
    }

    /// Tags the call [`TAG_NOSTREAM`](agent_core::TAG_NOSTREAM) (LangGraph's `nostream`):
    /// its reply is not the answer a user reads, so a graph run does not stream its tokens
    /// as chat messages.
    pub fn nostream(self) -> Self {
        self.tag(agent_core::TAG_NOSTREAM)
    }

    /// `self` with `other` laid over it: tools, stop sequences and tags are concatenated
    /// (`self`'s first), every other field of `other` wins where it is set.
    pub fn merged(&self, other: &CallOptions) -> CallOptions {
        let mut tools = self.tools.clone();
        tools.extend(other.tools.iter().cloned());
        let mut stop = self.stop.clone();
        stop.extend(other.stop.iter().cloned());
        CallOptions {
            tools,
            tool_choice: other
                .tool_choice
                .clone()
                .or_else(|| self.tool_choice.clone()),
            parallel_tool_calls: other.parallel_tool_calls.or(self.parallel_tool_calls),
            response_format: other
                .response_format
                .clone()
                .or_else(|| self.response_format.clone()),
            temperature: other.temperature.or(self.temperature),
            max_tokens: other.max_tokens.or(self.max_tokens),
            stop,
            seed: other.seed.or(self.seed),
            model: other.model.clone().or_else(|| self.model.clone()),
            task: other.task.clone().or_else(|| self.task.clone()),
            tags: self
                .tags
                .iter()
                .chain(other.tags.iter().filter(|t| !self.tags.contains(t)))
                .cloned()
                .collect(),
        }
    }
}

/// A tool as the model sees it: a name, what it does and a JSON schema of its arguments.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ToolSpec {
    /// The name the model uses to call it.
    pub name: String,
    /// What it does, for the model.
    pub description: String,
    /// JSON schema of the arguments object.
    pub parameters: Value,
}

impl ToolSpec {
    /// A tool spec from its parts.
    pub fn new(name: impl Into<String>, description: impl Into<String>, parameters: Value) -> Self {
        ToolSpec {
            name: name.into(),
            description: description.into(),
            parameters,
        }
    }

    /// A tool spec whose arguments are `T`, described by its schemars schema.
    pub fn for_type<T: JsonSchema>(
        name: impl Into<String>,
        description: impl Into<String>,
    ) -> Self {
        Self::new(name, description, schema_for::<T>())
    }
}

/// Whether and which tool the model must call.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ToolChoice {
    /// The model decides.
    Auto,
    /// The model must not call tools.
    None,
    /// The model must call at least one tool.
    Required,
    /// The model must call this tool.
    Tool(String),
}

/// Ask for a JSON reply that matches a schema (OpenAI `response_format: json_schema`,
/// Anthropic forced tool, Ollama `format`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ResponseFormat {
    /// A name for the schema (letters, digits, `_`, `-`).
    pub name: String,
    /// What the reply is, for the model.
    pub description: Option<String>,
    /// The JSON schema (an object schema: every provider here needs an object at the root).
    pub schema: Value,
    /// Ask for strict schema adherence where the provider has such a mode (OpenAI).
    pub strict: bool,
}

impl ResponseFormat {
    /// A response format for `T`, named after the type.
    pub fn for_type<T: JsonSchema>() -> Self {
        let name: String = T::schema_name()
            .chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                    c
                } else {
                    '_'
                }
            })
            .collect();
        ResponseFormat {
            name,
            description: None,
            schema: schema_for::<T>(),
            strict: false,
        }
    }
}

/// The JSON schema of `T` as providers take it: subschemas inlined, no `$schema` key.
pub fn schema_for<T: JsonSchema>() -> Value {
    let generator = schemars::generate::SchemaSettings::draft2020_12()
        .with(|s| {
            s.inline_subschemas = true;
            s.meta_schema = None;
        })
        .into_generator();
    generator.into_root_schema_for::<T>().to_value()
}
