//! # agent-tools: tools for agent graphs
//!
//! LangGraph's tool layer with Rust types:
//!
//! - [`Tool`] is the typed trait authors implement (arguments with a JSON schema, a
//!   serializable output, an error); [`DynTool`] is the object-safe, JSON-in/JSON-out form
//!   registries store. A blanket impl bridges them, [`tool_fn`] makes a tool of an async
//!   closure, and [`macro@tool`] makes one of an `async fn` whose doc comment is the
//!   description.
//! - [`ToolRegistry`] holds tools by name and gives a model their specs
//!   (`model.bind_tools(registry.specs())`).
//! - [`ToolNode`] is the graph node that runs the tool calls of the last AI message,
//!   concurrently, with per-call timeout and retry, answering each call with a `ToolMessage`
//!   (errors included, so the model can correct itself). [`tools_condition`] routes a model
//!   node to it. Both work on any state that implements [`MessagesState`].
//! - Wrappers ([`ToolExt`]): [`Timeout`], [`Retry`], [`Redacted`] (secrets masked in logs).
//! - [`builtin`]: `echo`, `datetime` (IANA zones, DST-aware) and `calculator`.
//! - `mcp` (feature `mcp`): the tools of MCP servers (stdio or streamable HTTP) as tools
//!   here, on the official SDK, `rmcp`; see the module docs.
//! - `a2a` (feature `a2a`): remote agents of the Agent2Agent protocol as tools (their card
//!   discovered, `message/send` or `message/stream`, a question back as the tool's result).
//! - [`schema`]: checks arguments against a tool's JSON schema (what MCP tools are checked
//!   with, having no Rust type).
//! - [`prebuilt`]: [`create_react_agent`], LangGraph's prebuilt ReAct agent (system prompt,
//!   step limit, threads, approval before tools, structured response).
//!
//! # Example: a ReAct agent
//!
//! ```
//! use std::sync::Arc;
//! use agent_core::{GraphState, RunConfig, StateGraph, START, END};
//! use agent_llm::{CallOptions, ChatModel, ChatModelExt, LlmError, Message, Reply, ScriptedModel};
//! use agent_tools::{messages_state, tool, tools_condition, ToolNode, ToolRegistry};
//! use serde_json::json;
//!
//! #[derive(GraphState, Clone, Default, Debug)]
//! struct Agent {
//!     #[reducer(agent_llm::add_messages)]
//!     messages: Vec<Message>,
//! }
//! messages_state!(Agent, messages);
//!
//! /// Multiplies two numbers.
//! #[tool]
//! async fn multiply(a: f64, b: f64) -> Result<f64, String> {
//!     Ok(a * b)
//! }
//!
//! # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let registry = ToolRegistry::builtins().with_tool(multiply)?;
//! let model = Arc::new(
//!     ScriptedModel::new([
//!         Reply::tool_call("multiply", json!({"a": 6, "b": 7})),
//!         Reply::text("6 × 7 = 42"),
//!     ])
//!     .bind_tools(registry.specs()),
//! );
//!
//! let graph = StateGraph::<Agent>::new()
//!     .add_node("agent", move |state: Arc<Agent>| {
//!         let model = model.clone();
//!         async move {
//!             let reply = model.invoke(&state.messages, &CallOptions::default()).await?;
//!             Ok::<_, LlmError>(AgentUpdate::default().messages(vec![reply.into()]))
//!         }
//!     })
//!     .add_node("tools", ToolNode::new(registry))
//!     .add_edge(START, "agent")
//!     .add_conditional_edges("agent", tools_condition, ["tools", END])
//!     .add_edge("tools", "agent")
//!     .compile()?;
//!
//! let input = AgentUpdate::default().messages(vec![Message::human("what is 6 times 7?")]);
//! let out = graph.invoke(input, RunConfig::default()).await?;
//! let kinds: Vec<&str> = out.messages.iter().map(Message::kind).collect();
//! assert_eq!(kinds, ["human", "ai", "tool", "ai"]);
//! assert_eq!(out.messages[2].content(), "42.0");
//! assert_eq!(out.messages[3].content(), "6 × 7 = 42");
//! # Ok(()) }
//! ```

extern crate self as agent_tools;

#[cfg(feature = "a2a")]
pub mod a2a;
pub mod builtin;
mod condition;
mod error;
mod layers;
#[cfg(feature = "mcp")]
pub mod mcp;
pub mod memory;
mod node;
pub mod prebuilt;
mod registry;
pub mod schema;
mod state;
mod tool;
mod tool_context;

/// Turns `async fn name(args...) -> Result<T, E>` into a tool named `name`, described by its
/// doc comment.
///
/// The fn becomes a unit struct of the same name that implements [`Tool`]; its parameters
/// become the fields of the arguments object (their JSON schema comes from `schemars`), and an
/// `# Arguments` section of the doc comment (`` * `a` - what it is ``) describes them to the
/// model. The body stays callable as `name::call(args...)`.
///
/// The return type is `Result<T, E>` (or an alias named like one, such as
/// `std::io::Result<T>`), with `T: Serialize` and `E` an error type or `String`. Parameters
/// are owned types implementing `Deserialize` and `JsonSchema`. Options:
/// `#[tool(name = "other_name", description = "...")]`.
///
/// ```
/// use agent_tools::{tool, DynTool};
///
/// /// Looks up the weather for a city.
/// ///
/// /// # Arguments
/// ///
/// /// * `city` - The city, in English.
/// /// * `celsius` - Whether to answer in degrees Celsius.
/// #[tool]
/// async fn weather(city: String, celsius: Option<bool>) -> Result<String, String> {
///     let unit = if celsius.unwrap_or(true) { "°C" } else { "°F" };
///     Ok(format!("sunny in {city}, 21{unit}"))
/// }
///
/// # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), agent_tools::ToolError> {
/// assert_eq!(weather.name(), "weather");
/// assert_eq!(weather.description(), "Looks up the weather for a city.");
/// let schema = weather.parameters();
/// assert_eq!(schema["required"], serde_json::json!(["city"]));
/// assert_eq!(schema["properties"]["city"]["description"], "The city, in English.");
///
/// let out = weather.call(serde_json::json!({"city": "Oslo"})).await?;
/// assert_eq!(out, "sunny in Oslo, 21°C");
/// assert_eq!(weather::call("Oslo".into(), Some(false)).await.unwrap(), "sunny in Oslo, 21°F");
/// # Ok(()) }
/// ```
pub use agent_macros::tool;

pub use agent_core::BoxResult;
pub use condition::{TOOLS, route_tools, tools_condition, tools_condition_by};
pub use error::{BoxError, ToolError};
pub use layers::{
    DEFAULT_SECRET_KEYS, REDACTED, Redacted, Retry, Timeout, ToolExt, ToolRetryPolicy,
    is_secret_key, redact_secrets,
};
pub use memory::{ManageMemory, SearchMemory};
pub use node::{DEFAULT_MAX_CONCURRENCY, ErrorFormatter, HandleErrors, ToolNode, ToolNodeMarker};
pub use prebuilt::{AgentState, AgentStateUpdate, Approval, create_react_agent};
pub use registry::{ToolRegistry, is_valid_tool_name};
pub use state::{MessagesState, last_ai_message};
pub use tool::{BoxFuture, DynTool, FnTool, Tool, content_of, into_content, parse_args, tool_fn};
pub use tool_context::{current_context, with_context};

/// Paths for generated code (`#[tool]`, `messages_state!`) only; not a public API.
#[doc(hidden)]
pub mod __private {
    pub use agent_core::GraphState;
    pub use agent_llm::Message;
    pub use schemars;
    pub use serde;

    pub use crate::error::BoxError;
    pub use crate::tool::Tool;

    /// Splits a `#[tool]` fn's return type into output and error. Implemented for `Result`
    /// only, so aliases such as `std::io::Result<T>` work too.
    #[diagnostic::on_unimplemented(
        message = "a #[tool] fn must return `Result<T, E>`, not `{Self}`",
        label = "not a `Result`",
        note = "return `Result<T, E>` where `T: serde::Serialize` and `E` is an error type or `String`; wrap an infallible value in `Ok(..)`"
    )]
    pub trait ToolResult {
        /// The output type.
        type Ok;
        /// The error type.
        type Err;
    }

    impl<T, E> ToolResult for Result<T, E> {
        type Ok = T;
        type Err = E;
    }

    /// Checks a `#[tool]` output type, with a message that says what to do.
    #[diagnostic::on_unimplemented(
        message = "the output of a #[tool] fn must be serializable, and `{Self}` is not",
        label = "does not implement `serde::Serialize`",
        note = "derive `serde::Serialize` for it, or return a `String` or `serde_json::Value`"
    )]
    pub trait ToolOutput: serde::Serialize + Send + 'static {}

    impl<T: serde::Serialize + Send + 'static> ToolOutput for T {}

    /// Checks a `#[tool]` error type, with a message that says what to do.
    #[diagnostic::on_unimplemented(
        message = "`{Self}` cannot be the error of a #[tool] fn",
        label = "not convertible into `Box<dyn Error + Send + Sync>`",
        note = "use a type that implements `std::error::Error + Send + Sync + 'static`, or `String`"
    )]
    pub trait ToolFnError: Into<BoxError> + Send + 'static {}

    impl<E: Into<BoxError> + Send + 'static> ToolFnError for E {}

    /// Checks a `#[tool]` argument type, with a message that says what to do.
    #[diagnostic::on_unimplemented(
        message = "`{Self}` cannot be an argument of a #[tool] fn",
        label = "must implement `serde::Deserialize` and `schemars::JsonSchema`",
        note = "derive the one `{Self}` lacks, or both: `#[derive(serde::Deserialize, schemars::JsonSchema)]` (the model sees its JSON schema)"
    )]
    pub trait ToolArg: serde::de::DeserializeOwned + schemars::JsonSchema + 'static {}

    // `do_not_recommend`: a type lacking both derives is one error (this trait's), not one
    // per missing bound. `Send` is not asked here: a type that is not fails the `Send` bound
    // of the tool's future, whose error names the argument.
    #[diagnostic::do_not_recommend]
    impl<T: serde::de::DeserializeOwned + schemars::JsonSchema + 'static> ToolArg for T {}

    /// Compile-time check that `T` satisfies a bound (spanned at the user's type).
    pub const fn assert_output<T: ToolOutput>() {}

    /// Compile-time check that `E` satisfies a bound (spanned at the user's type).
    pub const fn assert_error<E: ToolFnError>() {}

    /// Compile-time check that `A` satisfies a bound (spanned at the user's type).
    pub const fn assert_arg<A: ToolArg>() {}
}

/// The crate README's example compiles and runs as a doctest.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct CrateReadmeDoctests;
