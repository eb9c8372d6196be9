"""A checkpointer read directly (LangGraph's saver API: `get`, `get_tuple`, `list`)."""

import operator
from typing import Annotated, TypedDict

from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, StateGraph


class State(TypedDict):
    topic: str
    notes: Annotated[list, operator.add]


builder = StateGraph(State)
builder.add_node("plan", lambda s: {"notes": [f"plan {s['topic']}"]})
builder.add_node("write", lambda s: {"notes": ["write"]})
builder.add_edge(START, "plan")
builder.add_edge("plan", "write")
builder.add_edge("write", END)
saver = InMemorySaver()
graph = builder.compile(checkpointer=saver)
config = {"configurable": {"thread_id": "t"}}
graph.invoke({"topic": "rust"}, config)

latest = saver.get_tuple(config)
print({k: v for k, v in latest.checkpoint["channel_values"].items() if k in State.__annotations__})
print(latest.metadata["step"], latest.metadata["source"], latest.parent_config is not None)
print(saver.get(config)["id"] == latest.checkpoint["id"] == latest.config["configurable"]["checkpoint_id"])
history = list(saver.list(config))
print([(t.metadata["step"], t.metadata["source"]) for t in history])
print([t.checkpoint["channel_values"].get("notes") for t in history])
print([t.metadata["step"] for t in saver.list(config, limit=2)])
print([t.metadata["step"] for t in saver.list(config, before=history[1].config)])
print([t.metadata["step"] for t in saver.list(config, filter={"source": "input"})])
first = saver.get_tuple(history[-1].config)
print(first.checkpoint["id"] == history[-1].checkpoint["id"], first.parent_config)
print(saver.get_tuple({"configurable": {"thread_id": "nobody"}}))
