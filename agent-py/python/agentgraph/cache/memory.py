"""`InMemoryCache`: node results cached in this process (LangGraph's
`langgraph.cache.memory.InMemoryCache`).

Entries are deep copies of what the node returned, handed out as fresh copies, so a caller
mutating a result cannot change the cache (LangGraph's cache serializes for the same reason).
"""

from __future__ import annotations

import copy
import threading
import time
from typing import Any, Optional, Sequence

from agentgraph.cache.base import BaseCache


class InMemoryCache(BaseCache):
    def __init__(self, *, serde: Any = None) -> None:
        self._entries: dict[tuple[str, Any], tuple[Any, Optional[float]]] = {}
        self._lock = threading.Lock()

    def get(self, ns: str, key: Any) -> tuple[bool, Any]:
        with self._lock:
            entry = self._entries.get((ns, key))
            if entry is None:
                return False, None
            value, expiry = entry
            if expiry is not None and expiry <= time.time():
                del self._entries[(ns, key)]
                return False, None
        return True, copy.deepcopy(value)

    def set(self, ns: str, key: Any, value: Any, ttl: Optional[float]) -> None:
        expiry = time.time() + ttl if ttl is not None else None
        with self._lock:
            self._entries[(ns, key)] = (copy.deepcopy(value), expiry)

    def clear(self, namespaces: Optional[Sequence[str]] = None) -> None:
        with self._lock:
            if namespaces is None:
                self._entries.clear()
            else:
                drop = set(namespaces)
                for entry in [k for k in self._entries if k[0] in drop]:
                    del self._entries[entry]
