"""pytest plugin for running LangGraph's own test suite (the `tests/` directory of the
langgraph 1.2.22 sdist, never copied here) on agentgraph: `langgraph` is routed to agentgraph
(`agentgraph.compat.install()`) before any test module imports it.

The suite's `conftest.py` imports service clients and backends at module level (Redis,
Postgres through psycopg) although, with `NO_DOCKER=true`, it never instantiates them. They
are not installed here, so this plugin puts inert stand-ins in `sys.modules`: importing works,
constructing one raises. Nothing else is changed: every test runs LangGraph's code as shipped
against agentgraph's public API.

With `AG_LANGGRAPH_BASELINE=1` the compat layer is not installed (the same suite on LangGraph
itself, to refresh `langgraph_public.txt`). With `AG_LANGGRAPH_RESULTS=<file>` each test's
outcome is written there as `<nodeid>\t<passed|failed|skipped>`, for `tests/pytest.rs`.
"""

from __future__ import annotations

import os
import sys
import types

if os.environ.get("AG_LANGGRAPH_BASELINE") != "1":
    import agentgraph.compat

    agentgraph.compat.install()


def _service(name: str) -> type:
    def refuse(self, *args, **kwargs):
        raise RuntimeError(f"{name} needs a service this run does not start")

    return type(name, (), {"__init__": refuse})


def _module(name: str, *classes: str) -> None:
    if name in sys.modules:
        return
    module = types.ModuleType(name)
    module.__path__ = []  # a package, so submodules can be stood in too
    for cls in classes:
        setattr(module, cls, _service(cls))
    sys.modules[name] = module


_module("redis", "Redis")
_module("psycopg", "Connection", "AsyncConnection")
_module("psycopg_pool", "ConnectionPool", "AsyncConnectionPool")
_module("langgraph.cache.redis", "RedisCache")
if os.environ.get("AG_LANGGRAPH_BASELINE") != "1":
    import importlib.util

    # agentgraph has no SQLite cache yet; tests parametrised `cache=sqlite` fail at setup.
    if importlib.util.find_spec("agentgraph.cache.sqlite") is None:
        _module("langgraph.cache.sqlite", "SqliteCache")
_module("langgraph.checkpoint.postgres", "PostgresSaver")
_module("langgraph.checkpoint.postgres.aio", "AsyncPostgresSaver")
_module("langgraph.store.postgres", "PostgresStore", "AsyncPostgresStore")
_module("langgraph.store.postgres.aio", "AsyncPostgresStore")

_results = os.environ.get("AG_LANGGRAPH_RESULTS")
_outcomes: dict = {}


def pytest_runtest_logreport(report) -> None:
    # A test passed when its call passed and neither setup nor teardown failed.
    if report.failed:
        _outcomes[report.nodeid] = "failed"
    elif report.skipped:
        _outcomes.setdefault(report.nodeid, "skipped")
    elif report.when == "call":
        _outcomes.setdefault(report.nodeid, "passed")


def pytest_sessionfinish(session, exitstatus) -> None:
    if _results:
        with open(_results, "w") as out:
            for nodeid, outcome in _outcomes.items():
                out.write(f"{nodeid}\t{outcome}\n")
