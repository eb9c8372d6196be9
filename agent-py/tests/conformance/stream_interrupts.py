import re
from typing import TypedDict

from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import START, StateGraph
from langgraph.types import Command, interrupt


class S(TypedDict):
    a: str


def ask(state):
    return {"a": interrupt({"q": state["a"]})}


def show(parts) -> str:
    # Interrupt ids are each runtime's own (LangGraph hashes its checkpoint namespace).
    return re.sub(r"id='[^']*'", "id=...", repr(parts))


builder = StateGraph(S)
builder.add_node("first", lambda s: {"a": "x"})
builder.add_node("ask", ask)
builder.add_edge(START, "first")
builder.add_edge("first", "ask")
graph = builder.compile(checkpointer=InMemorySaver())
for i, mode in enumerate(["values", "updates", ["values", "updates"], ["updates", "values"]]):
    config = {"configurable": {"thread_id": str(i)}}
    print(mode, show(list(graph.stream({"a": ""}, config, stream_mode=mode))))
    print(mode, show(list(graph.stream(Command(resume="r"), config, stream_mode=mode))))
print(show(graph.invoke({"a": "again"}, {"configurable": {"thread_id": "z"}})))
