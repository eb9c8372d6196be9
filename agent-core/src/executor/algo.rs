//! The pure algorithm of a super-step (LangGraph's `_algo.py`): which tasks run next and in
//! what order, what a finished task triggers (edges, joins, routers, `Command` gotos, `Send`s),
//! and the barrier that applies a step's writes to the state.
//!
//! No I/O and no async here: everything takes the compiled graph and plain values, so the rules
//! are unit-tested on their own (see the tests at the end).
//!
//! The rules (LangGraph's):
//! - every task of step N sees the state as of the end of step N-1 (one shared `Arc`, no copy);
//! - tasks run and their writes apply in task order: edge-triggered tasks by node name (plain
//!   string order), then `Send` tasks in the order sent; never completion order;
//! - two writes to a last-value field in one step are an error naming both nodes;
//! - a node triggered by several finished nodes runs once; a join runs once all sources ran;
//! - routers read the state as their node left it: the step's start plus that node's writes.

use std::sync::Arc;

use crate::command::{Goto, Send, SendArg};
use crate::compiled::{Graph, Outgoing, Target};
use crate::constants::{END, START};
use crate::context::TaskStream;
use crate::error::GraphError;
use crate::state::{FieldSet, GraphState};

use super::runner::{TaskWrites, Updates};

/// A trigger source that is not a node: the input (START) or a join.
pub(crate) const FROM_START: usize = usize::MAX;
const FROM_JOIN: usize = usize::MAX - 1;

/// One task of a super-step, in the order tasks run and apply.
pub(crate) struct Task<S> {
    pub(crate) node: usize,
    /// A `Send` task's own input (a state, or the node's own input); `None` for an
    /// edge-triggered task (it reads the state).
    pub(crate) input: Option<SendArg<Arc<S>>>,
    /// A `Send` task's position among the step's `Send`s (its task path).
    pub(crate) push: Option<usize>,
    /// Set when persisting: the task's deterministic id.
    pub(crate) id: Option<Arc<str>>,
    /// Set when streaming: what triggered it, and its run id in the event stream.
    pub(crate) stream: Option<TaskStream>,
}

/// Where the run stands between two steps: what the next step runs, and which join sources
/// have arrived. A checkpoint's body records exactly this.
pub(crate) struct Frontier<S> {
    triggered: Vec<bool>,
    /// Edge-triggered nodes of the next step, in trigger order.
    pub(crate) pulls: Vec<usize>,
    /// `Send` tasks of the next step, in the order sent.
    pub(crate) pushes: Vec<(usize, SendArg<S>)>,
    /// When streaming: which nodes triggered each pulled node.
    sources: Option<Vec<Vec<usize>>>,
    /// Per join, which of its sources ran.
    pub(crate) joins: Vec<Vec<bool>>,
    /// A finished step's task list, emptied: the next step's tasks fill it.
    spare: Vec<Task<S>>,
}

impl<S: GraphState> Frontier<S> {
    /// An empty frontier for `graph`; `track_sources` records triggers for stream metadata.
    pub(crate) fn new(graph: &Graph<S>, track_sources: bool) -> Self {
        let n = graph.names.len();
        Frontier {
            triggered: vec![false; n],
            pulls: Vec::new(),
            pushes: Vec::new(),
            sources: track_sources.then(|| vec![Vec::new(); n]),
            joins: graph.joins.iter().map(|j| vec![false; j.sources]).collect(),
            spare: Vec::new(),
        }
    }

    /// Takes back a finished step's task list for the next step's tasks (no allocation a
    /// step).
    pub(crate) fn recycle(&mut self, mut tasks: Vec<Task<S>>) {
        tasks.clear();
        self.spare = tasks;
    }

    /// Starts recording what triggers each node (for stream metadata).
    pub(crate) fn track_sources(&mut self) {
        if self.sources.is_none() {
            self.sources = Some(vec![Vec::new(); self.triggered.len()]);
        }
    }

    /// Schedules `node` for the next step (once, however many sources trigger it).
    pub(crate) fn trigger(&mut self, node: usize, from: usize) {
        if !self.triggered[node] {
            self.triggered[node] = true;
            self.pulls.push(node);
        }
        if let Some(sources) = &mut self.sources {
            sources[node].push(from);
        }
    }

    /// Drops the next step's tasks (joins keep what arrived).
    pub(crate) fn clear(&mut self) {
        for &n in &self.pulls {
            self.triggered[n] = false;
            if let Some(sources) = &mut self.sources {
                sources[n].clear();
            }
        }
        self.pulls.clear();
        self.pushes.clear();
    }

    /// Forgets which join sources arrived (a new input starts over).
    pub(crate) fn reset_joins(&mut self) {
        for seen in &mut self.joins {
            seen.iter_mut().for_each(|s| *s = false);
        }
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.pulls.is_empty() && self.pushes.is_empty()
    }

    /// The next step's nodes (a node `Send` several times is listed each time).
    pub(crate) fn nodes(&self) -> impl Iterator<Item = usize> + '_ {
        self.pulls
            .iter()
            .copied()
            .chain(self.pushes.iter().map(|(n, _)| *n))
    }

    /// The next step's node names, in name order, each once (what `RunOutput::next` lists).
    pub(crate) fn next_names(&self, graph: &Graph<S>) -> Vec<String> {
        let mut next: Vec<usize> = self.nodes().collect();
        next.sort_unstable_by_key(|&n| graph.rank[n]);
        next.dedup();
        next.iter().map(|&n| graph.names[n].to_string()).collect()
    }

    /// Takes the next step's tasks in the order they run and apply: pulls by node name, then
    /// pushes as sent.
    pub(crate) fn take_tasks(&mut self, graph: &Graph<S>) -> Vec<Task<S>> {
        // Taken for the loop and given back empty: the next step's triggers reuse its room.
        let mut pulls = std::mem::take(&mut self.pulls);
        pulls.sort_unstable_by_key(|&n| graph.rank[n]);
        let mut tasks = std::mem::take(&mut self.spare);
        tasks.reserve(pulls.len() + self.pushes.len());
        for node in pulls.drain(..) {
            self.triggered[node] = false;
            let stream = self.sources.as_mut().map(|sources| TaskStream {
                triggers: std::mem::take(&mut sources[node])
                    .into_iter()
                    .map(|from| match from {
                        FROM_START => START.to_owned(),
                        FROM_JOIN => "join".to_owned(),
                        n => graph.names[n].to_string(),
                    })
                    .collect(),
                run_id: String::new(),
            });
            tasks.push(Task {
                node,
                input: None,
                push: None,
                id: None,
                stream,
            });
        }
        self.pulls = pulls;
        let track = self.sources.is_some();
        for (push, (node, input)) in self.pushes.drain(..).enumerate() {
            let input = match input {
                SendArg::State(state) => SendArg::State(Arc::new(state)),
                SendArg::Input(input) => SendArg::Input(input),
            };
            tasks.push(Task {
                node,
                input: Some(input),
                push: Some(push),
                id: None,
                stream: track.then(|| TaskStream {
                    triggers: vec!["send".to_owned()],
                    run_id: String::new(),
                }),
            });
        }
        tasks
    }

    /// The step did not happen (a task failed or paused): its tasks are the next ones again.
    pub(crate) fn put_back(&mut self, tasks: Vec<Task<S>>) {
        for task in tasks {
            match task.input {
                None => self.trigger(task.node, FROM_START),
                Some(SendArg::State(state)) => self
                    .pushes
                    .push((task.node, SendArg::State(Arc::unwrap_or_clone(state)))),
                Some(SendArg::Input(input)) => self.pushes.push((task.node, SendArg::Input(input))),
            }
        }
    }

    /// Fires what a finished node (or START, `from == None`) leads to: static edges, joins,
    /// its `Command` gotos, then its routers' results.
    pub(crate) fn fire(
        &mut self,
        graph: &Graph<S>,
        outgoing: &Outgoing,
        from: Option<usize>,
        goto: Vec<Goto<S>>,
        routes: Routes<S>,
    ) -> Result<(), GraphError> {
        let from_name: &str = match from {
            Some(n) => &graph.names[n],
            None => START,
        };
        let source = from.unwrap_or(FROM_START);
        for &t in &outgoing.targets {
            self.trigger(t, source);
        }
        for &(join, slot) in &outgoing.joins {
            self.joins[join][slot] = true;
        }
        for g in goto {
            match g {
                Goto::Node(name) => {
                    if name != END {
                        let target = node_named(graph, &name, from_name, "Command goto")?;
                        needs_no_input(graph, target, || {
                            format!("a Command goto from `{from_name}`")
                        })?;
                        self.trigger(target, source);
                    }
                }
                Goto::Send(send) => self.push(graph, send, from_name, "Send")?,
            }
        }
        for (b, gotos) in routes {
            let branch = &graph.branches[b];
            for g in gotos {
                match g {
                    Goto::Send(send) => self.push(graph, send, &branch.from, "Send")?,
                    Goto::Node(key) => {
                        let target = match &branch.map {
                            Some(map) => {
                                *map.get(&key).ok_or_else(|| GraphError::RouteNotInPathMap {
                                    from: branch.from.to_string(),
                                    key: key.clone(),
                                    known: branch.keys.clone(),
                                })?
                            }
                            None if key == END => Target::End,
                            None => Target::Node(node_named(graph, &key, &branch.from, "router")?),
                        };
                        if let Target::Node(t) = target {
                            needs_no_input(graph, t, || {
                                format!("the router of `{}` (key `{key}`)", branch.from)
                            })?;
                            self.trigger(t, source);
                        }
                    }
                }
            }
        }
        Ok(())
    }

    fn push(
        &mut self,
        graph: &Graph<S>,
        send: Send<S>,
        from: &str,
        what: &'static str,
    ) -> Result<(), GraphError> {
        let node = node_named(graph, &send.node, from, what)?;
        check_send(graph, node, &send.arg, from)?;
        self.pushes.push((node, send.arg));
        Ok(())
    }

    /// Joins whose sources have all run trigger their target.
    pub(crate) fn settle_joins(&mut self, graph: &Graph<S>) {
        for (j, join) in graph.joins.iter().enumerate() {
            let seen = &mut self.joins[j];
            if seen.iter().all(|s| *s) {
                seen.iter_mut().for_each(|s| *s = false);
                self.trigger(join.target, FROM_JOIN);
            }
        }
    }
}

fn node_named<S: GraphState>(
    graph: &Graph<S>,
    name: &str,
    from: &str,
    what: &'static str,
) -> Result<usize, GraphError> {
    graph
        .index
        .get(name)
        .copied()
        .ok_or_else(|| GraphError::UnknownTarget {
            what,
            from: from.to_owned(),
            target: name.to_owned(),
            known: graph.known_names(),
        })
}

/// A node that takes its own input cannot be triggered by name: only a `Send` carries it.
fn needs_no_input<S: GraphState>(
    graph: &Graph<S>,
    node: usize,
    via: impl FnOnce() -> String,
) -> Result<(), GraphError> {
    match graph.inputs[node] {
        None => Ok(()),
        Some(input) if input.or_state => Ok(()),
        Some(input) => Err(GraphError::NeedsInput {
            node: graph.names[node].to_string(),
            input: input.name,
            via: via(),
        }),
    }
}

/// A `Send` must carry what its node takes: the state, or the node's own input type.
fn check_send<S: GraphState>(
    graph: &Graph<S>,
    node: usize,
    arg: &SendArg<S>,
    from: &str,
) -> Result<(), GraphError> {
    let name = &*graph.names[node];
    let state = || format!("the state `{}`", std::any::type_name::<S>());
    let (expected, found, fix) = match (&graph.inputs[node], arg) {
        (None, SendArg::State(_)) => return Ok(()),
        (Some(wanted), SendArg::State(_)) if wanted.or_state => return Ok(()),
        (Some(wanted), SendArg::Input(input)) if wanted.id == input.ty.id => return Ok(()),
        (None, SendArg::Input(input)) => (
            state(),
            format!("an input `{}`", input.ty.name),
            format!(
                "send it a state with `Send::new(\"{name}\", state)`, or add it with `add_node_with_input` to take a `{}`",
                input.ty.name
            ),
        ),
        (Some(wanted), found) => (
            format!("its own input `{}`", wanted.name),
            match found {
                SendArg::State(_) => state(),
                SendArg::Input(input) => format!("an input `{}`", input.ty.name),
            },
            format!(
                "send it with `Send::input(\"{name}\", value)` where value is a `{}`",
                wanted.name
            ),
        ),
    };
    Err(GraphError::SendInput {
        from: from.to_owned(),
        node: name.to_owned(),
        expected,
        found,
        fix,
    })
}

/// What a node's routers returned: per router (its index among the graph's branches), where
/// it sends the run.
pub(crate) type Routes<S> = Vec<(usize, Vec<Goto<S>>)>;

/// What the routers of `outgoing` return on `state`.
pub(crate) fn route<S: GraphState>(graph: &Graph<S>, outgoing: &Outgoing, state: &S) -> Routes<S> {
    outgoing
        .branches
        .iter()
        .map(|&b| (b, (graph.branches[b].router)(state).goto))
        .collect()
}

/// Applies one update as `node`'s write in `step`.
pub(crate) fn apply_to<S: GraphState>(
    state: &mut S,
    node: &str,
    step: i64,
    update: S::Update,
) -> Result<(), GraphError> {
    state.apply(update).map_err(|source| GraphError::Reducer {
        node: node.to_owned(),
        step,
        source,
    })
}

/// Applies one update like [`apply_to`]; with `rewritten`, adds to it the fields the update
/// wrote other than by appending (what a checkpoint must encode whole).
pub(crate) fn apply_tracked<S: GraphState>(
    state: &mut S,
    node: &str,
    step: i64,
    update: S::Update,
    rewritten: Option<&mut FieldSet>,
) -> Result<(), GraphError> {
    let Some(rewritten) = rewritten else {
        return apply_to(state, node, step, update);
    };
    let mut fields = S::writes(&update);
    let applied = crate::reducers::journal::record(
        || apply_to(state, node, step, update),
        |name| {
            if let Some(index) = S::fields().iter().position(|f| f.name == name) {
                fields = FieldSet(fields.0 & !FieldSet::single(index).0);
            }
        },
    );
    *rewritten = rewritten.union(fields);
    applied
}

/// The input step: `input` is written as if by a node `__start__`, then START's edges fire.
pub(crate) fn start<S: GraphState>(
    graph: &Graph<S>,
    state: &mut Arc<S>,
    step: i64,
    input: S::Update,
    frontier: &mut Frontier<S>,
    rewritten: Option<&mut FieldSet>,
) -> Result<(), GraphError> {
    apply_tracked(Arc::make_mut(state), START, step, input, rewritten)?;
    let routes = route(graph, &graph.start, state);
    frontier.fire(graph, &graph.start, None, Vec::new(), routes)
}

/// The barrier: applies the step's writes in task order, then fires what each task leads to.
/// Every applied update is also pushed to `recorded` (a subgraph's output), and the fields
/// written other than by appending are added to `rewritten`. Returns the fields written.
pub(crate) fn barrier<S: GraphState>(
    graph: &Graph<S>,
    state: &mut Arc<S>,
    step: i64,
    mut writes: Vec<TaskWrites<S>>,
    frontier: &mut Frontier<S>,
    mut recorded: Option<&mut Vec<S::Update>>,
    mut rewritten: Option<&mut FieldSet>,
) -> Result<FieldSet, GraphError> {
    // A last-value field takes one write per step (a batch counts as one task's write).
    let mut written = FieldSet::EMPTY;
    let mut all_written = FieldSet::EMPTY;
    for (i, task) in writes.iter().enumerate() {
        let fields = task.written();
        all_written = all_written.union(fields);
        let fields = fields.intersection(graph.last_value);
        if let Some(field) = fields.intersection(written).iter().next() {
            let first = writes[..i]
                .iter()
                .position(|t| t.written().contains(field))
                .unwrap_or(0);
            return Err(GraphError::InvalidUpdate {
                field: S::fields()[field].name,
                first: graph.names[writes[first].node].to_string(),
                second: graph.names[task.node].to_string(),
                step,
            });
        }
        written = written.union(fields);
    }

    // Routers read the state as their own node left it. With one task that is the state after
    // the barrier; with several, a private copy of the step's start plus that task's writes
    // (only for tasks that have conditional edges; by task index, none in most steps).
    let single = writes.len() == 1;
    let mut private: Vec<(usize, Routes<S>)> = Vec::new();
    for (i, task) in writes.iter().enumerate() {
        let outgoing = &graph.out[task.node];
        if single || outgoing.branches.is_empty() {
            continue;
        }
        let mut local = (**state).clone();
        for update in task.updates.iter() {
            apply_to(&mut local, &graph.names[task.node], step, update.clone())?;
        }
        private.push((i, route(graph, outgoing, &local)));
    }

    let target = Arc::make_mut(state);
    for task in &mut writes {
        let name = &graph.names[task.node];
        for update in std::mem::replace(&mut task.updates, Updates::None) {
            if let Some(record) = recorded.as_deref_mut() {
                record.push(update.clone());
            }
            apply_tracked(target, name, step, update, rewritten.as_deref_mut())?;
        }
    }

    // Then what the writes trigger, in task order.
    let mut private = private.into_iter().peekable();
    for (i, task) in writes.into_iter().enumerate() {
        let outgoing = &graph.out[task.node];
        let routes = match private.next_if(|(at, _)| *at == i) {
            Some((_, routes)) => routes,
            None if single => route(graph, outgoing, state),
            None => Vec::new(),
        };
        frontier.fire(graph, outgoing, Some(task.node), task.goto, routes)?;
    }
    frontier.settle_joins(graph);
    Ok(all_written)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::executor::runner::Updates;
    use crate::{END, GraphState, START, StateGraph};

    #[derive(GraphState, Clone, Default, Debug, PartialEq)]
    struct S {
        #[reducer(append)]
        log: Vec<String>,
        last: String,
    }

    async fn noop(_: Arc<S>) {}

    fn writes(node: usize, update: SUpdate) -> TaskWrites<S> {
        TaskWrites {
            node,
            updates: Updates::One(update),
            goto: Vec::new(),
        }
    }

    fn log(entry: &str) -> SUpdate {
        SUpdate::default().log(vec![entry.to_owned()])
    }

    fn names(graph: &Graph<S>, tasks: &[Task<S>]) -> Vec<String> {
        tasks
            .iter()
            .map(|t| graph.names[t.node].to_string())
            .collect()
    }

    #[test]
    fn tasks_run_in_name_order_then_sends_in_the_order_sent() {
        let graph = StateGraph::<S>::new()
            .add_node("b10", noop)
            .add_node("b9", noop)
            .add_node("a", noop)
            .add_edge(START, "b9")
            .add_edge(START, "b10")
            .add_edge(START, "a")
            .add_edge(["a", "b9", "b10"], END)
            .compile()
            .unwrap();
        let graph = &*graph.inner;
        let mut frontier = Frontier::new(graph, false);
        for node in [1, 0, 2] {
            frontier.trigger(node, FROM_START);
        }
        frontier.trigger(1, FROM_START);
        frontier.pushes.push((1, SendArg::State(S::default())));
        frontier.pushes.push((2, SendArg::State(S::default())));
        let tasks = frontier.take_tasks(graph);
        assert_eq!(names(graph, &tasks), ["a", "b10", "b9", "b9", "a"]);
        assert_eq!(
            tasks.iter().map(|t| t.push).collect::<Vec<_>>(),
            [None, None, None, Some(0), Some(1)]
        );
        assert!(frontier.is_empty());
        frontier.put_back(tasks);
        assert_eq!(frontier.pulls.len(), 3, "each pulled node once");
        assert_eq!(frontier.pushes.len(), 2);
    }

    #[test]
    fn a_join_triggers_its_target_once_all_sources_ran() {
        let graph = StateGraph::<S>::new()
            .add_node("a", noop)
            .add_node("b", noop)
            .add_node("c", noop)
            .add_edge(START, "a")
            .add_edge(START, "b")
            .add_edge(["a", "b"], "c")
            .add_edge("c", END)
            .compile()
            .unwrap();
        let graph = &*graph.inner;
        let mut frontier = Frontier::new(graph, true);
        let mut state = Arc::new(S::default());
        barrier(
            graph,
            &mut state,
            1,
            vec![writes(0, log("a"))],
            &mut frontier,
            None,
            None,
        )
        .unwrap();
        assert!(frontier.is_empty(), "c waits for b");
        barrier(
            graph,
            &mut state,
            2,
            vec![writes(1, log("b"))],
            &mut frontier,
            None,
            None,
        )
        .unwrap();
        let tasks = frontier.take_tasks(graph);
        assert_eq!(names(graph, &tasks), ["c"]);
        let triggers = tasks[0].stream.as_ref().map(|s| s.triggers.clone());
        assert_eq!(triggers, Some(vec!["join".to_owned()]));
        assert_eq!(state.log, ["a", "b"]);
        assert!(
            frontier.joins[0].iter().all(|seen| !seen),
            "the join resets"
        );
    }

    #[test]
    fn writes_apply_in_task_order_and_a_second_last_value_write_is_an_error() {
        let graph = StateGraph::<S>::new()
            .add_node("x", noop)
            .add_node("y", noop)
            .add_edge(START, "x")
            .add_edge(START, "y")
            .add_edge(["x", "y"], END)
            .compile()
            .unwrap();
        let graph = &*graph.inner;
        let mut frontier = Frontier::new(graph, false);
        let mut state = Arc::new(S::default());
        let mut recorded = Vec::new();
        let mut rewritten = FieldSet::EMPTY;
        let step = vec![writes(1, log("y")), writes(0, log("x"))];
        let fields = barrier(
            graph,
            &mut state,
            1,
            step,
            &mut frontier,
            Some(&mut recorded),
            Some(&mut rewritten),
        );
        assert_eq!(fields.unwrap(), FieldSet::single(0));
        assert_eq!(state.log, ["y", "x"], "task order, as given");
        assert_eq!(recorded.len(), 2);
        assert!(rewritten.is_empty(), "`log` was only appended to");

        let clash = vec![
            writes(0, SUpdate::default().last("1".to_owned())),
            writes(1, SUpdate::default().last("2".to_owned())),
        ];
        let error = barrier(graph, &mut state, 2, clash, &mut frontier, None, None).unwrap_err();
        let message = error.to_string();
        assert!(message.contains("`last`"), "{message}");
        assert!(
            message.contains("`x`") && message.contains("`y`"),
            "{message}"
        );
    }

    #[test]
    fn routers_read_their_own_nodes_writes_not_their_siblings() {
        let graph = StateGraph::<S>::new()
            .add_node("left", noop)
            .add_node("right", noop)
            .add_node("saw_one", noop)
            .add_node("saw_two", noop)
            .add_edge(START, "left")
            .add_edge(START, "right")
            .add_conditional_edges(
                "left",
                |s: &S| {
                    if s.log.len() == 1 {
                        "saw_one"
                    } else {
                        "saw_two"
                    }
                },
                ["saw_one", "saw_two"],
            )
            .add_edge("right", END)
            .add_edge(["saw_one", "saw_two"], END)
            .compile()
            .unwrap();
        let graph = &*graph.inner;
        let mut frontier = Frontier::new(graph, false);
        let mut state = Arc::new(S::default());
        let step = vec![writes(0, log("left")), writes(1, log("right"))];
        barrier(graph, &mut state, 1, step, &mut frontier, None, None).unwrap();
        let tasks = frontier.take_tasks(graph);
        assert_eq!(names(graph, &tasks), ["saw_one"]);
    }

    #[test]
    fn gotos_and_sends_resolve_against_the_graph() {
        let graph = StateGraph::<S>::new()
            .add_node("a", noop)
            .add_node("b", noop)
            .add_edge(START, "a")
            .add_edge("a", END)
            .add_edge("b", END)
            .add_conditional_edges(START, |_: &S| "b", ["b"])
            .compile()
            .unwrap();
        let graph = &*graph.inner;
        let mut frontier = Frontier::new(graph, false);
        let mut state = Arc::new(S::default());
        start(graph, &mut state, -1, log("in"), &mut frontier, None).unwrap();
        assert_eq!(names(graph, &frontier.take_tasks(graph)), ["a", "b"]);

        let task = TaskWrites {
            node: 0,
            updates: Updates::None,
            goto: vec![
                Goto::Node("b".to_owned()),
                Goto::Send(Send::new("a", S::default())),
            ],
        };
        barrier(graph, &mut state, 1, vec![task], &mut frontier, None, None).unwrap();
        assert_eq!(names(graph, &frontier.take_tasks(graph)), ["b", "a"]);

        let task = TaskWrites {
            node: 0,
            updates: Updates::None,
            goto: vec![Goto::Node("nowhere".to_owned())],
        };
        let error =
            barrier(graph, &mut state, 2, vec![task], &mut frontier, None, None).unwrap_err();
        assert!(error.to_string().contains("`nowhere`"), "{error}");
    }
}
