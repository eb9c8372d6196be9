//! The two tool traits: [`Tool`], typed, for authors; [`DynTool`], erased and object safe, for
//! storage and for calls with JSON arguments. A blanket impl bridges them (rig's shape), and
//! [`tool_fn`] turns an async closure into a [`Tool`].
//!
//! The bridge is where JSON meets types: arguments are deserialized into [`Tool::Args`] (a
//! mismatch is [`ToolError::InvalidArguments`] with the serde path, never a panic), the
//! output is serialized to JSON, and the tool's own error becomes [`ToolError::Failed`].

use std::borrow::Cow;
use std::future::Future;
use std::marker::PhantomData;
use std::sync::Arc;

use agent_llm::ToolSpec;
use schemars::JsonSchema;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::{Map, Value};

use crate::error::{BoxError, ToolError};

/// A boxed, `Send` future borrowing for `'a`; what [`DynTool::call`] returns.
pub type BoxFuture<'a, T> = futures::future::BoxFuture<'a, T>;

/// A typed tool: arguments in, output or error out.
///
/// Implement it for a struct (or write an `async fn` with `#[tool]`, or use [`tool_fn`]); the
/// blanket impl makes every `Tool` a [`DynTool`], so it can go into a
/// [`ToolRegistry`](crate::ToolRegistry).
///
/// ```
/// use agent_tools::{DynTool, Tool};
/// use schemars::JsonSchema;
/// use serde::Deserialize;
///
/// #[derive(Deserialize, JsonSchema)]
/// struct AddArgs {
///     /// The first addend.
///     a: i64,
///     /// The second addend.
///     b: i64,
/// }
///
/// struct Add;
///
/// impl Tool for Add {
///     type Args = AddArgs;
///     type Output = i64;
///     type Error = std::convert::Infallible;
///
///     fn name(&self) -> &str { "add" }
///     fn description(&self) -> &str { "Adds two integers." }
///     async fn call(&self, args: AddArgs) -> Result<i64, Self::Error> {
///         Ok(args.a + args.b)
///     }
/// }
///
/// # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), agent_tools::ToolError> {
/// let add: &dyn DynTool = &Add;
/// assert_eq!(add.call(serde_json::json!({"a": 2, "b": 3})).await?, 5);
/// # Ok(()) }
/// ```
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not a tool",
    note = "implement `agent_tools::Tool` for it, mark an `async fn` with `#[agent_tools::tool]`, or wrap a closure with `agent_tools::tool_fn`"
)]
pub trait Tool: Send + Sync + 'static {
    /// The arguments, deserialized from the model's JSON; their schema is what the model sees.
    type Args: DeserializeOwned + JsonSchema + Send + 'static;
    /// What the tool returns; serialized to JSON (a string output becomes the text as is).
    type Output: Serialize + Send + 'static;
    /// The tool's error (`String`, `&'static str` and any `std::error::Error` work).
    type Error: Into<BoxError> + Send + 'static;

    /// The name the model calls it by (1 to 64 ASCII letters, digits, `_`, `-`).
    fn name(&self) -> &str;

    /// What it does, for the model: when to call it and what it returns.
    fn description(&self) -> &str;

    /// The JSON schema of the arguments (by default, from [`Tool::Args`]'s `JsonSchema`).
    fn parameters(&self) -> Value {
        agent_llm::schema_for::<Self::Args>()
    }

    /// Runs the tool.
    fn call(
        &self,
        args: Self::Args,
    ) -> impl Future<Output = Result<Self::Output, Self::Error>> + Send;
}

/// A tool as registries store it: object safe, JSON in, JSON out.
///
/// Every [`Tool`] is one through a blanket impl; the wrappers in this crate
/// ([`Timeout`](crate::Timeout), [`Retry`](crate::Retry), [`Redacted`](crate::Redacted))
/// implement it around another `DynTool`.
pub trait DynTool: Send + Sync + 'static {
    /// The name the model calls it by.
    fn name(&self) -> &str;

    /// What it does, for the model.
    fn description(&self) -> &str;

    /// The JSON schema of the arguments object.
    fn parameters(&self) -> Value;

    /// Calls the tool with JSON arguments.
    fn call(&self, args: Value) -> BoxFuture<'_, Result<Value, ToolError>>;

    /// The arguments as they may appear in logs and traces. Unchanged by default; wrap the
    /// tool in [`Redacted`](crate::Redacted) to mask secrets.
    fn redact_args(&self, args: &Value) -> Value {
        args.clone()
    }

    /// The spec a model needs to call it (for `ChatModelExt::bind_tools`).
    fn spec(&self) -> ToolSpec {
        ToolSpec::new(self.name(), self.description(), self.parameters())
    }
}

impl<T: Tool> DynTool for T {
    fn name(&self) -> &str {
        Tool::name(self)
    }

    fn description(&self) -> &str {
        Tool::description(self)
    }

    fn parameters(&self) -> Value {
        Tool::parameters(self)
    }

    fn call(&self, args: Value) -> BoxFuture<'_, Result<Value, ToolError>> {
        Box::pin(async move {
            let args: T::Args = parse_args(Tool::name(self), args)?;
            let output = Tool::call(self, args)
                .await
                .map_err(|error| ToolError::Failed {
                    tool: Tool::name(self).to_owned(),
                    source: error.into(),
                })?;
            output_value(output).map_err(|source| ToolError::InvalidOutput {
                tool: Tool::name(self).to_owned(),
                source,
            })
        })
    }
}

impl<T: DynTool + ?Sized> DynTool for Arc<T> {
    fn name(&self) -> &str {
        (**self).name()
    }

    fn description(&self) -> &str {
        (**self).description()
    }

    fn parameters(&self) -> Value {
        (**self).parameters()
    }

    fn call(&self, args: Value) -> BoxFuture<'_, Result<Value, ToolError>> {
        (**self).call(args)
    }

    fn redact_args(&self, args: &Value) -> Value {
        (**self).redact_args(args)
    }

    fn spec(&self) -> ToolSpec {
        (**self).spec()
    }
}

/// Deserializes a tool's arguments; a mismatch names the tool and the serde path.
///
/// `null` counts as `{}` (some models send it for tools without arguments).
pub fn parse_args<A: DeserializeOwned>(tool: &str, args: Value) -> Result<A, ToolError> {
    let args = match args {
        Value::Null => Value::Object(Map::new()),
        other => other,
    };
    serde_path_to_error::deserialize(args).map_err(|error| ToolError::InvalidArguments {
        tool: tool.to_owned(),
        path: error.path().to_string(),
        message: error.inner().to_string(),
    })
}

/// A tool's output as JSON. A `String` or a `Value` moves in as it is: tool results are often
/// large text (pages, search results), and serializing a string copies it.
fn output_value<O: Serialize + 'static>(output: O) -> Result<Value, serde_json::Error> {
    let mut slot = Some(output);
    let any: &mut dyn std::any::Any = &mut slot;
    if let Some(text) = any.downcast_mut::<Option<String>>() {
        return Ok(text.take().map_or(Value::Null, Value::String));
    }
    if let Some(value) = any.downcast_mut::<Option<Value>>() {
        return Ok(value.take().unwrap_or(Value::Null));
    }
    // `Some(output)` serializes as `output`.
    serde_json::to_value(slot)
}

/// The text of a tool result as a `ToolMessage` carries it: a JSON string is its text, any
/// other value is compact JSON (LangChain's rule).
pub fn content_of(value: &Value) -> String {
    match value {
        Value::String(text) => text.clone(),
        other => other.to_string(),
    }
}

/// [`content_of`] for a result no longer needed as JSON: a string moves instead of being
/// copied.
pub fn into_content(value: Value) -> String {
    match value {
        Value::String(text) => text,
        other => other.to_string(),
    }
}

/// A tool made from an async closure; see [`tool_fn`].
pub struct FnTool<F, A> {
    name: Cow<'static, str>,
    description: Cow<'static, str>,
    f: F,
    _args: PhantomData<fn(A)>,
}

impl<F, A> std::fmt::Debug for FnTool<F, A> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FnTool")
            .field("name", &self.name)
            .field("description", &self.description)
            .finish_non_exhaustive()
    }
}

impl<F: Clone, A> Clone for FnTool<F, A> {
    fn clone(&self) -> Self {
        FnTool {
            name: self.name.clone(),
            description: self.description.clone(),
            f: self.f.clone(),
            _args: PhantomData,
        }
    }
}

/// Turns an async closure (or fn) taking typed arguments into a [`Tool`].
///
/// ```
/// use agent_tools::{tool_fn, BoxResult, DynTool};
/// use schemars::JsonSchema;
/// use serde::Deserialize;
///
/// #[derive(Deserialize, JsonSchema)]
/// struct Greet {
///     /// Who to greet.
///     name: String,
/// }
///
/// # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), agent_tools::ToolError> {
/// let greet = tool_fn("greet", "Greets someone by name.", |args: Greet| async move {
///     // `BoxResult::Ok` names the error type a closure cannot otherwise say.
///     BoxResult::Ok(format!("hello, {}", args.name))
/// });
///
/// let out = DynTool::call(&greet, serde_json::json!({"name": "Ada"})).await?;
/// assert_eq!(out, "hello, Ada");
/// # Ok(()) }
/// ```
pub fn tool_fn<A, F, Fut, O, E>(
    name: impl Into<Cow<'static, str>>,
    description: impl Into<Cow<'static, str>>,
    f: F,
) -> FnTool<F, A>
where
    F: Fn(A) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<O, E>> + Send,
    A: DeserializeOwned + JsonSchema + Send + 'static,
    O: Serialize + Send + 'static,
    E: Into<BoxError> + Send + 'static,
{
    FnTool {
        name: name.into(),
        description: description.into(),
        f,
        _args: PhantomData,
    }
}

impl<F, A, Fut, O, E> Tool for FnTool<F, A>
where
    F: Fn(A) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<O, E>> + Send,
    A: DeserializeOwned + JsonSchema + Send + 'static,
    O: Serialize + Send + 'static,
    E: Into<BoxError> + Send + 'static,
{
    type Args = A;
    type Output = O;
    type Error = E;

    fn name(&self) -> &str {
        &self.name
    }

    fn description(&self) -> &str {
        &self.description
    }

    fn call(&self, args: A) -> impl Future<Output = Result<O, E>> + Send {
        (self.f)(args)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde::Deserialize;
    use serde_json::json;

    #[test]
    fn outputs_become_json_strings_and_values_moving_in() {
        let text = "result ".repeat(1000);
        let at = text.as_ptr();
        match output_value(text).unwrap() {
            // The same buffer: moved, not copied.
            Value::String(moved) => assert_eq!(moved.as_ptr(), at),
            other => panic!("not a string: {other}"),
        }
        assert_eq!(output_value(json!({"a": 1})).unwrap(), json!({"a": 1}));
        // Anything else is serialized.
        assert_eq!(output_value(42_i64).unwrap(), json!(42));
        assert_eq!(output_value(Some("x")).unwrap(), json!("x"));
        assert_eq!(output_value(None::<String>).unwrap(), Value::Null);
        assert_eq!(output_value(vec!["a", "b"]).unwrap(), json!(["a", "b"]));
        assert_eq!(into_content(json!("text")), "text");
        assert_eq!(
            into_content(json!({"k": [1]})),
            content_of(&json!({"k": [1]}))
        );
    }

    #[derive(Deserialize, JsonSchema)]
    struct Point {
        x: i32,
        #[allow(dead_code)]
        tags: Vec<Tag>,
    }

    #[derive(Deserialize, JsonSchema)]
    struct Tag {
        #[allow(dead_code)]
        label: String,
    }

    fn point_tool() -> impl DynTool {
        tool_fn("point", "Reads a point.", |p: Point| async move {
            Ok::<_, String>(p.x * 2)
        })
    }

    #[tokio::test]
    async fn typed_tool_round_trips_json() {
        let tool = point_tool();
        let out = tool
            .call(json!({"x": 21, "tags": [{"label": "a"}]}))
            .await
            .unwrap();
        assert_eq!(out, json!(42));
        assert_eq!(tool.name(), "point");
        assert_eq!(tool.spec().description, "Reads a point.");
    }

    #[tokio::test]
    async fn bad_arguments_name_tool_and_path() {
        let tool = point_tool();
        let error = tool
            .call(json!({"x": 1, "tags": [{"label": "a"}, {"label": 7}]}))
            .await
            .unwrap_err();
        match &error {
            ToolError::InvalidArguments {
                tool,
                path,
                message,
            } => {
                assert_eq!(tool, "point");
                assert_eq!(path, "tags[1].label");
                assert!(message.contains("expected a string"), "{message}");
            }
            other => panic!("unexpected {other:?}"),
        }
        assert!(error.to_string().starts_with(
            "invalid arguments for tool `point` at `tags[1].label`: invalid type: integer `7`"
        ));

        let missing = tool.call(json!({"x": 1})).await.unwrap_err();
        assert!(
            matches!(&missing, ToolError::InvalidArguments { path, message, .. } if path == "." && message.contains("missing field `tags`")),
            "{missing}"
        );
        let not_object = tool.call(json!("x = 1")).await.unwrap_err();
        assert!(matches!(not_object, ToolError::InvalidArguments { .. }));
    }

    #[tokio::test]
    async fn tool_errors_and_null_arguments() {
        #[derive(Deserialize, JsonSchema)]
        struct Nothing {}
        let failing = tool_fn("fails", "Always fails.", |_: Nothing| async {
            Err::<(), _>("disk full")
        });
        let error = DynTool::call(&failing, Value::Null).await.unwrap_err();
        assert_eq!(error.to_string(), "tool `fails` failed: disk full");
        assert!(error.is_transient());
        assert_eq!(error.tool(), Some("fails"));
    }

    #[tokio::test]
    async fn unserializable_output_is_an_error() {
        #[derive(Deserialize, JsonSchema)]
        struct Nothing {}
        let tool = tool_fn("map", "Returns a map.", |_: Nothing| async {
            let mut map = std::collections::BTreeMap::new();
            map.insert((1, 2), "tuple keys are not JSON");
            Ok::<_, String>(map)
        });
        let error = DynTool::call(&tool, json!({})).await.unwrap_err();
        assert!(matches!(error, ToolError::InvalidOutput { .. }), "{error}");
    }

    #[test]
    fn content_of_strings_is_raw_text() {
        assert_eq!(content_of(&json!("hi")), "hi");
        assert_eq!(content_of(&json!({"a": 1})), r#"{"a":1}"#);
        assert_eq!(content_of(&json!(5)), "5");
    }

    #[test]
    fn schema_comes_from_args() {
        let schema = point_tool().parameters();
        assert_eq!(schema["type"], "object");
        assert_eq!(schema["required"], json!(["x", "tags"]));
        assert!(schema.get("$schema").is_none());
    }

    #[tokio::test]
    async fn arc_of_dyn_tool_is_a_tool() {
        let tool: Arc<dyn DynTool> = Arc::new(point_tool());
        let twice: Arc<Arc<dyn DynTool>> = Arc::new(tool.clone());
        assert_eq!(twice.name(), "point");
        let out = twice.call(json!({"x": 1, "tags": []})).await.unwrap();
        assert_eq!(out, json!(2));
    }
}
