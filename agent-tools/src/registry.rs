//! [`ToolRegistry`]: the tools an agent may call, by name, in registration order.
//!
//! It hands the model their specs (`model.bind_tools(registry.specs())`) and hands
//! [`ToolNode`](crate::ToolNode) the tool for each call. Names are checked when a tool is
//! registered (unique, and in the shape providers accept), so a bad name fails at start-up,
//! not in the middle of a conversation.

use std::collections::HashMap;
use std::sync::Arc;

use agent_core::list_names;
use agent_llm::ToolSpec;
use serde_json::Value;

use crate::error::ToolError;
use crate::layers::Redacted;
use crate::tool::DynTool;

/// Tools by name. Cheap to clone (the tools are shared).
///
/// ```
/// use agent_tools::{builtin::{Calculator, Echo}, ToolRegistry};
/// use serde_json::json;
///
/// # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), agent_tools::ToolError> {
/// let registry = ToolRegistry::new().with_tool(Echo)?.with_tool(Calculator)?;
/// assert_eq!(registry.names().collect::<Vec<_>>(), ["echo", "calculator"]);
/// assert_eq!(registry.specs()[1].name, "calculator");
///
/// let out = registry.call("calculator", json!({"expression": "2 * (3 + 4)"})).await?;
/// assert_eq!(out, json!(14));
/// assert!(registry.clone().with_tool(Echo).is_err()); // names are unique
/// # Ok(()) }
/// ```
#[derive(Clone, Default)]
pub struct ToolRegistry {
    tools: Vec<Arc<dyn DynTool>>,
    index: HashMap<String, usize>,
}

impl std::fmt::Debug for ToolRegistry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ToolRegistry")
            .field("tools", &self.names().collect::<Vec<_>>())
            .finish()
    }
}

/// Whether providers accept `name` as a tool name: `^[a-zA-Z0-9_-]{1,64}$`.
pub fn is_valid_tool_name(name: &str) -> bool {
    (1..=64).contains(&name.len())
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

impl ToolRegistry {
    /// An empty registry.
    pub fn new() -> Self {
        ToolRegistry::default()
    }

    /// A registry with the built-in tools: `echo`, `datetime`, `calculator`.
    pub fn builtins() -> Self {
        let mut registry = ToolRegistry::new();
        for tool in crate::builtin::all() {
            // The built-in names are distinct and valid; a failure here would be a bug caught
            // by this crate's tests, so it is skipped rather than unwrapped.
            let _ = registry.register_arc(tool);
        }
        registry
    }

    /// Adds a tool. Fails when the name is taken or not a valid tool name.
    pub fn register(&mut self, tool: impl DynTool) -> Result<&mut Self, ToolError> {
        self.register_arc(Arc::new(tool))
    }

    /// Adds a shared, type-erased tool.
    pub fn register_arc(&mut self, tool: Arc<dyn DynTool>) -> Result<&mut Self, ToolError> {
        let name = tool.name();
        if !is_valid_tool_name(name) {
            return Err(ToolError::InvalidName {
                name: name.to_owned(),
            });
        }
        if self.index.contains_key(name) {
            return Err(ToolError::DuplicateTool {
                name: name.to_owned(),
            });
        }
        self.index.insert(name.to_owned(), self.tools.len());
        self.tools.push(tool);
        Ok(self)
    }

    /// Adds a tool, builder style: `ToolRegistry::new().with_tool(a)?.with_tool(b)?`.
    pub fn with_tool(mut self, tool: impl DynTool) -> Result<Self, ToolError> {
        self.register(tool)?;
        Ok(self)
    }

    /// The tool called `name`.
    pub fn get(&self, name: &str) -> Option<&Arc<dyn DynTool>> {
        self.index.get(name).map(|&i| &self.tools[i])
    }

    /// Whether a tool is called `name`.
    pub fn contains(&self, name: &str) -> bool {
        self.index.contains_key(name)
    }

    /// The names, in registration order.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.tools.iter().map(|tool| tool.name())
    }

    /// The tools, in registration order.
    pub fn iter(&self) -> impl Iterator<Item = &Arc<dyn DynTool>> {
        self.tools.iter()
    }

    /// How many tools there are.
    pub fn len(&self) -> usize {
        self.tools.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.tools.is_empty()
    }

    /// The specs of every tool, in registration order, for `ChatModelExt::bind_tools`.
    pub fn specs(&self) -> Vec<ToolSpec> {
        self.tools.iter().map(|tool| tool.spec()).collect()
    }

    /// Calls the tool `name` with JSON arguments ([`ToolError::UnknownTool`] when there is
    /// none). No timeout, retry or panic catching here; [`ToolNode`](crate::ToolNode) adds
    /// those.
    pub async fn call(&self, name: &str, args: Value) -> Result<Value, ToolError> {
        self.lookup(name)?.call(args).await
    }

    /// The tool called `name`, or [`ToolError::UnknownTool`] listing the ones there are.
    pub fn lookup(&self, name: &str) -> Result<&Arc<dyn DynTool>, ToolError> {
        self.get(name).ok_or_else(|| ToolError::UnknownTool {
            name: name.to_owned(),
            known: list_names(self.names()),
        })
    }

    /// Wraps every tool with `wrap` (a layer applied to the whole registry). `wrap` must keep
    /// each tool's name; the registry keeps looking tools up by their registered names.
    pub fn map_tools(mut self, mut wrap: impl FnMut(Arc<dyn DynTool>) -> Arc<dyn DynTool>) -> Self {
        self.tools = self.tools.into_iter().map(&mut wrap).collect();
        self
    }

    /// Every tool wrapped in [`Redacted`]: secret-looking arguments are masked in logs.
    pub fn redacted(self) -> Self {
        self.map_tools(|tool| Arc::new(Redacted::new(tool)))
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::builtin::{Calculator, DateTime, Echo};

    #[test]
    fn registers_in_order_and_rejects_duplicates() {
        let mut registry = ToolRegistry::new();
        registry
            .register(Echo)
            .unwrap()
            .register(Calculator)
            .unwrap();
        assert_eq!(registry.len(), 2);
        let error = registry.register(Echo).unwrap_err();
        assert_eq!(
            error.to_string(),
            "a tool named `echo` is already registered; tool names must be unique, so rename one of them"
        );
        assert_eq!(registry.len(), 2);
        assert!(registry.contains("echo"));
        assert!(!registry.contains("datetime"));
        assert_eq!(registry.get("calculator").unwrap().name(), "calculator");
    }

    #[test]
    fn rejects_names_providers_refuse() {
        let bad = crate::tool::tool_fn("two words", "x", |_: Value| async { Ok::<_, String>(()) });
        let error = ToolRegistry::new().with_tool(bad).unwrap_err();
        assert!(matches!(error, ToolError::InvalidName { .. }), "{error}");
        assert!(is_valid_tool_name("get_weather-v2"));
        assert!(!is_valid_tool_name(""));
        assert!(!is_valid_tool_name(&"x".repeat(65)));
        assert!(!is_valid_tool_name("météo"));
    }

    #[test]
    fn builtins_and_specs() {
        let registry = ToolRegistry::builtins();
        assert_eq!(
            registry.names().collect::<Vec<_>>(),
            ["echo", "datetime", "calculator"]
        );
        let specs = registry.specs();
        assert_eq!(specs.len(), 3);
        for spec in &specs {
            assert_eq!(spec.parameters["type"], "object", "{}", spec.name);
            assert!(!spec.description.is_empty());
        }
        assert_eq!(
            specs[1].parameters["properties"]["timezone"]["type"],
            "string"
        );
    }

    #[tokio::test]
    async fn call_by_name_and_unknown_names() {
        let registry = ToolRegistry::new()
            .with_tool(Echo)
            .unwrap()
            .with_tool(DateTime::new())
            .unwrap();
        assert_eq!(
            registry.call("echo", json!({"text": "hi"})).await.unwrap(),
            json!("hi")
        );
        let error = registry.call("search", json!({})).await.unwrap_err();
        assert_eq!(
            error.to_string(),
            "`search` is not a valid tool; try one of: `echo`, `datetime`"
        );
    }

    #[test]
    fn redacted_registry_masks_every_tool() {
        let registry = ToolRegistry::builtins().redacted();
        for tool in registry.iter() {
            assert_eq!(
                tool.redact_args(&json!({"token": "t"})),
                json!({"token": "[REDACTED]"})
            );
        }
        assert!(registry.get("echo").is_some());
    }
}
