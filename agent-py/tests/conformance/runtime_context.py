"""`runtime` injected by parameter name: the run's `context` (`context_schema=`,
`invoke(..., context=...)`), its `stream_writer`; `config` and `writer` beside it."""

import asyncio
from dataclasses import dataclass
from typing import TypedDict

from langgraph.graph import END, START, StateGraph
from langgraph.runtime import Runtime
from langgraph.types import StreamWriter


@dataclass
class Ctx:
    user: str


class S(TypedDict):
    out: str


def greet(state, runtime: Runtime[Ctx]):
    runtime.stream_writer({"greeting for": runtime.context.user})
    return {"out": f"hello {runtime.context.user}"}


def everything(state: S, config, writer: StreamWriter, runtime: Runtime[Ctx]):
    writer(("node", config["metadata"]["langgraph_node"], runtime.context.user))
    return {"out": state["out"] + "!"}


async def later(state, runtime: Runtime):
    runtime.stream_writer("async")
    return {"out": state["out"] + "?"}


def build(with_later):
    builder = StateGraph(S, context_schema=Ctx)
    builder.add_node("greet", greet)
    builder.add_node("everything", everything)
    builder.add_edge(START, "greet")
    builder.add_edge("greet", "everything")
    if with_later:
        builder.add_node("later", later)
        builder.add_edge("everything", "later")
    return builder.compile()


graph = build(False)
print(graph.invoke({"out": ""}, context=Ctx(user="ada")))
print(list(graph.stream({"out": ""}, context=Ctx(user="bob"), stream_mode=["custom", "values"])))


async def main():
    graph = build(True)
    print(await graph.ainvoke({"out": ""}, context=Ctx(user="cy")))
    print([c async for c in graph.astream({"out": ""}, context=Ctx(user="di"), stream_mode="custom")])


asyncio.run(main())
