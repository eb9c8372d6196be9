"""`AsyncPostgresSaver`: the PostgreSQL saver for asyncio programs (the same agent-core saver:
its I/O runs on agent-core's threads, never on the event loop)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from agentgraph.checkpoint.postgres import PostgresSaver


class AsyncPostgresSaver(PostgresSaver):
    """Checkpoints in PostgreSQL, for `ainvoke`/`astream`."""

    @classmethod
    @asynccontextmanager
    async def from_conn_string(cls, conn_string: str, **_: Any) -> AsyncIterator["AsyncPostgresSaver"]:
        yield cls(conn_string)


__all__ = ["AsyncPostgresSaver"]
