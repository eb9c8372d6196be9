//! The flows' one error type: a graph that failed, a model that could not be set up, an
//! option a flow does not have, a bad form file... each says what to do.

use agent_core::GraphError;
use agent_llm::LlmError;

/// Everything that can go wrong building or running a flow.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum FlowError {
    /// No flow has this name.
    #[error("unknown flow `{name}`; known flows: {known}")]
    UnknownFlow {
        /// The name asked for.
        name: String,
        /// The registry's names.
        known: String,
    },
    /// An option the flow does not take, or a value it cannot use.
    #[error("flow `{flow}`: option `{key}`: {message}")]
    Option {
        /// The flow.
        flow: &'static str,
        /// The option.
        key: String,
        /// What is wrong and what it accepts.
        message: String,
    },
    /// The flow's settings (a form file, a data set...) could not be read.
    #[error("flow `{flow}`: {message}")]
    Setup {
        /// The flow.
        flow: &'static str,
        /// What went wrong and how to fix it.
        message: String,
    },
    /// The input cannot be used (empty, not text...).
    #[error("invalid input: {0}")]
    Input(String),
    /// Building or running the graph failed.
    #[error(transparent)]
    Graph(#[from] GraphError),
    /// A model could not be set up.
    #[error(transparent)]
    Model(#[from] LlmError),
}
