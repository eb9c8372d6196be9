"""Functional API: a task's `retry_policy` and `cache_policy`, the entrypoint's `store`, `cache`,
`context_schema` (`runtime`), `config` and `previous` injected, `get_state` while paused and
after, `update_state` as the return value."""

from typing import Optional
from dataclasses import dataclass
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.func import entrypoint, task
from langgraph.types import Command, interrupt, RetryPolicy, CachePolicy
from langgraph.store.memory import InMemoryStore
from langgraph.cache.memory import InMemoryCache
from langgraph.runtime import Runtime

attempts = []
@task(retry_policy=RetryPolicy(max_attempts=3, initial_interval=0.01, jitter=False))
def flaky(x):
    attempts.append(x)
    if len(attempts) < 3:
        raise ConnectionError("again")
    return x * 10

cached_runs = []
@task(cache_policy=CachePolicy())
def costly(x):
    cached_runs.append(x)
    return x + 1

@dataclass
class Ctx:
    user: str

@entrypoint(checkpointer=InMemorySaver(), store=InMemoryStore(), cache=InMemoryCache(), context_schema=Ctx)
def main(inp: dict, *, previous: Optional[dict] = None, store=None, runtime: Runtime[Ctx] = None, config=None) -> dict:
    store.put(("ns",), "k", {"v": inp["x"]})
    a = flaky(inp["x"]).result()
    b = costly(1).result(); c = costly(1).result()
    ok = interrupt("go?")
    return {"a": a, "b": b, "c": c, "user": runtime.context.user, "prev": previous, "ok": ok,
            "thread": config["configurable"]["thread_id"], "stored": store.get(("ns",), "k").value}

cfg = {"configurable": {"thread_id": "t"}}
out = main.invoke({"x": 2}, cfg, context=Ctx("bob"))
print(list(out))
s = main.get_state(cfg)
print("paused", s.values, s.next, [(t.name, [i.value for i in t.interrupts]) for t in s.tasks], [i.value for i in s.interrupts])
print(main.invoke(Command(resume=True), cfg, context=Ctx("bob")))
print("attempts", attempts, "cached", cached_runs)
s = main.get_state(cfg)
print("done", s.values, s.next, s.tasks)
cfg2 = main.update_state(cfg, {"set": 1})
print(main.get_state(cfg).values)
print(main.invoke({"x": 3}, cfg, context=Ctx("al"))["__interrupt__"][0].value)
print(main.get_state(cfg).values)
print(type(main).__name__ in ("Pregel", "_Entrypoint"), hasattr(main, "invoke"))
print("fresh", main.get_state({"configurable": {"thread_id": "nothing"}}).values)
