//! The crate's one error type: what went wrong, where (node, field, edge), and what to do.

use std::time::Duration;

use crate::state::ReducerError;

/// A boxed error from user code (nodes, reducers, routers).
pub type BoxError = Box<dyn std::error::Error + Send + Sync + 'static>;

/// A `Result` whose error is a [`BoxError`]: what a closure node (or tool) returns when it
/// names no error type of its own.
///
/// A closure's `async` block cannot say its return type, and nodes accept `Result<T, E>` for
/// any `E: Into<BoxError>`, so `Ok(update)` alone leaves `E` unknown ("type annotations
/// needed"). Ending with `BoxResult::Ok(update)` fixes `E` to `BoxError`, and every `?` inside
/// converts into it; no turbofish. A `#[node]` fn can say `-> BoxResult<StateUpdate>`.
///
/// ```
/// # use std::sync::Arc;
/// use agent_core::prelude::*;
///
/// #[derive(GraphState, Clone, Default, Debug)]
/// struct S {
///     number: u32,
/// }
///
/// # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), Report> {
/// let graph = StateGraph::<S>::new()
///     .add_node("parse", |_s: Arc<S>| async {
///         let number: u32 = "42".parse()?;
///         BoxResult::Ok(SUpdate::default().number(number))
///     })
///     .add_edge(START, "parse")
///     .add_edge("parse", END)
///     .compile()?;
/// assert_eq!(graph.invoke(S::default(), RunConfig::default()).await?.number, 42);
/// # Ok(()) }
/// ```
pub type BoxResult<T> = Result<T, BoxError>;

/// Everything that can go wrong building or running a graph.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum GraphError {
    // ---- compile time: the graph is invalid -------------------------------------------------
    /// A node name is used twice.
    #[error("node `{0}` is added twice; node names must be unique")]
    DuplicateNode(String),
    /// A node uses a reserved name.
    #[error(
        "node name `{0}` is reserved (`__start__`, `__end__` and names containing ':' or '|' are not allowed); rename the node"
    )]
    ReservedName(String),
    /// An edge or path map names a node that does not exist.
    #[error(
        "{context} refers to unknown node `{name}`; add it with add_node first (known nodes: {known})"
    )]
    UnknownNode {
        /// Where the name appeared, e.g. "edge `a` -> `b`".
        context: String,
        /// The unknown name.
        name: String,
        /// The names that do exist.
        known: String,
    },
    /// Nothing leaves START.
    #[error(
        "the graph has no entry point; add an edge from START, e.g. `.add_edge(START, \"first_node\")`"
    )]
    NoEntryPoint,
    /// The graph has no nodes.
    #[error("the graph has no nodes; add at least one with add_node")]
    Empty,
    /// A node no edge, route or destination can ever reach.
    #[error("node `{0}` can never be reached from START; add an edge to it or remove it")]
    Unreachable(String),
    /// A node with no way out.
    #[error(
        "node `{0}` has no outgoing edge and cannot return a Command; add an edge (to END if it finishes the run) or conditional edges, or return a `Command` from it (declare its gotos with `.with_destinations([...])` for exact diagrams)"
    )]
    DeadEnd(String),
    /// `add_named` got a node that has no name of its own.
    #[error(
        "add_named got a node without a name; mark the fn with #[node] or use add_node(name, node)"
    )]
    UnnamedNode,
    /// A node reads a runtime context of another type than the graph's.
    #[error(
        "node `{node}` reads the runtime context `{wanted}`, but the graph's context is `{graph}`; build the graph with `StateGraph::<State, {wanted}>::with_context_type()` or make the node take `&Runtime<{graph}>`"
    )]
    ContextMismatch {
        /// The node.
        node: String,
        /// The context type it reads.
        wanted: &'static str,
        /// The graph's context type.
        graph: &'static str,
    },
    /// A graph whose nodes read a runtime context was run without one.
    #[error(
        "the graph's nodes read a runtime context of type `{type_name}`, but none was given; call `.with_context(value)` on the compiled graph before running it"
    )]
    MissingContext {
        /// The context type.
        type_name: &'static str,
    },
    /// An edge leaves END or enters START.
    #[error("invalid edge {0}: edges cannot leave END or enter START")]
    InvalidEdge(String),
    /// A node declares the graph's state as its own input (usually a `#[node]` fn that takes
    /// the state by value).
    #[error(
        "node `{node}` takes the graph state `{state}` by value, which makes the state its own input (run only by `Send::input`); take it by reference (`state: &{state}`) to read the graph state"
    )]
    InputIsState {
        /// The node.
        node: String,
        /// The state type.
        state: &'static str,
    },
    /// A node that takes its own input is triggered without one: by an edge (found by
    /// `compile()`), or by a `Command` goto or a router key naming it (found when it fires).
    #[error(
        "node `{node}` takes its own input `{input}`, so only `Send::input(\"{node}\", ..)` can run it, but {via} triggers it without one; send it an input instead"
    )]
    NeedsInput {
        /// The node.
        node: String,
        /// Its input type.
        input: &'static str,
        /// What triggered it, e.g. "the edge `plan` -> `work`".
        via: String,
    },

    // ---- run time -------------------------------------------------------------------------
    /// Two tasks wrote the same last-value field in one super-step.
    #[error(
        "at field `{field}`: can receive only one value per step, but nodes `{first}` and `{second}` both wrote it in step {step}; give the field a reducer (e.g. `#[reducer(append)]`) or route so only one node writes it"
    )]
    InvalidUpdate {
        /// The field.
        field: &'static str,
        /// The first writer in task order.
        first: String,
        /// The second writer.
        second: String,
        /// The super-step.
        step: i64,
    },
    /// A reducer rejected a write.
    #[error("node `{node}` in step {step}: {source}")]
    Reducer {
        /// The node whose update was rejected (`__input__` for the run's input).
        node: String,
        /// The super-step.
        step: i64,
        /// The reducer's error.
        #[source]
        source: ReducerError,
    },
    /// A router returned a key its path map does not have.
    #[error(
        "router of node `{from}` returned `{key}`, which is not in its path map (keys: {known}); add it to the path map or fix the router"
    )]
    RouteNotInPathMap {
        /// The node whose conditional edges ran.
        from: String,
        /// The key returned.
        key: String,
        /// The keys the path map has.
        known: String,
    },
    /// A router, `Command` or `Send` names a node that does not exist.
    #[error("{what} from `{from}` goes to unknown node `{target}`; known nodes: {known}")]
    UnknownTarget {
        /// "router", "Command goto" or "Send".
        what: &'static str,
        /// The node that routed (or `__start__`).
        from: String,
        /// The target named.
        target: String,
        /// The names that do exist.
        known: String,
    },
    /// A `Send` carries an input its node does not take: a state to a node with its own
    /// input, an input to a node that takes the state, or an input of another type.
    #[error(
        "Send from `{from}` to node `{node}` carries {found}, but the node takes {expected}; {fix}"
    )]
    SendInput {
        /// The node that sent it (or `__start__`).
        from: String,
        /// The node it targets.
        node: String,
        /// What the node takes, e.g. "its own input `my_crate::Job`".
        expected: String,
        /// What the `Send` carries.
        found: String,
        /// How to send what the node takes.
        fix: String,
    },
    /// The run took more super-steps than allowed.
    #[error(
        "recursion limit of {limit} reached without hitting a stop condition (last nodes: {last_nodes}); raise it with `RunConfig::recursion_limit`, or stop earlier (e.g. check `ctx.remaining_steps()`)"
    )]
    RecursionLimit {
        /// The limit in force.
        limit: usize,
        /// Nodes of the last step that ran.
        last_nodes: String,
    },
    /// A node returned an error.
    #[error("node `{node}` failed in step {step}: {source}")]
    Node {
        /// The node.
        node: String,
        /// The super-step.
        step: i64,
        /// The node's error.
        #[source]
        source: BoxError,
    },
    /// A node ran past its timeout.
    #[error(
        "node `{node}` timed out after {after:?} in step {step}; raise its timeout or make it faster"
    )]
    NodeTimeout {
        /// The node.
        node: String,
        /// The super-step.
        step: i64,
        /// The timeout.
        after: Duration,
    },
    /// A node panicked.
    #[error("node `{node}` panicked in step {step}: {message}")]
    NodePanicked {
        /// The node.
        node: String,
        /// The super-step.
        step: i64,
        /// The panic payload, when it was a string.
        message: String,
    },
    /// The run needs a checkpointer for something it was asked to do.
    #[error(
        "{0} needs a checkpointer: compile with `compile_with(checkpointer)` and run with `RunConfig::thread_id`"
    )]
    NoCheckpointer(String),
    /// Nothing to resume on a thread.
    #[error(
        "thread `{0}` has nothing to resume (no checkpoint, or no paused node); start it with an input"
    )]
    NothingToResume(String),
    /// A checkpoint id that the thread does not have.
    #[error(
        "thread `{thread_id}` has no checkpoint `{checkpoint_id}`; list them with get_state_history"
    )]
    CheckpointNotFound {
        /// The thread.
        thread_id: String,
        /// The id asked for.
        checkpoint_id: String,
    },
    /// A stored checkpoint that cannot be read back.
    #[error("checkpoint `{checkpoint_id}` of thread `{thread_id}` cannot be restored: {detail}")]
    CorruptCheckpoint {
        /// The thread.
        thread_id: String,
        /// The checkpoint.
        checkpoint_id: String,
        /// What is wrong with it.
        detail: String,
    },
    /// The checkpoint store failed.
    #[error("{backend} checkpointer: {detail}")]
    Storage {
        /// "sqlite", "postgres", "memory".
        backend: &'static str,
        /// What failed.
        detail: String,
    },
    /// A write refused by the checkpointer's fence (a saver made by `PostgresSaver::fenced`
    /// whose precondition found no row, or a wrapper saver of your own that refuses writes):
    /// the run no longer holds what it needs to write (its lease, its claim: it was cancelled
    /// or taken over), and nothing of the refused write was stored. Not for the run that got
    /// it to retry: whoever holds the claim now goes on from the last stored checkpoint.
    #[error(
        "{backend} checkpointer: the write was refused and nothing was written: the run no longer holds its lease or claim ({detail})"
    )]
    Fenced {
        /// "postgres", or the refusing saver's name.
        backend: &'static str,
        /// What refused it.
        detail: String,
    },
    /// The run stopped because its stream was dropped.
    #[error("the run was cancelled: its stream was dropped")]
    Cancelled,
    /// The input could not be applied.
    #[error("invalid input: {0}")]
    InvalidInput(String),
    /// A node returned [`Command::to_parent`](crate::Command::to_parent), and its graph is not
    /// running as a subgraph (inside a subgraph this never surfaces: the parent takes the
    /// command).
    #[error(
        "node `{}` returned `Command::to_parent()`, but its graph is not running as a subgraph; return a plain `Command` to route inside this graph",
        .0.node
    )]
    ParentCommand(ParentCommand),
}

/// A [`Command`](crate::Command) a subgraph's node addressed to the parent graph, on its way
/// out of the subgraph's run (LangGraph's `ParentCommand`).
pub struct ParentCommand {
    /// The node that returned it.
    pub node: String,
    /// The `Command<S>` of the subgraph's state.
    pub(crate) command: Box<dyn std::any::Any + Send + Sync>,
}

impl ParentCommand {
    /// The command, when `S` is the state of the graph whose node returned it.
    pub fn command<S: crate::state::GraphState>(&self) -> Option<&crate::Command<S>> {
        self.command.downcast_ref()
    }
}

impl std::fmt::Debug for ParentCommand {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ParentCommand")
            .field("node", &self.node)
            .finish_non_exhaustive()
    }
}

impl GraphError {
    /// The node the error is about, when there is one.
    pub fn node(&self) -> Option<&str> {
        match self {
            GraphError::Node { node, .. }
            | GraphError::NodeTimeout { node, .. }
            | GraphError::NodePanicked { node, .. }
            | GraphError::Reducer { node, .. } => Some(node),
            GraphError::RouteNotInPathMap { from, .. }
            | GraphError::UnknownTarget { from, .. }
            | GraphError::SendInput { from, .. } => Some(from),
            GraphError::NeedsInput { node, .. } | GraphError::InputIsState { node, .. } => {
                Some(node)
            }
            _ => None,
        }
    }
}

/// Joins names for error messages: "`a`, `b`" (or "none" when there are none).
///
/// Every crate of the workspace lists names (known nodes, known tools...) in its errors this
/// way.
///
/// ```
/// assert_eq!(agent_core::list_names(["a", "b"]), "`a`, `b`");
/// assert_eq!(agent_core::list_names([]), "none");
/// ```
pub fn list_names<'a>(names: impl IntoIterator<Item = &'a str>) -> String {
    let mut out = String::new();
    for name in names {
        if !out.is_empty() {
            out.push_str(", ");
        }
        out.push('`');
        out.push_str(name);
        out.push('`');
    }
    if out.is_empty() {
        out.push_str("none");
    }
    out
}

/// The text of a caught panic's payload (`panic!("...")` gives a `&str` or a `String`), for
/// errors that report a panic of a node or a tool.
///
/// ```
/// let payload = std::panic::catch_unwind(|| panic!("kaboom {}", 1)).unwrap_err();
/// assert_eq!(agent_core::panic_message(payload.as_ref()), "kaboom 1");
/// ```
pub fn panic_message(payload: &(dyn std::any::Any + Send)) -> String {
    if let Some(text) = payload.downcast_ref::<&str>() {
        (*text).to_owned()
    } else if let Some(text) = payload.downcast_ref::<String>() {
        text.clone()
    } else {
        "a panic without a message".to_owned()
    }
}
