//! [`FlowEnv`]: what a flow is built from — the model that makes its decisions (its own
//! offline model unless one is given), the clock, the flow's options, and tools from outside
//! (an MCP server's, a program's own) for the flows whose model calls tools — so the CLI,
//! the tests and a user's program build every flow the same way.

use std::collections::BTreeMap;
use std::sync::Arc;

use agent_core::{Clock, SystemClock};
use agent_llm::ChatModel;
use agent_tools::DynTool;

use crate::error::FlowError;

/// The environment a flow is built in.
#[derive(Clone)]
pub struct FlowEnv {
    /// The model for every decision the seed gives to an LLM; `None`: the flow's offline
    /// model (deterministic rules, no key, no server).
    pub model: Option<Arc<dyn ChatModel>>,
    /// Where nodes and tools read the time.
    pub clock: Arc<dyn Clock>,
    /// Flow options by name (`form`, `mode`, `user`...): each flow lists the ones it takes.
    pub options: BTreeMap<String, String>,
    /// Tools added to the flow's own (`react`: its model may call them). A flow that takes
    /// none fails to open when some are given, rather than ignoring them.
    pub tools: Vec<Arc<dyn DynTool>>,
}

impl std::fmt::Debug for FlowEnv {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FlowEnv")
            .field(
                "model",
                &self
                    .model
                    .as_ref()
                    .map(|m| format!("{}:{}", m.provider(), m.model_name())),
            )
            .field("clock", &self.clock)
            .field("options", &self.options)
            .field(
                "tools",
                &self.tools.iter().map(|t| t.name()).collect::<Vec<_>>(),
            )
            .finish()
    }
}

impl Default for FlowEnv {
    fn default() -> Self {
        FlowEnv::offline()
    }
}

impl FlowEnv {
    /// Offline models, the system clock, no options.
    pub fn offline() -> Self {
        FlowEnv {
            model: None,
            clock: Arc::new(SystemClock),
            options: BTreeMap::new(),
            tools: Vec::new(),
        }
    }

    /// This environment with `model` making the decisions.
    pub fn with_model(mut self, model: Arc<dyn ChatModel>) -> Self {
        self.model = Some(model);
        self
    }

    /// This environment on `clock`.
    pub fn with_clock(mut self, clock: Arc<dyn Clock>) -> Self {
        self.clock = clock;
        self
    }

    /// This environment with an option set.
    pub fn with_option(mut self, key: impl Into<String>, value: impl Into<String>) -> Self {
        self.options.insert(key.into(), value.into());
        self
    }

    /// This environment with `tools` added to the flow's own (see [`FlowEnv::tools`]).
    pub fn with_tools(mut self, tools: impl IntoIterator<Item = Arc<dyn DynTool>>) -> Self {
        self.tools.extend(tools);
        self
    }

    /// The model to use: the one given, else the flow's offline one.
    pub fn model_or(&self, offline: impl FnOnce() -> Arc<dyn ChatModel>) -> Arc<dyn ChatModel> {
        self.model.clone().unwrap_or_else(offline)
    }

    /// Whether the flow runs on its offline model.
    pub fn is_offline(&self) -> bool {
        self.model.is_none()
    }

    /// An option's value.
    pub fn option(&self, key: &str) -> Option<&str> {
        self.options.get(key).map(String::as_str)
    }

    /// Fails when tools were added, for a flow that takes none.
    pub fn no_tools(&self, flow: &'static str) -> Result<(), FlowError> {
        match self.tools.first() {
            None => Ok(()),
            Some(tool) => Err(FlowError::Setup {
                flow,
                message: format!(
                    "this flow takes no tools from outside (`{}` was given); use the react flow for MCP tools",
                    tool.name()
                ),
            }),
        }
    }

    /// A yes/no option (`1`, `true`, `yes`, `on`, or `0`, `false`, `no`, `off`); `false`
    /// when absent.
    pub fn flag(&self, flow: &'static str, key: &str) -> Result<bool, FlowError> {
        match self.option(key).map(str::to_ascii_lowercase).as_deref() {
            None | Some("0" | "false" | "no" | "off" | "") => Ok(false),
            Some("1" | "true" | "yes" | "on") => Ok(true),
            Some(other) => Err(FlowError::Option {
                flow,
                key: key.to_owned(),
                message: format!(
                    "`{other}` is not yes or no; use 1/0, true/false, yes/no or on/off"
                ),
            }),
        }
    }
}
