"""`SqliteSaver`: agent-core's SQLite saver under LangGraph's name (`langgraph-checkpoint-sqlite`).

agent-core opens the database itself, so a `sqlite3.Connection` handed in is used for its
file name only; values are stored in LangGraph's serializer format
(`agentgraph.checkpoint.serde`). The tables are agent-core's, not LangGraph's: a database
is shared with other agentgraph programs (any language), not with LangGraph's own saver.
"""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, Optional, Union

from agentgraph._native import NativeSaver
from agentgraph.checkpoint._native_saver import NativeCheckpointer


def _main_file(rows: Any) -> str:
    """The file of the `main` database in `PRAGMA database_list` rows ("" in memory)."""
    return next((row[2] for row in rows if row[1] == "main"), "")


def _path(conn: Union[str, "os.PathLike", "sqlite3.Connection"]) -> Optional[str]:
    """The database file of a path or connection; `None` for an in-memory one."""
    if isinstance(conn, sqlite3.Connection):
        conn = _main_file(conn.execute("PRAGMA database_list").fetchall())
    elif isinstance(conn, bytes):
        conn = conn.decode()
    elif not isinstance(conn, (str, os.PathLike)):
        # Never `str()` of an object: that would name a file after its repr.
        raise TypeError(f"expected a path or a sqlite3.Connection, got {conn!r}")
    conn = os.fspath(conn)
    if conn in ("", ":memory:") or conn.startswith("file::memory:"):
        return None
    return conn.removeprefix("file:").split("?", 1)[0]


class SqliteSaver(NativeCheckpointer):
    """Checkpoints in a SQLite file (`":memory:"`: in this process's memory)."""

    def __init__(self, conn: Union[str, "sqlite3.Connection"], *, serde: Optional[Any] = None) -> None:
        super().__init__(NativeSaver.sqlite(_path(conn)), serde)
        self.conn = conn

    @classmethod
    @contextmanager
    def from_conn_string(cls, conn_string: str) -> Iterator["SqliteSaver"]:
        """A saver on a file path (or `":memory:"`), as LangGraph's context manager."""
        yield cls(conn_string)


__all__ = ["SqliteSaver"]
