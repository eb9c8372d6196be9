"""`push_message` inside a node: the message goes to the `messages` stream at once and into
the state key (`state_key=None`: only the stream); a message needs an id."""

from typing import Annotated, TypedDict

from langchain_core.messages import AIMessage, HumanMessage
from langgraph.graph import START, StateGraph
from langgraph.graph.message import add_messages, push_message


class State(TypedDict):
    messages: Annotated[list, add_messages]
    log: Annotated[list, add_messages]


seen = []  # printed after the run: a sync stream's consumer and its nodes interleave freely


def chat(state):
    try:
        push_message(AIMessage(content="no id"))
    except ValueError as error:
        seen.append(f"error: {error}")
    pushed = push_message(AIMessage(content="First", id="1"))
    seen.append(f"returned: {type(pushed).__name__} {pushed.content}")
    push_message(HumanMessage(content="Second", id="2"))
    push_message(AIMessage(content="side", id="s"), state_key="log")
    push_message({"role": "ai", "content": "only streamed", "id": "x"}, state_key=None)
    return {"messages": [AIMessage(content="Returned", id="3")]}


builder = StateGraph(State)
builder.add_node(chat)
builder.add_edge(START, "chat")
graph = builder.compile()

for mode, chunk in graph.stream({"messages": [], "log": []}, stream_mode=["messages", "values"]):
    if mode == "messages":
        message, meta = chunk
        print("messages:", message.id, message.content, meta["langgraph_node"])
    else:
        print("values:", [(m.id, m.content) for m in chunk["messages"]], [m.id for m in chunk["log"]])
print(graph.invoke({"messages": [], "log": []})["messages"][-1].content)
print(*seen, sep="\n")
