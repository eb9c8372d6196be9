//! The crate's one error type, [`ToolError`]: what went wrong, in which tool, and what to do.
//!
//! Tool-call errors (bad arguments, unknown tool, a failing or slow tool) usually do not fail a
//! run: [`ToolNode`](crate::ToolNode) turns them into error [`ToolMessage`]s the model can read
//! and react to, which is why every message is written for a reader that can fix its call.
//!
//! [`ToolMessage`]: agent_llm::ToolMessage

use std::time::Duration;

/// A boxed error from user code (a tool's own error type converts into it).
pub type BoxError = Box<dyn std::error::Error + Send + Sync + 'static>;

/// Everything that can go wrong registering, finding or calling a tool.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ToolError {
    /// The arguments do not match the tool's schema.
    #[error(
        "invalid arguments for tool `{tool}` at `{path}`: {message}; call it again with arguments that match its JSON schema"
    )]
    InvalidArguments {
        /// The tool.
        tool: String,
        /// Where in the arguments the problem is, as a serde path (`.` for the root,
        /// `items[2].name` for a nested field).
        path: String,
        /// What serde said.
        message: String,
    },

    /// The model asked for a tool nobody registered.
    #[error("`{name}` is not a valid tool; try one of: {known}")]
    UnknownTool {
        /// The name asked for.
        name: String,
        /// The names that are registered.
        known: String,
    },

    /// The tool ran and returned an error.
    #[error("tool `{tool}` failed: {source}")]
    Failed {
        /// The tool.
        tool: String,
        /// The tool's own error.
        #[source]
        source: BoxError,
    },

    /// The tool did not finish in time.
    #[error(
        "tool `{tool}` timed out after {after:?}; try again later, with a smaller request, or raise the call timeout"
    )]
    TimedOut {
        /// The tool.
        tool: String,
        /// The timeout in force.
        after: Duration,
    },

    /// Every attempt of a retried call failed.
    #[error("tool `{tool}` gave up after {attempts} attempts: {last}")]
    RetriesExhausted {
        /// The tool.
        tool: String,
        /// How many attempts ran.
        attempts: u32,
        /// The last attempt's error.
        #[source]
        last: Box<ToolError>,
    },

    /// The tool panicked; the panic was caught so the other calls and the run go on.
    #[error("tool `{tool}` panicked: {message}; this is a bug in the tool")]
    Panicked {
        /// The tool.
        tool: String,
        /// The panic payload, when it was a string.
        message: String,
    },

    /// The tool's output could not be turned into JSON.
    #[error(
        "tool `{tool}` returned a value that cannot be serialized to JSON: {source}; make its output type serialize (maps need string keys)"
    )]
    InvalidOutput {
        /// The tool.
        tool: String,
        /// What serde_json said.
        #[source]
        source: serde_json::Error,
    },

    /// A second tool with the same name was registered.
    #[error(
        "a tool named `{name}` is already registered; tool names must be unique, so rename one of them"
    )]
    DuplicateTool {
        /// The name used twice.
        name: String,
    },

    /// A tool name the model providers would reject.
    #[error(
        "invalid tool name `{name}`: use 1 to 64 ASCII letters, digits, `_` or `-` (what OpenAI, Anthropic and Ollama accept)"
    )]
    InvalidName {
        /// The name given.
        name: String,
    },

    /// A tool node ran on messages that hold no AI message.
    #[error(
        "tool node found no AI message in the state ({count} messages); route to it only after a model replied with tool calls, e.g. with `tools_condition`"
    )]
    NoAiMessage {
        /// How many messages the state held.
        count: usize,
    },

    /// The calculator could not evaluate an expression.
    #[error(
        "cannot evaluate `{expression}`: {message} at position {position}; fix the expression and call again"
    )]
    Expression {
        /// The expression as given.
        expression: String,
        /// 1-based character position of the problem.
        position: usize,
        /// What is wrong there.
        message: String,
    },

    /// `datetime` got a time zone name the bundled database does not know.
    #[error(
        "unknown time zone `{zone}`: {message}; use an IANA name such as `Europe/Madrid`, `America/New_York` or `UTC`"
    )]
    UnknownTimeZone {
        /// The name given.
        zone: String,
        /// What jiff said.
        message: String,
    },

    /// `datetime` got a format string it cannot use.
    #[error(
        "invalid time format `{format}`: {message}; use strftime directives such as `%Y-%m-%d %H:%M`"
    )]
    InvalidFormat {
        /// The format given.
        format: String,
        /// What jiff said.
        message: String,
    },

    /// A prebuilt agent was configured in a way that cannot work.
    #[error("create_react_agent: {message}")]
    AgentSetup {
        /// What is wrong and what to do.
        message: String,
    },

    /// The prebuilt agent's graph did not compile.
    #[error("create_react_agent: {0}")]
    AgentGraph(#[from] agent_core::GraphError),
}

impl ToolError {
    /// The tool the error is about, when there is one.
    pub fn tool(&self) -> Option<&str> {
        match self {
            ToolError::InvalidArguments { tool, .. }
            | ToolError::Failed { tool, .. }
            | ToolError::TimedOut { tool, .. }
            | ToolError::RetriesExhausted { tool, .. }
            | ToolError::Panicked { tool, .. }
            | ToolError::InvalidOutput { tool, .. } => Some(tool),
            ToolError::UnknownTool { name, .. } => Some(name),
            _ => None,
        }
    }

    /// Whether retrying the same call might succeed: time-outs and the tool's own errors.
    /// Bad arguments, unknown tools, panics and unserializable output fail the same way again.
    pub fn is_transient(&self) -> bool {
        match self {
            ToolError::TimedOut { .. } => true,
            // The built-in tools fail deterministically; a user tool's error may be transient.
            ToolError::Failed { source, .. } => !source.is::<ToolError>(),
            _ => false,
        }
    }
}

/// A tool call is retried by default when the error is [transient](ToolError::is_transient).
impl agent_core::Retryable for ToolError {
    fn retry_by_default(&self) -> bool {
        self.is_transient()
    }
}
