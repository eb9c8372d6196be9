"""The SQLite saver (`langgraph-checkpoint-sqlite` on LangGraph): threads on a file outlive
their saver, values JSON has no type for come back as themselves."""

import dataclasses
import operator
import os
import tempfile
from datetime import datetime, timedelta, timezone
from enum import Enum
from typing import Annotated, TypedDict
from uuid import UUID

from langchain_core.messages import AIMessage, HumanMessage
from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.graph import END, START, StateGraph
from langgraph.types import Command, interrupt


class Mood(Enum):
    GOOD = "good"


@dataclasses.dataclass
class Ticket:
    id: UUID
    due: datetime


class State(TypedDict):
    ticket: Ticket
    tags: set
    mood: Mood
    wait: timedelta
    messages: Annotated[list, operator.add]


def triage(state):
    return {"messages": [AIMessage(content=f"due {state['ticket'].due:%Y-%m-%d}", id="a1")], "tags": state["tags"] | {"triaged"}}


def approve(state):
    answer = interrupt("approve?")
    return {"messages": [HumanMessage(content=answer, id="h1")], "mood": Mood.GOOD}


builder = StateGraph(State)
builder.add_node("triage", triage)
builder.add_node("approve", approve)
builder.add_edge(START, "triage")
builder.add_edge("triage", "approve")
builder.add_edge("approve", END)


def show(values):
    # Sets sorted: their order differs between processes.
    return {k: (type(v).__name__, sorted(v) if isinstance(v, set) else v) for k, v in sorted(values.items())}


path = os.path.join(tempfile.mkdtemp(), "threads.sqlite")
config = {"configurable": {"thread_id": "t"}}
ticket = Ticket(UUID(int=7), datetime(2024, 3, 4, 5, 6, tzinfo=timezone.utc))
with SqliteSaver.from_conn_string(path) as saver:
    graph = builder.compile(checkpointer=saver)
    out = graph.invoke({"ticket": ticket, "tags": {"new"}, "wait": timedelta(hours=1), "messages": []}, config)
    print(sorted(out), [i.value for i in out["__interrupt__"]])
# A new saver on the same file: the thread goes on from its checkpoint.
with SqliteSaver.from_conn_string(path) as saver:
    graph = builder.compile(checkpointer=saver)
    state = graph.get_state(config)
    print(state.next, show(state.values))
    print(show(graph.invoke(Command(resume="yes"), config)))
    print(graph.get_state(config).next)
with SqliteSaver.from_conn_string(":memory:") as saver:
    graph = builder.compile(checkpointer=saver)
    print(graph.get_state(config).values)
