"""`stream(..., version="v2")`: typed stream parts for every mode, with subgraphs, interrupts,
schema coercion; `invoke(..., version="v2")`'s `GraphOutput`."""

import asyncio
import re
from dataclasses import dataclass
from typing import TypedDict

from pydantic import BaseModel

from langgraph.checkpoint.memory import InMemorySaver
from langgraph.config import get_stream_writer
from langgraph.func import entrypoint, task
from langgraph.graph import START, StateGraph
from langgraph.types import Command, interrupt


def show(value) -> str:
    # Ids, timestamps and checkpoint ids are each runtime's own.
    text = repr(value)
    text = re.sub(r"id='[^']*'", "id=...", text)
    text = re.sub(r"'(id|checkpoint_id|thread_ts|ts)': '[^']*'", r"'\1': ...", text)
    text = re.sub(r"':[0-9a-f-]{8,}'", "':...'", text)
    return re.sub(r"(\w+):[0-9a-f-]{20,}", r"\1:...", text)


class S(TypedDict):
    a: str


def first(state: S) -> dict:
    get_stream_writer()({"sub wrote": state["a"]})
    return {"a": state["a"] + "1"}


def last(state: S) -> dict:
    get_stream_writer()({"wrote": state["a"]})
    return {"a": state["a"] + "2"}


inner = StateGraph(S)
inner.add_node("first", first)
inner.add_edge(START, "first")
outer = StateGraph(S)
outer.add_node("sub", inner.compile())
outer.add_node("last", last)
outer.add_edge(START, "sub")
outer.add_edge("sub", "last")
graph = outer.compile()

for mode in [None, "values", "updates", "custom", ["values", "updates"], ["updates", "custom", "values"]]:
    for subgraphs in (False, True):
        parts = list(graph.stream({"a": "x"}, stream_mode=mode, subgraphs=subgraphs, version="v2"))
        print(mode, subgraphs, show([(p["type"], p["ns"], p["data"], p.get("interrupts", "-")) for p in parts]))
        assert all(isinstance(p, dict) for p in parts)


async def astreamed() -> list:
    return [
        (p["type"], [s.split(":")[0] for s in p["ns"]], p["data"])
        async for p in graph.astream({"a": "y"}, stream_mode=["updates", "values"], subgraphs=True, version="v2")
    ]


print("async", show(asyncio.run(astreamed())))

# Interrupts: a values part carries them in `interrupts`; invoke returns a GraphOutput.


def ask(state: S) -> dict:
    return {"a": interrupt({"q": state["a"]})}


asking = StateGraph(S)
asking.add_node("ask", ask)
asking.add_edge(START, "ask")
asking = asking.compile(checkpointer=InMemorySaver())
config = {"configurable": {"thread_id": "1"}}
for p in asking.stream({"a": "q"}, config, stream_mode=["values", "updates"], version="v2"):
    print("interrupt", show(p))
for p in asking.stream(Command(resume="r"), config, stream_mode="values", version="v2"):
    print("resumed", show(p))
out = asking.invoke({"a": "q"}, {"configurable": {"thread_id": "2"}}, version="v2")
print("invoke", type(out).__name__, show(out.value), show(out.interrupts))
out = asking.invoke(Command(resume="s"), {"configurable": {"thread_id": "2"}}, version="v2")
print("invoke", type(out).__name__, show(out.value), show(out.interrupts))
out = asyncio.run(graph.ainvoke({"a": "z"}, version="v2"))
print("ainvoke", type(out).__name__, show(out.value), show(out.interrupts))

# Schema coercion: pydantic and dataclass states show as their type in values parts.


class P(BaseModel):
    a: str
    n: int = 0


@dataclass
class D:
    a: str
    n: int = 0


for schema in (P, D):
    b = StateGraph(schema)
    b.add_node("inc", lambda s: {"n": s.n + 1})
    b.add_edge(START, "inc")
    g = b.compile()
    for p in g.stream({"a": "s"}, stream_mode=["values", "updates"], version="v2"):
        print(schema.__name__, p["type"], show(p["data"]))
    out = g.invoke({"a": "s"}, version="v2")
    print(schema.__name__, "invoke", show(out.value))

# The functional API.


@task
def double(x: int) -> int:
    return 2 * x


@entrypoint()
def flow(x: int) -> int:
    return double(x).result() + 1


for mode in [None, "updates", ["values", "updates"]]:
    print("func", mode, show(list(flow.stream(3, stream_mode=mode, version="v2"))))
out = flow.invoke(3, version="v2")
print("func invoke", type(out).__name__, out.value, out.interrupts)
