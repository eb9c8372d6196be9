"""A Pydantic model as the state schema: nodes get validated instances (defaults, coercion),
invalid state raises pydantic's ValidationError, and a returned instance updates the fields
set or not defaulting to None."""

import operator
from typing import Annotated, Optional

from pydantic import BaseModel, ValidationError

from langgraph.graph import END, START, StateGraph

seen = []  # what nodes got, printed after each run


def show(result=None):
    print(*seen, sep="\n")
    seen.clear()
    if result is not None:
        print(result)


class State(BaseModel):
    topic: str
    count: int = 0
    notes: Annotated[list[str], operator.add] = []
    maybe: Optional[str] = None


def plan(state: State):
    seen.append(("plan", type(state).__name__, repr(state)))
    return {"count": state.count + 1, "notes": ["plan"]}


def write(state: State):
    seen.append(("write", repr(state)))
    return State(topic=state.topic + "!", count=state.count * 2)


builder = StateGraph(State)
builder.add_node("plan", plan)
builder.add_node("write", write)
builder.add_edge(START, "plan")
builder.add_edge("plan", "write")
builder.add_edge("write", END)
graph = builder.compile()
show(graph.invoke({"topic": "rust"}))
show(graph.invoke({"topic": "go", "count": "7"}))
for chunk in graph.stream({"topic": "py"}, stream_mode="updates"):
    print(chunk)
show()
for chunk in graph.stream({"topic": "py", "maybe": "m"}, stream_mode="values"):
    print(chunk)
show()
for bad in [{"topic": 5}, {"count": 1}]:
    try:
        graph.invoke(bad)
    except ValidationError as error:
        print("ValidationError", [(e["type"], e["loc"]) for e in error.errors()])
show(graph.invoke(State(topic="instance", count=2)))


class Narrow(BaseModel):
    topic: str


def shout(state: Narrow):
    seen.append(("shout", repr(state)))
    return {"maybe": state.topic.upper()}


narrow = StateGraph(State)
narrow.add_node("shout", shout)
narrow.add_edge(START, "shout")
show(narrow.compile().invoke({"topic": "only", "count": 3}))
