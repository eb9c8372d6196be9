"""A dataclass as the state schema: nodes and routers get instances (defaults filled in), a
node may return an instance, and the graph's output is a dict."""

import asyncio
import operator
from dataclasses import dataclass, field
from typing import Annotated, Optional

from langgraph.graph import END, START, StateGraph

seen = []  # what nodes and routers got, printed after each run


@dataclass
class State:
    topic: str
    count: int = 0
    notes: Annotated[list, operator.add] = field(default_factory=list)
    draft: Optional[str] = None


def plan(state: State):
    seen.append(("plan", type(state).__name__, repr(state)))
    return {"count": state.count + 1, "notes": [f"plan {state.topic}"]}


def write(state):
    seen.append(("write", type(state).__name__, repr(state)))
    return State(topic=state.topic.upper(), count=state.count + 10, draft="d")


def route(state: State):
    seen.append(("route", type(state).__name__, state.count))
    return END if state.count > 20 else "plan"


builder = StateGraph(State)
builder.add_node("plan", plan)
builder.add_node("write", write)
builder.add_edge(START, "plan")
builder.add_edge("plan", "write")
builder.add_conditional_edges("write", route)
graph = builder.compile()
print(graph.invoke({"topic": "rust"}))
print(*seen, sep="\n")
seen.clear()
for chunk in graph.stream({"topic": "go", "count": 5}, stream_mode=["values", "updates"]):
    print(chunk)
print(*seen, sep="\n")
try:
    graph.invoke({"count": 1})
except TypeError as error:
    print("TypeError", error)


@dataclass(kw_only=True)
class Wide:
    messages: Annotated[list, operator.add] = field(default_factory=list)
    issue: Annotated[Optional[dict], lambda x, y: y if y else x] = field(default=None)
    medium: str = field(default="email")


def first(state: Wide):
    return {"issue": {"n": len(state.messages)}, "messages": [state.medium]}


wide = StateGraph(Wide)
wide.add_node("first", first)
wide.add_edge(START, "first")
wide.add_conditional_edges("first", lambda s: END if len(s.messages) > 3 else "first")
print(wide.compile().invoke({"messages": ["hi"]}))


@dataclass
class Counter:
    x: int = 1


async def bump(state: Counter):
    await asyncio.sleep(0)
    return {"x": state.x + 1}


counter = StateGraph(Counter)
counter.add_node("bump", bump)
counter.add_edge(START, "bump")
print(asyncio.run(counter.compile().ainvoke({})))
