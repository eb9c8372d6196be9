//! The run loop (Pregel super-steps): plan tasks -> run them -> apply writes at the barrier ->
//! route. Everything else hangs off this loop; keep it small.
//!
//! Semantics (LangGraph's):
//! - every task of step N sees the state as of the end of step N-1 (one shared `Arc`, no copy);
//! - writes apply together at the barrier in task order — edge-triggered tasks by node name
//!   (plain string order), then `Send` tasks in the order sent — never completion order;
//! - two writes to a last-value field in one step are an error naming both nodes;
//! - a node triggered by several finished nodes runs once; a join runs once all sources ran;
//! - routers read the state as their node left it: the step's start plus that node's writes.

use std::panic::AssertUnwindSafe;
use std::sync::Arc;

use futures::FutureExt;
use tracing::Instrument;

use crate::command::{Goto, Send};
use crate::compiled::{CompiledGraph, Graph, Outgoing, Target};
use crate::config::{RunConfig, new_run_id};
use crate::constants::{END, START};
use crate::context::{NodeContext, RunInfo};
use crate::error::{GraphError, list_names};
use crate::node::{NodeError, NodeOutput};
use crate::state::{FieldSet, GraphState};

/// One task of a super-step.
struct Task<S> {
    node: usize,
    /// `Some` for a `Send` task: its own input.
    input: Option<S>,
}

/// What routes into the next step.
struct Frontier<S> {
    triggered: Vec<bool>,
    pulls: Vec<usize>,
    pushes: Vec<(usize, S)>,
}

impl<S> Frontier<S> {
    fn new(n: usize) -> Self {
        Frontier {
            triggered: vec![false; n],
            pulls: Vec::new(),
            pushes: Vec::new(),
        }
    }

    fn trigger(&mut self, node: usize) {
        if !self.triggered[node] {
            self.triggered[node] = true;
            self.pulls.push(node);
        }
    }

    /// Tasks in the order they run and apply: pulls by node name, then pushes as sent.
    fn take_tasks(&mut self, rank: &[u32]) -> Vec<Task<S>> {
        let mut pulls = std::mem::take(&mut self.pulls);
        pulls.sort_unstable_by_key(|&n| rank[n]);
        let mut tasks = Vec::with_capacity(pulls.len() + self.pushes.len());
        for node in pulls {
            self.triggered[node] = false;
            tasks.push(Task { node, input: None });
        }
        for (node, input) in self.pushes.drain(..) {
            tasks.push(Task {
                node,
                input: Some(input),
            });
        }
        tasks
    }
}

/// The state of one run.
struct Run<'g, S: GraphState> {
    graph: &'g Graph<S>,
    info: Arc<RunInfo>,
    state: Arc<S>,
    step: i64,
    frontier: Frontier<S>,
    join_seen: Vec<Vec<bool>>,
}

impl<S: GraphState> CompiledGraph<S> {
    /// Runs the graph to completion on `input` (a partial state; a full state converts into
    /// one) and returns the final state.
    pub async fn invoke(
        &self,
        input: impl Into<S::Update>,
        config: RunConfig,
    ) -> Result<S, GraphError> {
        let run_id = match &config.run_id {
            Some(id) => Arc::from(id.as_str()),
            None => new_run_id(),
        };
        let span = tracing::info_span!("graph", run_id = %run_id);
        let info = Arc::new(RunInfo { run_id, config });
        let graph = &*self.inner;
        let mut run = Run {
            graph,
            info,
            state: Arc::new(S::default()),
            step: -1,
            frontier: Frontier::new(graph.names.len()),
            join_seen: graph.joins.iter().map(|j| vec![false; j.sources]).collect(),
        };
        let input = input.into();
        async move {
            run.apply_input(input)?;
            run.run_steps().await?;
            let Run { state, .. } = run;
            Ok(Arc::try_unwrap(state).unwrap_or_else(|shared| (*shared).clone()))
        }
        .instrument(span)
        .await
    }
}

impl<'g, S: GraphState> Run<'g, S> {
    /// Step -1: the input is written as if by a node `__start__`, then START's edges fire.
    fn apply_input(&mut self, input: S::Update) -> Result<(), GraphError> {
        let state = Arc::make_mut(&mut self.state);
        state.apply(input).map_err(|source| GraphError::Reducer {
            node: START.to_owned(),
            step: -1,
            source,
        })?;
        let graph = self.graph;
        let mut routes = Vec::new();
        for &b in &graph.start.branches {
            let branch = &graph.branches[b];
            routes.push((b, (branch.router)(&self.state).goto));
        }
        self.fire(&graph.start, START, Vec::new(), routes)?;
        self.step = 0;
        Ok(())
    }

    async fn run_steps(&mut self) -> Result<(), GraphError> {
        let limit = self.info.config.recursion_limit;
        let mut last_nodes = String::new();
        loop {
            let tasks = self.frontier.take_tasks(&self.graph.rank);
            if tasks.is_empty() {
                return Ok(());
            }
            if self.step as usize >= limit {
                return Err(GraphError::RecursionLimit { limit, last_nodes });
            }
            let nodes: Vec<usize> = tasks.iter().map(|t| t.node).collect();
            let outputs = self.run_tasks(tasks).await?;
            self.barrier(&nodes, outputs)?;
            last_nodes = list_names(nodes.iter().map(|&n| &*self.graph.names[n]));
            self.step += 1;
        }
    }

    /// Runs the step's tasks concurrently; results come back in task order.
    async fn run_tasks(&self, tasks: Vec<Task<S>>) -> Result<Vec<NodeOutput<S>>, GraphError> {
        let limit = self.info.config.recursion_limit;
        let remaining = limit.saturating_sub(self.step as usize);
        let step = self.step;
        let graph = self.graph;
        let make = |task: Task<S>, state: &Arc<S>| {
            let name = graph.names[task.node].clone();
            let ctx = NodeContext::new(name.clone(), step, remaining, self.info.clone());
            let input = match task.input {
                Some(input) => Arc::new(input),
                None => state.clone(),
            };
            let span = tracing::info_span!("node", node = %name, step);
            let fut = graph.nodes[task.node].call(input, ctx);
            AssertUnwindSafe(fut).catch_unwind().instrument(span)
        };

        if tasks.len() == 1 {
            let Some(task) = tasks.into_iter().next() else {
                return Ok(Vec::new());
            };
            let node = task.node;
            let result = make(task, &self.state).await;
            return Ok(vec![self.task_result(node, result)?]);
        }

        let count = tasks.len();
        let nodes: Vec<usize> = tasks.iter().map(|t| t.node).collect();
        let max_concurrency = self.info.config.max_concurrency.unwrap_or(usize::MAX);
        let mut pending = tasks.into_iter().enumerate();
        let mut set = tokio::task::JoinSet::new();
        let mut outputs: Vec<Option<NodeOutput<S>>> = (0..count).map(|_| None).collect();
        let mut spawn_next = |set: &mut tokio::task::JoinSet<_>| {
            if let Some((i, task)) = pending.next() {
                let fut = make(task, &self.state);
                set.spawn(async move { (i, fut.await) });
            }
        };
        for _ in 0..max_concurrency.min(count) {
            spawn_next(&mut set);
        }
        while let Some(joined) = set.join_next().await {
            let (i, result) = match joined {
                Ok(done) => done,
                Err(error) => {
                    // Tasks catch their own panics; this is a cancelled runtime.
                    return Err(GraphError::NodePanicked {
                        node: "unknown".to_owned(),
                        step: self.step,
                        message: error.to_string(),
                    });
                }
            };
            outputs[i] = Some(self.task_result(nodes[i], result)?);
            spawn_next(&mut set);
        }
        Ok(outputs.into_iter().flatten().collect())
    }

    fn task_result(
        &self,
        node: usize,
        result: Result<
            Result<NodeOutput<S>, NodeError>,
            Box<dyn std::any::Any + std::marker::Send>,
        >,
    ) -> Result<NodeOutput<S>, GraphError> {
        let name = || self.graph.names[node].to_string();
        match result {
            Ok(Ok(output)) => Ok(output),
            Ok(Err(NodeError::TimedOut(after))) => Err(GraphError::NodeTimeout {
                node: name(),
                step: self.step,
                after,
            }),
            Ok(Err(error)) => Err(GraphError::Node {
                node: name(),
                step: self.step,
                source: match error {
                    NodeError::Failed(source) => source,
                    other => Box::new(other),
                },
            }),
            Err(panic) => Err(GraphError::NodePanicked {
                node: name(),
                step: self.step,
                message: panic_message(panic.as_ref()),
            }),
        }
    }

    /// Applies the step's writes in task order, then routes.
    fn barrier(&mut self, nodes: &[usize], outputs: Vec<NodeOutput<S>>) -> Result<(), GraphError> {
        let graph = self.graph;
        let mut updates = Vec::with_capacity(outputs.len());
        let mut gotos = Vec::with_capacity(outputs.len());
        for output in outputs {
            match output {
                NodeOutput::Update(update) => {
                    updates.push(Some(update));
                    gotos.push(Vec::new());
                }
                NodeOutput::Command(command) => {
                    updates.push(command.update);
                    gotos.push(command.goto);
                }
            }
        }

        // A last-value field takes one write per step.
        let mut written = FieldSet::EMPTY;
        for (i, update) in updates.iter().enumerate() {
            let Some(update) = update else { continue };
            let writes = S::writes(update).intersection(graph.last_value);
            let clash = writes.intersection(written);
            if let Some(field) = clash.iter().next() {
                let first = updates[..i]
                    .iter()
                    .position(|u| u.as_ref().is_some_and(|u| S::writes(u).contains(field)))
                    .unwrap_or(0);
                return Err(GraphError::InvalidUpdate {
                    field: S::fields()[field].name,
                    first: graph.names[nodes[first]].to_string(),
                    second: graph.names[nodes[i]].to_string(),
                    step: self.step,
                });
            }
            written = written.union(writes);
        }

        // Routers read the state as their own node left it. With one task that is the state
        // after the barrier; with several, a private copy of the step's start plus that
        // task's writes (only for tasks that have conditional edges).
        let single = nodes.len() == 1;
        let mut routes: Vec<Vec<(usize, Vec<Goto<S>>)>> =
            (0..nodes.len()).map(|_| Vec::new()).collect();
        if !single {
            for (i, &node) in nodes.iter().enumerate() {
                if graph.out[node].branches.is_empty() {
                    continue;
                }
                let mut local = (*self.state).clone();
                if let Some(update) = &updates[i] {
                    self.apply_one(&mut local, node, update.clone())?;
                }
                for &b in &graph.out[node].branches {
                    routes[i].push((b, (graph.branches[b].router)(&local).goto));
                }
            }
        }

        let state = Arc::make_mut(&mut self.state);
        for (i, update) in updates.into_iter().enumerate() {
            if let Some(update) = update {
                Self::apply_to(state, graph, self.step, nodes[i], update)?;
            }
        }

        if single {
            let node = nodes[0];
            for &b in &graph.out[node].branches {
                routes[0].push((b, (graph.branches[b].router)(&self.state).goto));
            }
        }

        for (i, (&node, (goto, routes))) in
            nodes.iter().zip(gotos.into_iter().zip(routes)).enumerate()
        {
            let _ = i;
            let name = graph.names[node].clone();
            self.fire(&graph.out[node], &name, goto, routes)?;
        }

        // Joins whose sources have all run trigger their target.
        for (j, join) in graph.joins.iter().enumerate() {
            let seen = &mut self.join_seen[j];
            if seen.iter().all(|s| *s) {
                seen.iter_mut().for_each(|s| *s = false);
                self.frontier.trigger(join.target);
            }
        }
        Ok(())
    }

    fn apply_one(&self, state: &mut S, node: usize, update: S::Update) -> Result<(), GraphError> {
        Self::apply_to(state, self.graph, self.step, node, update)
    }

    fn apply_to(
        state: &mut S,
        graph: &Graph<S>,
        step: i64,
        node: usize,
        update: S::Update,
    ) -> Result<(), GraphError> {
        state.apply(update).map_err(|source| GraphError::Reducer {
            node: graph.names[node].to_string(),
            step,
            source,
        })
    }

    /// Fires what a finished node (or START) leads to: static edges, joins, its `Command`
    /// gotos, then its routers' results.
    fn fire(
        &mut self,
        outgoing: &Outgoing,
        from: &str,
        goto: Vec<Goto<S>>,
        routes: Vec<(usize, Vec<Goto<S>>)>,
    ) -> Result<(), GraphError> {
        let graph = self.graph;
        for &t in &outgoing.targets {
            self.frontier.trigger(t);
        }
        for &(join, slot) in &outgoing.joins {
            self.join_seen[join][slot] = true;
        }
        for g in goto {
            match g {
                Goto::Node(name) => {
                    if name != END {
                        let target = self.node_named(&name, from, "Command goto")?;
                        self.frontier.trigger(target);
                    }
                }
                Goto::Send(send) => self.push(send, from, "Send")?,
            }
        }
        for (b, gotos) in routes {
            let branch = &graph.branches[b];
            for g in gotos {
                match g {
                    Goto::Send(send) => self.push(send, &branch.from, "Send")?,
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
                            None => Target::Node(self.node_named(&key, &branch.from, "router")?),
                        };
                        if let Target::Node(t) = target {
                            self.frontier.trigger(t);
                        }
                    }
                }
            }
        }
        Ok(())
    }

    fn push(&mut self, send: Send<S>, from: &str, what: &'static str) -> Result<(), GraphError> {
        let node = self.node_named(&send.node, from, what)?;
        self.frontier.pushes.push((node, send.input));
        Ok(())
    }

    fn node_named(&self, name: &str, from: &str, what: &'static str) -> Result<usize, GraphError> {
        self.graph
            .index
            .get(name)
            .copied()
            .ok_or_else(|| GraphError::UnknownTarget {
                what,
                from: from.to_owned(),
                target: name.to_owned(),
                known: self.graph.known_names(),
            })
    }
}

fn panic_message(panic: &(dyn std::any::Any + std::marker::Send)) -> String {
    if let Some(s) = panic.downcast_ref::<&str>() {
        (*s).to_owned()
    } else if let Some(s) = panic.downcast_ref::<String>() {
        s.clone()
    } else {
        "non-string panic payload".to_owned()
    }
}
