import operator
from typing import Annotated, TypedDict

from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import START, StateGraph


class Chat(TypedDict):
    turns: Annotated[list, operator.add]
    last: str


def reply(state, config):
    user = config["configurable"]["user"]
    return {"turns": [f"{user}:{len(state['turns'])}"], "last": user}


builder = StateGraph(Chat)
builder.add_node("reply", reply)
builder.add_edge(START, "reply")
graph = builder.compile(checkpointer=InMemorySaver())
for thread, user in [("a", "ana"), ("b", "bo"), ("a", "ana"), ("a", "al")]:
    config = {"configurable": {"thread_id": thread, "user": user}}
    print(thread, graph.invoke({"turns": ["hi"]}, config))
print(list(graph.stream({"turns": ["again"]}, {"configurable": {"thread_id": "b", "user": "bo"}}, stream_mode="values")))
