"""`stream_mode="tools"`: the start and end (or error) of each tool a node calls, directly or
through `ToolNode`, in subgraphs too, beside `messages` and the other modes, v1 and v2."""

import asyncio
import re

from langchain_core.messages import AIMessage
from langchain_core.tools import tool

from langgraph.graph import START, MessagesState, StateGraph
from langgraph.prebuilt import ToolNode


@tool
def echo(text: str) -> str:
    """Echo the text."""
    return text


@tool
def fail(text: str) -> str:
    """Fail."""
    raise ValueError(f"bad {text}")


def show(value) -> str:
    # Run ids (tool calls made without an id) and namespaces' task ids are each runtime's own.
    text = repr(value)
    text = re.sub(r"'tool_call_id': '[0-9a-f-]{36}'", "'tool_call_id': <run>", text)
    text = re.sub(r"(\w+):[0-9a-f-]{20,}", r"\1:...", text)
    return re.sub(r"id='[^']*'", "id=...", text)


def direct(state: MessagesState) -> dict:
    echo.invoke({"text": "direct"})
    try:
        fail.invoke({"text": "direct"})
    except ValueError:
        pass
    return {}


async def adirect(state: MessagesState) -> dict:
    await echo.ainvoke({"text": "adirect"})
    return {}


def calls(*tool_calls):
    # One call per ToolNode step: ToolNode runs a message's calls concurrently.
    def node(state: MessagesState) -> dict:
        return {"messages": [AIMessage("", id=f"ai-{tool_calls[0]['id']}", tool_calls=list(tool_calls))]}

    return node


def build(*nodes):
    b = StateGraph(MessagesState)
    prev = START
    for name, node in nodes:
        b.add_node(name, node)
        b.add_edge(prev, name)
        prev = name
    return b.compile()


graph = build(
    ("direct", direct),
    ("call1", calls({"name": "echo", "args": {"text": "one"}, "id": "c1"})),
    ("tools1", ToolNode([echo, fail])),
    ("call2", calls({"name": "fail", "args": {"text": "two"}, "id": "c2"})),
    ("tools2", ToolNode([echo, fail], handle_tool_errors=True)),
)
for mode in ["tools", ["tools"], ["tools", "updates"], ["messages", "tools"], ["messages"]]:
    parts = list(graph.stream({"messages": []}, stream_mode=mode))
    print(mode, show(parts))
    parts = list(graph.stream({"messages": []}, stream_mode=mode, version="v2"))
    print(mode, "v2", show(parts))

parent = build(("sub", graph))
for subgraphs in (False, True):
    print("sub", subgraphs, show(list(parent.stream({"messages": []}, stream_mode="tools", subgraphs=subgraphs))))
    parts = parent.stream({"messages": []}, stream_mode=["tools", "custom"], subgraphs=subgraphs, version="v2")
    print("sub v2", subgraphs, show(list(parts)))

agraph = build(
    ("adirect", adirect),
    ("call", calls({"name": "fail", "args": {"text": "three"}, "id": "c3"})),
    ("tools", ToolNode([echo, fail], handle_tool_errors=True)),
)


async def main() -> None:
    print("async", show([p async for p in agraph.astream({"messages": []}, stream_mode="tools")]))
    print("async v2", show([p async for p in agraph.astream({"messages": []}, stream_mode=["tools"], version="v2")]))


asyncio.run(main())
