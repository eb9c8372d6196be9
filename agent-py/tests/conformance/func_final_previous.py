"""Functional API: `previous` (the last run's saved value on the thread) and
`entrypoint.final(value=..., save=...)`."""

from typing import Optional

from langgraph.checkpoint.memory import InMemorySaver
from langgraph.func import entrypoint


@entrypoint(checkpointer=InMemorySaver())
def counter(n: int, *, previous: Optional[int] = None) -> entrypoint.final[int, int]:
    total = (previous or 0) + n
    return entrypoint.final(value=previous, save=total)


config = {"configurable": {"thread_id": "1"}}
for n in [1, 2, 3]:
    print(counter.invoke(n, config))
print("state", counter.get_state(config).values)
for chunk in counter.stream(10, config, stream_mode=["updates", "values"]):
    print("chunk", chunk)


@entrypoint(checkpointer=InMemorySaver())
def history(item: str, previous: Optional[list] = None) -> list:
    return (previous or []) + [item]


config = {"configurable": {"thread_id": "h"}}
for item in "abc":
    print(history.invoke(item, config))
print(history.invoke("x", {"configurable": {"thread_id": "other"}}))
