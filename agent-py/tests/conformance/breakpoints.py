import re
import operator
from typing import Annotated, TypedDict

from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import START, StateGraph


class S(TypedDict):
    log: Annotated[list, operator.add]


def show(value) -> str:
    return re.sub(r"id='[^']*'", "id=...", repr(value))


builder = StateGraph(S)
for name in ("a", "b", "c"):
    builder.add_node(name, lambda s, name=name: {"log": [name]})
builder.add_edge(START, "a")
builder.add_edge("a", "b")
builder.add_edge("b", "c")
graph = builder.compile(checkpointer=InMemorySaver(), interrupt_before=["b"], interrupt_after=["b"])
config = {"configurable": {"thread_id": "1"}}
print(show(graph.invoke({"log": []}, config)))
print(graph.get_state(config).next)
print(show(graph.invoke(None, config)))
print(graph.get_state(config).next)
print(show(graph.invoke(None, config)))
config = {"configurable": {"thread_id": "2"}}
print(show(list(graph.stream({"log": []}, config, stream_mode="updates"))))
print(show(list(graph.stream(None, config, stream_mode=["values", "updates"]))))
