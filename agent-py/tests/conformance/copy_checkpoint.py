"""`update_state(config, None, as_node="__copy__")`: time travel's branch point, a sibling
copy of a checkpoint (same parent, values and next tasks, source `fork`); running it runs the
next tasks afresh (an interrupt asks again)."""

import operator
from typing import Annotated, TypedDict

from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import START, StateGraph
from langgraph.types import Command, interrupt


class State(TypedDict):
    value: Annotated[list, operator.add]


def ask(state):
    return {"value": [f"human:{interrupt('input?')}"]}


graph = (
    StateGraph(State)
    .add_node("a", lambda s: {"value": ["a"]})
    .add_node("ask", ask)
    .add_node("b", lambda s: {"value": ["b"]})
    .add_edge(START, "a")
    .add_edge("a", "ask")
    .add_edge("ask", "b")
    .compile(checkpointer=InMemorySaver())
)
config = {"configurable": {"thread_id": "1"}}
graph.invoke({"value": []}, config)
print(graph.invoke(Command(resume="hello"), config))

history = list(graph.get_state_history(config))
before_ask = [s for s in history if s.next == ("ask",)][-1]
copy = graph.update_state(before_ask.config, None, as_node="__copy__")
copied = graph.get_state(copy)
print("source:", copied.metadata["source"], "step:", copied.metadata["step"] - before_ask.metadata["step"])
print("next:", copied.next, "values:", copied.values)
print("sibling:", copied.parent_config["configurable"]["checkpoint_id"] == before_ask.parent_config["configurable"]["checkpoint_id"])
print("new id:", copy["configurable"]["checkpoint_id"] != before_ask.config["configurable"]["checkpoint_id"])
again = graph.invoke(None, copy)
print([i.value for i in again["__interrupt__"]])
print(graph.invoke(Command(resume="new"), copy))

print(len(list(graph.get_state_history(config))))
