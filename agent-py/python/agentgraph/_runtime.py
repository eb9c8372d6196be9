"""What the native module calls around a node: the node's scope current (for `interrupt()`,
`get_stream_writer()`, `get_config()`), its config built as LangGraph builds a task's, and
the arguments its signature asks for (`config`, `writer`, `runtime`)."""

from __future__ import annotations

import asyncio
import contextvars
import inspect
from typing import Any, Callable

_scope: contextvars.ContextVar = contextvars.ContextVar("agentgraph_node_scope")
_config: contextvars.ContextVar = contextvars.ContextVar("agentgraph_node_config")

try:  # LangChain's own config variable: a chat model called without a config finds ours.
    from langchain_core.runnables.config import var_child_runnable_config as _lc_config
except ImportError:  # pragma: no cover (langchain-core is a dependency)
    _lc_config = None


class NodeCall:
    """A node's function and what its signature asks to be injected (LangGraph's rule:
    `config` by name; `writer` by name when unannotated or `StreamWriter`; `runtime` by name)."""

    def __init__(self, fn: Callable, triggers: tuple[str, ...] = ()) -> None:
        self.fn = fn
        self.triggers = triggers
        self.inject: tuple[str, ...] = _injected(fn)

    def kwargs(self, scope: Any, config: dict) -> dict:
        out: dict[str, Any] = {}
        for name in self.inject:
            if name == "config":
                out[name] = config
            elif name == "writer":
                out[name] = _writer(scope)
            elif name == "runtime":
                from agentgraph.runtime import Runtime

                out[name] = Runtime(
                    context=config.get("configurable", {}).get("__agentgraph_context__"),
                    store=None,
                    stream_writer=_writer(scope),
                )
        return out


def _injected(fn: Callable) -> tuple[str, ...]:
    try:
        params = inspect.signature(fn).parameters
    except (TypeError, ValueError):
        return ()
    valid = (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)
    names = []
    for name in ("config", "writer", "runtime"):
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


def _enter(scope: Any, config: dict) -> list:
    tokens = [(_scope, _scope.set(scope)), (_config, _config.set(config))]
    if _lc_config is not None:
        tokens.append((_lc_config, _lc_config.set(config)))
    return tokens


def _exit(tokens: list) -> None:
    for var, token in reversed(tokens):
        var.reset(token)


def _prepare(scope: Any, node: Any, state: Any, run_config: dict) -> tuple[Callable, dict, dict, Any]:
    from agentgraph import _stream

    config = _stream.node_config(scope, run_config, getattr(node, "triggers", None))
    if isinstance(node, NodeCall):
        return node.fn, node.kwargs(scope, config), config, scope.stream_state
    return node, {}, config, scope.stream_state


def _after(scope: Any, stream: Any, config: dict, state: Any, out: Any) -> None:
    if stream is not None:
        stream.node_done(scope, config, out)


def call_sync(scope, node, args):
    """Calls a sync node with its scope current (this thread's context, reset after); an
    async function runs to completion with `asyncio.run` (the scope still current)."""
    state, run_config = args
    fn, kwargs, config, stream = _prepare(scope, node, state, run_config)
    tokens = _enter(scope, config)
    try:
        if stream is not None:
            stream.node_start(scope, config, state)
        try:
            out = fn(state, **kwargs)
            if inspect.iscoroutine(out):
                out = asyncio.run(out)
        except BaseException as error:
            if stream is not None:
                stream.node_failed(scope, error)
            raise
        _after(scope, stream, config, state, out)
        return out
    finally:
        _exit(tokens)


async def call_async(scope, node, args):
    """Awaits an async node with its scope current (the task's own context)."""
    state, run_config = args
    fn, kwargs, config, stream = _prepare(scope, node, state, run_config)
    _enter(scope, config)
    if stream is not None:
        stream.node_start(scope, config, state)
    try:
        out = await fn(state, **kwargs)
    except BaseException as error:
        if stream is not None:
            stream.node_failed(scope, error)
        raise
    _after(scope, stream, config, state, out)
    return out


def current():
    """The running node's scope."""
    try:
        return _scope.get()
    except LookupError:
        raise RuntimeError("interrupt() can only be called from inside a graph's node") from None


def current_config():
    """The running node's config, or `None` outside a node."""
    return _config.get(None)
