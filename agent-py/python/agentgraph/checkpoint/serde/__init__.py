"""Serializers for checkpoints: LangGraph's format, so stored values are shared with LangGraph.

`jsonplus.JsonPlusSerializer` writes what LangGraph's serializer of the same name writes
(msgpack with its extension types) and reads what it writes. agent-core's savers serialize
Python values through one process-wide serializer (`use`), JsonPlus by default: a value
crosses into agent-core as LangGraph's `(type, bytes)` pair.
"""

from __future__ import annotations

import base64
from typing import Any, Optional

from agentgraph.checkpoint.serde.base import SerializerProtocol
from agentgraph.checkpoint.serde.jsonplus import JsonPlusSerializer

_DEFAULT = JsonPlusSerializer()
_active: SerializerProtocol = _DEFAULT
_chosen: Optional[SerializerProtocol] = None


def use(serde: Optional[SerializerProtocol]) -> None:
    """Makes `serde` the serializer of agent-core's savers in this process.

    They share one (values are decoded where no saver is in sight), so a second, different
    one is refused rather than mixed with the first.
    """
    global _active, _chosen
    if serde is None or serde is _chosen:
        return
    if not isinstance(serde, SerializerProtocol):
        raise TypeError(f"serde must have dumps_typed and loads_typed, not {serde!r}")
    if _chosen is not None:
        raise ValueError(
            "agentgraph's savers share one serializer per process; "
            f"{_chosen!r} is in use, {serde!r} cannot be added"
        )
    _active = _chosen = serde


def _dumps(obj: Any) -> tuple[str, bytes]:
    """Called by the native side for each value a checkpoint stores."""
    type_, data = _active.dumps_typed(obj)
    return type_, bytes(data)


def _loads(type_: str, data: bytes) -> Any:
    """Called by the native side for each value a checkpoint loads."""
    return _active.loads_typed((type_, data))


# A value JSON has no type for, inside an interrupt or resume value: `{_TAGGED: [type, base64]}`.
_TAGGED = "__agentgraph_typed__"


def _to_json(obj: Any) -> Any:
    """An interrupt or resume value as JSON for agent-core: JSON as it is, any other value
    (a datetime, a message, a dataclass) through the serializer, tagged."""
    kind = type(obj)
    if obj is None or kind in (str, bool, int, float):
        return obj
    if kind in (list, tuple):
        return [_to_json(v) for v in obj]
    if kind is dict and all(type(k) is str for k in obj):
        return {k: _to_json(v) for k, v in obj.items()}
    type_, data = _active.dumps_typed(obj)
    return {_TAGGED: [type_, base64.b64encode(bytes(data)).decode()]}


def _from_json(obj: Any) -> Any:
    """`_to_json` undone."""
    if isinstance(obj, list):
        return [_from_json(v) for v in obj]
    if isinstance(obj, dict):
        tagged = obj.get(_TAGGED) if len(obj) == 1 else None
        if isinstance(tagged, list) and len(tagged) == 2:
            return _active.loads_typed((tagged[0], base64.b64decode(tagged[1])))
        return {k: _from_json(v) for k, v in obj.items()}
    return obj


__all__ = ["JsonPlusSerializer", "SerializerProtocol", "use"]
