"""`AsyncSqliteSaver`: the SQLite saver for asyncio programs (agent-core's saver is one for
both: its I/O runs on agent-core's own threads, never on the event loop)."""

from __future__ import annotations

import functools
import inspect
import os
import threading
import warnings
import weakref
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any, Optional

from agentgraph._native import NativeSaver
from agentgraph.checkpoint._native_saver import NativeCheckpointer
from agentgraph.checkpoint.sqlite import _main_file, _path


def _aiosqlite_database(conn: Any) -> str:
    """The database file of an `aiosqlite.Connection` ("" in memory).

    An open connection is asked itself (`PRAGMA database_list` on its own worker thread:
    its sqlite3 connection may only be used there); one not awaited yet is read from the path
    its connector was made with. Anything else is an error, never a file named after it.
    """
    tx, connection = getattr(conn, "_tx", None), getattr(conn, "_connection", None)
    if tx is not None and connection is not None:
        done, answer = threading.Event(), {}

        def ask() -> None:
            try:
                answer["rows"] = connection.execute("PRAGMA database_list").fetchall()
            except BaseException as error:  # handed back to the caller
                answer["error"] = error
            finally:
                done.set()

        tx.put_nowait((None, ask))
        done.wait()
        if "error" in answer:
            raise answer["error"]
        return _main_file(answer["rows"])
    connector = getattr(conn, "_connector", None)
    if isinstance(connector, functools.partial) and connector.args:  # aiosqlite < 0.20
        return os.fspath(connector.args[0])
    if callable(connector):  # aiosqlite >= 0.20: a closure over `database`
        database = inspect.getclosurevars(connector).nonlocals.get("database")
        if isinstance(database, (str, bytes, os.PathLike)):
            return database.decode() if isinstance(database, bytes) else os.fspath(database)
    raise TypeError(f"expected a path or an aiosqlite.Connection, got {conn!r}")


# Connections handed to a saver, stopped when the interpreter exits (see `_stop_at_exit`).
_HANDED: "weakref.WeakSet" = weakref.WeakSet()
_REGISTERED = False


def _stop_at_exit(conn: Any) -> None:
    """Stops `conn`'s worker thread when the interpreter exits, if the program has not.

    Why: aiosqlite's worker is a non-daemon thread that stops when its connection is closed
    or collected. A program that dies on a run's exception leaves the connection in a
    reference cycle (the traceback's frames hold it), which is collected only after Python
    has waited for every non-daemon thread: the process never exits (LangGraph's too). agentgraph's
    saver reads and writes through agent-core, never through this connection, so stopping it
    at exit loses nothing: its worker finishes what was queued, closes, and ends. Run before
    the threads are joined (`threading._register_atexit`, as `concurrent.futures` does).
    """
    if not callable(getattr(conn, "stop", None)):
        return
    global _REGISTERED
    if not _REGISTERED:
        register = getattr(threading, "_register_atexit", None)
        if register is None:
            return
        try:
            register(_stop_handed)
        except RuntimeError:  # the interpreter is already exiting
            return
        _REGISTERED = True
    _HANDED.add(conn)


def _stop_handed() -> None:
    for conn in list(_HANDED):
        if getattr(conn, "_running", False) and getattr(conn, "_connection", None) is not None:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                conn.stop()


class AsyncSqliteSaver(NativeCheckpointer):
    """Checkpoints in a SQLite file, for `ainvoke`/`astream`."""

    def __init__(self, conn: Any, *, serde: Optional[Any] = None) -> None:
        target = conn if isinstance(conn, (str, bytes, os.PathLike)) else _aiosqlite_database(conn)
        super().__init__(NativeSaver.sqlite(_path(target)), serde)
        self.conn = conn
        if target is not conn:
            _stop_at_exit(conn)

    @classmethod
    @asynccontextmanager
    async def from_conn_string(cls, conn_string: str) -> AsyncIterator["AsyncSqliteSaver"]:
        """A saver on a file path (or `":memory:"`), as LangGraph's async context manager."""
        yield cls(conn_string)


__all__ = ["AsyncSqliteSaver"]
