"""`stream(..., subgraphs=True)`: `(namespace, chunk)` pairs, `(namespace, mode, chunk)` with
several modes; the root's namespace is `()`, a subgraph's `("node:<task id>",)`, a nested
one's both. Values and updates, sync and async."""

import asyncio
import operator
from typing import Annotated, TypedDict

from langgraph.graph import END, START, StateGraph


class Outer(TypedDict):
    foo: str
    log: Annotated[list, operator.add]


class Middle(TypedDict):
    foo: str
    depth: int
    log: Annotated[list, operator.add]


class Inner(TypedDict):
    foo: str
    notes: Annotated[list, operator.add]


inner_builder = StateGraph(Inner)
inner_builder.add_node("i1", lambda s: {"foo": s["foo"] + "+inner", "notes": ["i1"]})
inner_builder.add_edge(START, "i1")
inner = inner_builder.compile()

middle_builder = StateGraph(Middle)
middle_builder.add_node("m1", lambda s: {"depth": 1, "log": ["m1"]})
middle_builder.add_node("inner", inner)
middle_builder.add_node("m2", lambda s: {"log": [f"m2 saw {s['foo']}"]})
middle_builder.add_edge(START, "m1")
middle_builder.add_edge("m1", "inner")
middle_builder.add_edge("inner", "m2")
middle = middle_builder.compile()

builder = StateGraph(Outer)
builder.add_node("o1", lambda s: {"foo": "hi", "log": ["o1"]})
builder.add_node("middle", middle)
builder.add_edge(START, "o1")
builder.add_edge("o1", "middle")
builder.add_edge("middle", END)
graph = builder.compile()


def short(ns):
    # Task ids differ from run to run: the node names stay.
    assert all(len(n.split(":")) == 2 for n in ns), ns
    return tuple(n.split(":")[0] for n in ns)


for mode in ["updates", "values"]:
    print("--", mode)
    for ns, chunk in graph.stream({"foo": "x"}, stream_mode=mode, subgraphs=True):
        print(short(ns), chunk)
print("-- both")
for ns, mode, chunk in graph.stream({"foo": "x"}, stream_mode=["updates", "values"], subgraphs=True):
    print(short(ns), mode, chunk)
print("-- list of one")
for part in graph.stream({"foo": "x"}, stream_mode=["updates"], subgraphs=True):
    print(len(part), short(part[0]), part[1:])
print("-- default mode")
for ns, chunk in graph.stream({"foo": "x"}, subgraphs=True):
    print(short(ns), chunk)
print("-- without subgraphs")
for chunk in graph.stream({"foo": "x"}, stream_mode="updates"):
    print(chunk)

# One task id per subgraph run: the nested namespace starts with its parent's.
parts = list(graph.stream({"foo": "x"}, stream_mode="updates", subgraphs=True))
middles = {ns[0] for ns, _ in parts if ns}
print(len(middles), {len(ns) for ns, _ in parts})


async def collect():
    return [(short(ns), chunk) async for ns, chunk in graph.astream({"foo": "y"}, stream_mode="updates", subgraphs=True)]


for part in asyncio.run(collect()):
    print(part)
