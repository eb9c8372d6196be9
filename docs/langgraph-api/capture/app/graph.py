"""Tiny graph for observing langgraph-api semantics.

agent: START -> chat -> sub (subgraph: inner -> sub_ask) -> human -> END
- chat: streams tokens from a fake chat model; emits a custom event; "sleep N" in the last human
  message sleeps N seconds; "fail" raises.
- sub: a compiled subgraph; its node sub_ask calls interrupt() when the text contains "subask".
- human: calls interrupt() when the text contains "ask".
"""
import asyncio
import operator
from typing import Annotated
from typing_extensions import TypedDict

from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, AnyMessage
from langgraph.config import get_stream_writer
from langgraph.graph import END, START, StateGraph
from langgraph.graph.message import add_messages
from langgraph.types import interrupt


class State(TypedDict):
    messages: Annotated[list[AnyMessage], add_messages]
    count: Annotated[int, operator.add]


class Context(TypedDict, total=False):
    model: str
    user: str


def last_text(state) -> str:
    msgs = state.get("messages") or []
    for m in reversed(msgs):
        if m.type == "human":
            return m.content if isinstance(m.content, str) else str(m.content)
    return ""


async def chat(state: State):
    text = last_text(state)
    writer = get_stream_writer()
    writer({"progress": "chat started", "text": text})
    words = text.split()
    if "sleep" in words:
        i = words.index("sleep")
        secs = float(words[i + 1]) if i + 1 < len(words) else 3
        await asyncio.sleep(secs)
    if "fail" in words:
        raise ValueError("node chat failed on purpose")
    model = GenericFakeChatModel(messages=iter([AIMessage(content=f"echo: {text}")]))
    reply = await model.ainvoke(state["messages"])
    return {"messages": [reply], "count": 1}


class SubState(TypedDict):
    messages: Annotated[list[AnyMessage], add_messages]


def inner(state: SubState):
    return {"messages": [AIMessage(content="from inner subgraph node")]}


def sub_ask(state: SubState):
    text = last_text(state)
    if "subask" in text:
        answer = interrupt({"question": "sub approve?"})
        return {"messages": [AIMessage(content=f"sub answer: {answer}")]}
    return {}


sub = (
    StateGraph(SubState)
    .add_node("inner", inner)
    .add_node("sub_ask", sub_ask)
    .add_edge(START, "inner")
    .add_edge("inner", "sub_ask")
    .add_edge("sub_ask", END)
    .compile()
)


def human(state: State):
    text = last_text(state)
    if "ask" in text.split():
        answer = interrupt({"question": "approve?", "text": text})
        return {"messages": [AIMessage(content=f"human said: {answer}")]}
    return {"count": 1}


graph = (
    StateGraph(State, context_schema=Context)
    .add_node("chat", chat)
    .add_node("sub", sub)
    .add_node("human", human)
    .add_edge(START, "chat")
    .add_edge("chat", "sub")
    .add_edge("sub", "human")
    .add_edge("human", END)
    .compile()
)


class SimpleState(TypedDict):
    value: str


def upper(state: SimpleState):
    return {"value": state.get("value", "").upper()}


simple = StateGraph(SimpleState).add_node("upper", upper).add_edge(START, "upper").compile()
