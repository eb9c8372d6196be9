"""LangGraph's `langgraph.runtime.Runtime`: what a node taking `runtime` gets."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Generic, Optional, TypeVar

ContextT = TypeVar("ContextT")


def _no_op(_chunk: Any) -> None:
    pass


@dataclass(frozen=True)
class Runtime(Generic[ContextT]):
    """The run's `context` (`invoke(..., context=...)`), its store, its stream writer."""

    context: Optional[ContextT] = None
    store: Any = None
    stream_writer: Callable[[Any], None] = field(default=_no_op)
    previous: Any = None
