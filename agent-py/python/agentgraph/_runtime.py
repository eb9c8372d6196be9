"""What the native module calls around a node: the node's task current (for `interrupt()`,
`get_stream_writer()`, `get_config()`), its config built as LangGraph builds a task's, and
the arguments its signature asks for (`config`, `writer`, `runtime`, `store`).

This runs for every node call, so it does no more than the call needs: the task's config is
built only when something reads it (the node takes `config`, the stream wants `messages`,
LangChain is loaded and may read its config variable, `get_config()`).
"""

from __future__ import annotations

import asyncio
import contextvars
import inspect
import sys
from typing import Any, Callable, Optional

from agentgraph import _stream

_task: contextvars.ContextVar = contextvars.ContextVar("agentgraph_task")

_LC_CONFIG = "langchain_core.runnables.config"


def _lc_config() -> Optional[contextvars.ContextVar]:
    """LangChain's config variable (a chat model called without a config reads it), when
    LangChain is loaded: a program that never imports it pays nothing."""
    module = sys.modules.get(_LC_CONFIG)
    return getattr(module, "var_child_runnable_config", None) if module is not None else None


class NodeCall:
    """A node's function and what its signature asks to be injected (LangGraph's rule:
    `config` by name; `writer` by name when unannotated or `StreamWriter`; `runtime` and
    `store` by name)."""

    def __init__(self, fn: Callable, triggers: tuple[str, ...] = ()) -> None:
        self.fn = fn
        self.triggers = triggers
        self.inject: tuple[str, ...] = _injected(fn)


class Task:
    """A running node: its scope (native), the run's config, its own config once built."""

    __slots__ = ("scope", "run_config", "triggers", "_config", "pushed")

    def __init__(self, scope: Any, run_config: dict, triggers: Optional[tuple]) -> None:
        self.scope = scope
        self.run_config = run_config
        self.triggers = triggers
        self._config: Optional[dict] = None
        # Writes made during the node (`push_message`), as (key, value): applied before
        # what the node returns.
        self.pushed: list = []

    def config(self) -> dict:
        if self._config is None:
            self._config = _stream.node_config(self.scope, self.run_config, self.triggers)
        return self._config

    def store(self) -> Any:
        """The graph's store (`compile(store=...)`), or `None`."""
        return (self.run_config.get("configurable") or {}).get(_stream.STORE_KEY)

    def kwargs(self, names: tuple[str, ...]) -> dict:
        out: dict[str, Any] = {}
        for name in names:
            if name == "config":
                out[name] = self.config()
            elif name == "writer":
                out[name] = _writer(self.scope)
            elif name == "runtime":
                from agentgraph.runtime import Runtime

                configurable = self.run_config.get("configurable") or {}
                context = configurable.get(_stream.CONTEXT_KEY)
                store = configurable.get(_stream.STORE_KEY)
                out[name] = Runtime(context=context, store=store, stream_writer=_writer(self.scope))
            elif name == "store":
                out[name] = self.store()
        return out


def _injected(fn: Callable) -> tuple[str, ...]:
    try:
        params = inspect.signature(fn).parameters
    except (TypeError, ValueError):
        return ()
    valid = (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)
    names = []
    for name in ("config", "writer", "runtime", "store"):
        param = params.get(name)
        if param is None or param.kind not in valid:
            continue
        if name == "writer" and not _is_writer_annotation(param.annotation):
            continue
        names.append(name)
    return tuple(names)


def _is_writer_annotation(annotation: Any) -> bool:
    from agentgraph.types import StreamWriter

    return annotation is inspect.Parameter.empty or annotation == "StreamWriter" or annotation == StreamWriter


def _writer(scope: Any) -> Callable[[Any], None]:
    if "custom" not in scope.modes:
        return _no_op
    return lambda chunk: scope.emit(chunk)


def _no_op(_chunk: Any) -> None:
    pass


def _start(scope: Any, node: Any, run_config: dict) -> tuple[Task, Any, Callable, dict, list]:
    """The task, the stream's state, the function, its injected arguments; the variables set."""
    fn, names, triggers = (node.fn, node.inject, node.triggers) if isinstance(node, NodeCall) else (node, (), None)
    task = Task(scope, run_config, triggers)
    stream = scope.stream_state
    tokens = [(_task, _task.set(task))]
    lc = _lc_config()
    if lc is not None or (stream is not None and stream.handlers):
        lc = lc or _lc_config_imported()
        tokens.append((lc, lc.set(task.config())))
    return task, stream, fn, task.kwargs(names) if names else {}, tokens


def _lc_config_imported() -> contextvars.ContextVar:
    from langchain_core.runnables.config import var_child_runnable_config

    return var_child_runnable_config


def _exit(tokens: list) -> None:
    for var, token in reversed(tokens):
        var.reset(token)


def call_sync(scope, node, args):
    """Calls a sync node with its task current (this thread's context, reset after); an
    async function runs to completion with `asyncio.run` (the task still current)."""
    state, run_config = args
    task, stream, fn, kwargs, tokens = _start(scope, node, run_config)
    try:
        if stream is not None:
            stream.node_start(task, state)
        try:
            out = fn(state, **kwargs)
            if inspect.iscoroutine(out):
                out = asyncio.run(out)
            out = _with_pushed(task, out)
        except BaseException as error:
            if stream is not None:
                stream.node_failed(task, error)
            raise
        if stream is not None:
            stream.node_done(task, out)
        return out
    finally:
        _exit(tokens)


async def call_async(scope, node, args):
    """Awaits an async node with its task current (the asyncio task's own context)."""
    state, run_config = args
    task, stream, fn, kwargs, _tokens = _start(scope, node, run_config)
    if stream is not None:
        stream.node_start(task, state)
    try:
        out = _with_pushed(task, await fn(state, **kwargs))
    except BaseException as error:
        if stream is not None:
            stream.node_failed(task, error)
        raise
    if stream is not None:
        stream.node_done(task, out)
    return out


def _with_pushed(task: Task, out: Any) -> Any:
    """The node's output with the writes it pushed while running put first (a pushed value
    and a returned one for the same key are both kept, in that order, as a list)."""
    if not task.pushed:
        return out
    command = out if type(out).__name__ == "Command" else None
    update = command.update if command is not None else out
    if update is not None and not isinstance(update, dict):
        raise TypeError(f"a node that pushed writes must return a dict or None, not {type(update).__name__}")
    merged: dict = {}
    for key, value in task.pushed:
        merged.setdefault(key, []).append(value)
    for key, value in (update or {}).items():
        if key in merged:
            merged[key].extend(value if isinstance(value, list) else [value])
        else:
            merged[key] = value
    task.pushed = []
    if command is None:
        return merged
    import dataclasses

    return dataclasses.replace(command, update=merged)


def current_task() -> Optional[Task]:
    """The running node's task, or `None` outside a node."""
    return _task.get(None)


def current_scope():
    """The running node's scope, or `None` outside a node (a graph invoked there is a
    subgraph of the node's task)."""
    task = _task.get(None)
    return None if task is None else task.scope


def current():
    """The running node's scope."""
    task = _task.get(None)
    if task is None:
        raise RuntimeError("interrupt() can only be called from inside a graph's node")
    return task.scope
