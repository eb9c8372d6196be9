"""A subclass of `InMemorySaver` that overrides LangGraph's saver methods (as LangGraph's own
tests do, to check checkpoints are never mutated): its overrides are called for every write
and read the graph makes, and `factory=` / `stack` are accepted."""

import operator
from collections import Counter
from functools import partial
from typing import Annotated, TypedDict

from langgraph.checkpoint.memory import InMemorySaver, PersistentDict
from langgraph.graph import END, START, StateGraph
from langgraph.types import Command, interrupt


class CountingSaver(InMemorySaver):
    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.calls = Counter()

    def put(self, config, checkpoint, metadata, new_versions):
        self.calls["put"] += 1
        saved = super().get(config) if config["configurable"].get("checkpoint_id") else None
        assert saved is None or saved["id"] == config["configurable"]["checkpoint_id"]
        return super().put(config, checkpoint, metadata, new_versions)

    def put_writes(self, config, writes, task_id, task_path=""):
        self.calls["put_writes"] += 1
        return super().put_writes(config, writes, task_id, task_path)

    def get_tuple(self, config):
        self.calls["get_tuple"] += 1
        return super().get_tuple(config)


class State(TypedDict):
    items: Annotated[list, operator.add]


def ask(state):
    answer = interrupt("more?")
    return {"items": [answer]}


builder = StateGraph(State)
builder.add_node("first", lambda s: {"items": ["a"]})
builder.add_node("ask", ask)
builder.add_edge(START, "first")
builder.add_edge("first", "ask")
builder.add_edge("ask", END)

for factory in (None, partial(PersistentDict, filename="/dev/null")):
    saver = CountingSaver() if factory is None else CountingSaver(factory=factory)
    print("stack:", type(saver.stack).__name__)
    graph = builder.compile(checkpointer=saver)
    config = {"configurable": {"thread_id": "t"}}
    print(graph.invoke({"items": []}, config)["items"])
    print(graph.invoke(Command(resume="b"), config))
    print("puts:", saver.calls["put"] > 0, "writes:", saver.calls["put_writes"] > 0, "reads:", saver.calls["get_tuple"] > 0)
    print([s.values["items"] for s in graph.get_state_history(config)])
    stored = saver.get(config)
    print("latest has items:", stored["channel_values"]["items"])
    print("list:", len(list(saver.list(config))), len(list(saver.list(config, limit=2))))
