"""`InMemorySaver`: agent-core's in-memory saver (LangGraph's `MemorySaver` too).

A subclass that overrides one of LangGraph's saver methods (`put`, `get_tuple`, `list`,
`put_writes`, ...; LangGraph's own tests wrap them to check that checkpoints are never
mutated) must see its overrides called, which agent-core's native saver would bypass. Such a
subclass keeps LangGraph's dict storage instead (`storage`, `writes`, made by `factory`, as
LangGraph's `InMemorySaver` does) and the graph stores through its methods, as through any
LangGraph saver (the adapter in `src/langgraph_saver.rs`).
"""

from __future__ import annotations

import os
import pickle
import tempfile
from collections import defaultdict
from contextlib import ExitStack
from typing import Any, Iterator, Optional

from agentgraph._native import NativeSaver
from agentgraph.checkpoint._native_saver import NativeCheckpointer
from agentgraph.checkpoint.base import CheckpointTuple

# LangGraph's saver methods: overriding one takes the saver off agent-core's native path.
_METHODS = (
    "put",
    "put_writes",
    "get_tuple",
    "list",
    "get",
    "aput",
    "aput_writes",
    "aget_tuple",
    "alist",
    "delete_thread",
)


class InMemorySaver(NativeCheckpointer):
    """Keeps every thread's checkpoints in this process's memory.

    `factory` makes the dicts a subclass that overrides LangGraph's methods stores in (e.g.
    `PersistentDict`); `stack` closes them when the saver is used as a context manager.
    """

    def __init__(self, *, serde: Optional[Any] = None, factory: type = defaultdict) -> None:
        self.stack = ExitStack()
        if not any(getattr(type(self), m) is not getattr(InMemorySaver, m) for m in _METHODS):
            super().__init__(NativeSaver.memory(), serde)
            return
        super().__init__(None, serde)
        self._native = None  # the graph stores through this object's methods
        # thread -> namespace -> checkpoint id -> (checkpoint, metadata, parent id), serialized
        self.storage = factory(lambda: defaultdict(dict))
        # (thread, namespace, checkpoint id) -> (task id, index) -> (task id, channel, value, path)
        self.writes = factory(dict)
        if factory is not defaultdict:
            self.stack.enter_context(self.storage)
            self.stack.enter_context(self.writes)

    def __enter__(self) -> "InMemorySaver":
        self.stack.__enter__()
        return self

    def __exit__(self, *exc_info: Any) -> Any:
        return self.stack.__exit__(*exc_info)

    async def __aenter__(self) -> "InMemorySaver":
        return self.__enter__()

    async def __aexit__(self, *exc_info: Any) -> Any:
        return self.__exit__(*exc_info)

    # LangGraph's saver API on the dict storage (the native saver serves reads otherwise).

    def put(self, config: dict, checkpoint: dict, metadata: dict, new_versions: dict) -> dict:
        if self._native is not None:
            raise NotImplementedError("agent-core stores this saver's checkpoints itself")
        c = config["configurable"]
        thread, ns = str(c["thread_id"]), c.get("checkpoint_ns", "")
        self.storage[thread][ns][checkpoint["id"]] = (
            self.serde.dumps_typed(checkpoint),
            self.serde.dumps_typed(metadata),
            c.get("checkpoint_id"),
        )
        return {"configurable": {"thread_id": thread, "checkpoint_ns": ns, "checkpoint_id": checkpoint["id"]}}

    def put_writes(self, config: dict, writes: Any, task_id: str, task_path: str = "") -> None:
        if self._native is not None:
            raise NotImplementedError("agent-core stores this saver's writes itself")
        c = config["configurable"]
        key = (str(c["thread_id"]), c.get("checkpoint_ns", ""), c["checkpoint_id"])
        stored = self.writes.setdefault(key, {})
        for index, (channel, value) in enumerate(writes):
            stored[(task_id, index)] = (task_id, channel, self.serde.dumps_typed(value), task_path)

    def _tuple(self, thread: str, ns: str, checkpoint_id: str) -> Optional[CheckpointTuple]:
        saved = self.storage[thread][ns].get(checkpoint_id)
        if saved is None:
            return None
        checkpoint, metadata, parent = saved

        def at(checkpoint_id: str) -> dict:
            return {"configurable": {"thread_id": thread, "checkpoint_ns": ns, "checkpoint_id": checkpoint_id}}

        writes = self.writes.get((thread, ns, checkpoint_id), {}).values()
        return CheckpointTuple(
            at(checkpoint_id),
            self.serde.loads_typed(checkpoint),
            self.serde.loads_typed(metadata),
            at(parent) if parent else None,
            [(task, channel, self.serde.loads_typed(value)) for task, channel, value, _ in writes],
        )

    def get_tuple(self, config: dict) -> Optional[CheckpointTuple]:
        if self._native is not None:
            return super().get_tuple(config)
        c = config["configurable"]
        thread, ns = str(c["thread_id"]), c.get("checkpoint_ns", "")
        checkpoint_id = c.get("checkpoint_id")
        if checkpoint_id is None:
            ids = self.storage[thread][ns]
            if not ids:
                return None
            checkpoint_id = max(ids)
        return self._tuple(thread, ns, checkpoint_id)

    def list(
        self,
        config: Optional[dict],
        *,
        filter: Optional[dict] = None,
        before: Optional[dict] = None,
        limit: Optional[int] = None,
    ) -> Iterator[CheckpointTuple]:
        if self._native is not None:
            yield from super().list(config, filter=filter, before=before, limit=limit)
            return
        c = (config or {}).get("configurable", {})
        threads = [str(c["thread_id"])] if "thread_id" in c else list(self.storage)
        before_id = (before or {}).get("configurable", {}).get("checkpoint_id")
        for thread in threads:
            for ns, ids in list(self.storage[thread].items()):
                if "checkpoint_ns" in c and ns != c["checkpoint_ns"]:
                    continue
                if c.get("checkpoint_id") is not None:
                    ids = {c["checkpoint_id"]: None} if c["checkpoint_id"] in ids else {}
                for checkpoint_id in sorted(ids, reverse=True):
                    if before_id is not None and checkpoint_id >= before_id:
                        continue
                    found = self._tuple(thread, ns, checkpoint_id)
                    if found is None or any(found.metadata.get(k) != v for k, v in (filter or {}).items()):
                        continue
                    if limit is not None:
                        if limit <= 0:
                            return
                        limit -= 1
                    yield found

    def delete_thread(self, thread_id: str) -> None:
        if self._native is not None:
            return super().delete_thread(thread_id)
        self.storage.pop(str(thread_id), None)
        for key in [k for k in self.writes if k[0] == str(thread_id)]:
            del self.writes[key]

    async def aput(self, config: dict, checkpoint: dict, metadata: dict, new_versions: dict) -> dict:
        return self.put(config, checkpoint, metadata, new_versions)

    async def aput_writes(self, config: dict, writes: Any, task_id: str, task_path: str = "") -> None:
        self.put_writes(config, writes, task_id, task_path)

    async def aget_tuple(self, config: dict) -> Optional[CheckpointTuple]:
        return self.get_tuple(config)

    async def alist(self, config: Optional[dict], **kwargs: Any):
        for found in self.list(config, **kwargs):
            yield found


class PersistentDict(defaultdict):
    """A `defaultdict` kept in memory and written to `filename` (pickled) on `sync()` and
    `close()`, read back from it when the file holds one; `InMemorySaver(factory=...)` takes
    it, bound to a file with `functools.partial`."""

    def __init__(self, *args: Any, filename: str, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.filename = filename
        if os.path.exists(filename) and os.path.getsize(filename) > 0:
            with open(filename, "rb") as file:
                self.update(pickle.load(file))

    def sync(self) -> None:
        """Writes the dict to its file (a temporary file renamed over it)."""
        directory = os.path.dirname(os.path.abspath(self.filename))
        fd, temporary = tempfile.mkstemp(dir=directory)
        try:
            with os.fdopen(fd, "wb") as file:
                pickle.dump(dict(self), file)
            os.replace(temporary, self.filename)
        except BaseException:
            os.remove(temporary)
            raise

    def close(self) -> None:
        self.sync()

    def __enter__(self) -> "PersistentDict":
        return self

    def __exit__(self, *exc_info: Any) -> None:
        self.close()

    def __reduce__(self) -> Any:
        return (dict, (dict(self),))


MemorySaver = InMemorySaver

__all__ = ["InMemorySaver", "MemorySaver", "PersistentDict"]
