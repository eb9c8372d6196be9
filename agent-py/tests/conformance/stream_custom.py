"""`custom`: `get_stream_writer()` and an injected `writer`, sync and async, mixed with
other modes; a writer outside a custom stream is a no-op."""

import asyncio
import operator
from typing import Annotated, TypedDict

from langgraph.config import get_stream_writer
from langgraph.graph import END, START, StateGraph
from langgraph.types import StreamWriter


class S(TypedDict):
    n: int
    log: Annotated[list, operator.add]


def by_getter(state):
    write = get_stream_writer()
    write({"step": "getter", "n": state["n"]})
    write("second")
    return {"n": state["n"] + 1, "log": ["getter"]}


def by_param(state, writer: StreamWriter):
    writer(("param", state["n"]))
    return {"log": ["param"]}


def untyped(state, writer):
    writer(["untyped", 1])
    return {"log": ["untyped"]}


async def async_getter(state):
    write = get_stream_writer()
    for i in range(3):
        write({"async": i})
        await asyncio.sleep(0)
    return {"log": ["async_getter"]}


async def async_param(state, writer: StreamWriter):
    writer(object.__name__)
    return {"log": ["async_param"]}


def build(nodes):
    builder = StateGraph(S)
    for node in nodes:
        builder.add_node(node)
    builder.add_edge(START, nodes[0].__name__)
    for before, after in zip(nodes, nodes[1:]):
        builder.add_edge(before.__name__, after.__name__)
    builder.add_edge(nodes[-1].__name__, END)
    return builder.compile()


graph = build([by_getter, by_param, untyped])
print("custom", list(graph.stream({"n": 1}, stream_mode="custom")))
print("mixed", list(graph.stream({"n": 1}, stream_mode=["custom", "updates"])))
print("values only", len(list(graph.stream({"n": 1}, stream_mode="values"))))
print("invoke", graph.invoke({"n": 1}))
graph = build([by_getter, async_getter, by_param, async_param, untyped])


async def main():
    print("acustom", [c async for c in graph.astream({"n": 5}, stream_mode="custom")])
    print("amixed", [c async for c in graph.astream({"n": 5}, stream_mode=["updates", "custom", "values"])])


asyncio.run(main())

# Parallel nodes: each one's items come before its own update.
par = StateGraph(S)
par.add_node("a", lambda s: get_stream_writer()("from a") or {"log": ["a"]})
par.add_node("b", lambda s, writer: writer("from b") or {"log": ["b"]})
par.add_edge(START, "a")
par.add_edge(START, "b")
par = par.compile()
parts = list(par.stream({"n": 0}, stream_mode=["custom", "updates"]))
for node in ("a", "b"):
    custom = parts.index(("custom", f"from {node}"))
    update = parts.index(("updates", {node: {"log": [node]}}))
    print(node, custom < update)
print(sorted(map(repr, parts)))
