"""`add_messages` details: chunks become whole messages (on both sides), message-likes are
converted, `format="langchain-openai"` (also as a reducer, `add_messages(format=...)`), and
the errors for an unknown format or one missing side."""

from typing import Annotated, TypedDict

from langchain_core.messages import AIMessage, AIMessageChunk, HumanMessage
from langgraph.graph import START, StateGraph
from langgraph.graph.message import add_messages

left = [AIMessageChunk(content="a", id="1"), {"role": "assistant", "content": "Hi", "id": "2"}]
right = [AIMessageChunk(content="b", id="3"), ("user", "Thanks")]
merged = add_messages(left, right)
print([type(m).__name__ for m in merged], [m.content for m in merged])

for bad in ({"format": "invalid"},):
    try:
        add_messages([], [], **bad)
    except ValueError as error:
        print("error:", error)
try:
    add_messages([HumanMessage(content="x", id="x")], None)
except ValueError as error:
    print("error:", error)

blocks = [HumanMessage(content=[{"type": "text", "text": "hello"}], id="h")]
formatted = add_messages([], blocks, format="langchain-openai")
print([(type(m).__name__, m.content) for m in formatted])


class State(TypedDict):
    messages: Annotated[list, add_messages(format="langchain-openai")]


builder = StateGraph(State)
builder.add_node("reply", lambda s: {"messages": [AIMessage(content=[{"type": "text", "text": "hi"}], id="r")]})
builder.add_edge(START, "reply")
out = builder.compile().invoke({"messages": [("user", "hey")]})
print([(type(m).__name__, m.content) for m in out["messages"]])
