"""`Command(graph=Command.PARENT, goto=..., update=...)` from a subgraph's node: the child's
run ends there (its other writes do not land), the update applies to the parent by the
parent's keys, and the parent goes where the command says."""

import operator
from typing import Annotated, TypedDict

from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, StateGraph
from langgraph.types import Command, Send


class Team(TypedDict):
    log: Annotated[list, operator.add]
    who: str


def draft(state):
    return {"log": ["draft"]}


def handoff(state):
    return Command(graph=Command.PARENT, goto="reviewer", update={"log": ["handed off"], "who": "agent"})


agent_builder = StateGraph(Team)
agent_builder.add_node("draft", draft)
agent_builder.add_node("handoff", handoff)
agent_builder.add_node("never", lambda s: {"log": ["never"]})
agent_builder.add_edge(START, "draft")
agent_builder.add_edge("draft", "handoff")
agent_builder.add_edge("handoff", "never")
agent = agent_builder.compile()

builder = StateGraph(Team)
builder.add_node("agent", agent)
builder.add_node("reviewer", lambda s: {"log": [f"reviewed {s['who']}"]})
builder.add_node("other", lambda s: {"log": ["other"]})
builder.add_edge(START, "agent")
builder.add_edge("agent", "other")
graph = builder.compile()
print(graph.invoke({"log": ["start"]}))
for chunk in graph.stream({"log": ["start"]}, stream_mode="updates"):
    print(chunk)
graph = builder.compile(checkpointer=InMemorySaver())
config = {"configurable": {"thread_id": "t"}}
print(graph.invoke({"log": []}, config))
print(graph.get_state(config).values)


# A child with another schema: the update names the parent's keys, even ones it lacks.
class Parent(TypedDict):
    log: Annotated[list, operator.add]
    extra: str


class Child(TypedDict):
    log: Annotated[list, operator.add]
    inner: int


def jump(state):
    return Command(graph=Command.PARENT, goto=[Send("reviewer", "sent"), "reviewer"], update={"log": ["from child"], "extra": "e"})


child_builder = StateGraph(Child)
child_builder.add_node("jump", jump)
child_builder.add_edge(START, "jump")
child = child_builder.compile()


def reviewer(state):
    return {"log": [f"review of {state if isinstance(state, str) else state['extra']}"]}


builder = StateGraph(Parent)
builder.add_node("child", child)
builder.add_node("reviewer", reviewer)
builder.add_edge(START, "child")
print(builder.compile().invoke({"log": []}))


# The same from a graph invoked inside a node: the node's command.
def call(state):
    out = child.invoke({"log": ["x"]})
    return {"log": ["not reached", out]}


builder = StateGraph(Parent)
builder.add_node("call", call)
builder.add_node("reviewer", reviewer)
builder.add_edge(START, "call")
print(builder.compile().invoke({"log": []}))
