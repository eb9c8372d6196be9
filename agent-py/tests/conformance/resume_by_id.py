"""`Command(resume={interrupt_id: value})`: a map by interrupt id answers the interrupts it
names (parallel tasks each get their own value); a task it does not name stays paused."""

from typing import TypedDict

from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import START, StateGraph
from langgraph.types import Command, interrupt


class S(TypedDict):
    a: str
    b: str


graph = (
    StateGraph(S)
    .add_node("x", lambda s: {"a": interrupt("qa")})
    .add_node("y", lambda s: {"b": interrupt("qb")})
    .add_edge(START, "x")
    .add_edge(START, "y")
    .compile(checkpointer=InMemorySaver())
)
config = {"configurable": {"thread_id": "1"}}
out = graph.invoke({"a": "", "b": ""}, config)
ids = {i.value: i.id for i in out["__interrupt__"]}
print(sorted(ids))
out = graph.invoke(Command(resume={ids["qa"]: "A"}), config)
print("still paused:", [i.value for i in out["__interrupt__"]])
print("pending:", [i.value for i in graph.get_state(config).interrupts])
print(graph.invoke(Command(resume={ids["qb"]: "B"}), config))

config = {"configurable": {"thread_id": "2"}}
out = graph.invoke({"a": "", "b": ""}, config)
both = {i.id: i.value.upper() for i in out["__interrupt__"]}
print(graph.invoke(Command(resume=both), config))
