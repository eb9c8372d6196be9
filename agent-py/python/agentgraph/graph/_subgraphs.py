"""Subgraphs' own state, as LangGraph keeps it (`pregel/main.py`'s `_own_checkpoint_config`,
`_subgraph_for_namespace`, `_prepare_state_snapshot`).

A child graph's checkpoints live in its root's saver under its namespace: `node:<task>` per
task (LangGraph's `checkpointer=None`), or the node path without task ids for a child
compiled with `checkpointer=True` (one history per thread). The state API on a config whose
`checkpoint_ns` names a subgraph reads and writes through that child's graph (its schema and
nodes) with the root's saver lent (`lender`); `get_state` shows each pending task of a
subgraph node with the child's namespace (`tasks[i].state`), or its snapshot with
`subgraphs=True`. Which child a namespace names is found here, by the nodes' names.
"""

from __future__ import annotations

import uuid
from typing import Any, Optional

from agentgraph import _native

NS_SEP = "|"
NS_END = ":"


def task_ns(parent_ns: str, node: str, task_id: str) -> str:
    """The namespace a subgraph run by task `task_id` of `node` checkpoints under: agent-core
    names the segment `node:<uuid5 of the task id>` (its task ids hold `:`)."""
    segment = f"{node}{NS_END}{uuid.uuid5(uuid.NAMESPACE_OID, task_id)}"
    return f"{parent_ns}{NS_SEP}{segment}" if parent_ns else segment


def recast(ns: str) -> str:
    """The namespace without task ids (and call counters): the path of node names."""
    return NS_SEP.join(part.split(NS_END)[0] for part in ns.split(NS_SEP) if part and not part.isdigit())


def find(graph: Any, ns: str) -> Optional[Any]:
    """The subgraph `ns` names under `graph` (nested through the nodes of each level), or
    None when one of its names is not a compiled graph added as a node."""
    from agentgraph.graph.state import CompiledStateGraph

    child = graph
    for name in recast(ns).split(NS_SEP):
        child = child.builder.nodes.get(name)
        if not isinstance(child, CompiledStateGraph):
            return None
    return child


def own_config(graph: Any, config: dict) -> dict:
    """A `checkpointer=True` child keeps one history per thread: its namespace with the task
    ids removed (numeric parts kept, as LangGraph's `_own_checkpoint_config`)."""
    if graph.checkpointer is not True:
        return config
    conf = config.get("configurable", {})
    ns = conf.get("checkpoint_ns", "")
    own = NS_SEP.join(part.split(NS_END)[0] for part in ns.split(NS_SEP))
    return {**config, "configurable": {**conf, "checkpoint_ns": own}}


def route(graph: Any, config: dict, *, for_update: bool = False) -> tuple[Any, Any, dict]:
    """`(graph to use, lending graph or None, config)` for a state-API call: a config naming a
    subgraph's namespace goes to that subgraph, with `graph` lending its saver."""
    ns = config.get("configurable", {}).get("checkpoint_ns", "")
    if not ns:
        return graph, None, config
    child = find(graph, ns)
    if child is None:
        if for_update:
            raise ValueError(f"Subgraph {recast(ns)} not found")
        return graph, None, config
    return child, graph, own_config(child, config)


def root_config(config: Optional[dict]) -> Optional[dict]:
    """A run of the root graph with a subgraph's config runs the thread from its latest
    checkpoint, as LangGraph's loop drops a root run's `checkpoint_ns` and `checkpoint_id`
    (the child, rerun by its task, finds its own); with a `checkpoint_map` (the config of a
    child's snapshot reached through its parent's) it travels to the checkpoints named."""
    conf = (config or {}).get("configurable") or {}
    if not conf.get("checkpoint_ns"):
        return config
    conf = {k: v for k, v in conf.items() if k not in ("checkpoint_ns", "checkpoint_id")}
    # A `checkpoint_map` (a child's snapshot config) travels there: the root to its entry,
    # each child named to its own on its first call (the native run reads the rest).
    travel = conf.get("checkpoint_map") or {}
    if travel.get(""):
        conf["checkpoint_id"] = travel[""]
    return {**config, "configurable": conf}


def check_saver(graph: Any, lender: Any) -> None:
    """LangGraph's `_resolve_checkpointer` rules for the state API."""
    if graph.checkpointer is False:
        raise ValueError("No checkpointer set")
    if graph.checkpointer is True and lender is None:
        raise RuntimeError("checkpointer=True cannot be used for root graphs.")


def get_state(graph: Any, config: dict, subgraphs: bool, lender: Any = None, parents: Optional[dict] = None) -> Any:
    from agentgraph.graph.state import _snapshot

    if lender is None:
        graph, lender, config = route(graph, config)
    check_saver(graph, lender)
    if lender is not None:
        config = own_config(graph, config)
    raw = _native.get_state_in(graph._native, dict(config), lender._native if lender is not None else None)
    snapshot = _snapshot(raw, config, graph._order)
    if parents and snapshot.metadata is not None:
        snapshot = with_parents(snapshot, parents)
    return with_task_states(graph, snapshot, subgraphs, lender if lender is not None else graph)


def with_parents(snapshot: Any, parents: dict) -> Any:
    """A child's snapshot reached from its parent's: LangGraph's `checkpoint_map` in its
    configs (the enclosing graphs' checkpoints by namespace, then its own), which a run given
    such a config travels to. agentgraph's checkpoints do not store their parents; the
    parent snapshot the child's was reached from stands for them."""

    def patch(config: Optional[dict]) -> Optional[dict]:
        if config is None:
            return None
        conf = config["configurable"]
        return {"configurable": {**conf, "checkpoint_map": {**parents, conf["checkpoint_ns"]: conf["checkpoint_id"]}}}

    metadata = {**snapshot.metadata, "parents": dict(parents)}
    return snapshot._replace(config=patch(snapshot.config), parent_config=patch(snapshot.parent_config), metadata=metadata)


def with_task_states(graph: Any, snapshot: Any, subgraphs: bool, root: Any) -> Any:
    """Each task of a subgraph node with the child's namespace (LangGraph's sign that the
    child checkpoints), or with `subgraphs` the child's snapshot there."""
    from agentgraph.graph.state import CompiledStateGraph

    if snapshot.metadata is None or not snapshot.tasks:
        return snapshot
    conf = snapshot.config["configurable"]
    tasks = []
    for task in snapshot.tasks:
        child = graph.builder.nodes.get(task.name)
        if isinstance(child, CompiledStateGraph) and child.checkpointer is not False:
            ns = task_ns(conf.get("checkpoint_ns", ""), task.name, task.id)
            child_config = {"configurable": {"thread_id": conf["thread_id"], "checkpoint_ns": ns}}
            if subgraphs:
                parents = {**conf.get("checkpoint_map", {}), conf.get("checkpoint_ns", ""): conf["checkpoint_id"]}
                task = task._replace(state=get_state(child, child_config, True, lender=root, parents=parents))
            else:
                task = task._replace(state=child_config)
        tasks.append(task)
    return snapshot._replace(tasks=tuple(tasks))
