"""LangGraph's `langgraph.store.memory.InMemoryStore`, kept by agent-core's `InMemoryStore`.

agent-core's store holds each value as JSON: it filters, ranks (cosine similarity, with
`index={"dims": ..., "embed": ..., "fields": [...]}`; `embed` is a function from texts to
vectors or a LangChain `Embeddings`, whose `embed_documents` embeds values and queries) and
lists namespaces. A value must therefore be JSON-serializable. Reads give back the dict that
was put (a shallow copy kept beside, by namespace and key), as LangGraph's store does: its
objects and key order survive, which a JSON round trip would lose.

The Python side keeps LangGraph's order too (namespaces in the order first put to, keys in
the order first put within one): a search without a query lists items in it; a search by
meaning ranks by score, ties in it, and the items without vectors follow in it. agent-core
answers every match and the Python side orders and pages them (a linear pass, as
LangGraph's own search). As LangGraph's: a batch's reads see the store before the batch's
puts; an item's `created_at` is the time of its last put; without an index a search's
`query` and a put's `index` are ignored. Unlike it, a namespace whose items were all deleted
is no longer listed.
"""

from __future__ import annotations

import asyncio
import json
from datetime import datetime, timezone
from typing import Any, Iterable, Optional

from agentgraph import _native
from agentgraph.store.base import (
    BaseStore,
    GetOp,
    IndexConfig,
    Item,
    ListNamespacesOp,
    Op,
    PutOp,
    Result,
    SearchItem,
    SearchOp,
)


class InMemoryStore(BaseStore):
    """Items in this process's memory, shared by every thread of the graphs given it."""

    __slots__ = ("_native", "_values", "index_config")

    def __init__(self, *, index: Optional[IndexConfig] = None) -> None:
        self.index_config = dict(index) if index else None
        # namespace -> key -> value, in LangGraph's order.
        self._values: dict[tuple[str, ...], dict[str, Any]] = {}
        if index:
            embed = _embed_function(index.get("embed"))
            self._native = _native.NativeStore(index.get("dims"), embed, index.get("fields"))
        else:
            self._native = _native.NativeStore()

    def batch(self, ops: Iterable[Op]) -> list[Result]:
        ops = list(ops)
        # Reads first, then the puts (the last of a key's wins), as LangGraph orders a batch.
        reads = [i for i, op in enumerate(ops) if not isinstance(op, PutOp)]
        puts = {(tuple(op.namespace), op.key): op for op in ops if isinstance(op, PutOp)}
        indexed = self.index_config is not None
        sent = [_op_json(ops[i], indexed) for i in reads] + [_op_json(op, indexed) for op in puts.values()]
        raw = json.loads(self._native.batch(json.dumps(sent)))
        results: list[Result] = [None] * len(ops)
        for i, out in zip(reads, raw):
            results[i] = self._result(ops[i], out)
        for (namespace, key), op in puts.items():
            if op.value is None:
                self._values.get(namespace, {}).pop(key, None)
            else:
                self._values.setdefault(namespace, {})[key] = dict(op.value)
        return results

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        # The Rust store blocks only on its lock and the index's `embed`.
        return await asyncio.to_thread(self.batch, list(ops))

    def _value(self, out: dict) -> Any:
        return self._values.get(tuple(out["namespace"]), {}).get(out["key"], out["value"])

    def _ordered(self, op: SearchOp, hits: list[SearchItem]) -> list[SearchItem]:
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

    def _result(self, op: Op, out: Any) -> Result:
        # `created_at` is the last put's time, as LangGraph's store (a put makes a new item).
        if isinstance(op, GetOp):
            if out is None:
                return None
            updated = _time(out["updated_at_ms"])
            return Item(
                value=self._value(out),
                key=out["key"],
                namespace=tuple(out["namespace"]),
                created_at=updated,
                updated_at=updated,
            )
        if isinstance(op, SearchOp):
            hits = []
            for hit in out:
                updated = _time(hit["updated_at_ms"])
                hits.append(
                    SearchItem(
                        namespace=tuple(hit["namespace"]),
                        key=hit["key"],
                        value=self._value(hit),
                        created_at=updated,
                        updated_at=updated,
                        score=hit.get("score"),
                    )
                )
            return self._ordered(op, hits)
        if isinstance(op, ListNamespacesOp):
            return [tuple(ns) for ns in out]
        return None


def _embed_function(embed: Any) -> Any:
    if embed is None:
        raise ValueError("an index needs `embed`: a function from texts to vectors, or an Embeddings")
    if isinstance(embed, str):
        raise NotImplementedError("agentgraph's InMemoryStore takes an embedding function, not a provider name")
    if hasattr(embed, "embed_documents"):
        return lambda texts: embed.embed_documents(list(texts))
    return lambda texts: embed(list(texts))


# A search asks agent-core for every match: the Python side orders and pages them.
_ALL = 2**53


def _op_json(op: Op, indexed: bool) -> dict:
    """The op for the native store; without an index, a query and an index choice are
    dropped (LangGraph ignores them; agent-core would refuse them)."""
    if isinstance(op, GetOp):
        return {"op": "get", "namespace": list(op.namespace), "key": op.key, "refresh_ttl": op.refresh_ttl}
    if isinstance(op, PutOp):
        value = None if op.value is None else dict(op.value)
        return {
            "op": "put",
            "namespace": list(op.namespace),
            "key": op.key,
            "value": value,
            "index": op.index if indexed else None,
            "ttl": op.ttl,
        }
    if isinstance(op, SearchOp):
        return {
            "op": "search",
            "namespace_prefix": list(op.namespace_prefix),
            "filter": op.filter,
            "query": op.query if indexed else None,
            "limit": _ALL,
            "offset": 0,
            "refresh_ttl": op.refresh_ttl,
        }
    if isinstance(op, ListNamespacesOp):
        return {
            "op": "list",
            "match_conditions": [
                {"match_type": c.match_type, "path": list(c.path)} for c in (op.match_conditions or ())
            ],
            "max_depth": op.max_depth,
            "limit": op.limit,
            "offset": op.offset,
        }
    raise ValueError(f"Unknown operation type: {type(op)}")


def _time(ms: int) -> datetime:
    return datetime.fromtimestamp(ms / 1000, tz=timezone.utc)


__all__ = ["InMemoryStore"]
