"""`langgraph.managed`: `RemainingSteps` and `IsLastStep` as state annotations, read by nodes
(a TypedDict and a dataclass schema), against the recursion limit."""

import operator
from dataclasses import dataclass, field
from typing import Annotated, TypedDict

from langgraph.checkpoint.memory import InMemorySaver
from langgraph.errors import GraphRecursionError
from langgraph.graph import START, StateGraph
from langgraph.managed import IsLastStep, RemainingSteps


class S(TypedDict):
    visits: Annotated[list, operator.add]
    remaining_steps: RemainingSteps
    is_last: IsLastStep


def loop(state: S):
    return {"visits": [(state["remaining_steps"], state["is_last"])]}


def until_last(state):
    return "__end__" if state["visits"][-1][1] else "loop"


builder = StateGraph(S)
builder.add_node("loop", loop)
builder.add_edge(START, "loop")
builder.add_conditional_edges("loop", until_last)
graph = builder.compile()
print(graph.invoke({"visits": []}, {"recursion_limit": 3}))
print(graph.invoke({"visits": []}, {"recursion_limit": 6}))

forever = StateGraph(S)
forever.add_node("loop", loop)
forever.add_edge(START, "loop")
forever.add_edge("loop", "loop")
graph = forever.compile(checkpointer=InMemorySaver())
config = {"recursion_limit": 4, "configurable": {"thread_id": "1"}}
try:
    graph.invoke({"visits": []}, config)
except GraphRecursionError:
    print("GraphRecursionError")
print(graph.get_state(config).values)


@dataclass
class D:
    visits: Annotated[list, operator.add] = field(default_factory=list)
    remaining_steps: RemainingSteps = 0


def step(state: D):
    return {"visits": [state.remaining_steps]}


builder = StateGraph(D)
builder.add_node("step", step)
builder.add_edge(START, "step")
print(builder.compile().invoke({"visits": []}, {"recursion_limit": 5}))
