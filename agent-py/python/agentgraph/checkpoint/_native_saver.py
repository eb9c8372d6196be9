"""What agentgraph's checkpointers share: an agent-core saver, and the process's serializer."""

from __future__ import annotations

from typing import Any, Optional

from agentgraph.checkpoint import serde as _serde
from agentgraph.checkpoint.base import BaseCheckpointSaver


class NativeCheckpointer(BaseCheckpointSaver):
    """A checkpointer agent-core runs itself (`compile(checkpointer=...)` hands it over).

    `serde` is any `SerializerProtocol` (LangGraph's `JsonPlusSerializer`, an encrypted one,
    ...); agent-core's savers share one per process (see `agentgraph.checkpoint.serde.use`).
    """

    _native: Any

    def __init__(self, native: Any, serde: Optional[Any] = None) -> None:
        _serde.use(serde)
        self._native = native
        self.serde = serde if serde is not None else _serde._active

    def setup(self) -> None:
        """Tables are created when the saver opens; kept for LangGraph's API."""

    async def asetup(self) -> None:
        """Tables are created when the saver opens; kept for LangGraph's API."""

    def delete_thread(self, thread_id: str) -> None:
        """Deletes every checkpoint and write of a thread."""
        self._native.delete_thread(str(thread_id))

    async def adelete_thread(self, thread_id: str) -> None:
        self.delete_thread(thread_id)
