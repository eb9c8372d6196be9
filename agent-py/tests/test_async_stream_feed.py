"""`astream` hands parts to asyncio as they come (`feed.rs`): every part once, in order, as
`stream` gives them; a consumer that stops early stops the run; errors arrive in place."""

import asyncio
import operator
from typing import Annotated, TypedDict

import pytest

from agentgraph.graph import END, START, StateGraph
from agentgraph.types import Send


class State(TypedDict):
    n: int
    out: Annotated[list, operator.add]


RAN: list = []
LIMIT = {"recursion_limit": 100_000}


def build(steps: int, fail_at: int = -1):
    async def work(state):
        RAN.append(state["n"])
        await asyncio.sleep(0)
        if state["n"] == fail_at:
            raise ValueError(f"failed at {fail_at}")
        return {"n": state["n"] + 1, "out": [state["n"]]}

    def fan(state):
        return [Send("leaf", {"n": i, "out": []}) for i in range(20)] + ["work"]

    def route(state):
        return END if state["n"] >= steps else "work"

    def leaf(state):
        return {"out": [f"leaf {state['n']}"]}

    builder = StateGraph(State)
    builder.add_node("work", work)
    builder.add_node("leaf", leaf)
    builder.add_conditional_edges(START, fan)
    builder.add_conditional_edges("work", route)
    builder.add_edge("leaf", END)
    return builder.compile()


def test_astream_gives_what_stream_gives():
    graph = build(60)
    modes = ["values", "updates", "debug"]
    expected = [(m, c) for m, c in graph.stream({"n": 0, "out": []}, LIMIT, stream_mode=modes) if m != "debug"]

    async def collect():
        return [(m, c) async for m, c in graph.astream({"n": 0, "out": []}, LIMIT, stream_mode=modes) if m != "debug"]

    assert asyncio.run(collect()) == expected
    assert len(expected) > 100


def test_a_consumer_that_stops_early_stops_the_run():
    graph = build(10_000)
    RAN.clear()

    async def first_few():
        stream = graph.astream({"n": 0, "out": []}, LIMIT, stream_mode="updates")
        seen = [chunk async for chunk, _ in zip_async(stream, range(5))]
        await stream.aclose()
        await asyncio.sleep(0.2)
        return seen

    assert len(asyncio.run(first_few())) == 5
    # The run went on at most a window's worth of parts past what was read.
    assert len(RAN) < 100


async def zip_async(stream, counter):
    it = iter(counter)
    async for chunk in stream:
        if next(it, None) is None:
            return
        yield chunk, None


def test_an_error_arrives_after_the_parts_before_it():
    graph = build(50, fail_at=7)

    async def run():
        seen = []
        with pytest.raises(ValueError, match="failed at 7"):
            async for chunk in graph.astream({"n": 0, "out": []}, LIMIT, stream_mode="updates"):
                seen.append(chunk)
        return seen

    seen = asyncio.run(run())
    assert [c["work"]["n"] for c in seen if "work" in c] == list(range(1, 8))
