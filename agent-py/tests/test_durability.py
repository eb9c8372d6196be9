"""`durability=` on invoke and stream: agent-core's three, by LangGraph's names."""

import operator
from typing import Annotated, TypedDict

import pytest

from agentgraph.checkpoint.memory import InMemorySaver
from agentgraph.graph import END, START, StateGraph


class State(TypedDict):
    notes: Annotated[list, operator.add]


def graph():
    builder = StateGraph(State)
    builder.add_node("one", lambda s: {"notes": ["one"]})
    builder.add_node("two", lambda s: {"notes": ["two"]})
    builder.add_edge(START, "one")
    builder.add_edge("one", "two")
    builder.add_edge("two", END)
    return builder.compile(checkpointer=InMemorySaver())


@pytest.mark.parametrize("durability", ["sync", "async", "exit", None])
def test_every_durability_keeps_the_final_state(durability):
    g = graph()
    config = {"configurable": {"thread_id": f"t-{durability}"}}
    assert g.invoke({"notes": ["in"]}, config, durability=durability) == {"notes": ["in", "one", "two"]}
    assert g.get_state(config).values == {"notes": ["in", "one", "two"]}
    chunks = list(g.stream({"notes": ["again"]}, config, durability=durability, stream_mode="values"))
    assert chunks[-1]["notes"][-3:] == ["again", "one", "two"]


def test_an_unknown_durability_is_a_value_error():
    with pytest.raises(ValueError, match="durability"):
        graph().invoke({"notes": []}, {"configurable": {"thread_id": "x"}}, durability="later")
