"""What a node cache stores: a node's result by (namespace, key), with an expiry."""

from __future__ import annotations

from typing import Any, Optional, Sequence


class BaseCache:
    """A store of cached node results (LangGraph's `BaseCache`), keyed by namespace (the
    node) and key (what the policy's `key_func` made of the node's input)."""

    def get(self, ns: str, key: Any) -> tuple[bool, Any]:
        """`(True, value)` for a live entry, `(False, None)` otherwise."""
        raise NotImplementedError

    def set(self, ns: str, key: Any, value: Any, ttl: Optional[float]) -> None:
        """Stores `value`, expiring `ttl` seconds from now (never when `None`)."""
        raise NotImplementedError

    def clear(self, namespaces: Optional[Sequence[str]] = None) -> None:
        """Drops the entries of these nodes (all of them when `None`)."""
        raise NotImplementedError

    async def aclear(self, namespaces: Optional[Sequence[str]] = None) -> None:
        self.clear(namespaces)
