"""A graph invoked inside a node function, with a schema of its own: the node maps state in
and out itself. Sync and async, and a child run with no key in common with its parent."""

import asyncio
import operator
from typing import Annotated, TypedDict

from langgraph.graph import END, START, StateGraph


class Parent(TypedDict):
    topic: str
    summary: str
    log: Annotated[list, operator.add]


class Writer(TypedDict):
    subject: str
    draft: str
    notes: Annotated[list, operator.add]


def outline(state):
    return {"notes": [f"outline {state['subject']}"]}


def draft(state):
    return {"draft": f"all about {state['subject']} ({len(state['notes'])} notes)", "notes": ["drafted"]}


writer_builder = StateGraph(Writer)
writer_builder.add_node("outline", outline)
writer_builder.add_node("draft", draft)
writer_builder.add_edge(START, "outline")
writer_builder.add_edge("outline", "draft")
writer_builder.add_edge("draft", END)
writer = writer_builder.compile()


def write(state):
    out = writer.invoke({"subject": state["topic"]})
    return {"summary": out["draft"], "log": [f"writer notes: {out['notes']}", sorted(out)]}


async def awrite(state):
    out = await writer.ainvoke({"subject": state["topic"].upper()})
    return {"summary": out["draft"], "log": ["async"]}


builder = StateGraph(Parent)
builder.add_node("write", write)
builder.add_edge(START, "write")
graph = builder.compile()

print(graph.invoke({"topic": "owls"}))
for chunk in graph.stream({"topic": "bats"}, stream_mode="updates"):
    print(chunk)

builder = StateGraph(Parent)
builder.add_node("write", write)
builder.add_node("awrite", awrite)
builder.add_edge(START, "write")
builder.add_edge("write", "awrite")
graph = builder.compile()
print(asyncio.run(graph.ainvoke({"topic": "moths"})))


async def collect():
    return [chunk async for chunk in graph.astream({"topic": "gnats"}, stream_mode="values")]


print(asyncio.run(collect()))

# A child's exception leaves through the node as itself.
def broken(state):
    raise KeyError("no subject")


bad_builder = StateGraph(Writer)
bad_builder.add_node("broken", broken)
bad_builder.add_edge(START, "broken")
bad = bad_builder.compile()

builder = StateGraph(Parent)
builder.add_node("call", lambda s: {"summary": bad.invoke({"subject": "x"})["draft"]})
builder.add_edge(START, "call")
try:
    builder.compile().invoke({"topic": "t"})
except KeyError as error:
    print("KeyError", error)
