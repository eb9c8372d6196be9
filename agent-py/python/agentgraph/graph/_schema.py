"""State schemas as LangGraph takes them: `TypedDict`, dataclasses and Pydantic models, the
graph's `input_schema`/`output_schema`, and each node's own input schema (private state).

agent-core runs one set of keys per graph, so the keys are the union of every schema the
graph names (LangGraph's channels): the state schema's, then the input and output schemas',
then each node's input schema (a key only a node's annotation declares is private state).
Where a node or router must see less than that union, or an instance of a dataclass or
Pydantic model, its function is wrapped here to pick its keys and build the instance, as
LangGraph's per-schema mappers do. A plain `TypedDict` graph wraps nothing: the native layer
hands the state dict straight to the function.
"""

from __future__ import annotations

import dataclasses
import inspect
import typing
from collections.abc import Callable
from typing import Any, Optional

_MISSING = object()


def _reducer(metadata: tuple) -> Optional[Callable]:
    """The reducer of `Annotated[T, ...]`: its last metadata item, if a two-argument callable."""
    if not metadata:
        return None
    candidate = metadata[-1]
    if not callable(candidate):
        return None
    try:
        params = [
            p
            for p in inspect.signature(candidate).parameters.values()
            if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)
        ]
    except (TypeError, ValueError):  # builtins without a signature (operator.add has one)
        return candidate
    return candidate if len(params) == 2 else None


def _initial(typ: Any) -> Any:
    """What a reducer key starts from: `T()` when it constructs, as LangGraph's channel."""
    import collections.abc as abc

    origin = typing.get_origin(typ) or typ
    if origin in (abc.Sequence, abc.MutableSequence):
        origin = list
    if origin in (abc.Set, abc.MutableSet):
        origin = set
    if origin in (abc.Mapping, abc.MutableMapping):
        origin = dict
    try:
        return origin()
    except Exception:
        return None


def managed_keys(schema: Any) -> dict[str, Any]:
    """The schema's managed values (`RemainingSteps`, `IsLastStep`): key to manager."""
    from agentgraph.managed.base import is_managed_value

    try:
        hints = typing.get_type_hints(schema, include_extras=True)
    except (NameError, TypeError):
        return {}
    managed = {}
    for name, hint in hints.items():
        origin = typing.get_origin(hint)
        if origin is not None and getattr(origin, "_name", None) in ("Required", "NotRequired"):
            hint = typing.get_args(hint)[0]
        if typing.get_origin(hint) is typing.Annotated:
            found = [m for m in hint.__metadata__ if is_managed_value(m)]
            if found:
                managed[name] = found[-1]
    return managed


def schema_keys(schema: Any) -> list[tuple[str, Optional[Callable], Any]]:
    """`(key, reducer or None, initial value or None)` of a schema, in declaration order
    (managed values are no keys: the run computes them for each task)."""
    hints = typing.get_type_hints(schema, include_extras=True)
    managed = managed_keys(schema)
    keys = []
    for name, hint in hints.items():
        if name == "__slots__" or name in managed:
            continue
        base = hint
        if typing.get_origin(base) in (typing.Required, typing.NotRequired):
            base = typing.get_args(base)[0]
        reducer = None
        if typing.get_origin(base) is typing.Annotated:
            reducer = _reducer(base.__metadata__)
            base = base.__origin__
        keys.append((name, reducer, _initial(base) if reducer is not None else None))
    return keys


def _is_model(schema: Any) -> bool:
    """A dataclass or a Pydantic model: nodes get an instance, not a dict."""
    if not inspect.isclass(schema):
        return False
    if dataclasses.is_dataclass(schema):
        return True
    return any(
        base.__name__ == "BaseModel" and base.__module__.startswith("pydantic")
        for base in schema.__mro__
    )


def inferred_input(func: Any) -> Optional[type]:
    """The schema a function's first parameter is annotated with, if a class with fields
    (LangGraph reads a node's or a path's input schema so, from plain functions and methods
    and objects with a `__call__` method)."""
    target = None
    if inspect.isfunction(func) or inspect.ismethod(func):
        target = func
    elif inspect.ismethod(getattr(func, "__call__", None)):
        target = func.__call__
    if target is None:
        return None
    try:
        hints = typing.get_type_hints(target)
        first = next(iter(inspect.signature(target).parameters))
    except (NameError, TypeError, ValueError, StopIteration):
        return None
    hint = hints.get(first)
    if isinstance(hint, type):
        try:
            if typing.get_type_hints(hint):
                return hint
        except (NameError, TypeError):
            return None
    return None


class Keys:
    """The union of a graph's schemas: one spec per key, first declaration wins."""

    def __init__(self) -> None:
        self.specs: list[tuple[str, Optional[Callable], Any]] = []
        self.by_schema: dict[Any, list[str]] = {}
        # Per schema: its managed values (key to manager), added to what its nodes read.
        self.managed: dict[Any, dict[str, Any]] = {}

    def add(self, schema: Any) -> list[str]:
        """Adds a schema's keys (once per schema) and returns them in its order."""
        if schema in self.by_schema:
            return self.by_schema[schema]
        known = {name for name, _, _ in self.specs}
        names = []
        for spec in schema_keys(schema):
            names.append(spec[0])
            if spec[0] not in known:
                known.add(spec[0])
                self.specs.append(spec)
        self.by_schema[schema] = names
        self.managed[schema] = managed_keys(schema)
        return names

    @property
    def names(self) -> list[str]:
        return [name for name, _, _ in self.specs]


def reader(schema: Any, keys: Keys) -> Optional[Callable[[dict], Any]]:
    """What turns the full state dict into what a function of `schema` reads, or None when
    that is the dict itself (a `TypedDict` with every key)."""
    names = keys.add(schema)
    managed = keys.managed.get(schema)
    if managed:
        return _with_managed(_reader(schema, names, keys), managed)
    return _reader(schema, names, keys)


def _with_managed(read: Optional[Callable[[dict], Any]], managed: dict) -> Callable[[dict], Any]:
    """`read` with the managed values of the running task added to the state it reads."""

    def read_managed(state: dict) -> Any:
        from agentgraph._runtime import current_task
        from agentgraph.managed.is_last_step import Steps

        task = current_task()
        if task is not None:
            steps = Steps.of(task.scope)
            state = {**state, **{k: m.get(steps) for k, m in managed.items()}}
        return state if read is None else read(state)

    return read_managed


def _reader(schema: Any, names: list, keys: Keys) -> Optional[Callable[[dict], Any]]:
    model = _is_model(schema)
    if not model and names == keys.names:
        return None
    managed = tuple(keys.managed.get(schema) or ())
    if model and not managed and names == keys.names:
        return lambda state: schema(**state)
    picked = (*names, *managed)
    if model:
        return lambda state: schema(**{k: state[k] for k in picked if k in state})
    return lambda state: {k: state[k] for k in picked if k in state}


def _update(out: Any) -> Any:
    """A node's return value as LangGraph reads it: a dataclass or Pydantic instance becomes
    the dict of its fields (for Pydantic, those set or not defaulting to None); anything else
    is left for the native layer."""
    kind = type(out)
    if out is None or isinstance(out, dict) or kind.__module__.startswith("agentgraph"):
        return out
    if not _is_model(kind):
        return out
    names = [name for name, _, _ in schema_keys(type(out))]
    fields_set = getattr(out, "model_fields_set", None)
    defaults: dict = {}
    if fields_set is not None:
        defaults = {k: v.default for k, v in type(out).model_fields.items()}
    update = {}
    for name in names:
        value = getattr(out, name, _MISSING)
        if value is _MISSING:
            continue
        if value is not None or defaults.get(name, _MISSING) is not None or (
            fields_set is not None and name in fields_set
        ):
            update[name] = value
    return update


def wrap_node(func: Callable, read: Callable, is_async: bool) -> Callable:
    """`func` reading through `read` and returning dicts: LangGraph's node mapper and its
    update of a returned instance. Injected arguments (`config`, `writer`, ...) pass through.
    A `Send`'s argument is not the state: the node gets it as it was sent, as in LangGraph."""
    if is_async:

        async def run_async(state: dict, **kwargs: Any) -> Any:
            return _update(await func(state if _sent() else read(state), **kwargs))

        return run_async

    def run(state: dict, **kwargs: Any) -> Any:
        return _update(func(state if _sent() else read(state), **kwargs))

    return run


def _sent() -> bool:
    """Whether the running task was given a `Send`'s argument."""
    from agentgraph._runtime import current_task

    task = current_task()
    return task is not None and task.scope.sent


def wrap_path(path: Callable, read: Optional[Callable]) -> Callable:
    if read is None:
        return path
    return lambda state: path(read(state))


def input_update(input: Any, names: Optional[frozenset]) -> Any:
    """The graph's input as its input schema writes it: an instance becomes a dict, and keys
    outside the input schema are dropped (`names` None: every key of the graph)."""
    input = _update(input)
    if names is None or not isinstance(input, dict):
        return input
    return {k: v for k, v in input.items() if k in names}
