"""`install()`: `import langgraph...` gives agentgraph's modules, so a LangGraph program runs
unchanged on agentgraph.

A meta-path finder in front of every other: `langgraph.X` imports `agentgraph.X` and is that
very module object (`langgraph.graph.StateGraph is agentgraph.graph.StateGraph`). A LangGraph
module agentgraph does not have yet is a `ModuleNotFoundError` that says so, never a silent
mix of the two packages.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import importlib.util
import sys
from types import ModuleType
from typing import Optional

_PREFIX = "langgraph"


def _target(fullname: str) -> Optional[str]:
    if fullname == _PREFIX or fullname.startswith(_PREFIX + "."):
        return "agentgraph" + fullname[len(_PREFIX):]
    return None


class _Finder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    def find_spec(self, fullname, path, target=None):  # noqa: ARG002 (the finder protocol)
        name = _target(fullname)
        if name is None:
            return None
        if importlib.util.find_spec(name) is None:
            raise ModuleNotFoundError(
                f"`{fullname}` has no agentgraph counterpart yet (agentgraph.compat is installed)",
                name=fullname,
            )
        return importlib.machinery.ModuleSpec(fullname, self, is_package=True)

    def create_module(self, spec) -> ModuleType:
        return importlib.import_module(_target(spec.name))

    def exec_module(self, module: ModuleType) -> None:
        pass


_FINDER = _Finder()


def install() -> None:
    """Makes `langgraph` and its submodules resolve to agentgraph's, from now on."""
    for name in [n for n in sys.modules if _target(n) is not None]:
        del sys.modules[name]
    if _FINDER not in sys.meta_path:
        sys.meta_path.insert(0, _FINDER)


def uninstall() -> None:
    """Undoes `install()`: `langgraph` is LangGraph again for imports after this."""
    if _FINDER in sys.meta_path:
        sys.meta_path.remove(_FINDER)
    for name in [n for n in sys.modules if _target(n) is not None]:
        del sys.modules[name]
