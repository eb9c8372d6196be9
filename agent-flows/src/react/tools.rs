//! The ReAct flow's tools: `echo` with its own typed input and output (the seed's
//! `ToolInput` / `ToolOutput`), and the seed's registry, [`TOOL_REGISTRY`] with
//! [`ensure_tools_registered`].
//!
//! [`TOOL_REGISTRY`] is the one process-wide value of the flows crate, because the seed asks
//! for it: a catalogue of tool *factories* by name. A program adds its own tools to it before
//! it opens the flow — no change to the flow — and each flow context builds its
//! [`ToolRegistry`] from it, handing the factories what they depend on (the context's clock,
//! so `datetime` and the flow agree on the time). Registration is idempotent: registering a
//! name again keeps the first tool and says so, and [`ensure_tools_registered`] can run any
//! number of times. A program that wants no global at all gives its own registry to
//! [`ReactContext::with_tools`](super::ReactContext::with_tools).
//!
//! Every tool the flow runs is wrapped so that its arguments are logged masked: secrets (the
//! default keys of [`Redacted`]) and what may carry personal data ([`LOG_MASKED_KEYS`]).

use std::sync::{Arc, RwLock};

use agent_core::Clock;
use agent_tools::builtin::{Calculator, DateTime};
use agent_tools::{
    DEFAULT_SECRET_KEYS, DynTool, Redacted, Tool, ToolError, ToolNode, ToolRegistry,
    is_valid_tool_name,
};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// The most characters `echo` repeats.
pub const MAX_ECHO_CHARS: usize = 2000;

/// The input of [`EchoTool`].
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct EchoInput {
    /// The text to repeat, exactly as it should come back.
    pub text: String,
}

/// The output of [`EchoTool`].
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct EchoOutput {
    /// The text, unchanged.
    pub echo: String,
    /// Its length in characters.
    pub chars: usize,
    /// Its number of words.
    pub words: usize,
}

/// Why `echo` refused.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum EchoError {
    /// Nothing to repeat.
    #[error("there is nothing to echo; give the text to repeat (for example: echo: hello)")]
    Empty,
    /// Too much to repeat.
    #[error("the text has {chars} characters; echo repeats at most {MAX_ECHO_CHARS}")]
    TooLong {
        /// How many characters it had.
        chars: usize,
    },
}

/// `echo`: a pure computation (no I/O) that returns its text with a count of characters and
/// words — the seed's test tool.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct EchoTool;

impl EchoTool {
    /// The echo of `input`, or why not.
    pub fn run(input: &EchoInput) -> Result<EchoOutput, EchoError> {
        let chars = input.text.chars().count();
        if input.text.trim().is_empty() {
            return Err(EchoError::Empty);
        }
        if chars > MAX_ECHO_CHARS {
            return Err(EchoError::TooLong { chars });
        }
        Ok(EchoOutput {
            echo: input.text.clone(),
            chars,
            words: input.text.split_whitespace().count(),
        })
    }
}

impl Tool for EchoTool {
    type Args = EchoInput;
    type Output = EchoOutput;
    type Error = EchoError;

    fn name(&self) -> &str {
        "echo"
    }

    fn description(&self) -> &str {
        "Repeats the given text exactly, with its length in characters and words. Use it when \
         the user asks to echo or repeat something."
    }

    async fn call(&self, args: EchoInput) -> Result<EchoOutput, EchoError> {
        Self::run(&args)
    }
}

/// What tool factories may depend on.
#[derive(Clone, Debug)]
pub struct ToolDeps {
    /// The flow's clock.
    pub clock: Arc<dyn Clock>,
}

/// Makes a tool for a flow context.
pub type ToolFactory = Arc<dyn Fn(&ToolDeps) -> Arc<dyn DynTool> + Send + Sync>;

/// What [`ToolCatalog::register`] did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Registration {
    /// The tool was added.
    Added,
    /// A tool of that name was there already; it stays.
    AlreadyRegistered,
}

/// Tool factories by name, in registration order; see the module docs.
pub struct ToolCatalog {
    entries: RwLock<Vec<(String, ToolFactory)>>,
}

impl std::fmt::Debug for ToolCatalog {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ToolCatalog")
            .field("tools", &self.names())
            .finish()
    }
}

impl Default for ToolCatalog {
    fn default() -> Self {
        ToolCatalog::new()
    }
}

impl ToolCatalog {
    /// An empty catalogue.
    pub const fn new() -> Self {
        ToolCatalog {
            entries: RwLock::new(Vec::new()),
        }
    }

    fn read(&self) -> std::sync::RwLockReadGuard<'_, Vec<(String, ToolFactory)>> {
        // Registration cannot leave the list half-written, so a poisoned lock is taken over.
        self.entries.read().unwrap_or_else(|e| e.into_inner())
    }

    /// Registers the tool `factory` makes under `name`; idempotent (a taken name keeps its
    /// first tool). Fails when the name is not one providers accept.
    pub fn register(
        &self,
        name: &str,
        factory: impl Fn(&ToolDeps) -> Arc<dyn DynTool> + Send + Sync + 'static,
    ) -> Result<Registration, ToolError> {
        if !is_valid_tool_name(name) {
            return Err(ToolError::InvalidName {
                name: name.to_owned(),
            });
        }
        let mut entries = self.entries.write().unwrap_or_else(|e| e.into_inner());
        if entries.iter().any(|(n, _)| n == name) {
            return Ok(Registration::AlreadyRegistered);
        }
        entries.push((name.to_owned(), Arc::new(factory)));
        Ok(Registration::Added)
    }

    /// Registers a tool that depends on nothing (each context shares it).
    pub fn register_tool(&self, tool: impl DynTool) -> Result<Registration, ToolError> {
        let name = tool.name().to_owned();
        let tool: Arc<dyn DynTool> = Arc::new(tool);
        self.register(&name, move |_| tool.clone())
    }

    /// The names, in registration order.
    pub fn names(&self) -> Vec<String> {
        self.read().iter().map(|(n, _)| n.clone()).collect()
    }

    /// Whether a tool is registered under `name`.
    pub fn contains(&self, name: &str) -> bool {
        self.read().iter().any(|(n, _)| n == name)
    }

    /// A registry of every tool, made for `deps`. Fails when a factory makes a tool whose
    /// name is not the one it was registered under.
    pub fn registry(&self, deps: &ToolDeps) -> Result<ToolRegistry, ToolError> {
        let mut registry = ToolRegistry::new();
        for (name, factory) in self.read().iter() {
            let tool = factory(deps);
            if tool.name() != name {
                return Err(ToolError::InvalidName {
                    name: format!(
                        "{} (registered as `{name}`; a factory must make the tool it was registered for)",
                        tool.name()
                    ),
                });
            }
            registry.register_arc(tool)?;
        }
        Ok(registry)
    }
}

/// The seed's tool registry; see the module docs.
pub static TOOL_REGISTRY: ToolCatalog = ToolCatalog::new();

/// Registers the built-in tools in [`TOOL_REGISTRY`] — `echo`, `calculator`, `datetime` (on
/// the context's clock) — unless already there. Returns how many it added (0 after the first
/// call).
pub fn ensure_tools_registered() -> usize {
    register_builtins(&TOOL_REGISTRY)
}

/// Registers the built-in tools in `catalog`; see [`ensure_tools_registered`].
pub fn register_builtins(catalog: &ToolCatalog) -> usize {
    let results = [
        catalog.register_tool(EchoTool),
        catalog.register_tool(Calculator),
        catalog.register("datetime", |deps| {
            Arc::new(DateTime::with_clock(deps.clock.clone()))
        }),
    ];
    results
        .iter()
        .filter(|r| matches!(r, Ok(Registration::Added)))
        .count()
}

/// Argument names masked in logs besides secrets: what may carry personal data.
pub const LOG_MASKED_KEYS: &[&str] = &[
    "text", "query", "message", "content", "email", "phone", "name", "address", "body",
];

/// The node that runs the flow's tools: every tool's arguments masked in logs, a timeout per
/// call, errors reported as results.
pub fn tool_node(registry: ToolRegistry) -> ToolNode {
    let keys: Vec<&str> = DEFAULT_SECRET_KEYS
        .iter()
        .chain(LOG_MASKED_KEYS)
        .copied()
        .collect();
    let registry =
        registry.map_tools(|tool| Arc::new(Redacted::with_keys(tool, keys.iter().copied())));
    ToolNode::new(registry).call_timeout(super::TOOL_TIMEOUT)
}

#[cfg(test)]
mod tests {
    use agent_core::{BoxResult, ManualClock};
    use serde_json::json;

    use super::*;

    fn deps() -> ToolDeps {
        ToolDeps {
            clock: Arc::new(ManualClock::at_unix_seconds(1_784_116_800)),
        }
    }

    #[tokio::test]
    async fn echo_is_typed_and_validates() {
        let out = DynTool::call(&EchoTool, json!({"text": "hola  mundo"}))
            .await
            .unwrap();
        assert_eq!(out, json!({"echo": "hola  mundo", "chars": 11, "words": 2}));
        let error = DynTool::call(&EchoTool, json!({"text": "  "}))
            .await
            .unwrap_err();
        assert_eq!(
            error.to_string(),
            "tool `echo` failed: there is nothing to echo; give the text to repeat (for example: echo: hello)"
        );
        let long = "é".repeat(MAX_ECHO_CHARS + 1);
        assert_eq!(
            EchoTool::run(&EchoInput { text: long }),
            Err(EchoError::TooLong { chars: 2001 })
        );
        let error = DynTool::call(&EchoTool, json!({"text": "x", "extra": 1}))
            .await
            .unwrap_err();
        assert!(
            matches!(error, ToolError::InvalidArguments { .. }),
            "{error}"
        );
        assert_eq!(
            DynTool::spec(&EchoTool).parameters["required"],
            json!(["text"])
        );
    }

    #[tokio::test]
    async fn registration_is_idempotent_and_extendable() {
        let catalog = ToolCatalog::new();
        assert_eq!(register_builtins(&catalog), 3);
        assert_eq!(register_builtins(&catalog), 0);
        assert_eq!(catalog.names(), ["echo", "calculator", "datetime"]);

        let shout = || {
            agent_tools::tool_fn("shout", "Says it louder.", |input: EchoInput| async move {
                BoxResult::Ok(input.text.to_uppercase())
            })
        };
        assert_eq!(catalog.register_tool(shout()).unwrap(), Registration::Added);
        assert_eq!(
            catalog.register_tool(shout()).unwrap(),
            Registration::AlreadyRegistered
        );
        assert!(matches!(
            catalog.register("two words", |_| Arc::new(EchoTool)),
            Err(ToolError::InvalidName { .. })
        ));

        let registry = catalog.registry(&deps()).unwrap();
        assert_eq!(
            registry.names().collect::<Vec<_>>(),
            ["echo", "calculator", "datetime", "shout"]
        );
        assert_eq!(
            registry.call("shout", json!({"text": "hi"})).await.unwrap(),
            json!("HI")
        );
        // datetime runs on the context's clock.
        let now = registry
            .call("datetime", json!({"timezone": "UTC"}))
            .await
            .unwrap();
        assert!(
            now["iso8601"]
                .as_str()
                .unwrap()
                .starts_with("2026-07-15T12:00:00"),
            "{now}"
        );

        let liar = ToolCatalog::new();
        liar.register("alias", |_| Arc::new(EchoTool)).unwrap();
        assert!(liar.registry(&deps()).is_err());
    }

    #[test]
    fn the_global_registry_holds_the_builtins() {
        ensure_tools_registered();
        ensure_tools_registered();
        for name in ["echo", "calculator", "datetime"] {
            assert!(TOOL_REGISTRY.contains(name), "{name}");
        }
    }

    #[test]
    fn arguments_are_masked_in_logs() {
        let node = tool_node(ToolRegistry::new().with_tool(EchoTool).unwrap());
        let echo = node.registry().get("echo").unwrap();
        assert_eq!(
            echo.redact_args(&json!({"text": "ana@example.com", "api_key": "sk-1"})),
            json!({"text": "[REDACTED]", "api_key": "[REDACTED]"})
        );
        let calc = tool_node(ToolRegistry::new().with_tool(Calculator).unwrap());
        let calc = calc.registry().get("calculator").unwrap();
        assert_eq!(
            calc.redact_args(&json!({"expression": "1+1"})),
            json!({"expression": "1+1"})
        );
    }
}
