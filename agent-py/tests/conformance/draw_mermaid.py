"""get_graph().draw_mermaid() for builders of several shapes: plain and joined edges,
conditional edges (path maps as dicts and lists, to END, from START), names Mermaid must
escape, node metadata and breakpoints, loops, sequences, a node with no way out."""

import operator
from typing import Annotated, TypedDict

from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, StateGraph


class S(TypedDict):
    n: int
    log: Annotated[list, operator.add]


def noop(state):
    return {}


def show(builder, **compile):
    graph = builder.compile(**compile).get_graph()
    print(graph.draw_mermaid())
    print(sorted(graph.nodes), [(e.source, e.target, e.data, e.conditional) for e in graph.edges])


b = StateGraph(S)
b.add_node("plan", noop)
b.add_node("web", noop)
b.add_node("docs", noop)
b.add_node("write it", noop)
b.add_edge(START, "plan")
b.add_conditional_edges("plan", lambda s: "web", {"go web": "web", "docs": "docs", "stop": END})
b.add_edge(["web", "docs"], "write it")
b.add_edge("write it", END)
show(b)

b = StateGraph(S)
b.add_node("agent", noop)
b.add_node("tools", noop)
b.add_edge(START, "agent")
b.add_conditional_edges("agent", lambda s: END, ["tools", END])
b.add_edge("tools", "agent")
show(b)
show(b, checkpointer=InMemorySaver(), interrupt_before=["tools"], interrupt_after=["tools", "agent"])

b = StateGraph(S)
b.add_node("a", noop, metadata={"kind": "llm"})
b.add_node("b", noop)
b.add_node("c", noop)
b.add_conditional_edges(START, lambda s: "a", {"x": "a", "y": "b"})
b.add_edge("a", "c")
b.add_conditional_edges("b", lambda s: "c", ["c", END])
show(b)

b = StateGraph(S)
b.add_sequence([("first", noop), ("second", noop), ("third", noop)])
b.add_edge(START, "first")
show(b)

b = StateGraph(S)
b.add_node("fan", noop)
for name in ("x", "y", "z"):
    b.add_node(name, noop)
    b.add_edge("fan", name)
b.add_edge(START, "fan")
b.add_edge(["x", "y", "z"], END)
show(b)

b = StateGraph(S)
b.add_node("only", noop)
b.set_entry_point("only")
show(b)
