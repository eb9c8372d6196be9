"""`Send` and subgraphs: what the conformance programs cannot show (identity, namespaces,
errors, async runs)."""

import asyncio
import operator
import re
from dataclasses import dataclass
from typing import Annotated, TypedDict

import pytest

from agentgraph.checkpoint.memory import InMemorySaver
from agentgraph.errors import ParentCommand
from agentgraph.graph import END, START, StateGraph
from agentgraph.types import Command, Send, interrupt


class Logs(TypedDict):
    log: Annotated[list, operator.add]


class Child(TypedDict):
    topic: str
    log: Annotated[list, operator.add]


@dataclass
class Payload:
    """A Send argument that is neither a dict nor JSON (a dataclass: LangGraph's serializer
    stores those, as it stores no plain object without `pickle_fallback`)."""

    name: str


def test_a_send_argument_is_the_very_object():
    sent = [Payload("a"), Payload("b")]
    seen = []

    def work(arg):
        seen.append(arg)
        return {"log": [arg.name]}

    builder = StateGraph(Logs)
    builder.add_node("work", work)
    builder.add_conditional_edges(START, lambda s: [Send("work", p) for p in sent])
    builder.add_edge("work", END)
    assert builder.compile().invoke({"log": []}) == {"log": ["a", "b"]}
    assert len(seen) == 2 and all(any(s is p for p in sent) for s in seen)


def test_send_arguments_survive_a_checkpoint():
    builder = StateGraph(Logs)
    builder.add_node("work", lambda arg: {"log": [arg.name]})
    builder.add_conditional_edges(START, lambda s: [Send("work", Payload(n)) for n in "xyz"])
    builder.add_edge("work", END)
    graph = builder.compile(checkpointer=InMemorySaver(), interrupt_before=["work"])
    config = {"configurable": {"thread_id": "sends"}}
    assert graph.invoke({"log": []}, config) == {"log": []}
    assert graph.get_state(config).next == ("work", "work", "work")
    # The Sends were stored (LangGraph's msgpack) with the checkpoint and come back as equal objects.
    assert graph.invoke(None, config) == {"log": ["x", "y", "z"]}


def child_graph(ask: bool = False):
    def edit(state):
        if ask:
            return {"log": [f"edit {state['topic']} ({interrupt('ok?')})"]}
        return {"log": [f"edit {state['topic']}"]}

    builder = StateGraph(Child)
    builder.add_node("edit", edit)
    builder.add_edge(START, "edit")
    return builder.compile()


UUID = "[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"


def test_each_subgraph_run_streams_under_its_own_namespace():
    builder = StateGraph(Logs)
    builder.add_node("child", child_graph())
    builder.add_conditional_edges(START, lambda s: [Send("child", {"topic": t}) for t in "ab"])
    builder.add_edge("child", END)
    graph = builder.compile(checkpointer=InMemorySaver())
    parts = list(graph.stream({"log": []}, {"configurable": {"thread_id": "ns"}}, subgraphs=True))
    namespaces = {ns for ns, _ in parts if ns}
    assert len(namespaces) == 2, parts
    for ns in namespaces:
        assert len(ns) == 1 and re.fullmatch(f"child:{UUID}", ns[0]), ns
    assert sorted(chunk["edit"]["log"][0] for ns, chunk in parts if ns) == ["edit a", "edit b"]
    # Without a checkpointer the namespaces are made up, in the same form.
    parts = list(builder.compile().stream({"log": []}, subgraphs=True))
    assert all(re.fullmatch(f"child:{UUID}", ns[0]) for ns, _ in parts if ns)


def test_a_subgraph_paused_in_a_send_task_resumes():
    builder = StateGraph(Logs)
    builder.add_node("child", child_graph(ask=True))
    builder.add_conditional_edges(START, lambda s: [Send("child", {"topic": "owls"})])
    builder.add_edge("child", END)
    graph = builder.compile(checkpointer=InMemorySaver())
    config = {"configurable": {"thread_id": "paused-send"}}
    out = graph.invoke({"log": []}, config)
    assert [i.value for i in out["__interrupt__"]] == ["ok?"]
    assert graph.invoke(Command(resume="yes"), config) == {"log": ["edit owls (yes)"]}


def test_a_parent_command_from_a_root_graph_reaches_the_caller():
    builder = StateGraph(Logs)
    builder.add_node("a", lambda s: Command(graph=Command.PARENT, goto="x"))
    builder.add_edge(START, "a")
    with pytest.raises(ParentCommand) as raised:
        builder.compile().invoke({"log": []})
    assert raised.value.args[0].goto == "x"


def test_a_subgraph_input_must_be_a_dict():
    builder = StateGraph(Logs)
    builder.add_node("child", child_graph())
    builder.add_conditional_edges(START, lambda s: [Send("child", 5)])
    with pytest.raises(TypeError, match="subgraph's input must be a dict"):
        builder.compile().invoke({"log": []})


def test_async_subgraphs_on_the_callers_loop():
    async def aedit(state):
        await asyncio.sleep(0)
        return {"log": [f"aedit {state.get('topic', 'none')}"]}

    child_builder = StateGraph(Child)
    child_builder.add_node("aedit", aedit)
    child_builder.add_edge(START, "aedit")
    child = child_builder.compile()

    async def call(state):
        out = await child.ainvoke({"topic": "called"})
        return {"log": out["log"]}

    builder = StateGraph(Logs)
    builder.add_node("child", child)
    builder.add_node("call", call)
    builder.add_edge(START, "child")
    builder.add_edge("child", "call")
    graph = builder.compile()

    async def main():
        out = await graph.ainvoke({"log": []})
        stream = graph.astream({"log": []}, stream_mode="updates", subgraphs=True)
        parts = [(ns[0].split(":")[0] if ns else "", chunk) async for ns, chunk in stream]
        return out, parts

    out, parts = asyncio.run(main())
    assert out == {"log": ["aedit none", "aedit called"]}
    assert parts == [
        ("child", {"aedit": {"log": ["aedit none"]}}),
        ("", {"child": {"log": ["aedit none"]}}),
        ("call", {"aedit": {"log": ["aedit called"]}}),
        ("", {"call": {"log": ["aedit called"]}}),
    ]


def test_a_sync_invoke_inside_an_async_node_refuses_async_children():
    async def aedit(state):
        return {"log": ["aedit"]}

    child_builder = StateGraph(Logs)
    child_builder.add_node("aedit", aedit)
    child_builder.add_edge(START, "aedit")
    child = child_builder.compile()

    async def call(state):
        # Would block the loop `aedit` is awaited on.
        return child.invoke({"log": []})

    def sync_call(state):
        return child.invoke({"log": []})

    builder = StateGraph(Logs)
    builder.add_node("call", call)
    builder.add_edge(START, "call")
    with pytest.raises(TypeError, match='No synchronous function provided to "aedit"'):
        asyncio.run(builder.compile().ainvoke({"log": []}))
    # From a sync node (not on the loop) the same child runs.
    builder = StateGraph(Logs)
    builder.add_node("call", sync_call)
    builder.add_edge(START, "call")
    assert asyncio.run(builder.compile().ainvoke({"log": []})) == {"log": ["aedit"]}
