"""Functional API durable execution: an entrypoint that fails after some tasks finished runs
on with `invoke(None)` and replays those tasks' results instead of running them again (the
docs' "resuming after an error")."""

import asyncio

from langgraph.checkpoint.memory import InMemorySaver
from langgraph.func import entrypoint, task

runs = []
attempts = {"count": 0}


@task
def slow_task(n: int) -> str:
    runs.append(("slow_task", n))
    return f"slow {n}"


@task
def get_info() -> str:
    runs.append(("get_info",))
    attempts["count"] += 1
    if attempts["count"] < 2:
        raise ValueError("Failure")
    return "OK"


@entrypoint(checkpointer=InMemorySaver())
def main(inputs: dict) -> list:
    first = slow_task(1).result()
    info = get_info().result()
    return [first, info, inputs]


config = {"configurable": {"thread_id": "1"}}
try:
    main.invoke({"any_input": "foobar"}, config)
except ValueError as error:
    print("failed:", error)
print(main.invoke(None, config))
print(runs)

arun = []
failed_once = []


@task
async def fetch(n: int) -> int:
    arun.append(n)
    return n * 10


@entrypoint(checkpointer=InMemorySaver())
async def amain(count: int) -> list:
    values = await asyncio.gather(*[fetch(i) for i in range(count)])
    if not failed_once:
        failed_once.append(True)
        raise RuntimeError("once")
    return list(values)


async def run_async():
    config = {"configurable": {"thread_id": "a"}}
    try:
        await amain.ainvoke(3, config)
    except RuntimeError as error:
        print("failed:", error)
    print(await amain.ainvoke(None, config))
    print(sorted(arun))


asyncio.run(run_async())
