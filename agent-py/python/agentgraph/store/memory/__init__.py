"""LangGraph's `langgraph.store.memory.InMemoryStore`, kept by agent-core's `InMemoryStore`.

agent-core's store holds each value as JSON: it filters, ranks (cosine similarity, with
`index={"dims": ..., "embed": ..., "fields": [...]}`; `embed` is a function, sync or async,
from texts to vectors or a LangChain `Embeddings`, whose `embed_documents` embeds values and
queries), expires (`ttl={"default_ttl": minutes, "refresh_on_read": bool}`, an agentgraph
addition: LangGraph's in-memory store has no TTL) and lists namespaces. Reads give back the
dict that was put (a shallow copy kept beside, by namespace and key), as LangGraph's store
does: its objects and key order survive, which a JSON round trip would lose. A value need not
be JSON: what JSON cannot hold reaches agent-core as its `repr` (filters compare that), and
reads give back the object.

The Python side keeps LangGraph's order too (namespaces in the order first put to, keys in
the order first put within one): a search without a query lists items in it; a search by
meaning ranks by score, ties in it, and the items without vectors follow in it. agent-core
answers every match and the Python side orders and pages them (a linear pass, as
LangGraph's own search). As LangGraph's: a batch's reads see the store before the batch's
puts; an item's `created_at` is the time of its last put; without an index a search's
`query` and a put's `index` are ignored; a namespace whose items were all deleted is still
listed.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Optional

from agentgraph import _native
from agentgraph.store._native_store import ALL, NativeBackedStore, native_args
from agentgraph.store.base import IndexConfig, ListNamespacesOp, SearchItem, SearchOp, TTLConfig


class InMemoryStore(NativeBackedStore):
    """Items in this process's memory, shared by every thread of the graphs given it."""

    def __init__(self, *, index: Optional[IndexConfig] = None, ttl: Optional[TTLConfig] = None) -> None:
        super().__init__(_native.NativeStore(**native_args(index, ttl)), index=index, ttl=ttl)
        # namespace -> key -> value, in LangGraph's order (a namespace stays when emptied).
        self._values: dict[tuple[str, ...], dict[str, Any]] = {}

    # What JSON cannot hold reaches agent-core as its repr (reads give back the object).
    _json_default = staticmethod(repr)

    def _on_puts(self, puts: dict) -> None:
        for (namespace, key), op in puts.items():
            if op.value is None:
                self._values.get(namespace, {}).pop(key, None)
            else:
                self._values.setdefault(namespace, {})[key] = dict(op.value)

    def _value(self, out: dict) -> Any:
        return self._values.get(tuple(out["namespace"]), {}).get(out["key"], out["value"])

    def _times(self, out: dict) -> tuple[datetime, datetime]:
        # `created_at` is the last put's time, as LangGraph's store (a put makes a new item).
        _, updated = super()._times(out)
        return updated, updated

    def _search_json(self, op: SearchOp, indexed: bool) -> dict:
        return {**super()._search_json(op, indexed), "limit": ALL, "offset": 0}

    def _search_page(self, op: SearchOp, hits: list[SearchItem]) -> list[SearchItem]:
        """One page of every match, in LangGraph's order (see the module's docs)."""
        position = {
            (namespace, key): i
            for i, (namespace, key) in enumerate((n, k) for n, keys in self._values.items() for k in keys)
        }
        hits.sort(key=lambda h: position.get((h.namespace, h.key), len(position)))
        end = op.offset + op.limit
        if not (op.query and self.index_config):
            return hits[op.offset : end]
        scored = sorted((h for h in hits if h.score is not None), key=lambda h: -h.score)[op.offset : end]
        scoreless = [h for h in hits if h.score is None]
        if len(scored) < op.limit:
            scored.extend(scoreless[: op.limit - len(scored)])
        return scored

    def _list_json(self, op: ListNamespacesOp) -> dict:
        return {**super()._list_json(op), "max_depth": None, "limit": ALL, "offset": 0}

    def _list_result(self, op: ListNamespacesOp, out: list) -> list:
        # agent-core lists the namespaces holding items; LangGraph's store also lists those
        # whose items were all deleted. Depth and page as LangGraph's.
        namespaces = {tuple(ns) for ns in out}
        namespaces.update(
            ns
            for ns, keys in self._values.items()
            if not keys and all(_matches(c, ns) for c in (op.match_conditions or ()))
        )
        if op.max_depth is not None:
            namespaces = {ns[: op.max_depth] for ns in namespaces}
        return sorted(namespaces)[op.offset : op.offset + op.limit]


def _matches(condition: Any, namespace: tuple[str, ...]) -> bool:
    path = tuple(condition.path)
    if len(path) > len(namespace):
        return False
    part = namespace[: len(path)] if condition.match_type == "prefix" else namespace[len(namespace) - len(path) :]
    return all(p == "*" or p == n for p, n in zip(path, part))


__all__ = ["InMemoryStore"]
