"""`get_graph()`: the builder's nodes and edges as LangChain's drawable `Graph`, the type
LangGraph returns, so `draw_mermaid()` (and `draw_png`, `to_json`, ...) give what LangGraph
gives for the same builder.

LangGraph finds edges by dry-running its channels; agentgraph reads them off the builder:
plain edges solid, a conditional edge dotted to each destination of its path map (labelled
with the map's key when it differs from the destination), and a node nothing leaves drawn
into `__end__`; only what a run can reach from `__start__`. A conditional edge without a path map may go anywhere and is not drawn (as
in LangGraph, which cannot see where it goes either).
"""

from __future__ import annotations

from typing import Any, Optional

from agentgraph.constants import END, START


def _edges(builder: Any) -> set[tuple[str, str, bool, Optional[str]]]:
    edges: set[tuple[str, str, bool, Optional[str]]] = set()
    for sources, target in builder.edges:
        for source in sources:
            edges.add((source, target, False, None))
    for source, path_map in builder.drawn_branches:
        if isinstance(path_map, dict):
            for key, target in path_map.items():
                edges.add((source, target, True, str(key)))
        elif path_map is not None:
            for target in path_map:
                edges.add((source, target, True, target))
    return edges


def _reachable(edges: set) -> set:
    """The edges out of nodes a run can reach from `__start__` (LangGraph draws what its
    dry run reaches; a node only a map-less conditional edge leads to stays edgeless)."""
    seen, todo = {START}, [START]
    while todo:
        node = todo.pop()
        for source, target, _, _ in edges:
            if source == node and target not in seen:
                seen.add(target)
                todo.append(target)
    return {e for e in edges if e[0] in seen}


def draw(builder: Any, interrupt_before: list, interrupt_after: list) -> Any:
    try:
        from langchain_core.runnables.graph import Graph
    except ImportError as error:  # LangGraph's own get_graph needs it too
        raise ImportError("get_graph() needs langchain-core (pip install langchain-core)") from error

    graph = Graph()
    graph.add_node(None, START)
    for name in builder.nodes:
        metadata = dict(builder.node_metadata.get(name) or {})
        if name in interrupt_before and name in interrupt_after:
            metadata["__interrupt"] = "before,after"
        elif name in interrupt_before:
            metadata["__interrupt"] = "before"
        elif name in interrupt_after:
            metadata["__interrupt"] = "after"
        graph.add_node(None, name, metadata=metadata or None)

    def add_edge(source: str, target: str, label: Optional[str] = None, conditional: bool = False) -> None:
        if any(e.source == source and e.target == target for e in graph.edges):
            return
        if target not in graph.nodes and target == END:
            graph.add_node(None, END)
        graph.add_edge(graph.nodes[source], graph.nodes[target], label, conditional)

    edges = _reachable(_edges(builder))
    for source, target, conditional, label in sorted(edges, key=lambda e: (e[0], e[1], e[2], e[3] or "")):
        add_edge(source, target, label if label != target else None, conditional)
    # A node nothing leaves ends the run.
    ends = {t for _, t, _, _ in edges if t != END} - {s for s, _, _, _ in edges}
    for source in sorted(ends):
        add_edge(source, END)
    return graph
