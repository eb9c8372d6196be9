"""`PostgresStore` (see `agentgraph.store.postgres`)."""

from __future__ import annotations

from typing import Any

from agentgraph import _native
from agentgraph.checkpoint.postgres import _url
from agentgraph.store._native_store import SqlBackedStore


class PostgresStore(SqlBackedStore):
    """Items in PostgreSQL, shared by many processes and machines (`from_conn_string` takes a
    connection URL; LangGraph's `pipeline` and `pool_config` are not taken: agent-core keeps
    its own pool)."""

    @classmethod
    def _open(cls, conn: Any, args: dict, options: dict) -> Any:
        return _native.NativeStore.postgres(_url(conn), **args)


__all__ = ["PostgresStore"]
