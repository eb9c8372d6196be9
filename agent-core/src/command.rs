//! `Send` and `Command`: dynamic routing from routers and nodes.
//!
//! A router (or a node, through a [`Command`]) can send work to a node with its own input —
//! LangGraph's map-reduce idiom. Every `Send` becomes one task of the next super-step, after the
//! edge-triggered tasks, in the order sent.

use crate::constants::END;
use crate::error::GraphError;
use crate::node_input::{AnyInput, NodeInput};
use crate::state::GraphState;

/// A task for `node` in the next super-step, run on its own input instead of the graph state.
///
/// The input is either a whole state ([`Send::new`], for nodes that take the state) or a value
/// of the node's own input type ([`Send::input`], for nodes added with
/// [`add_node_with_input`](crate::StateGraph::add_node_with_input) or a `#[node]` fn whose
/// first argument is taken by value): LangGraph's `Send(node, arg)`. A `Send` whose input does
/// not fit its node fails the run with [`GraphError::SendInput`], naming both types.
///
/// Named after LangGraph's `Send`. Imported unqualified it would shadow `std::marker::Send`, so
/// [`agent_core::prelude`](crate::prelude) exports it as `SendTo` (glob-import the prelude, not
/// the crate root); by hand, `use agent_core::Send as SendTo`.
///
/// ```
/// # use std::sync::Arc;
/// use agent_core::prelude::*;
///
/// #[derive(GraphState, Clone, Default, Debug)]
/// struct Essay {
///     topics: Vec<String>,
///     #[reducer(append)]
///     paragraphs: Vec<String>,
/// }
///
/// /// What one worker gets: its topic, not a whole `Essay`.
/// #[derive(Clone, serde::Serialize, serde::Deserialize)]
/// struct Topic {
///     name: String,
/// }
///
/// # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), Report> {
/// let graph = StateGraph::<Essay>::new()
///     .add_node("plan", |_s: Arc<Essay>| async { EssayUpdate::default() })
///     .add_node_with_input("write", |topic: Topic| async move {
///         EssayUpdate::default().paragraphs(vec![format!("all about {}", topic.name)])
///     })
///     .add_edge(START, "plan")
///     .add_conditional_edges(
///         "plan",
///         |s: &Essay| {
///             s.topics
///                 .iter()
///                 .map(|t| SendTo::input("write", Topic { name: t.clone() }))
///                 .collect::<Vec<_>>()
///         },
///         ["write"],
///     )
///     .add_edge("write", END)
///     .compile()?;
/// let input = EssayUpdate::default().topics(vec!["owls".to_owned(), "bats".to_owned()]);
/// let out = graph.invoke(input, RunConfig::default()).await?;
/// assert_eq!(out.paragraphs, ["all about owls", "all about bats"]);
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct Send<S> {
    /// The node to run.
    pub node: String,
    /// What the node gets.
    pub(crate) arg: SendArg<S>,
}

/// What a [`Send`] carries: a whole state, or a node's own input.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum SendArg<S> {
    State(S),
    Input(AnyInput),
}

impl<S> Send<S> {
    /// A task for `node`, which takes the state, run on `state` instead of the graph's.
    pub fn new(node: impl Into<String>, state: S) -> Self {
        Send {
            node: node.into(),
            arg: SendArg::State(state),
        }
    }

    /// A task for `node`, which takes its own input type `I`, run on `input` (LangGraph's
    /// `Send(node, arg)`). The node declares `I` when it is added
    /// ([`add_node_with_input`](crate::StateGraph::add_node_with_input), or a `#[node]` fn
    /// whose first argument is an `I` by value); another type fails the run with
    /// [`GraphError::SendInput`].
    pub fn input<I: NodeInput>(node: impl Into<String>, input: I) -> Self {
        Send {
            node: node.into(),
            arg: SendArg::Input(AnyInput::new(input)),
        }
    }

    /// The state it carries, when it was made with [`Send::new`].
    pub fn state(&self) -> Option<&S> {
        match &self.arg {
            SendArg::State(state) => Some(state),
            SendArg::Input(_) => None,
        }
    }

    /// The input it carries, when it was made with [`Send::input`] and `I` is its type.
    pub fn input_as<I: 'static>(&self) -> Option<&I> {
        match &self.arg {
            SendArg::State(_) => None,
            SendArg::Input(input) => input.get::<I>(),
        }
    }
}

/// One destination of a [`Command`] or a router: a node name (or `END`), or a [`Send`].
#[derive(Debug, Clone, PartialEq)]
pub enum Goto<S> {
    /// A node by name (for routers: a path-map key), or `END`.
    Node(String),
    /// A task with its own input.
    Send(Send<S>),
}

impl<S> From<&str> for Goto<S> {
    fn from(name: &str) -> Self {
        Goto::Node(name.to_owned())
    }
}

impl<S> From<String> for Goto<S> {
    fn from(name: String) -> Self {
        Goto::Node(name)
    }
}

impl<S> From<Send<S>> for Goto<S> {
    fn from(send: Send<S>) -> Self {
        Goto::Send(send)
    }
}

/// A node's answer that updates the state and routes at once (LangGraph's `Command`).
///
/// Static edges out of the node still fire, as in LangGraph; `goto` adds to them.
///
/// ```
/// # use agent_core::{Command, GraphState};
/// # #[derive(GraphState, Clone, Default)]
/// # struct S { answer: String }
/// let cmd: Command<S> = Command::goto("review").update(SUpdate::default().answer("42".to_owned()));
/// ```
#[derive(Debug, Clone)]
pub struct Command<S: GraphState> {
    /// The state update, if any.
    pub update: Option<S::Update>,
    /// Where to go next, in order.
    pub goto: Vec<Goto<S>>,
    /// A value answering a pending interrupt (used as run input).
    pub resume: Option<serde_json::Value>,
    /// The graph it addresses: the node's own (the default), or its parent's
    /// ([`to_parent`](Self::to_parent)).
    pub graph: CommandGraph,
}

/// Which graph a [`Command`] addresses (LangGraph's `Command(graph=...)`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum CommandGraph {
    /// The graph of the node that returns it.
    #[default]
    Current,
    /// The graph that runs this one as a subgraph (LangGraph's `Command.PARENT`).
    Parent,
}

impl<S: GraphState> Default for Command<S> {
    fn default() -> Self {
        Command {
            update: None,
            goto: Vec::new(),
            resume: None,
            graph: CommandGraph::Current,
        }
    }
}

impl<S: GraphState> Command<S> {
    /// A command that only routes.
    pub fn goto(to: impl Into<Goto<S>>) -> Self {
        Command {
            goto: vec![to.into()],
            ..Command::default()
        }
    }

    /// A command that routes to several destinations (all run in the next step).
    pub fn goto_all<I, G>(to: I) -> Self
    where
        I: IntoIterator<Item = G>,
        G: Into<Goto<S>>,
    {
        Command {
            goto: to.into_iter().map(Into::into).collect(),
            ..Command::default()
        }
    }

    /// A command that only updates.
    pub fn from_update(update: S::Update) -> Self {
        Command {
            update: Some(update),
            ..Command::default()
        }
    }

    /// A command that ends this branch of the run (the same as `goto(END)`).
    pub fn end() -> Self {
        Command::goto(END)
    }

    /// Sets the update.
    pub fn update(mut self, update: S::Update) -> Self {
        self.update = Some(update);
        self
    }

    /// Adds a destination.
    pub fn and_goto(mut self, to: impl Into<Goto<S>>) -> Self {
        self.goto.push(to.into());
        self
    }

    /// Addresses the parent graph (LangGraph's `Command(graph=Command.PARENT)`): returned by
    /// a node of a subgraph, it ends the subgraph's run there (that step's writes and the
    /// subgraph's earlier ones do not land), and the subgraph's node in the parent returns
    /// this command instead: its update applies to the parent's state and its `goto` names
    /// the parent's nodes. The multi-agent handoff: an agent subgraph passes control to a
    /// sibling. For a subgraph over another state (`as_node`) only `goto` to node names
    /// can cross; outside a subgraph it is an error ([`GraphError::ParentCommand`]).
    ///
    /// ```
    /// # use std::sync::Arc;
    /// # use agent_core::{Command, GraphState, NodeExt, RunConfig, StateGraph, END, START};
    /// #[derive(GraphState, Clone, Default, Debug)]
    /// struct S {
    ///     #[reducer(append)]
    ///     log: Vec<String>,
    /// }
    /// # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), agent_core::GraphError> {
    /// let agent = StateGraph::<S>::new()
    ///     .add_node("work", |_s: Arc<S>| async {
    ///         Command::goto("reviewer")
    ///             .update(SUpdate::default().log(vec!["handed off".to_owned()]))
    ///             .to_parent()
    ///     })
    ///     .add_node("never", |_s: Arc<S>| async { SUpdate::default() })
    ///     .add_edge(START, "work")
    ///     .add_edge("work", "never")
    ///     .add_edge("never", END)
    ///     .compile()?;
    /// let graph = StateGraph::<S>::new()
    ///     .add_node("agent", agent.with_destinations(["reviewer"]))
    ///     .add_node("reviewer", |_s: Arc<S>| async {
    ///         SUpdate::default().log(vec!["reviewed".to_owned()])
    ///     })
    ///     .add_edge(START, "agent")
    ///     .add_edge("reviewer", END)
    ///     .compile()?;
    /// let out = graph.invoke(S::default(), RunConfig::default()).await?;
    /// assert_eq!(out.log, ["handed off", "reviewed"]);
    /// # Ok(()) }
    /// ```
    pub fn to_parent(mut self) -> Self {
        self.graph = CommandGraph::Parent;
        self
    }

    /// A command carrying a resume value for a pending interrupt: what `interrupt()` returns
    /// when the paused node runs again. Fails with [`GraphError::InvalidInput`] only when the
    /// value cannot be represented as JSON (a map with non-string keys, a failing `Serialize`).
    pub fn resume(value: impl serde::Serialize) -> Result<Self, GraphError> {
        let value = serde_json::to_value(value)
            .map_err(|e| GraphError::InvalidInput(format!("the resume value is not JSON: {e}")))?;
        Ok(Command {
            resume: Some(value),
            ..Command::default()
        })
    }
}
