"""LangGraph's `langgraph.types`: `Command`, `Send`, `interrupt`, `Interrupt`, `StreamMode`,
`StreamWriter`, `RetryPolicy`, `CachePolicy`, `StateSnapshot`, `PregelTask`, `Durability`."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, ClassVar, Literal, NamedTuple, Optional, Sequence, Union

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

    def __post_init__(self) -> None:
        # An interrupt with a response schema crosses agent-core (which keeps values as
        # JSON) wrapped with its schema; every Interrupt is made here, so it is unwrapped once.
        value = self.value
        if self.response_schema is None and isinstance(value, dict) and _SCHEMA_KEY in value:
            self.value, self.response_schema = value.get("value"), value[_SCHEMA_KEY]


_SCHEMA_KEY = "__agentgraph_response_schema__"


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


def interrupt(value: Any, *, response_schema: Any = None) -> Any:
    """Pauses the run for a human: the first time, the run stops and the caller gets `value`
    under `__interrupt__`; once resumed with `Command(resume=answer)`, the node runs again and
    this returns `answer`. Values cross as JSON for now.

    `response_schema` describes the answer: a JSON-schema dict is shown as is (the
    `Interrupt`'s `response_schema`); a Pydantic model, `TypedDict` or dataclass is shown as
    its JSON schema, and the answer is validated into it (a `pydantic.ValidationError`, which
    `errors.is_invalid_resume` recognises, when it does not match; nothing is saved, so the
    interrupt can be answered again)."""
    from agentgraph._runtime import current

    adapter = None
    shown = response_schema
    if response_schema is not None and not isinstance(response_schema, dict):
        from pydantic import TypeAdapter

        adapter = TypeAdapter(response_schema)
        shown = adapter.json_schema()
    answer = current().interrupt(value if shown is None else {_SCHEMA_KEY: shown, "value": value})
    if adapter is None:
        return answer
    from pydantic import ValidationError

    try:
        return adapter.validate_python(answer)
    except ValidationError as error:
        from agentgraph.errors import _mark_invalid_resume

        _mark_invalid_resume(error)
        raise


def default_retry_on(exc: BaseException) -> bool:
    """Whether a node's exception is worth another attempt by default (LangGraph's rule):
    connection errors and HTTP 5xx are; programming errors (`ValueError`, `TypeError`,
    `LookupError`, ...) and OS errors are not; anything else is."""
    if isinstance(exc, ConnectionError):
        return True
    status = _http_status(exc)
    if status is not _NOT_HTTP:
        return status is None or 500 <= status < 600
    return not isinstance(
        exc,
        (
            ValueError,
            TypeError,
            ArithmeticError,
            ImportError,
            LookupError,
            NameError,
            SyntaxError,
            RuntimeError,
            ReferenceError,
            StopIteration,
            StopAsyncIteration,
            OSError,
        ),
    )


_NOT_HTTP = object()


def _http_status(exc: BaseException) -> Any:
    """The status of an `httpx.HTTPStatusError` / `requests.HTTPError` (`None` for a
    `requests` error without a response), or `_NOT_HTTP`; neither library is imported here."""
    import sys

    httpx = sys.modules.get("httpx")
    if httpx is not None and isinstance(exc, httpx.HTTPStatusError):
        return exc.response.status_code
    requests = sys.modules.get("requests")
    if requests is not None and isinstance(exc, requests.HTTPError):
        return exc.response.status_code if exc.response else None
    return _NOT_HTTP


class RetryPolicy(NamedTuple):
    """How a node is retried when it raises (LangGraph's `RetryPolicy`): `max_attempts`
    counts the first; waits start at `initial_interval` seconds, grow by `backoff_factor` up
    to `max_interval`, plus up to a second at random with `jitter`; `retry_on` is an exception
    class, a sequence of them, or a predicate."""

    initial_interval: float = 0.5
    backoff_factor: float = 2.0
    max_interval: float = 128.0
    max_attempts: int = 3
    jitter: bool = True
    retry_on: Union[type[Exception], Sequence[type[Exception]], Callable[[Exception], bool]] = (
        default_retry_on
    )


def default_cache_key(*args: Any, **kwargs: Any) -> bytes:
    """A node input's cache key: its pickle, dicts and lists frozen so equal inputs agree."""
    import pickle

    return pickle.dumps((_freeze(args), _freeze(kwargs)), protocol=5, fix_imports=False)


def _freeze(value: Any) -> Any:
    if isinstance(value, dict):
        return tuple((k, _freeze(v)) for k, v in value.items())
    if isinstance(value, (list, tuple)):
        return tuple(_freeze(v) for v in value)
    if isinstance(value, (set, frozenset)):
        return frozenset(_freeze(v) for v in value)
    return value


@dataclass(frozen=True)
class CachePolicy:
    """How a node's results are cached (LangGraph's `CachePolicy`): keyed by
    `key_func(state)`, kept `ttl` seconds (forever when `None`)."""

    key_func: Callable[..., Union[str, bytes]] = default_cache_key
    ttl: Optional[int] = None


class PregelTask(NamedTuple):
    """A task of a checkpoint's next step (LangGraph's `PregelTask`)."""

    id: str
    name: str
    path: tuple
    error: Optional[Exception] = None
    interrupts: tuple = ()
    state: Any = None
    result: Optional[Any] = None


class StateSnapshot(NamedTuple):
    """A thread's state at a checkpoint (LangGraph's `StateSnapshot`)."""

    values: Union[dict, Any]
    next: tuple
    config: dict
    metadata: Optional[dict]
    created_at: Optional[str]
    parent_config: Optional[dict]
    tasks: tuple
    interrupts: tuple


Durability = Literal["sync", "async", "exit"]
All = Literal["*"]


@dataclass
class GraphOutput:
    """What `invoke(..., version="v2")` returns: the graph's output and the interrupts met
    (LangGraph's; `result[key]` and `key in result` are its deprecated dict-like access)."""

    value: Any
    interrupts: tuple = ()

    def __getitem__(self, key: str) -> Any:
        if key == "__interrupt__":
            return self.interrupts
        if isinstance(self.value, dict):
            return self.value[key]
        try:
            return getattr(self.value, key)
        except AttributeError:
            raise KeyError(key) from None

    def __contains__(self, key: object) -> bool:
        if key == "__interrupt__":
            return bool(self.interrupts)
        if isinstance(self.value, dict):
            return key in self.value
        return isinstance(key, str) and hasattr(self.value, key)
