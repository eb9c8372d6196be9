"""LangGraph's `langgraph.config`: what a node reads of its run from anywhere in its code."""

from __future__ import annotations

from typing import Any

from agentgraph.types import StreamWriter


def get_config() -> dict:
    """The running node's config (LangGraph's keys: `metadata`, `configurable`, ...)."""
    from agentgraph._runtime import current_task

    task = current_task()
    if task is None:
        raise RuntimeError("Called get_config outside of a runnable context")
    return task.config()


def get_stream_writer() -> StreamWriter:
    """A function that writes to the `custom` stream mode (a no-op when it is not streamed)."""
    from agentgraph._runtime import _writer, current

    try:
        scope = current()
    except RuntimeError:
        raise RuntimeError("Called get_config outside of a runnable context") from None
    return _writer(scope)


def get_store() -> Any:
    raise NotImplementedError("agentgraph has no store yet")
