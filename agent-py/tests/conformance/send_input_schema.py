"""A `Send`'s argument reaches its node as it was sent, even in a graph whose nodes read
through input schemas (private state): not narrowed to the node's schema's keys."""

import operator
from typing import Annotated

from langgraph.graph import END, START, StateGraph
from langgraph.types import Send
from typing_extensions import TypedDict


class State(TypedDict):
    log: Annotated[list, operator.add]


class PlanInput(State):
    private: str


class Narrow(TypedDict):
    log: list


def plan(state: PlanInput):
    return {"log": ["plan"], "private": "p"}


def route(state: State):
    return [Send("work", {"job": 1, "extra": "x"}), Send("work", {"log": ["from send"]}), Send("narrow", {"job": 2})]


def work(arg):
    return {"log": [f"work got {sorted(arg.items())}"]}


def narrow(arg: Narrow):
    return {"log": [f"narrow got {sorted(arg.items())}"]}


builder = StateGraph(State)
builder.add_node("plan", plan, input_schema=PlanInput)
builder.add_node("work", work)
builder.add_node("narrow", narrow)
builder.add_edge(START, "plan")
builder.add_conditional_edges("plan", route, ["work", "narrow"])
builder.add_edge("work", END)
builder.add_edge("narrow", END)
print(sorted(builder.compile().invoke({"log": []})["log"]))
