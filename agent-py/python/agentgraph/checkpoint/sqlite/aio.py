"""`AsyncSqliteSaver`: the SQLite saver for asyncio programs (agent-core's saver is one for
both: its I/O runs on agent-core's own threads, never on the event loop)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any, Optional

from agentgraph._native import NativeSaver
from agentgraph.checkpoint._native_saver import NativeCheckpointer


class AsyncSqliteSaver(NativeCheckpointer):
    """Checkpoints in a SQLite file, for `ainvoke`/`astream`."""

    def __init__(self, conn: Any, *, serde: Optional[Any] = None) -> None:
        # An `aiosqlite.Connection` is named by its database (`agentgraph.store.sqlite.base`).
        from agentgraph.store.sqlite.base import database_path

        super().__init__(NativeSaver.sqlite(database_path(conn)), serde)
        self.conn = conn

    @classmethod
    @asynccontextmanager
    async def from_conn_string(cls, conn_string: str) -> AsyncIterator["AsyncSqliteSaver"]:
        """A saver on a file path (or `":memory:"`), as LangGraph's async context manager."""
        yield cls(conn_string)


__all__ = ["AsyncSqliteSaver"]
