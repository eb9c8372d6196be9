"""`InMemorySaver`: agent-core's in-memory saver (LangGraph's `MemorySaver` too)."""

from agentgraph._native import NativeSaver


class InMemorySaver:
    """Keeps every thread's checkpoints in this process's memory."""

    def __init__(self) -> None:
        self._native = NativeSaver.memory()


MemorySaver = InMemorySaver

__all__ = ["InMemorySaver", "MemorySaver"]
