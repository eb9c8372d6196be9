import asyncio
import operator
from typing import Annotated, TypedDict

from langgraph.graph import END, START, StateGraph


class State(TypedDict):
    items: Annotated[list, operator.add]


async def fetch(state):
    await asyncio.sleep(0.001)
    return {"items": ["fetched"]}


def parse(state):
    return {"items": [f"parsed {len(state['items'])}"]}


async def main():
    builder = StateGraph(State)
    builder.add_node("fetch", fetch)
    builder.add_node("parse", parse)
    builder.add_edge(START, "fetch")
    builder.add_edge("fetch", "parse")
    builder.add_edge("parse", END)
    graph = builder.compile()
    print(await graph.ainvoke({"items": ["seed"]}))
    async for chunk in graph.astream({"items": []}, stream_mode=["values", "updates"]):
        print(chunk)


asyncio.run(main())
