"""Interrupt and resume values JSON has no type for (datetimes, messages, dataclasses, sets)
come back as themselves: in `__interrupt__`, in `get_state`, and in the resumed node."""

import dataclasses
from datetime import date, datetime, timezone
from typing import TypedDict

from langchain_core.messages import HumanMessage
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, StateGraph
from langgraph.types import Command, interrupt


@dataclasses.dataclass
class Offer:
    price: float
    until: date


class State(TypedDict):
    answer: object


def ask(state):
    question = {
        "at": datetime(2024, 1, 2, 3, 4, tzinfo=timezone.utc),
        "offer": Offer(9.5, date(2024, 2, 1)),
        "message": HumanMessage(content="accept?", id="q"),
        "plain": [1, "two", None, {"three": 3.0}],
    }
    answer = interrupt(question)
    return {"answer": (type(answer).__name__, answer)}


builder = StateGraph(State)
builder.add_node("ask", ask)
builder.add_edge(START, "ask")
builder.add_edge("ask", END)
graph = builder.compile(checkpointer=InMemorySaver())
config = {"configurable": {"thread_id": "t"}}


def show(value):
    return {k: (type(v).__name__, v) for k, v in sorted(value.items())}


out = graph.invoke({"answer": None}, config)
print(show(out["__interrupt__"][0].value))
print(show(graph.get_state(config).interrupts[0].value))
print(graph.invoke(Command(resume=Offer(8.0, date(2024, 3, 1))), config))
graph.invoke({"answer": None}, {"configurable": {"thread_id": "u"}})
out = graph.invoke(Command(resume={"ok": {True}, "when": datetime(2025, 1, 1)}), {"configurable": {"thread_id": "u"}})
print(out["answer"][0], show(out["answer"][1]))
