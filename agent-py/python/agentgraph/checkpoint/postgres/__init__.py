"""`PostgresSaver`: agent-core's PostgreSQL saver under LangGraph's name
(`langgraph-checkpoint-postgres`).

agent-core keeps its own connection pool, so the saver takes a connection URL (a psycopg
connection is not used). Values are stored in LangGraph's serializer format; the tables are
agent-core's (migrated on connecting, so `setup()` has nothing left to do).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, Optional

from agentgraph._native import NativeSaver
from agentgraph.checkpoint._native_saver import NativeCheckpointer


def _url(conn: Any) -> str:
    if isinstance(conn, str):
        return conn
    # A psycopg connection: its connection string.
    info = getattr(conn, "info", None)
    if info is not None and hasattr(info, "dsn"):
        raise TypeError(
            "agentgraph's PostgresSaver keeps its own pool: pass the connection URL "
            "(PostgresSaver.from_conn_string(url)), not a psycopg connection"
        )
    raise TypeError(f"PostgresSaver takes a connection URL, not {conn!r}")


class PostgresSaver(NativeCheckpointer):
    """Checkpoints in PostgreSQL, shared by many processes and machines."""

    def __init__(self, conn: Any, *, serde: Optional[Any] = None) -> None:
        super().__init__(NativeSaver.postgres(_url(conn)), serde)
        self.conn = conn

    @classmethod
    @contextmanager
    def from_conn_string(cls, conn_string: str, **_: Any) -> Iterator["PostgresSaver"]:
        """A saver for a connection URL, as LangGraph's context manager."""
        yield cls(conn_string)


__all__ = ["PostgresSaver"]
