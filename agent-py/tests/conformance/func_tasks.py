"""Functional API: `@entrypoint` and `@task` (futures, parallel tasks, sync and async), the
`updates`/`values`/`custom` streams, `get_state`."""

import asyncio
import threading
import time

from langgraph.checkpoint.memory import InMemorySaver
from langgraph.config import get_stream_writer
from langgraph.func import entrypoint, task


@task
def double(x: int) -> int:
    return 2 * x


@task(name="slow_add")
def add_slowly(a: int, b: int) -> int:
    time.sleep(0.05)
    return a + b


@entrypoint()
def pipeline(numbers: list) -> dict:
    doubled = [double(n) for n in numbers]
    total = add_slowly(sum(f.result() for f in doubled), 1).result()
    get_stream_writer()({"total": total})
    return {"doubled": [f.result() for f in doubled], "total": total}


print(pipeline.invoke([1, 2, 3]))
for chunk in pipeline.stream([4]):
    print("updates", chunk)
for chunk in pipeline.stream([1], stream_mode="values"):
    print("values", chunk)
for chunk in pipeline.stream([1], stream_mode=["custom", "updates"]):
    print("multi", chunk)

# Tasks run in parallel: two tasks that each wait for the other to start.
barrier = threading.Barrier(2, timeout=5)


@task
def meet(name: str) -> str:
    barrier.wait()
    return name


@entrypoint()
def parallel(names: list) -> list:
    futures = [meet(n) for n in names]
    return [f.result() for f in futures]


print(parallel.invoke(["a", "b"]))


@task
async def ahello(name: str) -> str:
    await asyncio.sleep(0.01)
    return f"hello {name}"


@entrypoint(checkpointer=InMemorySaver())
async def agreet(names: list) -> list:
    results = await asyncio.gather(*[ahello(n) for n in names])
    return list(results)


async def main():
    config = {"configurable": {"thread_id": "async"}}
    print(await agreet.ainvoke(["x", "y"], config))
    async for chunk in agreet.astream(["z"], {"configurable": {"thread_id": "async2"}}):
        print("astream", chunk)
    state = await agreet.aget_state(config)
    print("state", state.values, state.next)


asyncio.run(main())


@entrypoint(checkpointer=InMemorySaver())
def echo(value):
    return value


config = {"configurable": {"thread_id": "echo"}}
print(echo.invoke({"a": 1}, config))
state = echo.get_state(config)
print("state", state.values, state.next, state.metadata["source"])


@entrypoint()
def failing(x):
    return boom(x).result()


@task
def boom(x):
    raise ValueError(f"boom {x}")


try:
    failing.invoke(1)
except ValueError as error:
    print("error", error)
