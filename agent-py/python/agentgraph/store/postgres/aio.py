"""`AsyncPostgresStore` (see `agentgraph.store.postgres`): the same store for asyncio
programs, its I/O on agent-core's threads, never on the event loop."""

from __future__ import annotations

from agentgraph.store._native_store import AsyncStoreMixin
from agentgraph.store.postgres.base import PostgresStore


class AsyncPostgresStore(AsyncStoreMixin, PostgresStore):
    """Items in PostgreSQL, for `ainvoke`/`astream` (`aget`, `aput`, `asearch`, ...)."""


__all__ = ["AsyncPostgresStore"]
