"""`create_react_agent`'s `version="v2"` (each tool call its own `tools` task through `Send`:
`updates` and `tasks` streams show one item a call), `pre_model_hook` (with and without
`llm_input_messages`), `post_model_hook` (routing to the calls still unanswered), tools
returning `Command`s in one turn (v2: each call's own update; v1: one task's), and a tool's
`Command(graph=Command.PARENT)` ending the agent inside a parent graph, over a scripted
chat model."""

import operator
import time
from typing import Annotated

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, HumanMessage, RemoveMessage, ToolMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.tools import InjectedToolCallId, tool
from langgraph.graph import END, START, MessagesState, StateGraph
from langgraph.prebuilt import create_react_agent
from langgraph.prebuilt.chat_agent_executor import AgentState
from langgraph.types import Command, Send


class ScriptedModel(BaseChatModel):
    """Answers with its script's messages in turn; records what it was given."""

    script: list
    seen: list = []
    turn: int = 0

    @property
    def _llm_type(self) -> str:
        return "scripted"

    def bind_tools(self, tools, **kwargs):
        return self

    def _generate(self, messages, stop=None, run_manager=None, **kwargs):
        self.seen.append([(type(m).__name__, m.content) for m in messages])
        step = self.script[self.turn % len(self.script)]
        self.turn += 1
        message = AIMessage(content=step.get("content", ""), tool_calls=step.get("calls", []), id=f"ai-{self.turn}")
        return ChatResult(generations=[ChatGeneration(message=message)])


def call(name, args, id):
    return {"name": name, "args": args, "id": id, "type": "tool_call"}


@tool
def add(a: int, b: int) -> int:
    """Adds two numbers."""
    return a + b


@tool
def weather(city: str) -> str:
    """The weather in a city (slower than `add`: parallel calls finish in a fixed order)."""
    time.sleep(0.2)
    return f"sunny in {city}"


def two_calls():
    return ScriptedModel(
        script=[
            {"calls": [call("add", {"a": 1, "b": 2}, "c1"), call("weather", {"city": "Rome"}, "c2")]},
            {"content": "done"},
        ]
    )


def brief(update):
    if isinstance(update, dict):
        for key in ("messages", "llm_input_messages"):
            if key in update:
                return key, [(type(m).__name__, m.content) for m in update[key]]
    return update


def show_updates(label, agent, inputs, **kwargs):
    for chunk in agent.stream(inputs, stream_mode="updates", **kwargs):
        for node, update in chunk.items():
            if isinstance(update, list):
                print(label, node, "list", [brief(u) for u in update])
            else:
                print(label, node, brief(update) if update is not None else None)


# 1. v2 (the default): one `tools` update and one task a call; the same final messages as v1.
for version in ("v2", "v1"):
    agent = create_react_agent(two_calls(), [add, weather], version=version)
    show_updates(version, agent, {"messages": [HumanMessage("go")]})
    tasks = [
        (chunk["name"], "result" in chunk)
        for chunk in create_react_agent(two_calls(), [add, weather], version=version).stream(
            {"messages": [HumanMessage("go")]}, stream_mode="tasks"
        )
    ]
    print(version, "tasks", tasks)
    out = create_react_agent(two_calls(), [add, weather], version=version).invoke({"messages": [HumanMessage("go")]})
    print(version, "final", [(type(m).__name__, m.content) for m in out["messages"]])


# 2. pre_model_hook: trims what the model reads (llm_input_messages) or rewrites messages.
def trim_hook(state):
    return {"llm_input_messages": state["messages"][-1:]}


model = two_calls()
agent = create_react_agent(model, [add, weather], pre_model_hook=trim_hook)
show_updates("pre", agent, {"messages": [HumanMessage("first"), HumanMessage("go")]})
print("pre saw", model.seen)


def rewrite_hook(state):
    first = state["messages"][0]
    return {"messages": [RemoveMessage(id=first.id), HumanMessage("rewritten", id=first.id)]} if first.content != "rewritten" else {}


model = ScriptedModel(script=[{"content": "ok"}])
agent = create_react_agent(model, [add], pre_model_hook=rewrite_hook)
out = agent.invoke({"messages": [HumanMessage("original", id="h1")]})
print("rewrite", [(type(m).__name__, m.content) for m in out["messages"]], model.seen)


# 3. post_model_hook: after each model turn; pending calls go to the tools.
def post_hook(state):
    last = state["messages"][-1]
    return {"messages": [AIMessage(f"checked {len(last.tool_calls)} calls", id=last.id, tool_calls=last.tool_calls)]}


agent = create_react_agent(two_calls(), [add, weather], post_model_hook=post_hook)
show_updates("post", agent, {"messages": [HumanMessage("go")]})
agent = create_react_agent(
    two_calls(), [add, weather], pre_model_hook=trim_hook, post_model_hook=lambda s: {}
)
show_updates("both", agent, {"messages": [HumanMessage("go")]})


# 4. Tools' Commands in one turn.
class State(AgentState):
    visits: Annotated[list, operator.add]


@tool
def visit(place: str, tool_call_id: Annotated[str, InjectedToolCallId]) -> Command:
    """Records a visit (Oslo last)."""
    time.sleep(0.4 if place == "Oslo" else 0)
    return Command(update={"visits": [place], "messages": [ToolMessage(f"visited {place}", tool_call_id=tool_call_id)]})


def visits_model():
    return ScriptedModel(
        script=[
            {"calls": [call("visit", {"place": "Rome"}, "v1"), call("weather", {"city": "Paris"}, "w1"), call("visit", {"place": "Oslo"}, "v2")]},
            {"content": "visited"},
        ]
    )


for version in ("v2", "v1"):
    agent = create_react_agent(visits_model(), [visit, weather], state_schema=State, version=version)
    show_updates(f"commands {version}", agent, {"messages": [HumanMessage("go")], "visits": []})
    agent = create_react_agent(visits_model(), [visit, weather], state_schema=State, version=version)
    out = agent.invoke({"messages": [HumanMessage("go")], "visits": []})
    print(f"commands {version} final", out["visits"], [m.content for m in out["messages"]])


# 5. A tool's Command to the parent graph: the agent is a node of a parent graph.
class Parent(MessagesState):
    handed: str


@tool
def hand_off(to: str, tool_call_id: Annotated[str, InjectedToolCallId]) -> Command:
    """Hands the conversation to another agent."""
    return Command(
        graph=Command.PARENT,
        goto=to,
        update={"handed": to, "messages": [ToolMessage(f"handed to {to}", tool_call_id=tool_call_id)]},
    )


for version in ("v2", "v1"):
    def inner_agent():
        return create_react_agent(
            ScriptedModel(script=[{"calls": [call("hand_off", {"to": "other"}, "h1")]}, {"content": "never"}]),
            [hand_off],
            version=version,
            name="inner",
        )

    def other(state: Parent):
        return {"messages": [AIMessage(f"other got {len(state['messages'])} messages")]}

    def parent_graph():
        builder = StateGraph(Parent)
        builder.add_node("inner", inner_agent(), destinations=("other",))
        builder.add_node("other", other)
        builder.add_edge(START, "inner")
        builder.add_edge("other", END)
        return builder.compile()

    for chunk in parent_graph().stream({"messages": [HumanMessage("hi")], "handed": ""}, stream_mode="updates"):
        for node, update in chunk.items():
            print("parent", version, node, brief(update) if not isinstance(update, list) else [brief(u) for u in update], update.get("handed") if isinstance(update, dict) else None)
    out = parent_graph().invoke({"messages": [HumanMessage("hi")], "handed": ""})
    print("parent final", version, out["handed"], [(type(m).__name__, m.content) for m in out["messages"]])


# 6. A turn mixing a parent command with another call (v1: one task, ended by the parent
# command; v2: the other call's task finishes beside it), and v1's parent commands sending
# (gathered into one; two v2 tasks each ending the agent in one step are not compared:
# LangGraph keeps one of them).
class Fanned(MessagesState):
    got: Annotated[list, operator.add]


@tool
def fan(item: str, tool_call_id: Annotated[str, InjectedToolCallId]) -> Command:
    """Sends an item to the parent's worker."""
    return Command(graph=Command.PARENT, goto=[Send("worker", {"item": item})])


def worker(arg):
    return {"got": [arg["item"]]}


for version in ("v1", "v2"):
    mixed = create_react_agent(
        ScriptedModel(script=[{"calls": [call("add", {"a": 2, "b": 2}, "a1"), call("hand_off", {"to": "other"}, "h1")]}]),
        [add, hand_off],
        version=version,
    )

    def other2(state: Parent):
        return {"messages": [AIMessage(f"other got {[m.content for m in state['messages']]}")]}

    builder = StateGraph(Parent)
    builder.add_node("inner", mixed, destinations=("other",))
    builder.add_node("other", other2)
    builder.add_edge(START, "inner")
    builder.add_edge("other", END)
    out = builder.compile().invoke({"messages": [HumanMessage("hi")], "handed": ""})
    print("mixed", version, out["handed"], [m.content for m in out["messages"]])

    if version == "v2":
        continue
    fanning = create_react_agent(
        ScriptedModel(script=[{"calls": [call("fan", {"item": "x"}, "f1"), call("fan", {"item": "y"}, "f2")]}]),
        [fan],
        version=version,
    )
    builder = StateGraph(Fanned)
    builder.add_node("inner", fanning)
    builder.add_node("worker", worker)
    builder.add_edge(START, "inner")
    out = builder.compile().invoke({"messages": [HumanMessage("hi")], "got": []})
    print("fanned", version, sorted(out["got"]), [m.content for m in out["messages"]])


# 7. Two tools of one v1 turn writing a key without a reducer: LangGraph's InvalidUpdateError.
class Named(AgentState):
    user: str


@tool
def set_user(name: str, tool_call_id: Annotated[str, InjectedToolCallId]) -> Command:
    """Sets the user."""
    return Command(update={"user": name, "messages": [ToolMessage(f"user {name}", tool_call_id=tool_call_id)]})


agent = create_react_agent(
    ScriptedModel(script=[{"calls": [call("set_user", {"name": "a"}, "u1"), call("set_user", {"name": "b"}, "u2")]}]),
    [set_user],
    state_schema=Named,
    version="v1",
)
try:
    agent.invoke({"messages": [HumanMessage("hi")], "user": ""})
except Exception as error:  # noqa: BLE001
    print("two writes", type(error).__name__, str(error).splitlines()[0])
