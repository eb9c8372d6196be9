"""LangGraph's `langgraph.types`: `Command`, `Send`, `interrupt`, `Interrupt`, `StreamMode`,
`StreamWriter`."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, ClassVar, Literal, Optional, Sequence, Union

StreamWriter = Callable[[Any], None]
"""What `get_stream_writer()` returns and a node's `writer` parameter is."""

StreamMode = Literal["values", "updates", "checkpoints", "tasks", "debug", "messages", "custom"]


class _ToolOutput:
    """`Command`'s base: `agentgraph.prebuilt` adds LangChain's `ToolOutputMixin` to
    `Command`'s bases once it loads LangChain, so a tool returning a `Command` hands it back
    as itself (LangChain wraps anything else in a `ToolMessage`). Importing LangChain here
    would cost every program a third of a second."""


@dataclass
class Interrupt:
    """A pause: what the node passed to `interrupt()`, and the pause's id."""

    value: Any
    id: str
    response_schema: Any = None


class Send:
    """A task for `node` in the next step, run on `arg` instead of the state (map-reduce): a
    router returns Sends (possibly with node names), or a node's `Command(goto=...)` holds
    them. Each Send is a task of its own, its writes reduced with the step's others."""

    __slots__ = ("node", "arg", "timeout")

    def __init__(self, node: str, arg: Any, *, timeout: Any = None) -> None:
        self.node = node
        self.arg = arg
        self.timeout = timeout

    def __hash__(self) -> int:
        return hash((self.node, self.arg))

    def __repr__(self) -> str:
        return f"Send(node={self.node!r}, arg={self.arg!r})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Send) and self.node == other.node and self.arg == other.arg


@dataclass
class Command(_ToolOutput):
    """Resume a paused run (`resume`), or, returned by a node, update and route at once."""

    graph: Optional[str] = None
    update: Optional[Any] = None
    resume: Optional[Any] = None
    goto: Union[str, Send, Sequence[Union[str, Send]]] = ()

    PARENT: ClassVar[str] = "__parent__"


def interrupt(value: Any) -> Any:
    """Pauses the run for a human: the first time, the run stops and the caller gets `value`
    under `__interrupt__`; once resumed with `Command(resume=answer)`, the node runs again and
    this returns `answer`. Values cross as JSON for now."""
    from agentgraph._runtime import current

    return current().interrupt(value)
