"""`stream(..., version="v2")`: LangGraph's typed stream parts, built on the v1 stream.

Each item is a dict `{"type": mode, "ns": namespace, "data": chunk}` whatever the modes
and `subgraphs` asked (LangGraph's `StreamPart`). A `values` part moves the chunk's
`__interrupt__` into its own `interrupts` field, and a graph whose schema is a pydantic model
or a dataclass shows its values as that type (`values` parts, and the state in `checkpoints`
and `debug` parts past the first checkpoint), as LangGraph's `_output_mapper` and
`_state_mapper` do. `invoke(..., version="v2")` returns a `GraphOutput`.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator, Sequence
from dataclasses import is_dataclass
from inspect import isclass
from typing import Any, Callable, Optional, Union

INTERRUPT = "__interrupt__"
Mapper = Optional[Callable[[dict], Any]]


def check(version: str) -> bool:
    """Whether the run streams v2 parts (`version` is "v1" or "v2")."""
    if version not in ("v1", "v2"):
        raise ValueError(f"Unknown version {version!r}: expected 'v1' or 'v2'")
    return version == "v2"


def modes(stream_mode: Union[str, Sequence[str], None], default: str) -> list[str]:
    """The modes as a list: the v1 stream then tags each chunk with its mode."""
    if stream_mode is None:
        return [default]
    if isinstance(stream_mode, str):
        return [stream_mode]
    return list(stream_mode)


def mapper(schema: Any) -> Mapper:
    """LangGraph's coercion of a state dict to its schema: pydantic models and dataclasses
    only (a TypedDict's state stays a dict)."""
    if not isclass(schema):
        return None
    try:
        from pydantic import BaseModel

        is_model = issubclass(schema, BaseModel)
    except ImportError:  # pragma: no cover
        is_model = False
    if is_model or is_dataclass(schema):
        return lambda values: schema(**values)
    return None


def part(item: tuple, subgraphs: bool, output: Mapper, state: Mapper) -> dict:
    """One v1 item (`(mode, chunk)`, or `(ns, mode, chunk)` with `subgraphs`) as a v2 part."""
    if subgraphs:
        ns, mode, data = item
    else:
        ns, (mode, data) = (), item
    if mode == "values":
        interrupts: tuple = ()
        if isinstance(data, dict):
            interrupts = data.pop(INTERRUPT, ())
            if output is not None:
                data = output(data)
        return {"type": mode, "ns": ns, "data": data, "interrupts": interrupts}
    if mode in ("checkpoints", "debug") and state is not None:
        _coerce_checkpoint(data, state)
    return {"type": mode, "ns": ns, "data": data}


def _coerce_checkpoint(data: Any, state: Callable[[dict], Any]) -> None:
    """The state in a checkpoint (or a debug part's checkpoint) as the schema's type, but
    for the first one, whose channels are not all written yet."""
    if not isinstance(data, dict):
        return
    target = data["payload"] if data.get("type") == "checkpoint" and isinstance(data.get("payload"), dict) else data
    if isinstance(target.get("values"), dict) and "__start__" not in target.get("next", ()):
        target["values"] = state(target["values"])


def parts(items: Iterator[tuple], subgraphs: bool, output: Mapper = None, state: Mapper = None) -> Iterator[dict]:
    for item in items:
        yield part(item, subgraphs, output, state)


async def aparts(
    items: AsyncIterator[tuple], subgraphs: bool, output: Mapper = None, state: Mapper = None
) -> AsyncIterator[dict]:
    async for item in items:
        yield part(item, subgraphs, output, state)


def graph_output(stream: Sequence[dict], stream_mode: Union[str, Sequence[str]]) -> Any:
    """`invoke(version="v2")`'s result from the v2 parts: for `values`, a `GraphOutput` of
    the last values and the interrupts met; otherwise the parts."""
    from agentgraph.types import GraphOutput

    if stream_mode != "values":
        return list(stream)
    value, interrupts = None, []
    for item in stream:
        value = item["data"]
        interrupts.extend(item.get("interrupts", ()))
    return GraphOutput(value=value, interrupts=tuple(interrupts))
