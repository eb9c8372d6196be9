"""LangGraph's functional API: `@entrypoint` and `@task`.

An entrypoint is a one-node `StateGraph` run by agent-core like any other: its node calls the
function with the run's input (and `previous`, the value the thread's last run saved), and its
state is three private keys (`_INPUT`, `_OUTPUT`, `_PREVIOUS`: LangGraph's `__start__`,
`__end__` and `__previous__` channels), which `_Entrypoint` translates back into what LangGraph
shows (the return value, `{name: value}` updates).

A task call inside the entrypoint is a future: a sync task runs on a thread (so tasks run in
parallel), an async one is an asyncio task on the run's loop. Its result is recorded in the
entrypoint task's journal (agent-core's `NodeContext::record`) in call order; when the
entrypoint pauses on `interrupt()`, agent-core keeps the journal with the pause, and the
resumed run's task calls find their results there instead of running again (LangGraph replays
a `PUSH` task's checkpointed writes the same way). A task's result streams in `updates` as
`{task_name: result}`, carried through the `custom` stream to keep its place among the run's
other parts.
"""

from __future__ import annotations

import asyncio
import base64
import concurrent.futures
import contextvars
import functools
import inspect
import time
from collections.abc import Sequence
from typing import Any, Callable, Generic, Optional, TypeVar, get_args, get_origin

from agentgraph.constants import END, START

__all__ = ("task", "entrypoint")

_INPUT, _OUTPUT, _PREVIOUS = "__ep_input__", "__ep_output__", "__ep_previous__"
# A journal entry's key (anything else in a slot is a resume answer: run the task again).
_RESULT = "__agentgraph_task__"

R = TypeVar("R")
S = TypeVar("S")


class _TaskUpdate:
    """A task's result on its way to the `updates` stream (through `custom`)."""

    __slots__ = ("name", "value")

    def __init__(self, name: str, value: Any) -> None:
        self.name = name
        self.value = value


class _TaskEvent:
    """A task's start or result on its way to the `tasks` stream (through `custom`):
    LangGraph's payload without its `id`, which the stream adds."""

    __slots__ = ("id", "payload")

    def __init__(self, id: str, payload: dict) -> None:
        self.id = id
        self.payload = payload


class _Future(concurrent.futures.Future):
    """A sync task's future: `.result()` blocks; awaitable in an async entrypoint too."""

    def __await__(self):
        return (yield from asyncio.wrap_future(self).__await__())


def _settle(future: _Future, call: Callable[[], Any]) -> None:
    if not future.set_running_or_notify_cancel():
        return
    try:
        future.set_result(call())
    except BaseException as error:  # the caller gets it from `.result()`
        future.set_exception(error)


def _running_loop() -> Optional[asyncio.AbstractEventLoop]:
    try:
        return asyncio.get_running_loop()
    except RuntimeError:
        return None


class _Calls:
    """The futures an entrypoint's call started (waited for before it returns or pauses, so
    every finished result is in the journal)."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.futures: list = []
        self.pool: Optional[concurrent.futures.ThreadPoolExecutor] = None
        # Task calls so far (LangGraph's call counter: a task's `langgraph_path`).
        self.count = 0

    def executor(self) -> concurrent.futures.ThreadPoolExecutor:
        if self.pool is None:
            self.pool = concurrent.futures.ThreadPoolExecutor(thread_name_prefix="agentgraph-task")
        return self.pool

    def wait_sync(self) -> None:
        for future in list(self.futures):
            if isinstance(future, concurrent.futures.Future):
                concurrent.futures.wait([future])
        if self.pool is not None:
            self.pool.shutdown(wait=True)

    async def wait_async(self) -> None:
        pending = [f for f in self.futures if isinstance(f, asyncio.Future)]
        if pending:
            await asyncio.wait(pending)
        others = [f for f in self.futures if isinstance(f, concurrent.futures.Future)]
        if others:
            await asyncio.get_running_loop().run_in_executor(None, concurrent.futures.wait, others)
        if self.pool is not None:
            self.pool.shutdown(wait=False)


_calls: contextvars.ContextVar = contextvars.ContextVar("agentgraph_entrypoint_calls")


def _encode(value: Any) -> dict:
    from agentgraph.checkpoint import serde

    type_, data = serde._active.dumps_typed(value)
    return {_RESULT: {serde._TAGGED: [type_, base64.b64encode(bytes(data)).decode()]}}


def _retry_policies(retry_policy: Any) -> list:
    if retry_policy is None:
        return []
    if isinstance(retry_policy, Sequence) and not hasattr(retry_policy, "_fields"):
        return list(retry_policy)
    return [retry_policy]


class _TaskFunction(Generic[R]):
    """A `@task` function: calling it inside an entrypoint returns a future of its result."""

    def __init__(self, func: Callable, *, retry_policy: Any = None, cache_policy: Any = None, name: Optional[str] = None) -> None:
        if name is not None:
            if hasattr(func, "__func__"):
                bound = functools.partial(func.__func__, func.__self__)
                bound.__name__ = name  # type: ignore[attr-defined]
                func = bound
            else:
                func.__name__ = name
        self.func = func
        self.name = name or getattr(func, "__name__", type(func).__name__)
        self.retry_policy = _retry_policies(retry_policy)
        self.cache_policy = cache_policy
        self.is_async = inspect.iscoroutinefunction(func) or inspect.iscoroutinefunction(getattr(func, "__call__", None))
        functools.update_wrapper(self, func)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        from agentgraph._runtime import current_task

        task = current_task()
        calls = _calls.get(None)
        if task is None or calls is None:
            raise RuntimeError("Called get_config outside of a runnable context")
        scope = task.scope
        index, calls.count = calls.count, calls.count + 1
        slot, kept = scope.journal_slot()
        if isinstance(kept, dict) and _RESULT in kept and len(kept) == 1:
            return self._done(kept[_RESULT])
        event = None
        if "custom" in scope.modes and "tasks" in (scope.stream_state.modes if scope.stream_state else ()):
            import uuid

            event = str(uuid.uuid4())
            scope.emit(_TaskEvent(event, {"name": self.name, "input": (args, kwargs), "triggers": ("__pregel_push",)}))
        context = contextvars.copy_context()
        context.run(_task_config, task, self.name, calls.name, index)
        kwargs = dict(kwargs)
        if event is not None:
            kwargs[_EVENT] = event
        if self.is_async and _running_loop() is not None:
            # Created inside the task's context: the asyncio task runs in a copy of it.
            future: Any = context.run(asyncio.ensure_future, self._arun(scope, slot, args, kwargs))
        else:
            # A sync task on a thread (an async one called from a sync entrypoint runs to
            # completion there with `asyncio.run`).
            future = _Future()
            if self.is_async:
                call = functools.partial(asyncio.run, self._arun(scope, slot, args, kwargs))
            else:
                call = functools.partial(self._run, scope, slot, args, kwargs)
            calls.executor().submit(context.run, _settle, future, call)
        calls.futures.append(future)
        return future

    def _done(self, value: Any) -> Any:
        if self.is_async and _running_loop() is not None:
            future = asyncio.get_running_loop().create_future()
        else:
            future = _Future()
        future.set_result(value)
        return future

    def _finish(self, scope: Any, slot: int, value: Any, event: Optional[str]) -> Any:
        scope.record(slot, _encode(value))
        if "custom" in scope.modes:
            scope.emit(_TaskUpdate(self.name, value))
            if event is not None:
                result = {"name": self.name, "error": None, "result": {"__return__": value}, "interrupts": []}
                scope.emit(_TaskEvent(event, result))
        return value

    def _wait(self, error: Exception, failures: int) -> Optional[float]:
        from agentgraph.graph._policies import _wait

        return _wait(self.retry_policy, error, failures) if self.retry_policy else None

    def _run(self, scope: Any, slot: int, args: tuple, kwargs: dict) -> Any:
        event = kwargs.pop(_EVENT, None)
        failures = 0
        while True:
            try:
                return self._finish(scope, slot, self._cached(args, kwargs, lambda: self.func(*args, **kwargs)), event)
            except Exception as error:
                failures += 1
                wait = self._wait(error, failures)
                if wait is None:
                    raise
                time.sleep(wait)

    async def _arun(self, scope: Any, slot: int, args: tuple, kwargs: dict) -> Any:
        event = kwargs.pop(_EVENT, None)
        failures = 0
        while True:
            try:
                key = self._key(args, kwargs)
                if key is not None:
                    hit, value = _task_cache.get().get(self.name, key)
                    if hit:
                        return self._finish(scope, slot, value, event)
                value = await self.func(*args, **kwargs)
                if key is not None:
                    _task_cache.get().set(self.name, key, value, self.cache_policy.ttl)
                return self._finish(scope, slot, value, event)
            except Exception as error:
                failures += 1
                wait = self._wait(error, failures)
                if wait is None:
                    raise
                await asyncio.sleep(wait)

    def _key(self, args: tuple, kwargs: dict) -> Any:
        """The cache key of a call, or `None` when the call is not cached."""
        if self.cache_policy is None or _task_cache.get(None) is None:
            return None
        return self.cache_policy.key_func(*args, **kwargs)

    def _cached(self, args: tuple, kwargs: dict, call: Callable[[], Any]) -> Any:
        key = self._key(args, kwargs)
        if key is None:
            return call()
        cache = _task_cache.get()
        hit, value = cache.get(self.name, key)
        if hit:
            return value
        value = call()
        cache.set(self.name, key, value, self.cache_policy.ttl)
        return value

    def clear_cache(self, cache: Any) -> None:
        """Drops this task's cached results."""
        if self.cache_policy is not None:
            cache.clear([self.name])

    async def aclear_cache(self, cache: Any) -> None:
        self.clear_cache(cache)


_task_cache: contextvars.ContextVar = contextvars.ContextVar("agentgraph_task_cache")
# The keyword a call's `tasks` event id travels under to the task's runner.
_EVENT = "__agentgraph_task_event__"


def _task_config(task: Any, name: str, entry: str, index: int) -> None:
    """In a task's context: LangChain's config variable set to the task's config (what a
    chat model called there reports in `messages`: LangGraph's metadata of a pushed task)."""
    from agentgraph._runtime import _lc_config

    var = _lc_config()
    if var is None or var.get(None) is None:
        return
    config = var.get()
    metadata = dict(config.get("metadata") or {})
    metadata.update(
        langgraph_node=name,
        langgraph_triggers=("__pregel_push",),
        langgraph_path=("__pregel_push", ("__pregel_pull", entry), index, True),
    )
    var.set({**config, "metadata": metadata})


def task(
    __func_or_none__: Optional[Callable] = None,
    *,
    name: Optional[str] = None,
    retry_policy: Any = None,
    cache_policy: Any = None,
    **kwargs: Any,
) -> Any:
    """Makes a function a task: called inside an entrypoint, it returns a future."""
    if retry_policy is None:
        retry_policy = kwargs.get("retry")

    def decorator(func: Callable) -> _TaskFunction:
        return _TaskFunction(func, retry_policy=retry_policy, cache_policy=cache_policy, name=name)

    if __func_or_none__ is not None:
        return decorator(__func_or_none__)
    return decorator


def _injected(func: Callable) -> tuple[bool, tuple[str, ...]]:
    """Whether the function takes `previous`, and the other names it asks to be injected."""
    params = inspect.signature(func).parameters
    names = tuple(n for n in ("config", "writer", "store", "runtime") if n in params)
    return "previous" in params, names


class entrypoint(Generic[R]):
    """Makes a function a graph (LangGraph's `@entrypoint(checkpointer=..., store=...)`)."""

    def __init__(
        self,
        checkpointer: Any = None,
        store: Any = None,
        cache: Any = None,
        context_schema: Optional[type] = None,
        cache_policy: Any = None,
        retry_policy: Any = None,
        **kwargs: Any,
    ) -> None:
        if context_schema is None:
            context_schema = kwargs.get("config_schema")
        if retry_policy is None:
            retry_policy = kwargs.get("retry")
        self.checkpointer = checkpointer
        self.store = store
        self.cache = cache
        self.context_schema = context_schema
        self.cache_policy = cache_policy
        self.retry_policy = retry_policy

    class final(Generic[R, S]):
        """What the entrypoint returns (`value`) and what the thread saves for the next run's
        `previous` (`save`)."""

        __slots__ = ("value", "save")
        __match_args__ = ("value", "save")

        def __init__(self, value: Any, save: Any) -> None:
            self.value = value
            self.save = save

        def __repr__(self) -> str:
            return f"entrypoint.final(value={self.value!r}, save={self.save!r})"

        def __eq__(self, other: Any) -> bool:
            return isinstance(other, entrypoint.final) and (self.value, self.save) == (other.value, other.save)

    def __call__(self, func: Callable) -> "_Entrypoint":
        if inspect.isgeneratorfunction(func) or inspect.isasyncgenfunction(func):
            raise NotImplementedError("Generators are not supported in the Functional API.")
        if not inspect.signature(func).parameters:
            raise ValueError("Entrypoint function must have at least one parameter")
        from typing import TypedDict

        from agentgraph.graph.state import StateGraph

        schema = TypedDict("EntrypointState", {_INPUT: Any, _OUTPUT: Any, _PREVIOUS: Any})
        builder = StateGraph(schema, context_schema=self.context_schema)
        name = func.__name__
        builder.add_node(name, _node(func, self.cache), retry_policy=self.retry_policy, cache_policy=self.cache_policy)
        builder.add_edge(START, name)
        builder.add_edge(name, END)
        compiled = builder.compile(checkpointer=self.checkpointer, store=self.store, cache=self.cache)
        return _Entrypoint(compiled, name, func)


def _node(func: Callable, cache: Any) -> Callable:
    """The entrypoint's node: the function on the run's input and `previous`, its result
    (`entrypoint.final` split) as the state's output and saved value."""
    wants_previous, names = _injected(func)
    is_async = inspect.iscoroutinefunction(func)
    name = func.__name__

    def prepare(state: dict, injected: dict) -> tuple[dict, contextvars.Token, contextvars.Token]:
        kwargs = {k: v for k, v in injected.items() if k in names}
        if wants_previous:
            kwargs["previous"] = state.get(_PREVIOUS)
        return kwargs, _calls.set(_Calls(name)), _task_cache.set(cache)

    def update(value: Any) -> dict:
        if isinstance(value, entrypoint.final):
            return {_OUTPUT: value.value, _PREVIOUS: value.save}
        return {_OUTPUT: value, _PREVIOUS: value}

    if is_async:

        async def run(state: dict, config: Any = None, writer: Any = None, store: Any = None, runtime: Any = None) -> dict:
            kwargs, token, cache_token = prepare(state, {"config": config, "writer": writer, "store": store, "runtime": runtime})
            calls = _calls.get()
            try:
                value = await func(state.get(_INPUT), **kwargs)
            finally:
                await calls.wait_async()
                _calls.reset(token)
                _task_cache.reset(cache_token)
            return update(value)

    else:

        def run(state: dict, config: Any = None, writer: Any = None, store: Any = None, runtime: Any = None) -> dict:
            kwargs, token, cache_token = prepare(state, {"config": config, "writer": writer, "store": store, "runtime": runtime})
            calls = _calls.get()
            try:
                value = func(state.get(_INPUT), **kwargs)
            finally:
                calls.wait_sync()
                _calls.reset(token)
                _task_cache.reset(cache_token)
            return update(value)

    functools.update_wrapper(run, func)
    run.__signature__ = inspect.Signature(  # type: ignore[attr-defined]
        [inspect.Parameter("state", inspect.Parameter.POSITIONAL_OR_KEYWORD)]
        + [
            inspect.Parameter(n, inspect.Parameter.KEYWORD_ONLY, default=None)
            for n in names
        ]
    )
    run.__annotations__ = {}
    return run


from agentgraph.func._graph import _Entrypoint  # noqa: E402  (the graph type, below the decorator)
