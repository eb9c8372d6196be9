//! Procedural macros of agentgraph: `#[derive(GraphState)]` (with its `#[reducer(..)]` and
//! `#[graph_state(..)]` attributes), `#[node]` and `#[tool]`.
//!
//! Use them through the crates that re-export them, never by depending on this one:
//! `agent_core::GraphState`, `agent_core::node` and `agent_tools::tool`. Generated code names
//! the runtime through absolute paths (`::agent_core::__private::..`,
//! `::agent_tools::__private::..`), never through your imports.
//!
//! | attribute | goes on | what it does |
//! | --- | --- | --- |
//! | [`#[derive(GraphState)]`](derive@GraphState) | a struct with named fields | implements `agent_core::GraphState` and writes the partial update type `<Name>Update` |
//! | `#[reducer(append \| merge \| add \| replace \| path::to::fn)]` | a field of that struct | how a write combines with the field's value (default: replace) |
//! | `#[graph_state(update = Name, derive(Trait, ..))]` | that struct | the update type's name, extra derives on it |
//! | [`#[node]`](macro@node), `#[node(name = "..", retry(..), timeout = "30s", destinations("a", ..))]` | an `async fn` taking `&State`, or its own input by value | a named node with its settings |
//! | [`#[tool]`](macro@tool), `#[tool(name = "..", description = "..")]` | an `async fn` returning `Result<T, E>` | an `agent_tools::Tool` described by its doc comment |
//!
//! Every mistake gives one error at the token that is wrong, saying how to fix it (the
//! trybuild cases in `agent-core/tests/ui/fail/` show each one); an attribute that fails still
//! re-emits your item, so the rest of the crate keeps compiling and the IDE keeps working.
//!
//! This crate only parses and dispatches; the `expand` functions of its `state`, `node` and
//! `tool` modules do the work and return tokens or `syn` errors, so unit tests can call them
//! on token streams. Expansion snapshots live in `agent-macros/expansions/` (`cargo xtask
//! codegen` refreshes them).

use proc_macro::TokenStream;

#[cfg(test)]
mod expansions;
mod node;
mod state;
mod tool;
mod util;

/// Derives `agent_core::GraphState` for a struct with named fields, and writes its partial
/// update type `<Name>Update` (every field an `Option`, a setter per field, `Debug`, serde).
///
/// The struct also needs `Clone` and `Default` (a fresh thread starts from `Default`).
///
/// Field attribute `#[reducer(..)]`, one per field, says how writes combine with the value:
/// `replace` (the default: last value wins, and two writes in one super-step are an error),
/// `append` (`Extend`: `Vec`, `String`...), `merge` (maps and sets key-wise, JSON objects
/// deeply), `add` (`+=` on numbers), or a path to your own `fn(&mut T, T)` (or
/// `fn(&mut T, T) -> Result<(), E>` to reject a write).
///
/// Container attribute `#[graph_state(..)]`: `update = Name` names the update type,
/// `derive(Trait, ..)` adds derives to it.
///
/// ```
/// use std::collections::BTreeMap;
/// use agent_core::GraphState;
///
/// /// Keeps the larger score.
/// fn keep_max(current: &mut u32, update: u32) {
///     *current = (*current).max(update);
/// }
///
/// #[derive(GraphState, Clone, Default, Debug)]
/// #[graph_state(update = Patch, derive(PartialEq))]
/// struct Research {
///     topic: String,
///     #[reducer(append)]
///     notes: Vec<String>,
///     #[reducer(merge)]
///     sources: BTreeMap<String, String>,
///     #[reducer(add)]
///     tokens: u64,
///     #[reducer(keep_max)]
///     best: u32,
/// }
///
/// let mut state = Research::default();
/// let patch = Patch::default().topic("rust").notes(vec!["a".into()]).tokens(5).best(3);
/// agent_core::GraphState::apply(&mut state, patch.clone())?;
/// agent_core::GraphState::apply(&mut state, Patch::default().notes(vec!["b".into()]).tokens(2).best(1))?;
/// assert_eq!(state.topic, "rust");
/// assert_eq!(state.notes, ["a", "b"]);
/// assert_eq!((state.tokens, state.best), (7, 3));
/// assert_eq!(patch, Patch::default().topic("rust").notes(vec!["a".into()]).tokens(5).best(3));
/// # Ok::<(), agent_core::ReducerError>(())
/// ```
#[proc_macro_derive(GraphState, attributes(reducer, graph_state))]
pub fn derive_graph_state(input: TokenStream) -> TokenStream {
    let input = syn::parse_macro_input!(input as syn::DeriveInput);
    state::expand(&input)
        .unwrap_or_else(syn::Error::into_compile_error)
        .into()
}

/// Turns `async fn name(state: &State) -> Output` into a node named `name`.
///
/// A second parameter is optional: `ctx: &NodeContext` (step, node name, interrupts, custom
/// stream writes) or `rt: &Runtime<C>` (the graph's runtime context `C`, plus all of
/// `NodeContext`). The output is the state's update type, a `Command`, or a `Result` of either.
/// The fn becomes a unit struct of the same name (pass it to `add_named`, or to `add_node`
/// under another name); its body stays callable as `name::call(&state, &ctx)`.
///
/// A node may take its own input instead of the state (a map-reduce worker): a first parameter
/// taken by value, `async fn name(input: Input[, ctx: &NodeContext | rt: &Runtime<C>])`, makes
/// a node run only by
/// `Send::input("name", input)` (LangGraph's `Send(node, arg)`). `Input` derives `Clone` and
/// serde's `Serialize` and `Deserialize` (a pending `Send` is stored in checkpoints); the node
/// fits any graph whose update type its output is.
///
/// ```
/// use std::sync::Arc;
/// use agent_core::prelude::*;
///
/// #[derive(GraphState, Clone, Default, Debug)]
/// struct Batch {
///     #[reducer(append)]
///     squares: Vec<u64>,
/// }
///
/// #[derive(Clone, serde::Serialize, serde::Deserialize)]
/// struct Item {
///     value: u64,
/// }
///
/// #[node]
/// async fn square(item: Item) -> BatchUpdate {
///     BatchUpdate::default().squares(vec![item.value * item.value])
/// }
///
/// # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), GraphError> {
/// let graph = StateGraph::<Batch>::new()
///     .add_node("fan", |_s: Arc<Batch>| async { BatchUpdate::default() })
///     .add_named(square)
///     .add_edge(START, "fan")
///     .add_conditional_edges(
///         "fan",
///         |_: &Batch| (1..=3).map(|value| SendTo::input("square", Item { value })).collect::<Vec<_>>(),
///         ["square"],
///     )
///     .add_edge("square", END)
///     .compile()?;
/// let out = graph.invoke(Batch::default(), RunConfig::default()).await?;
/// assert_eq!(out.squares, [1, 4, 9]);
/// # Ok(()) }
/// ```
///
/// Settings, all optional:
/// - `name = "other"`: the node's name (default: the fn's);
/// - `retry` or `retry(max_attempts = 3, initial_interval = "500ms", backoff_factor = 2.0,
///   max_interval = "128s", jitter = true)`: retry failed attempts (agent-core's `RetryPolicy`);
/// - `timeout = "30s"`: fail an attempt that runs longer (`ms`, `s`, `m`, `h`);
/// - `destinations("a", "b")`: where its `Command`s may go (validation and diagrams).
///
/// ```
/// use agent_core::{node, GraphState, NodeContext, RunConfig, StateGraph, END, START};
///
/// #[derive(GraphState, Clone, Default, Debug)]
/// struct Counter {
///     #[reducer(append)]
///     log: Vec<String>,
/// }
///
/// #[node]
/// async fn first(_state: &Counter) -> CounterUpdate {
///     CounterUpdate::default().log(vec!["first".to_owned()])
/// }
///
/// #[node(name = "second", retry(max_attempts = 2, initial_interval = "10ms"), timeout = "5s")]
/// async fn count(state: &Counter, ctx: &NodeContext) -> CounterUpdate {
///     CounterUpdate::default().log(vec![format!("{} saw {} at step {}", ctx.node(), state.log.len(), ctx.step())])
/// }
///
/// # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), agent_core::GraphError> {
/// let graph = StateGraph::new()
///     .add_named(first)
///     .add_named(count)
///     .add_edge(START, "first")
///     .add_edge("first", "second")
///     .add_edge("second", END)
///     .compile()?;
/// let out = graph.invoke(Counter::default(), RunConfig::default()).await?;
/// assert_eq!(out.log, ["first", "second saw 1 at step 2"]);
/// # Ok(()) }
/// ```
#[proc_macro_attribute]
pub fn node(args: TokenStream, item: TokenStream) -> TokenStream {
    node::expand(args.into(), item.into()).into()
}

/// Turns `async fn name(args...) -> Result<T, E>` into an `agent_tools::Tool` named `name`,
/// described by its doc comment. Use it as `agent_tools::tool`.
///
/// The parameters become the fields of the arguments object the model fills in (owned types
/// implementing `Deserialize` and `JsonSchema`; an `Option` is optional), and the entries of an
/// `# Arguments` section of the doc comment (`` * `city` - what it is ``) describe them. `T` is
/// `Serialize`; `E` is an error type or `String`. The fn becomes a unit struct of the same name;
/// its body stays callable as `name::call(args...)`.
///
/// Options, both optional: `name = "other"` (the tool's name, default the fn's) and
/// `description = "..."` (instead of the doc comment).
///
/// ```
/// use agent_tools::{tool, DynTool};
/// use serde_json::json;
///
/// /// Adds two numbers.
/// ///
/// /// # Arguments
/// ///
/// /// * `a` - The first number.
/// /// * `b` - The second number.
/// #[tool]
/// async fn add(a: f64, b: f64) -> Result<f64, String> {
///     Ok(a + b)
/// }
///
/// #[tool(name = "shout", description = "Upper-cases a text.")]
/// async fn upper(text: String) -> Result<String, String> {
///     Ok(text.to_uppercase())
/// }
///
/// # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), agent_tools::ToolError> {
/// assert_eq!(add.description(), "Adds two numbers.");
/// assert_eq!(add.parameters()["properties"]["a"]["description"], "The first number.");
/// assert_eq!(add.call(json!({"a": 2, "b": 3})).await?, json!(5.0));
/// assert_eq!((upper.name(), upper.description()), ("shout", "Upper-cases a text."));
/// assert_eq!(upper.call(json!({"text": "hi"})).await?, json!("HI"));
/// # Ok(()) }
/// ```
#[proc_macro_attribute]
pub fn tool(args: TokenStream, item: TokenStream) -> TokenStream {
    tool::expand(args.into(), item.into()).into()
}
