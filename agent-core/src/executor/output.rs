//! What a run hands back: [`RunOutput`] (the state, how the run stopped, counters) and
//! [`RunPath`] (the nodes it executed, step by step).

use std::ops::Deref;
use std::sync::Arc;

use crate::interrupt::Interrupt;

/// What a run returns: the state (it derefs to it), plus how it stopped.
#[derive(Debug, Clone)]
pub struct RunOutput<S> {
    /// The state at the end of the run.
    pub state: S,
    /// Pauses requested by nodes (`interrupt()`); empty when the run finished.
    pub interrupts: Vec<Interrupt>,
    /// Nodes that would run next: non-empty when the run paused before a step.
    pub next: Vec<String>,
    /// Whether the run paused rather than finished: an interrupt, or a static interrupt
    /// before or after a node. A pause after the graph's last node (`interrupt_after`) has
    /// nothing `next`, yet is a pause (LangGraph reports it as one).
    pub paused: bool,
    /// The last checkpoint written, when the graph has a checkpointer and a thread.
    pub checkpoint_id: Option<String>,
    /// Super-steps this run executed.
    pub steps: usize,
    /// Tasks this run executed.
    pub tasks: usize,
    /// Run-wide counters nodes added with `NodeContext::add_usage` (token usage).
    pub usage: std::collections::BTreeMap<String, u64>,
    /// The nodes this run executed, super-step by super-step.
    pub path: RunPath,
}

/// The nodes a run executed, one list per super-step in task order (a node that ran several
/// times in a step, through `Send`, is listed each time). Recorded as indices and named
/// only when read, so runs pay nothing for it.
///
/// ```
/// # use std::sync::Arc;
/// # use agent_core::{GraphState, RunConfig, StateGraph, END, START};
/// # #[derive(GraphState, Clone, Default, Debug)] struct S { n: u8 }
/// # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), agent_core::GraphError> {
/// let graph = StateGraph::<S>::new()
///     .add_node("a", |_s: Arc<S>| async {})
///     .add_node("b", |_s: Arc<S>| async {})
///     .add_node("c", |_s: Arc<S>| async {})
///     .add_edge(START, "a")
///     .add_edge("a", "c")
///     .add_edge("a", "b")
///     .add_edge(["b", "c"], END)
///     .compile()?;
/// let out = graph.invoke(S::default(), RunConfig::default()).await?;
/// assert_eq!(out.path.to_vec(), [vec!["a"], vec!["b", "c"]]);
/// # Ok(()) }
/// ```
#[derive(Clone, Default)]
pub struct RunPath {
    names: Option<Arc<[Arc<str>]>>,
    /// Node indices of every step, concatenated.
    nodes: Vec<u32>,
    /// Where each step's nodes end in `nodes`.
    ends: Vec<u32>,
}

impl RunPath {
    pub(crate) fn record(&mut self, names: &Arc<[Arc<str>]>, nodes: &[usize]) {
        if self.names.is_none() {
            self.names = Some(names.clone());
        }
        self.nodes.extend(nodes.iter().map(|&n| n as u32));
        self.ends.push(self.nodes.len() as u32);
    }

    /// How many super-steps ran.
    pub fn len(&self) -> usize {
        self.ends.len()
    }

    /// The node names of the last step (none before the first).
    pub(crate) fn last_step(&self) -> impl Iterator<Item = &str> + '_ {
        let names = self.names.as_deref().unwrap_or_default();
        let start = match self.ends.len() {
            0 | 1 => 0,
            n => self.ends[n - 2] as usize,
        };
        self.nodes[start..]
            .iter()
            .map(move |&n| &*names[n as usize])
    }

    /// Whether no step ran.
    pub fn is_empty(&self) -> bool {
        self.ends.is_empty()
    }

    /// The node names of each step, in order.
    pub fn steps(&self) -> impl Iterator<Item = Vec<&str>> + '_ {
        let names = self.names.as_deref().unwrap_or_default();
        let mut start = 0usize;
        self.ends.iter().map(move |&end| {
            let step = self.nodes[start..end as usize]
                .iter()
                .map(|&n| &*names[n as usize])
                .collect();
            start = end as usize;
            step
        })
    }

    /// The node names of each step, owned.
    pub fn to_vec(&self) -> Vec<Vec<String>> {
        self.steps()
            .map(|step| step.into_iter().map(str::to_owned).collect())
            .collect()
    }
}

impl std::fmt::Debug for RunPath {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.steps()).finish()
    }
}

impl serde::Serialize for RunPath {
    fn serialize<Ser: serde::Serializer>(&self, serializer: Ser) -> Result<Ser::Ok, Ser::Error> {
        serializer.collect_seq(self.steps())
    }
}

impl<S> RunOutput<S> {
    /// Whether the run paused (an interrupt, or a static interrupt before/after a node).
    pub fn is_paused(&self) -> bool {
        self.paused || !self.interrupts.is_empty() || !self.next.is_empty()
    }

    /// The final state.
    pub fn into_state(self) -> S {
        self.state
    }
}

impl<S> Deref for RunOutput<S> {
    type Target = S;

    fn deref(&self) -> &S {
        &self.state
    }
}
