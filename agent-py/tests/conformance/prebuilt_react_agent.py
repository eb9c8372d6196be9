"""`langgraph.prebuilt`: `create_react_agent` over a scripted chat model (a `BaseChatModel`
whose `bind_tools` keeps the tools and whose answers call them), `ToolNode` and
`tools_condition` in a hand-built graph, tool errors, `InjectedState`/`InjectedStore`,
a prompt, a checkpointer, the agent's answer when the recursion limit is near, a pause
before the tools, a structured response and a model function."""

import asyncio
from dataclasses import dataclass
from typing import Annotated, Any, Optional

from pydantic import BaseModel

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.tools import tool
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, MessagesState, StateGraph
from langgraph.prebuilt import InjectedState, InjectedStore, ToolNode, ToolRuntime, create_react_agent, tools_condition
from langgraph.store.memory import InMemoryStore
from langgraph.types import Command, interrupt


class ScriptedModel(BaseChatModel):
    """Answers with its script's messages in turn; records what it was given."""

    script: list
    seen: list = []
    bound: list = []
    turn: int = 0

    @property
    def _llm_type(self) -> str:
        return "scripted"

    def bind_tools(self, tools, **kwargs):
        self.bound.append(sorted(t["type"] if isinstance(t, dict) else t.name for t in tools))
        return self

    def with_structured_output(self, schema, **kwargs):
        from langchain_core.runnables import RunnableLambda

        def answer(messages):
            self.seen.append([(type(m).__name__, m.content) for m in messages])
            return schema(city="Rome", sunny=True)

        return RunnableLambda(answer)

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
    """The weather in a city."""
    return f"sunny in {city}"


@tool
def boom(x: int) -> str:
    """Always fails."""
    raise RuntimeError(f"boom {x}")


@tool
def count_messages(note: str, state: Annotated[dict, InjectedState]) -> str:
    """Counts the conversation's messages."""
    return f"{note}: {len(state['messages'])} messages"


@tool
def last_words(messages: Annotated[list, InjectedState("messages")]) -> str:
    """The first message's text."""
    return messages[0].content


@tool
def remember(fact: str, store: Annotated[Any, InjectedStore()]) -> str:
    """Stores a fact."""
    store.put(("facts",), "f", {"fact": fact})
    return "stored"


@tool
def data() -> dict:
    """Returns structured data."""
    return {"k": [1, 2]}


def show(messages):
    for m in messages:
        extra = ""
        if isinstance(m, AIMessage):
            extra = f" calls={[(c['name'], c['args'], c['id']) for c in m.tool_calls]} name={m.name}"
        elif m.type == "tool":
            extra = f" tool={m.name} id={m.tool_call_id} status={m.status}"
        print(f"  {type(m).__name__}: {m.content!r}{extra}")


# 1. Two turns of tool calls (two calls at once, then one), then an answer.
model = ScriptedModel(
    script=[
        {"calls": [call("add", {"a": 2, "b": 3}, "c1"), call("weather", {"city": "Paris"}, "c2")]},
        {"calls": [call("add", {"a": 5, "b": 10}, "c3")]},
        {"content": "2+3+10 is 15 and it is sunny"},
    ]
)
agent = create_react_agent(model, [add, weather], prompt="You are a calculator.")
out = agent.invoke({"messages": [HumanMessage("add things", id="h1")]})
print("bound", model.bound)
show(out["messages"])
print("model saw", model.seen[-1])

# 2. Stream updates (one call a turn).
model = ScriptedModel(script=[{"calls": [call("weather", {"city": "Rome"}, "w1")]}, {"content": "done"}])
agent = create_react_agent(model, [weather], prompt=SystemMessage("Be brief."))
for chunk in agent.stream({"messages": [("user", "weather?")]}, stream_mode="updates"):
    for node, update in chunk.items():
        print("update", node, [(type(m).__name__, m.content) for m in update["messages"]])
print("model saw", model.seen[0])

# 3. Errors: an unknown tool, a failing tool handled, bad arguments (handled by default).
model = ScriptedModel(
    script=[
        {"calls": [call("nope", {}, "e1"), call("add", {"a": "x"}, "e2")]},
        {"calls": [call("boom", {"x": 1}, "e3")]},
        {"content": "gave up"},
    ]
)
agent = create_react_agent(model, ToolNode([add, boom], handle_tool_errors=True))
show(agent.invoke({"messages": [HumanMessage("try")]})["messages"][1:])

# 4. By default a tool's own exception propagates.
model = ScriptedModel(script=[{"calls": [call("boom", {"x": 2}, "e4")]}, {"content": "x"}])
agent = create_react_agent(model, [boom])
try:
    agent.invoke({"messages": [HumanMessage("try")]})
except RuntimeError as error:
    print("raised", type(error).__name__, error)

# 5. A string handler, and a handler for some exception types only (ToolNode in a graph).
def calls_boom(state: MessagesState):
    return {"messages": [AIMessage("", tool_calls=[call("boom", {"x": 3}, "e5")])]}


for handler in ["tool failed", (ValueError,), lambda e: f"handled {e}"]:
    builder = StateGraph(MessagesState)
    builder.add_node("calls_boom", calls_boom)
    builder.add_node("tools", ToolNode([boom], handle_tool_errors=handler))
    builder.add_edge(START, "calls_boom")
    builder.add_edge("calls_boom", "tools")
    try:
        show(builder.compile().invoke({"messages": []})["messages"][1:])
    except RuntimeError as error:
        print("raised", type(error).__name__, error)

# 6. A checkpointer: the thread goes on; a store and injected arguments.
store = InMemoryStore()
model = ScriptedModel(
    script=[
        {"calls": [call("count_messages", {"note": "n"}, "i1"), call("last_words", {}, "i2")]},
        {"calls": [call("remember", {"fact": "sky is blue"}, "i3"), call("data", {}, "i4")]},
        {"content": "ok"},
    ]
)
agent = create_react_agent(
    model, [count_messages, last_words, remember, data], checkpointer=InMemorySaver(), store=store
)
config = {"configurable": {"thread_id": "t"}}
show(agent.invoke({"messages": [HumanMessage("first")]}, config)["messages"])
print(store.get(("facts",), "f").value)
out = agent.invoke({"messages": [HumanMessage("second")]}, config)
print(len(out["messages"]), [type(m).__name__ for m in out["messages"]])
print(agent.get_state(config).next)

# 7. Near the recursion limit the agent says it needs more steps.
model = ScriptedModel(script=[{"calls": [call("add", {"a": 1, "b": 1}, "r")]}])
agent = create_react_agent(model, [add])
out = agent.invoke({"messages": [HumanMessage("loop")]}, {"recursion_limit": 6})
print(len(out["messages"]), repr(out["messages"][-1].content))

# 8. ToolNode and tools_condition in a graph of one's own.
model = ScriptedModel(script=[{"calls": [call("weather", {"city": "Oslo"}, "g1")]}, {"content": "cold"}])
llm = model.bind_tools([weather])


def chatbot(state: MessagesState):
    return {"messages": [llm.invoke(state["messages"])]}


builder = StateGraph(MessagesState)
builder.add_node("chatbot", chatbot)
builder.add_node("tools", ToolNode([weather]))
builder.add_edge(START, "chatbot")
builder.add_conditional_edges("chatbot", tools_condition)
builder.add_edge("tools", "chatbot")
graph = builder.compile()
show(graph.invoke({"messages": [HumanMessage("weather in Oslo?")]})["messages"])
print(tools_condition({"messages": [AIMessage("x")]}), tools_condition([AIMessage("", tool_calls=[call("a", {}, "1")])]))
print(sorted(ToolNode([add, weather]).tools_by_name))

# 9. Human in the loop: pause before the tools run, then go on.
model = ScriptedModel(script=[{"calls": [call("weather", {"city": "Rome"}, "w1")]}, {"content": "done"}])
agent = create_react_agent(model, [weather], checkpointer=InMemorySaver(), interrupt_before=["tools"])
config = {"configurable": {"thread_id": "1"}}
out = agent.invoke({"messages": [HumanMessage("hi")]}, config)
print("paused", agent.get_state(config).next, len(out["messages"]))
show(agent.invoke(None, config)["messages"][2:])
print(agent.get_state(config).next)

# 10. A chat history with an unanswered tool call is refused.
model = ScriptedModel(script=[{"content": "x"}])
agent = create_react_agent(model, [add])
try:
    agent.invoke({"messages": [HumanMessage("a"), AIMessage("", tool_calls=[call("add", {"a": 1, "b": 1}, "u1")])]})
except ValueError as error:
    print(type(error).__name__, error)


# 11. A structured response after the last answer (with and without its own prompt; no tools).
class Weather(BaseModel):
    city: str
    sunny: bool


for response_format in [Weather, ("Answer as JSON.", Weather)]:
    model = ScriptedModel(script=[{"calls": [call("weather", {"city": "Rome"}, "s1")]}, {"content": "sunny"}])
    agent = create_react_agent(model, [weather], response_format=response_format)
    out = agent.invoke({"messages": [HumanMessage("weather?")]})
    print(repr(out["structured_response"]), len(out["messages"]), model.seen[-1][0])
model = ScriptedModel(script=[{"content": "no tools"}])
out = create_react_agent(model, [], response_format=Weather).invoke({"messages": [HumanMessage("hi")]})
print(sorted(out), repr(out["structured_response"]), model.bound)

# 12. A model function: the model is picked per call from the state and the run's context.
@dataclass
class Ctx:
    fast: bool


fast = ScriptedModel(script=[{"content": "fast answer"}])
slow = ScriptedModel(script=[{"calls": [call("add", {"a": 1, "b": 2}, "d1")]}, {"content": "slow answer"}])


def pick(state, runtime):
    chosen = fast if runtime.context.fast else slow
    return chosen.bind_tools([add])


agent = create_react_agent(pick, [add], prompt="p", context_schema=Ctx)
for flag in (True, False):
    out = agent.invoke({"messages": [HumanMessage("go")]}, context=Ctx(fast=flag))
    print(flag, [m.content for m in out["messages"]], fast.bound, slow.bound)


# 13. A tool's `runtime: ToolRuntime`: state, context, store, call id, config, tools.
@tool
def introspect(label: str, runtime: ToolRuntime) -> str:
    """Looks at its runtime."""
    runtime.stream_writer({"from tool": label})
    return str(
        (
            label,
            len(runtime.state["messages"]),
            runtime.context,
            runtime.store is store,
            runtime.tool_call_id,
            runtime.config["metadata"]["langgraph_node"],
            sorted(t.name for t in runtime.tools),
        )
    )


print(sorted(introspect.tool_call_schema.model_json_schema()["properties"]))
model = ScriptedModel(script=[{"calls": [call("introspect", {"label": "x"}, "t1")]}, {"content": "ok"}])
agent = create_react_agent(model, [introspect, add], store=store, context_schema=Ctx)
for mode, chunk in agent.stream(
    {"messages": [HumanMessage("look")]}, context=Ctx(fast=True), stream_mode=["custom", "updates"]
):
    if mode == "custom":
        print("custom", chunk)
    elif "tools" in chunk:
        print("tool said", chunk["tools"]["messages"][0].content)


# 14. A tool that asks a human (`interrupt`), resumed with `Command(resume=...)`.

@tool
def book(hotel: str) -> str:
    """Books a hotel after asking."""
    answer = interrupt({"question": f"book {hotel}?"})
    return f"booked {hotel}" if answer == "yes" else f"not booked ({answer})"


for answers in (["yes"], ["no"]):
    model = ScriptedModel(script=[{"calls": [call("book", {"hotel": "Ritz"}, "b1")]}, {"content": "done"}])
    agent = create_react_agent(model, [book], checkpointer=InMemorySaver())
    config = {"configurable": {"thread_id": "h"}}
    out = agent.invoke({"messages": [HumanMessage("book it")]}, config)
    print([i.value for i in out["__interrupt__"]], agent.get_state(config).next)
    out = agent.invoke(Command(resume=answers[0]), config)
    print([m.content for m in out["messages"]])


# 15. `version="v1"`: a turn's calls in one `tools` task, as updates show; plain functions as tools.
def shout(text: str) -> str:
    """Shouts."""
    return text.upper()


model = ScriptedModel(
    script=[{"calls": [call("shout", {"text": "a"}, "v1"), call("add", {"a": 1, "b": 2}, "v2")]}, {"content": "end"}]
)
agent = create_react_agent(model, [shout, add], version="v1")
for chunk in agent.stream({"messages": [HumanMessage("go")]}, stream_mode="updates"):
    for node, update in chunk.items():
        print("v1", node, [(type(m).__name__, m.content, getattr(m, "name", None)) for m in update["messages"]])
for mode, chunk in agent.stream({"messages": [HumanMessage("go")]}, stream_mode=["tasks"]):
    print("task", chunk.get("name"), "result" in chunk)


# 16. Async: an async-only tool beside a sync one, under ainvoke and astream.
@tool
async def fetch(url: str) -> str:
    """Fetches a page."""
    await asyncio.sleep(0)
    return f"page {url}"


async def async_agent():
    model = ScriptedModel(
        script=[{"calls": [call("fetch", {"url": "u"}, "f1"), call("add", {"a": 2, "b": 2}, "f2")]}, {"content": "fetched"}]
    )
    agent = create_react_agent(model, [fetch, add], version="v1")
    out = await agent.ainvoke({"messages": [HumanMessage("get")]})
    print("async", [m.content for m in out["messages"]])
    async for chunk in agent.astream({"messages": [HumanMessage("get")]}, stream_mode="updates"):
        for node, update in chunk.items():
            print("async update", node, [m.content for m in update["messages"]])


asyncio.run(async_agent())


# 17. An async model function, under ainvoke.
async def apick(state, runtime):
    await asyncio.sleep(0)
    return slow.bind_tools([add])


async def async_model_function():
    slow.turn = 0
    agent = create_react_agent(apick, [add])
    out = await agent.ainvoke({"messages": [HumanMessage("go")]})
    print("apick", [m.content for m in out["messages"]])


asyncio.run(async_model_function())


# 18. A provider's tool (a dict) is bound to the model, not run by the tools node.
model = ScriptedModel(script=[{"calls": [call("add", {"a": 1, "b": 1}, "p1")]}, {"content": "two"}])
agent = create_react_agent(model, [add, {"type": "web_search"}])
print(model.bound, [m.content for m in agent.invoke({"messages": [HumanMessage("q")]})["messages"]])
named = create_react_agent(ScriptedModel(script=[{"content": "hi"}]), [add], name="helper")
print(named.name, create_react_agent(ScriptedModel(script=[{"content": "hi"}]), [add]).name)
print([m.name for m in named.invoke({"messages": [HumanMessage("q")]})["messages"]])
