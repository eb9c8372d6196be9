"""Tools that update the graph's state with `Command` through `ToolNode`: one call, two
calls in one turn (their updates and messages together), a `Command` that routes, and one
without its `ToolMessage` (refused, or handled as an error)."""

import operator
from typing import Annotated

from langchain_core.messages import AIMessage, ToolMessage
from langchain_core.tools import InjectedToolCallId, tool
from langgraph.graph import END, START, MessagesState, StateGraph
from langgraph.prebuilt import ToolNode, ValidationNode
from langgraph.types import Command
from pydantic import BaseModel, Field


class State(MessagesState):
    user: str
    visits: Annotated[list, operator.add]


@tool
def set_user(name: str, tool_call_id: Annotated[str, InjectedToolCallId]) -> Command:
    """Sets the user's name."""
    return Command(update={"user": name, "messages": [ToolMessage(f"user is {name}", tool_call_id=tool_call_id)]})


@tool
def visit(place: str, tool_call_id: Annotated[str, InjectedToolCallId]) -> Command:
    """Records a visit."""
    return Command(update={"visits": [place], "messages": [ToolMessage(f"visited {place}", tool_call_id=tool_call_id)]})


@tool
def go_done(tool_call_id: Annotated[str, InjectedToolCallId]) -> Command:
    """Goes to the end node."""
    return Command(goto="done", update={"messages": [{"role": "tool", "content": "going", "tool_call_id": tool_call_id}]})


@tool
def forgetful() -> Command:
    """Updates without answering."""
    return Command(update={"visits": ["nowhere"]})


@tool
def plain(x: int) -> str:
    """A plain tool."""
    return f"plain {x}"


def call(name, args, id):
    return {"name": name, "args": args, "id": id, "type": "tool_call"}


def run(calls, handle=False):
    def model(state):
        return {"messages": [AIMessage("", tool_calls=calls)]}

    builder = StateGraph(State)
    builder.add_node("model", model)
    builder.add_node("tools", ToolNode([set_user, visit, go_done, forgetful, plain], handle_tool_errors=handle))
    builder.add_node("done", lambda state: {"visits": ["done"]})
    builder.add_node("after", lambda state: {"visits": ["after"]})
    builder.add_edge(START, "model")
    builder.add_edge("model", "tools")
    builder.add_edge("tools", "after")
    builder.add_edge("after", END)
    builder.add_edge("done", END)
    try:
        out = builder.compile().invoke({"messages": [], "visits": []})
    except ValueError as error:
        print("raised", type(error).__name__, error)
        return
    print(out.get("user"), out["visits"])
    for m in out["messages"][1:]:
        print(" ", type(m).__name__, repr(m.content), m.name, m.tool_call_id, m.status)


run([call("set_user", {"name": "ada"}, "a")])
run([call("visit", {"place": "rome"}, "b"), call("plain", {"x": 1}, "c"), call("visit", {"place": "oslo"}, "d")])
run([call("set_user", {"name": "bo"}, "e"), call("visit", {"place": "lima"}, "f")])
run([call("go_done", {}, "g")])
run([call("forgetful", {}, "h")])
run([call("forgetful", {}, "i")], handle=True)


# Wrappers around each call: change its arguments, answer in its place, fail.
def wrapper(request, execute):
    name = request.tool_call["name"]
    if name == "plain":
        doubled = {**request.tool_call, "args": {"x": request.tool_call["args"]["x"] * 2}}
        return execute(request.override(tool_call=doubled))
    if name == "visit":
        return ToolMessage(f"skipped {request.tool_call['args']['place']}", tool_call_id=request.tool_call["id"])
    raise RuntimeError(f"wrapper refuses {name}")


for handle in (True, False):

    def model(state):
        calls = [call("plain", {"x": 4}, "w1"), call("visit", {"place": "nowhere"}, "w2"), call("set_user", {"name": "z"}, "w3")]
        return {"messages": [AIMessage("", tool_calls=calls)]}

    builder = StateGraph(State)
    builder.add_node("model", model)
    builder.add_node("tools", ToolNode([plain, visit, set_user], wrap_tool_call=wrapper, handle_tool_errors=handle))
    builder.add_edge(START, "model")
    builder.add_edge("model", "tools")
    try:
        out = builder.compile().invoke({"messages": [], "visits": []})
        for m in out["messages"][1:]:
            print(" ", repr(m.content), m.name, m.status)
    except RuntimeError as error:
        print("raised", error)


# ValidationNode: tool calls checked against schemas (a model, a tool, a function).


class Point(BaseModel):
    x: int
    y: int = Field(ge=0)


def area(width: float, height: float) -> float:
    """An area."""
    return width * height


def propose(state):
    calls = [
        call("Point", {"x": 1, "y": 2}, "p1"),
        call("Point", {"x": "no", "y": -1}, "p2"),
        call("plain", {"x": 3}, "p3"),
        call("area", {"width": 2}, "p4"),
    ]
    return {"messages": [AIMessage("", tool_calls=calls)]}


builder = StateGraph(MessagesState)
builder.add_node("propose", propose)
builder.add_node("validation", ValidationNode([Point, plain, area]))
builder.add_edge(START, "propose")
builder.add_edge("propose", "validation")
for m in builder.compile().invoke({"messages": []})["messages"][1:]:
    print(" ", m.name, m.tool_call_id, m.additional_kwargs, repr(m.content))
