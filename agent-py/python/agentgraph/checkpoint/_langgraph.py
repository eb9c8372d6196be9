"""LangGraph's checkpointers (`BaseCheckpointSaver`) under agent-core: the Python half.

The native adapter (`src/langgraph_saver.rs`) decodes agent-core's checkpoints into Python
values by key and calls these functions, which speak LangGraph's saver API: a checkpoint is
LangGraph's dict (`channel_values` by state key, `channel_versions`, `versions_seen`, ...),
so a LangGraph graph with the same schema reads the thread with `get_state`. What only
agent-core needs (its encoded body: next tasks, joins; its field versions) rides along under
one extra key of the checkpoint dict, which LangGraph's savers store with the rest.

agent-core's pending writes (task outputs, interrupts, resume values: encoded bytes) are
stored as writes to channels named `agentgraph:<kind>:<node>`; a write replaces the task's
earlier one of its kind, so each is stored under a task id with a time-ordered suffix and the
newest is read back.
"""

from __future__ import annotations

import itertools
import json
import time
import uuid
from datetime import datetime, timezone
from typing import Any, Optional

STASH = "agentgraph"
_PREFIX = "agentgraph:"
_SEQ = itertools.count()


def _config(thread_id: str, ns: str, checkpoint_id: Optional[str] = None) -> dict:
    configurable = {"thread_id": thread_id, "checkpoint_ns": ns}
    if checkpoint_id is not None:
        configurable["checkpoint_id"] = checkpoint_id
    return {"configurable": configurable}


def _version(version: str) -> str:
    """An agent-core version (a time-ordered uuid) as LangGraph's savers number them
    (`"<integer>.<fraction>"`, which their `get_next_version` parses): the same order, so
    LangGraph can go on with a thread agentgraph wrote. Any other version is kept."""
    digits = version.replace("-", "")
    if len(digits) != 32:
        return version
    try:
        high, low = int(digits[:16], 16), int(digits[16:], 16)
    except ValueError:
        return version
    return f"{high:032}.{low % 10**16:016}"


def _id(checkpoint_id: Optional[str]) -> Optional[str]:
    """An agent-core checkpoint id (uuid v7) as LangGraph's ids are made (uuid v6: the
    timestamp in 100 ns units since 1582, first): savers find a thread's latest checkpoint by
    the greatest id, so ids of both kinds in one thread must sort by time together. The
    milliseconds and the sub-millisecond bits make the timestamp, the random bits the rest;
    the agent-core id itself rides in the stash. Any other id is kept."""
    try:
        parsed = uuid.UUID(checkpoint_id) if checkpoint_id else None
    except ValueError:
        return checkpoint_id
    if parsed is None or parsed.version != 7:
        return checkpoint_id
    bits = parsed.int
    ms, sub, rest = bits >> 80, (bits >> 64) & 0xFFF, bits & ((1 << 62) - 1)
    ticks = (ms + 12_219_292_800_000) * 10_000 + sub
    high = ((ticks >> 12) << 16) | (6 << 12) | (ticks & 0xFFF)
    return str(uuid.UUID(int=(high << 64) | (0b10 << 62) | rest))


def put(
    saver: Any,
    thread_id: str,
    ns: str,
    checkpoint_id: str,
    parent_id: Optional[str],
    created_at_ms: int,
    metadata: str,
    values: dict,
    versions: dict,
    new_keys: list,
    body: bytes,
    fields: dict,
) -> None:
    ts = datetime.fromtimestamp(created_at_ms / 1000, tz=timezone.utc).isoformat()
    checkpoint = {
        "v": 4,
        "id": _id(checkpoint_id),
        "ts": ts,
        "channel_values": values,
        "channel_versions": {key: _version(v) for key, v in versions.items()},
        "versions_seen": {},
        "pending_sends": [],
        "updated_channels": list(new_keys),
        STASH: {"id": checkpoint_id, "parent": parent_id, "body": body, "fields": fields},
    }
    saver.put(
        _config(thread_id, ns, _id(parent_id)),
        checkpoint,
        json.loads(metadata),
        {key: _version(versions[key]) for key in new_keys},
    )


def put_writes(saver: Any, thread_id: str, ns: str, checkpoint_id: str, writes: list) -> None:
    config = _config(thread_id, ns, _id(checkpoint_id))
    for task_id, node, kind, data in writes:
        seq = f"{time.time_ns():020}{next(_SEQ) % 1_000_000:06}"
        saver.put_writes(config, [(f"{_PREFIX}{kind}:{node}", data)], f"{task_id}|{seq}")


def _writes(pending: Any) -> list:
    newest: dict = {}
    for task, channel, value in pending or ():
        if not (isinstance(channel, str) and channel.startswith(_PREFIX)):
            continue
        task_id, _, seq = task.rpartition("|")
        kind, _, node = channel[len(_PREFIX):].partition(":")
        key = (task_id, int(kind))
        if key not in newest or newest[key][0] < seq:
            newest[key] = (seq, node, value)
    return [(task, node, kind, bytes(value)) for (task, kind), (_, node, value) in newest.items()]


def _next(checkpoint: dict) -> list:
    """The nodes a LangGraph checkpoint runs next: those whose edge channel
    (`branch:to:<node>`) holds a value (a consumed one is dropped) of a version the node has
    not seen."""
    values = checkpoint.get("channel_values") or {}
    versions = checkpoint.get("channel_versions") or {}
    seen = checkpoint.get("versions_seen") or {}
    out = []
    for channel, version in versions.items():
        if isinstance(channel, str) and channel.startswith("branch:to:") and channel in values:
            node = channel[len("branch:to:"):]
            last = seen.get(node, {}).get(channel)
            if last is None or version > last:
                out.append(node)
    return sorted(out)


def _record(saved: Any) -> tuple:
    """A `CheckpointTuple` as the native side reads it."""
    checkpoint = saved.checkpoint
    stash = checkpoint.get(STASH)
    if stash is None:
        checkpoint_id = checkpoint["id"]
        parent = (saved.parent_config or {}).get("configurable", {}).get("checkpoint_id")
    else:
        checkpoint_id, parent = stash["id"], stash["parent"]
    ts = checkpoint.get("ts")
    created = int(datetime.fromisoformat(ts).timestamp() * 1000) if ts else 0
    values = checkpoint.get("channel_values") or {}
    metadata = dict(saved.metadata or {})
    return (
        checkpoint_id,
        parent,
        int(metadata.get("step", -1)),
        created,
        json.dumps(metadata, default=str),
        values,
        {k: str(v) for k, v in (checkpoint.get("channel_versions") or {}).items() if k in values},
        None if stash is None else (bytes(stash["body"]), dict(stash["fields"])),
        _next(checkpoint),
    )


def get(saver: Any, thread_id: str, ns: str, checkpoint_id: Optional[str]) -> Optional[tuple]:
    saved = saver.get_tuple(_config(thread_id, ns, _id(checkpoint_id)))
    if saved is None:
        return None
    record = _record(saved)
    return (*record, _writes(saved.pending_writes), _interrupts(saved, record))


def _interrupts(saved: Any, record: tuple) -> list:
    """The interrupts LangGraph left on a checkpoint it wrote, as agent-core's: the paused
    task (`<checkpoint>:pull:<node>`, agent-core's task id), its node, and each value as
    JSON. Only for a single paused node: LangGraph's task ids do not name their node."""
    from agentgraph.checkpoint.serde import _to_json

    checkpoint_id, stash, nodes = record[0], record[7], record[8]
    if stash is not None or len(nodes) != 1:
        return []
    values = []
    for _task, channel, value in saved.pending_writes or ():
        if channel == "__interrupt__":
            for each in value if isinstance(value, (list, tuple)) else [value]:
                values.append(json.dumps(_to_json(getattr(each, "value", each))))
    if not values:
        return []
    return [(f"{checkpoint_id}:pull:{nodes[0]}", nodes[0], values)]


def list_(
    saver: Any, thread_id: str, ns: str, before: Optional[str], limit: Optional[int], filter: str
) -> list:
    found = saver.list(
        _config(thread_id, ns),
        filter=json.loads(filter) or None,
        before=None if before is None else _config(thread_id, ns, _id(before)),
        limit=limit,
    )
    return [_record(saved) for saved in found]


def delete_thread(saver: Any, thread_id: str) -> None:
    saver.delete_thread(thread_id)
