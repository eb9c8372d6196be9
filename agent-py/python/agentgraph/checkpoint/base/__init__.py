"""`BaseCheckpointSaver` and the checkpoint shapes, under LangGraph's names.

A saver of one's own subclasses `BaseCheckpointSaver` and implements LangGraph's methods
(`get_tuple`, `list`, `put`, `put_writes`, and their async forms if it is async): agentgraph
stores through them (`compile(checkpointer=...)`, the adapter in `src/langgraph_saver.rs`),
handing it LangGraph's checkpoint dicts. agentgraph's own savers (memory, SQLite,
PostgreSQL) are subclasses too, but agent-core runs them itself.
"""

from __future__ import annotations

from typing import Any, Iterator, NamedTuple, Optional, TypedDict, Union

from agentgraph.checkpoint.serde.base import SerializerProtocol
from agentgraph.checkpoint.serde.jsonplus import JsonPlusSerializer

ChannelVersions = dict[str, Union[str, int, float]]
PendingWrite = tuple[str, str, Any]


class CheckpointMetadata(TypedDict, total=False):
    source: str
    step: int
    parents: dict[str, str]
    run_id: str


class Checkpoint(TypedDict, total=False):
    v: int
    id: str
    ts: str
    channel_values: dict[str, Any]
    channel_versions: ChannelVersions
    versions_seen: dict[str, ChannelVersions]
    updated_channels: Optional[list[str]]


class CheckpointTuple(NamedTuple):
    config: dict
    checkpoint: Checkpoint
    metadata: CheckpointMetadata
    parent_config: Optional[dict] = None
    pending_writes: Optional[list[PendingWrite]] = None


class BaseCheckpointSaver:
    """LangGraph's saver interface: subclasses implement the storage methods."""

    serde: SerializerProtocol

    def __init__(self, *, serde: Optional[SerializerProtocol] = None) -> None:
        self.serde = serde if serde is not None else JsonPlusSerializer()

    def get(self, config: dict) -> Optional[Checkpoint]:
        saved = self.get_tuple(config)
        return saved.checkpoint if saved else None

    def get_tuple(self, config: dict) -> Optional[CheckpointTuple]:
        raise NotImplementedError

    def list(
        self,
        config: Optional[dict],
        *,
        filter: Optional[dict[str, Any]] = None,
        before: Optional[dict] = None,
        limit: Optional[int] = None,
    ) -> Iterator[CheckpointTuple]:
        raise NotImplementedError

    def put(
        self, config: dict, checkpoint: Checkpoint, metadata: CheckpointMetadata, new_versions: ChannelVersions
    ) -> dict:
        raise NotImplementedError

    def put_writes(self, config: dict, writes: Any, task_id: str, task_path: str = "") -> None:
        raise NotImplementedError

    def delete_thread(self, thread_id: str) -> None:
        raise NotImplementedError

    def get_next_version(self, current: Any, channel: None = None) -> Any:
        if current is None:
            return 1
        if isinstance(current, int):
            return current + 1
        return f"{int(str(current).split('.')[0]) + 1:032}.0"


__all__ = [
    "BaseCheckpointSaver",
    "ChannelVersions",
    "Checkpoint",
    "CheckpointMetadata",
    "CheckpointTuple",
    "PendingWrite",
]
