"""What agentgraph's checkpointers share: an agent-core saver, and the process's serializer."""

from __future__ import annotations

import json
from datetime import datetime, timezone
from typing import Any, Iterator, Optional

from agentgraph.checkpoint import serde as _serde
from agentgraph.checkpoint.base import BaseCheckpointSaver, CheckpointTuple


class NativeCheckpointer(BaseCheckpointSaver):
    """A checkpointer agent-core runs itself (`compile(checkpointer=...)` hands it over).

    `serde` is any `SerializerProtocol` (LangGraph's `JsonPlusSerializer`, an encrypted one,
    ...); agent-core's savers share one per process (see `agentgraph.checkpoint.serde.use`).
    """

    _native: Any

    def __init__(self, native: Any, serde: Optional[Any] = None) -> None:
        _serde.use(serde)
        self._native = native
        self.serde = serde if serde is not None else _serde._active

    # LangGraph's read API on the saver itself. agent-core stores values by slot
    # (`value_<n>`, `reduced_<n>`); the keys are those of the graph last compiled with this
    # saver (`_bind_keys`, from `compile`).
    _fields: dict = {}

    def _bind_keys(self, keys: list) -> None:
        """`keys`: the schema's `(name, has_reducer)` in order, slotted as the native schema
        does (last-value keys `value_0...`, reducer keys `reduced_0...`)."""
        fields, plain, reduced = {}, 0, 0
        for name, has_reducer in keys:
            if has_reducer:
                fields[f"reduced_{reduced}"] = name
                reduced += 1
            else:
                fields[f"value_{plain}"] = name
                plain += 1
        self._fields = fields

    def get_tuple(self, config: dict) -> Optional[CheckpointTuple]:
        c = config.get("configurable", {})
        thread, ns = str(c["thread_id"]), c.get("checkpoint_ns", "")
        stored = self._native.read(thread, ns, c.get("checkpoint_id"))
        if stored is None:
            return None
        checkpoint_id, parent, created_ms, metadata, values = stored
        # In schema order, as LangGraph's channels are.
        order = {field: i for i, field in enumerate(self._fields)}
        values = sorted(values, key=lambda entry: order.get(entry[0], len(order)))
        checkpoint = {
            "v": 4,
            "id": checkpoint_id,
            "ts": datetime.fromtimestamp(created_ms / 1000, tz=timezone.utc).isoformat(),
            "channel_values": {self._fields.get(f, f): v for f, _, v in values},
            "channel_versions": {self._fields.get(f, f): version for f, version, _ in values},
            "versions_seen": {},
            "updated_channels": None,
        }

        def at(checkpoint_id: str) -> dict:
            return {"configurable": {"thread_id": thread, "checkpoint_ns": ns, "checkpoint_id": checkpoint_id}}

        return CheckpointTuple(at(checkpoint_id), checkpoint, json.loads(metadata), parent and at(parent), [])

    def list(
        self,
        config: Optional[dict],
        *,
        filter: Optional[dict] = None,
        before: Optional[dict] = None,
        limit: Optional[int] = None,
    ) -> Iterator[CheckpointTuple]:
        if config is None:
            raise ValueError("agentgraph's savers list one thread's checkpoints: pass its config")
        c = config.get("configurable", {})
        thread, ns = str(c["thread_id"]), c.get("checkpoint_ns", "")
        before_id = (before or {}).get("configurable", {}).get("checkpoint_id")
        count = 0
        for checkpoint_id in self._native.ids(thread, ns, before_id, None if filter else limit):
            found = self.get_tuple({"configurable": {**c, "checkpoint_id": checkpoint_id}})
            if found is None or any(found.metadata.get(k) != v for k, v in (filter or {}).items()):
                continue
            yield found
            count += 1
            if limit is not None and count >= limit:
                return

    async def aget_tuple(self, config: dict) -> Optional[CheckpointTuple]:
        return self.get_tuple(config)

    async def alist(self, config: Optional[dict], **kwargs: Any):
        for found in self.list(config, **kwargs):
            yield found

    def setup(self) -> None:
        """Tables are created when the saver opens; kept for LangGraph's API."""

    async def asetup(self) -> None:
        """Tables are created when the saver opens; kept for LangGraph's API."""

    def delete_thread(self, thread_id: str) -> None:
        """Deletes every checkpoint and write of a thread."""
        self._native.delete_thread(str(thread_id))

    async def adelete_thread(self, thread_id: str) -> None:
        self.delete_thread(thread_id)
