"""`agentgraph.func` beyond what the conformance programs compare: how often tasks run across
pauses (async too), and calls outside an entrypoint."""

import asyncio

import pytest

from agentgraph.checkpoint.memory import InMemorySaver
from agentgraph.func import entrypoint, task
from agentgraph.types import Command, interrupt


def test_a_task_outside_an_entrypoint_is_refused():
    @task
    def one() -> int:
        return 1

    with pytest.raises(RuntimeError):
        one()


def test_async_tasks_are_replayed_after_each_resume():
    runs: list = []

    @task
    async def fetch(n: int) -> dict:
        runs.append(n)
        await asyncio.sleep(0)
        return {"n": n, "square": n * n}

    @entrypoint(checkpointer=InMemorySaver())
    async def flow(count: int) -> list:
        squares = await asyncio.gather(*[fetch(i) for i in range(count)])
        first = interrupt("first")
        more = await fetch(count)
        second = interrupt("second")
        return [*squares, more, first, second]

    async def main():
        config = {"configurable": {"thread_id": "a"}}
        out = await flow.ainvoke(3, config)
        assert [i.value for i in out["__interrupt__"]] == ["first"]
        out = await flow.ainvoke(Command(resume=1), config)
        assert [i.value for i in out["__interrupt__"]] == ["second"]
        return await flow.ainvoke(Command(resume=2), config)

    result = asyncio.run(main())
    assert result == [{"n": n, "square": n * n} for n in range(4)] + [1, 2]
    assert sorted(runs) == [0, 1, 2, 3], "each task ran once across the two resumes"


def test_a_failed_task_raises_in_the_entrypoint_and_siblings_finish():
    done: list = []

    @task
    def ok(n: int) -> int:
        done.append(n)
        return n

    @task
    def bad() -> None:
        raise KeyError("bad")

    @entrypoint()
    def flow(_: int) -> int:
        futures = [ok(1), bad(), ok(2)]
        return sum(f.result() for f in futures)

    with pytest.raises(KeyError):
        flow.invoke(0)
    assert sorted(done) == [1, 2]


def test_sync_tasks_are_awaitable_in_an_async_entrypoint_and_async_tasks_run_in_a_sync_one():
    @task
    def sync_double(x: int) -> int:
        return 2 * x

    @task
    async def async_inc(x: int) -> int:
        await asyncio.sleep(0)
        return x + 1

    @entrypoint()
    async def amain(x: int) -> int:
        return await sync_double(x) + sync_double(x).result()

    @entrypoint()
    def main(x: int) -> int:
        return async_inc(x).result()

    assert asyncio.run(amain.ainvoke(3)) == 12
    assert main.invoke(3) == 4
