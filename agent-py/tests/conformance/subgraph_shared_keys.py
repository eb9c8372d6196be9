"""A compiled graph added as a node: it starts from the parent's keys it shares, and its
final state's keys that the parent has are the node's update (through the parent's reducers,
so a shared list with `operator.add` gets the child's whole list appended)."""

import operator
from typing import Annotated, TypedDict

from langgraph.graph import END, START, StateGraph
from langgraph.types import Send


class Parent(TypedDict):
    foo: str
    log: Annotated[list, operator.add]


class Child(TypedDict):
    foo: str
    bar: str
    log: Annotated[list, operator.add]


def c1(state):
    return {"bar": state["foo"] + "!", "log": ["c1"]}


def c2(state):
    return {"foo": state["foo"] + state["bar"], "log": ["c2"]}


child_builder = StateGraph(Child)
child_builder.add_node("c1", c1)
child_builder.add_node("c2", c2)
child_builder.add_edge(START, "c1")
child_builder.add_edge("c1", "c2")
child = child_builder.compile()

builder = StateGraph(Parent)
builder.add_node("p1", lambda s: {"foo": "hi", "log": ["p1"]})
builder.add_node("child", child)
builder.add_node("p2", lambda s: {"log": [f"p2 saw {s['foo']}"]})
builder.add_edge(START, "p1")
builder.add_edge("p1", "child")
builder.add_edge("child", "p2")
graph = builder.compile()

print(graph.invoke({"foo": "x"}))
for chunk in graph.stream({"foo": "x"}, stream_mode="updates"):
    print(chunk)
for chunk in graph.stream({"foo": "x"}, stream_mode=["values", "updates"]):
    print(chunk)

# The child graph runs on its own too.
print(child.invoke({"foo": "solo"}))

# Sends to a subgraph node: each runs the child on its argument.
class Logs(TypedDict):
    log: Annotated[list, operator.add]


builder = StateGraph(Logs)
builder.add_node("child", child)
builder.add_conditional_edges(START, lambda s: [Send("child", {"foo": f}) for f in ["a", "b"]])
builder.add_edge("child", END)
print(builder.compile().invoke({"log": ["start"]}))
