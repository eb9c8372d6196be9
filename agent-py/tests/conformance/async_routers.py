"""Async path functions: awaited on the caller's loop under ainvoke/astream (they may await
and use that loop), Sends from an async router into a subgraph, a path map, an exception
raised as itself; under the sync API LangGraph's TypeError."""

import asyncio
import operator
from typing import Annotated, TypedDict

from langgraph.graph import END, START, StateGraph
from langgraph.types import Send


class State(TypedDict):
    n: int
    log: Annotated[list, operator.add]


LOOPS = []


async def pick(state):
    await asyncio.sleep(0.001)
    LOOPS.append(asyncio.get_running_loop())
    return "big" if state["n"] > 1 else "small"


async def fan(state):
    return [Send("sub", {"item": f"x{i}"}) for i in range(state["n"])]


async def broken(state):
    await asyncio.sleep(0)
    raise ValueError("router failed")


def node(name):
    def run(state):
        return {"log": [name]}

    return run


class SubState(TypedDict):
    item: str
    log: Annotated[list, operator.add]


async def sub_node(state):
    return {"log": [f"sub {state['item']}"]}


async def sub_route(state):
    return END if len(state["log"]) >= 1 else "again"


def build_subgraph():
    sub = StateGraph(SubState)
    sub.add_node("work", sub_node)
    sub.add_node("again", sub_node)
    sub.add_edge(START, "work")
    sub.add_conditional_edges("work", sub_route)
    sub.add_edge("again", END)
    return sub.compile()


def build():
    builder = StateGraph(State)
    builder.add_node("start", node("start"))
    builder.add_node("big", node("big"))
    builder.add_node("small", node("small"))
    builder.add_node("sub", build_subgraph())
    builder.add_edge(START, "start")
    builder.add_conditional_edges("start", pick, {"big": "big", "small": "small"})
    builder.add_conditional_edges("big", fan)
    builder.add_edge("small", END)
    builder.add_edge("sub", END)
    return builder.compile()


def build_broken():
    builder = StateGraph(State)
    builder.add_node("start", node("start"))
    builder.add_node("end", node("end"))
    builder.add_conditional_edges(START, broken, ["start", "end"])
    return builder.compile()


async def main():
    graph = build()
    print(await graph.ainvoke({"n": 3, "log": []}))
    print(await graph.ainvoke({"n": 1, "log": []}))
    print("awaited on the caller's loop:", all(loop is asyncio.get_running_loop() for loop in LOOPS), len(LOOPS))
    async for chunk in graph.astream({"n": 2, "log": []}, stream_mode="updates"):
        print(chunk)
    try:
        await build_broken().ainvoke({"n": 0})
    except ValueError as error:
        print("ValueError:", error)


asyncio.run(main())

try:
    build().invoke({"n": 1, "log": []})
except TypeError as error:
    print("TypeError:", error)
