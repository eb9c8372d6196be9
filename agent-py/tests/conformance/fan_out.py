import operator
from typing import Annotated, TypedDict

from langgraph.graph import END, START, StateGraph


class State(TypedDict):
    topic: str
    notes: Annotated[list[str], operator.add]


builder = StateGraph(State)
builder.add_node("plan", lambda s: {"notes": [f"plan: {s['topic']}"]})
builder.add_node("web", lambda s: {"notes": ["web"]})
builder.add_node("docs", lambda s: {"notes": ["docs"]})
builder.add_node("write", lambda s: {"topic": s["topic"].upper()})
builder.add_edge(START, "plan")
builder.add_edge("plan", "web")
builder.add_edge("plan", "docs")
builder.add_edge(["web", "docs"], "write")
builder.add_edge("write", END)
graph = builder.compile()

print(graph.invoke({"topic": "rust"}))
for mode in ("values", "updates"):
    for chunk in graph.stream({"topic": "rust"}, stream_mode=mode):
        print(mode, sorted(chunk.items()) if mode == "updates" else chunk)
for part in graph.stream({"topic": "go"}, stream_mode=["updates", "values"]):
    print(part[0], sorted(part[1].items()) if part[0] == "updates" else part[1])
for chunk in graph.stream({"topic": "default mode"}):
    print(sorted(chunk.items()))
