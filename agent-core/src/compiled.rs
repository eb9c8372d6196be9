//! `compile()`: validation, and the compiled graph's index-based layout the executor walks.
//!
//! Names are resolved to indices once here, so the run loop never hashes a string on the hot
//! path (except to resolve what routers and commands return).

use std::collections::HashMap;
use std::marker::PhantomData;
use std::sync::Arc;

use crate::cache::{CachePolicy, NodeCache};
use crate::checkpoint::Checkpointer;
use crate::constants::{END, START};
use crate::error::{GraphError, list_names};
use crate::graph::{Router, StateGraph};
use crate::node::Node;
use crate::node_input::InputType;
use crate::runtime::{AnyContext, ContextType};
use crate::state::{FieldSet, GraphState};

/// The name of a graph not given one (LangGraph's default).
pub(crate) const DEFAULT_NAME: &str = "LangGraph";

/// A validated graph, ready to run. Cheap to clone (two `Arc`s); share it across tasks and
/// requests.
///
/// `C` is the graph's runtime context type (`()` when it has none); give the value with
/// [`with_context`](Self::with_context) before running a graph whose nodes read it.
pub struct CompiledGraph<S: GraphState, C = ()> {
    pub(crate) inner: Arc<Graph<S>>,
    /// The context every run of this handle gets (type `C`, erased for the executor).
    pub(crate) context: Option<AnyContext>,
    /// Where nodes with a cache policy keep their results (see [`crate::cache`]).
    pub(crate) cache: Option<Arc<dyn NodeCache>>,
    /// The long-term memory runs of this handle give their nodes (see [`crate::store`]).
    pub(crate) store: Option<Arc<dyn crate::store::Store>>,
    /// The graph's name in traces (see [`with_name`](Self::with_name)).
    pub(crate) name: Option<Arc<str>>,
    /// How it checkpoints when run as a subgraph (see [`SubgraphCheckpoints`]).
    pub(crate) subgraph_checkpoints: SubgraphCheckpoints,
    _context: PhantomData<fn() -> C>,
}

/// How a graph run as a subgraph checkpoints when its parent does (LangGraph's
/// `compile(checkpointer=None | True | False)` on a child graph).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum SubgraphCheckpoints {
    /// Each task's run checkpoints under a namespace of its own (`node:<task uuid>`): a
    /// call starts fresh, a paused one resumes (LangGraph's `checkpointer=None`).
    #[default]
    PerTask,
    /// One history per thread (LangGraph's `checkpointer=True`): the namespace is the
    /// node's path without task ids (`outer|inner`), so each call goes on from the state the
    /// last one left (its input applied on top), and a paused call resumes.
    PerThread,
    /// No checkpoints (LangGraph's `checkpointer=False`): the child cannot pause.
    Off,
}

impl<S: GraphState, C> Clone for CompiledGraph<S, C> {
    fn clone(&self) -> Self {
        CompiledGraph {
            inner: self.inner.clone(),
            context: self.context.clone(),
            cache: self.cache.clone(),
            store: self.store.clone(),
            name: self.name.clone(),
            subgraph_checkpoints: self.subgraph_checkpoints,
            _context: PhantomData,
        }
    }
}

impl<S: GraphState, C> std::fmt::Debug for CompiledGraph<S, C> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CompiledGraph")
            .field("nodes", &self.inner.topology.nodes)
            .field("context", &std::any::type_name::<C>())
            .field("has_context", &self.context.is_some())
            .finish_non_exhaustive()
    }
}

/// Where a route leads once resolved.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Target {
    Node(usize),
    End,
}

/// What happens when a node (or START) finishes.
#[derive(Default)]
pub(crate) struct Outgoing {
    /// Plain edges.
    pub(crate) targets: Vec<usize>,
    /// Joins this node feeds: (join index, slot of this node in the join).
    pub(crate) joins: Vec<(usize, usize)>,
    /// Conditional edges out of this node.
    pub(crate) branches: Vec<usize>,
}

pub(crate) struct Join {
    pub(crate) sources: usize,
    pub(crate) target: usize,
}

pub(crate) struct Branch<S> {
    pub(crate) from: Arc<str>,
    pub(crate) router: Router<S>,
    /// `None`: keys are node names.
    pub(crate) map: Option<HashMap<String, Target>>,
    pub(crate) keys: String,
}

/// The shape of a compiled graph, for diagrams and introspection.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Topology {
    /// Node names in the order they were added.
    pub nodes: Vec<String>,
    /// Plain edges `(from, to)`, joins expanded to one edge per source; `__start__`/`__end__`
    /// stand for START and END.
    pub edges: Vec<(String, String)>,
    /// Conditional edges: `(from, key, to)`; the key is the path-map key, `None` for
    /// [`crate::PathMap::any`] (an edge to every node).
    pub conditional: Vec<(String, Option<String>, String)>,
    /// Declared `Command` destinations `(from, to)`.
    pub commands: Vec<(String, String)>,
    /// The nodes that run a compiled graph (subgraphs), with that graph's shape.
    pub subgraphs: Vec<(String, Topology)>,
    /// The state's fields (what a subgraph's schemas describe once its type is erased in
    /// its node).
    pub fields: Vec<crate::state::FieldInfo>,
    /// The runtime context's type (`None` only in a shape made by hand).
    pub context_type: Option<std::any::TypeId>,
}

pub(crate) struct Graph<S: GraphState> {
    pub(crate) names: Arc<[Arc<str>]>,
    pub(crate) index: HashMap<String, usize>,
    pub(crate) nodes: Vec<Arc<dyn Node<S>>>,
    /// Position of each node in name order: edge-triggered tasks run and apply in this order.
    pub(crate) rank: Vec<u32>,
    pub(crate) start: Outgoing,
    pub(crate) out: Vec<Outgoing>,
    pub(crate) joins: Vec<Join>,
    pub(crate) branches: Vec<Branch<S>>,
    pub(crate) last_value: FieldSet,
    pub(crate) interrupt_before: Vec<bool>,
    pub(crate) interrupt_after: Vec<bool>,
    pub(crate) checkpointer: Option<Arc<dyn Checkpointer>>,
    pub(crate) topology: Topology,
    /// The context type the nodes read, when one of them reads it.
    pub(crate) needs_context: Option<ContextType>,
    /// Per node, its cache policy.
    pub(crate) cache_policies: Vec<Option<CachePolicy<S>>>,
    /// Per node, its own input type when it takes one instead of the state.
    pub(crate) inputs: Arc<[Option<InputType>]>,
    /// The state's field names, shared by every checkpoint's versions.
    pub(crate) fields: crate::checkpoint::FieldNames,
    /// Per node, whether its tasks' first polls were long (how a wide step runs them).
    pub(crate) first_polls: Arc<crate::executor::FirstPolls>,
    /// Per field, then the table of shared values: whether its large blobs lately compressed.
    pub(crate) compress_hints: Box<[crate::checkpoint::compress::Hint]>,
}

impl<S: GraphState> Graph<S> {
    /// The input type of the node named `name`, when it takes one.
    pub(crate) fn input_of(&self, name: &str) -> Option<InputType> {
        self.inputs[*self.index.get(name)?]
    }

    pub(crate) fn known_names(&self) -> String {
        list_names(self.topology.nodes.iter().map(String::as_str))
    }
}

impl<S: GraphState, C: Send + Sync + 'static> CompiledGraph<S, C> {
    /// This graph with `context` given to every run (LangGraph's `invoke(.., context=..)`).
    /// Cheap: the handle is cloned, not the graph; keep one handle per context value.
    pub fn with_context(&self, context: impl Into<Arc<C>>) -> Self {
        let context: Arc<C> = context.into();
        CompiledGraph {
            inner: self.inner.clone(),
            context: Some(context),
            cache: self.cache.clone(),
            store: self.store.clone(),
            name: self.name.clone(),
            subgraph_checkpoints: self.subgraph_checkpoints,
            _context: PhantomData,
        }
    }

    /// This graph with `cache` keeping the results of its nodes that have a
    /// [`CachePolicy`](crate::CachePolicy) (LangGraph's `compile(cache=..)`). Cheap: the
    /// handle is cloned, not the graph.
    pub fn with_cache(&self, cache: Arc<dyn NodeCache>) -> Self {
        CompiledGraph {
            inner: self.inner.clone(),
            context: self.context.clone(),
            cache: Some(cache),
            store: self.store.clone(),
            name: self.name.clone(),
            subgraph_checkpoints: self.subgraph_checkpoints,
            _context: PhantomData,
        }
    }

    /// This graph with `store` as the long-term memory of its runs (LangGraph's
    /// `compile(store=..)`): nodes read it with `ctx.store()` / `rt.store()`, its subgraphs
    /// too. A run's [`RunConfig::store`](crate::RunConfig::store) wins over it. Cheap: the
    /// handle is cloned, not the graph.
    pub fn with_store(&self, store: Arc<dyn crate::store::Store>) -> Self {
        let mut graph = self.clone();
        graph.store = Some(store);
        graph
    }

    /// This graph named `name` (LangGraph's `compile(name=..)`): the name of its runs' spans
    /// (`invoke_agent {name}`, attribute `gen_ai.agent.name`; see [`crate::telemetry`]), also
    /// when it runs as a subgraph. Cheap: the compiled graph is shared.
    pub fn with_name(&self, name: impl Into<Arc<str>>) -> Self {
        let mut graph = self.clone();
        graph.name = Some(name.into());
        graph
    }

    /// This graph checkpointing as `mode` when it runs as a subgraph (see
    /// [`SubgraphCheckpoints`]). Cheap: the compiled graph is shared.
    pub fn with_subgraph_checkpoints(&self, mode: SubgraphCheckpoints) -> Self {
        let mut graph = self.clone();
        graph.subgraph_checkpoints = mode;
        graph
    }

    /// How this graph checkpoints when it runs as a subgraph.
    pub fn subgraph_checkpoints(&self) -> SubgraphCheckpoints {
        self.subgraph_checkpoints
    }

    /// The graph's name: the one given to [`with_name`](Self::with_name), else `LangGraph`
    /// (LangGraph's default).
    pub fn name(&self) -> &str {
        self.name.as_deref().unwrap_or(DEFAULT_NAME)
    }

    /// The store runs of this handle get, if one was given.
    pub fn store(&self) -> Option<&Arc<dyn crate::store::Store>> {
        self.store.as_ref()
    }

    /// The context runs of this handle get, if one was given.
    pub fn context(&self) -> Option<Arc<C>> {
        self.context.clone().and_then(|c| c.downcast::<C>().ok())
    }

    /// The context for a run, or the error that says how to give one. Graphs whose nodes
    /// never read a context run without one.
    pub(crate) fn run_context(&self) -> Result<Option<AnyContext>, GraphError> {
        match (&self.context, self.inner.needs_context) {
            (Some(context), _) => Ok(Some(context.clone())),
            (None, None) => Ok(None),
            (None, Some(needed)) if needed.is_unit() => Ok(Some(Arc::new(()) as AnyContext)),
            (None, Some(needed)) => Err(GraphError::MissingContext {
                type_name: needed.name,
            }),
        }
    }
}

impl<S: GraphState, C> CompiledGraph<S, C> {
    /// The graph's nodes and edges.
    pub fn topology(&self) -> &Topology {
        &self.inner.topology
    }

    /// The checkpointer runs persist through, if any.
    pub fn checkpointer(&self) -> Option<&Arc<dyn Checkpointer>> {
        self.inner.checkpointer.as_ref()
    }
}

fn is_reserved(name: &str) -> bool {
    name == START || name == END || name.contains(':') || name.contains('|') || name.is_empty()
}

pub(crate) fn compile<S: GraphState, C: 'static>(
    builder: StateGraph<S, C>,
    checkpointer: Option<Arc<dyn Checkpointer>>,
) -> Result<CompiledGraph<S, C>, GraphError> {
    let StateGraph {
        nodes,
        edges,
        branches,
        interrupt_before,
        interrupt_after,
        errors,
        ..
    } = builder;
    if let Some(error) = errors.into_iter().next() {
        return Err(error);
    }
    if nodes.is_empty() {
        return Err(GraphError::Empty);
    }

    // Nodes that read a runtime context must read the graph's (those the type system could
    // not check: specs erased by `.with_retry(..)` and the like).
    let graph_context = ContextType::of::<C>();
    let mut needs_context = None;
    for (name, spec) in &nodes {
        if let Some(input) = spec.input
            && input.id == std::any::TypeId::of::<S>()
        {
            return Err(GraphError::InputIsState {
                node: name.clone(),
                state: std::any::type_name::<S>(),
            });
        }
        if let Some(wanted) = spec.context {
            if wanted != graph_context {
                return Err(GraphError::ContextMismatch {
                    node: name.clone(),
                    wanted: wanted.name,
                    graph: graph_context.name,
                });
            }
            needs_context = Some(wanted);
        }
    }

    let mut index = HashMap::with_capacity(nodes.len());
    for (i, (name, _)) in nodes.iter().enumerate() {
        if is_reserved(name) {
            return Err(GraphError::ReservedName(name.clone()));
        }
        if index.insert(name.clone(), i).is_some() {
            return Err(GraphError::DuplicateNode(name.clone()));
        }
    }
    let known = || list_names(nodes.iter().map(|(n, _)| n.as_str()));
    let lookup = |name: &str, context: &dyn Fn() -> String| -> Result<usize, GraphError> {
        index
            .get(name)
            .copied()
            .ok_or_else(|| GraphError::UnknownNode {
                context: context(),
                name: name.to_owned(),
                known: known(),
            })
    };
    let resolve_target = |name: &str, context: &dyn Fn() -> String| -> Result<Target, GraphError> {
        if name == END {
            Ok(Target::End)
        } else if name == START {
            Err(GraphError::InvalidEdge(context()))
        } else {
            lookup(name, context).map(Target::Node)
        }
    };

    let n = nodes.len();
    let mut start = Outgoing::default();
    let mut out: Vec<Outgoing> = (0..n).map(|_| Outgoing::default()).collect();
    let mut joins = Vec::new();
    let mut topology = Topology {
        nodes: nodes.iter().map(|(name, _)| name.clone()).collect(),
        subgraphs: nodes
            .iter()
            .filter_map(|(name, spec)| Some((name.clone(), (**spec.subgraph.as_ref()?).clone())))
            .collect(),
        fields: S::fields().to_vec(),
        context_type: Some(graph_context.id),
        ..Topology::default()
    };

    for edge in &edges {
        let describe = || {
            format!(
                "edge {} -> `{}`",
                list_names(edge.sources.iter().map(String::as_str)),
                edge.target
            )
        };
        if edge.sources.iter().any(|s| s == END) {
            return Err(GraphError::InvalidEdge(describe()));
        }
        let target = resolve_target(&edge.target, &describe)?;
        if let Target::Node(t) = target
            && let Some(input) = nodes[t].1.input
            && !input.or_state
        {
            return Err(GraphError::NeedsInput {
                node: edge.target.clone(),
                input: input.name,
                via: format!("the {}", describe()),
            });
        }
        for source in &edge.sources {
            topology.edges.push((source.clone(), edge.target.clone()));
        }
        if edge.sources.len() == 1 {
            let source = &edge.sources[0];
            let from = if source == START {
                &mut start
            } else {
                &mut out[lookup(source, &describe)?]
            };
            if let Target::Node(t) = target {
                if !from.targets.contains(&t) {
                    from.targets.push(t);
                }
            } else {
                // An edge to END only marks the node as having a way out.
            }
            continue;
        }
        if edge.sources.iter().any(|s| s == START) {
            return Err(GraphError::InvalidEdge(format!(
                "{}: START cannot be part of a join",
                describe()
            )));
        }
        let Target::Node(target) = target else {
            // A join to END: nothing to run; the sources still have a way out.
            for source in &edge.sources {
                lookup(source, &describe)?;
            }
            continue;
        };
        let join = joins.len();
        let mut slot = 0;
        let mut seen = Vec::new();
        for source in &edge.sources {
            let s = lookup(source, &describe)?;
            if seen.contains(&s) {
                continue;
            }
            seen.push(s);
            out[s].joins.push((join, slot));
            slot += 1;
        }
        joins.push(Join {
            sources: slot,
            target,
        });
    }

    let mut compiled_branches = Vec::with_capacity(branches.len());
    for branch in branches {
        let describe = || format!("conditional edges from `{}`", branch.from);
        let from_out = if branch.from == START {
            &mut start
        } else if branch.from == END {
            return Err(GraphError::InvalidEdge(describe()));
        } else {
            &mut out[lookup(&branch.from, &describe)?]
        };
        let (map, keys) = match branch.path_map.entries() {
            None => {
                for name in topology.nodes.iter().chain([&END.to_owned()]) {
                    topology
                        .conditional
                        .push((branch.from.clone(), None, name.clone()));
                }
                (None, "any node name".to_owned())
            }
            Some(entries) => {
                let mut map = HashMap::with_capacity(entries.len());
                for (key, target) in entries {
                    let context = || format!("path map of {} (key `{key}`)", describe());
                    map.insert(key.clone(), resolve_target(target, &context)?);
                    topology.conditional.push((
                        branch.from.clone(),
                        Some(key.clone()),
                        target.clone(),
                    ));
                }
                (
                    Some(map),
                    list_names(entries.iter().map(|(k, _)| k.as_str())),
                )
            }
        };
        from_out.branches.push(compiled_branches.len());
        compiled_branches.push(Branch {
            from: branch.from.as_str().into(),
            router: branch.router,
            map,
            keys,
        });
    }

    for (name, spec) in &nodes {
        for dest in &spec.destinations {
            let context = || format!("destinations of node `{name}`");
            resolve_target(dest, &context)?;
            topology.commands.push((name.clone(), dest.clone()));
        }
    }

    let mut before = vec![false; n];
    for name in &interrupt_before {
        before[lookup(name, &|| "interrupt_before".to_owned())?] = true;
    }
    let mut after = vec![false; n];
    for name in &interrupt_after {
        after[lookup(name, &|| "interrupt_after".to_owned())?] = true;
    }

    if start.targets.is_empty() && start.branches.is_empty() {
        return Err(GraphError::NoEntryPoint);
    }

    // Every node needs a way out: an edge (END included), conditional edges, destinations,
    // or an output that can be a `Command` (LangGraph compiles a node routed by its gotos
    // alone; a goto to an unknown node fails when it happens, naming both). A node whose
    // output can be a `Command` and that declares no destinations may go anywhere, as far
    // as reachability knows — with or without edges of its own, as LangGraph compiles
    // `a -> c` with `a` returning `Command(goto="b")`.
    let mut routes_anywhere = vec![false; n];
    for (i, (name, spec)) in nodes.iter().enumerate() {
        let has_edge = edges.iter().any(|e| e.sources.iter().any(|s| s == name));
        let way_out = has_edge || !out[i].branches.is_empty() || !spec.destinations.is_empty();
        if !way_out && !spec.may_command {
            return Err(GraphError::DeadEnd(name.clone()));
        }
        routes_anywhere[i] = spec.may_command && spec.destinations.is_empty();
    }

    // Reachability from START; a join's target needs all its sources reachable.
    let mut reachable = vec![false; n];
    let mut queue: Vec<usize> = Vec::new();
    let mark = |i: usize, reachable: &mut Vec<bool>, queue: &mut Vec<usize>| {
        if !reachable[i] {
            reachable[i] = true;
            queue.push(i);
        }
    };
    let branch_targets = |outgoing: &Outgoing| -> Vec<usize> {
        let mut targets = Vec::new();
        for &b in &outgoing.branches {
            match &compiled_branches[b].map {
                None => targets.extend(0..n),
                Some(map) => targets.extend(map.values().filter_map(|t| match t {
                    Target::Node(i) => Some(*i),
                    Target::End => None,
                })),
            }
        }
        targets
    };
    for &t in start.targets.iter().chain(branch_targets(&start).iter()) {
        mark(t, &mut reachable, &mut queue);
    }
    loop {
        while let Some(i) = queue.pop() {
            let mut next: Vec<usize> = out[i].targets.clone();
            next.extend(branch_targets(&out[i]));
            if routes_anywhere[i] {
                next.extend(0..n);
            }
            for dest in &nodes[i].1.destinations {
                if let Some(&d) = index.get(dest) {
                    next.push(d);
                }
            }
            for t in next {
                mark(t, &mut reachable, &mut queue);
            }
        }
        let mut progressed = false;
        for (j, join) in joins.iter().enumerate() {
            if reachable[join.target] {
                continue;
            }
            let all = (0..n)
                .filter(|&i| out[i].joins.iter().any(|&(jj, _)| jj == j))
                .all(|i| reachable[i]);
            if all {
                mark(join.target, &mut reachable, &mut queue);
                progressed = true;
            }
        }
        if !progressed {
            break;
        }
    }
    if let Some(i) = reachable.iter().position(|r| !r) {
        return Err(GraphError::Unreachable(nodes[i].0.clone()));
    }

    let mut by_name: Vec<usize> = (0..n).collect();
    by_name.sort_by(|&a, &b| nodes[a].0.cmp(&nodes[b].0));
    let mut rank = vec![0u32; n];
    for (position, &i) in by_name.iter().enumerate() {
        rank[i] = position as u32;
    }

    Ok(CompiledGraph {
        inner: Arc::new(Graph {
            names: nodes
                .iter()
                .map(|(name, _)| Arc::from(name.as_str()))
                .collect(),
            nodes: nodes.iter().map(|(_, spec)| spec.layered()).collect(),
            cache_policies: nodes.iter().map(|(_, spec)| spec.cache.clone()).collect(),
            inputs: nodes.iter().map(|(_, spec)| spec.input).collect(),
            index,
            rank,
            start,
            out,
            joins,
            branches: compiled_branches,
            last_value: S::last_value_fields(),
            interrupt_before: before,
            interrupt_after: after,
            checkpointer,
            topology,
            needs_context,
            fields: crate::checkpoint::FieldNames::new(
                S::fields(),
                crate::checkpoint::interning::FIELD,
            ),
            first_polls: Arc::new(crate::executor::FirstPolls::new(n)),
            compress_hints: (0..=S::fields().len())
                .map(|_| Default::default())
                .collect(),
        }),
        context: None,
        cache: None,
        store: None,
        name: None,
        subgraph_checkpoints: SubgraphCheckpoints::PerTask,
        _context: PhantomData,
    })
}
