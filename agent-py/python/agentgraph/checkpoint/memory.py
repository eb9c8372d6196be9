"""`InMemorySaver`: agent-core's in-memory saver (LangGraph's `MemorySaver` too)."""

from __future__ import annotations

from typing import Any, Optional

from agentgraph._native import NativeSaver
from agentgraph.checkpoint._native_saver import NativeCheckpointer


class InMemorySaver(NativeCheckpointer):
    """Keeps every thread's checkpoints in this process's memory."""

    def __init__(self, *, serde: Optional[Any] = None) -> None:
        super().__init__(NativeSaver.memory(), serde)


MemorySaver = InMemorySaver

__all__ = ["InMemorySaver", "MemorySaver"]
