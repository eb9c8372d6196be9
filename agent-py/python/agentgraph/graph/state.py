"""`StateGraph`: LangGraph's builder, recorded here and compiled by agent-core.

The builder only records nodes and edges; `compile()` reads the state schema (keys, their
`Annotated` reducers and initial values) and node signatures, and hands plain data to the
native module, which builds and validates agent-core's graph.
"""

from __future__ import annotations

import inspect
import typing
from collections.abc import AsyncIterator, Callable, Iterator, Sequence
from datetime import datetime, timezone
from typing import Any, NamedTuple, Optional, Union

from agentgraph import _native
from agentgraph._stream import CONTEXT_KEY, STORE_KEY, StreamState, resumed
from agentgraph.constants import END, START


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


def _schema_keys(schema: type) -> list[tuple[str, Optional[Callable], Any]]:
    hints = typing.get_type_hints(schema, include_extras=True)
    keys = []
    for name, hint in hints.items():
        reducer = None
        base = hint
        if typing.get_origin(hint) is typing.Annotated:
            base = hint.__origin__
            reducer = _reducer(hint.__metadata__)
        keys.append((name, reducer, _initial(base) if reducer is not None else None))
    return keys


def _is_async(func: Callable) -> bool:
    return inspect.iscoroutinefunction(func) or inspect.iscoroutinefunction(
        getattr(func, "__call__", None)
    )


def _node_name(node: Any) -> str:
    name = getattr(node, "name", None) or getattr(node, "__name__", None)
    if not isinstance(name, str):
        raise ValueError(f"cannot name node {node!r}: pass a name, add_node('name', node)")
    return name


class StateGraph:
    """A graph whose nodes read and update a shared state (LangGraph's `StateGraph`)."""

    def __init__(self, state_schema: type, context_schema: Optional[type] = None, **_: Any) -> None:
        self.state_schema = state_schema
        self.context_schema = context_schema
        self.nodes: dict[str, Callable] = {}
        self.edges: list[tuple[list[str], str]] = []
        self.branches: list[tuple[str, Callable, Optional[list[str]]]] = []

    def add_node(self, node: Union[str, Callable], action: Optional[Callable] = None, **_: Any) -> "StateGraph":
        if not isinstance(node, str):
            node, action = _node_name(node), node
        if action is None:
            raise ValueError(f"node `{node}` needs a function")
        if node in self.nodes:
            raise ValueError(f"Node `{node}` already present.")
        if node in (START, END):
            raise ValueError(f"Node `{node}` is reserved.")
        self.nodes[node] = action
        return self

    def add_edge(self, start_key: Union[str, list[str]], end_key: str) -> "StateGraph":
        sources = [start_key] if isinstance(start_key, str) else list(start_key)
        self.edges.append((sources, end_key))
        return self

    def add_conditional_edges(
        self,
        source: str,
        path: Callable,
        path_map: Optional[Union[dict, list]] = None,
    ) -> "StateGraph":
        if isinstance(path_map, dict):
            mapping = dict(path_map)
            destinations: Optional[list[str]] = list(dict.fromkeys(mapping.values()))
        elif path_map is not None:
            mapping = None
            destinations = list(path_map)
        else:
            mapping = destinations = None

        def route(state: dict) -> list[str]:
            result = path(state)
            keys = list(result) if isinstance(result, (list, tuple)) else [result]
            if mapping is not None:
                return [mapping[key] for key in keys]
            return keys

        self.branches.append((source, route, destinations))
        return self

    def add_sequence(self, nodes: Sequence[Union[Callable, tuple[str, Callable]]]) -> "StateGraph":
        previous = None
        for node in nodes:
            name, action = node if isinstance(node, tuple) else (_node_name(node), node)
            self.add_node(name, action)
            if previous is not None:
                self.add_edge(previous, name)
            previous = name
        return self

    def set_entry_point(self, key: str) -> "StateGraph":
        return self.add_edge(START, key)

    def set_finish_point(self, key: str) -> "StateGraph":
        return self.add_edge(key, END)

    def set_conditional_entry_point(self, path: Callable, path_map: Optional[Union[dict, list]] = None) -> "StateGraph":
        return self.add_conditional_edges(START, path, path_map)

    def compile(
        self,
        checkpointer: Any = None,
        *,
        interrupt_before: Optional[Sequence[str]] = None,
        interrupt_after: Optional[Sequence[str]] = None,
        store: Any = None,
        **_: Any,
    ) -> "CompiledStateGraph":
        from agentgraph._runtime import NodeCall

        # Every node gets `(state, config)`; `NodeCall` injects what its signature asks for.
        triggers = self._triggers()
        nodes = [
            (name, NodeCall(action, triggers[name]), True, _is_async(action))
            for name, action in self.nodes.items()
        ]
        saver = getattr(checkpointer, "_native", None) if checkpointer else None
        if checkpointer and saver is None:
            # A LangGraph `BaseCheckpointSaver`: agent-core stores through its methods.
            if not all(callable(getattr(checkpointer, m, None)) for m in ("put", "put_writes", "get_tuple", "list")):
                raise TypeError(f"not a checkpointer: {checkpointer!r}")
            saver = checkpointer
        keys = _schema_keys(self.state_schema)
        if hasattr(checkpointer, "_bind_keys"):  # agentgraph's savers: LangGraph's read API
            checkpointer._bind_keys([(name, reducer is not None) for name, reducer, _ in keys])
        native = _native.compile(
            keys,
            nodes,
            self.edges,
            self.branches,
            saver,
            list(interrupt_before or ()),
            list(interrupt_after or ()),
        )
        compiled = CompiledStateGraph(native, self, triggers)
        compiled.store = store
        return compiled

    def _triggers(self) -> dict[str, tuple[str, ...]]:
        """Each node's trigger channels as LangGraph names them (its tasks show them):
        `branch:to:<node>`, and `join:<a>+<b>:<node>` for each join edge into it."""
        channels: dict[str, list[str]] = {name: [f"branch:to:{name}"] for name in self.nodes}
        for sources, target in self.edges:
            if len(sources) > 1 and target in channels:
                channels[target].append(f"join:{'+'.join(sources)}:{target}")
        return {name: tuple(sorted(names)) for name, names in channels.items()}


def _run_config(config: Optional[dict], context: Any, store: Any = None) -> dict:
    """The caller's config, with the run's `context` and the graph's store where nodes find
    them (private keys)."""
    config = dict(config or {})
    if context is not None:
        config["configurable"] = {**config.get("configurable", {}), CONTEXT_KEY: context}
    if store is not None:
        config["configurable"] = {**config.get("configurable", {}), STORE_KEY: store}
    return config


def _modes(stream_mode: Union[str, Sequence[str], None], default: str) -> tuple[list[str], bool]:
    if stream_mode is None:
        return [default], False
    if isinstance(stream_mode, str):
        return [stream_mode], False
    return list(stream_mode), True


class StateSnapshot(NamedTuple):
    """A thread's state at a checkpoint (LangGraph's `StateSnapshot`)."""

    values: dict
    next: tuple
    config: dict
    metadata: Optional[dict]
    created_at: Optional[str]
    parent_config: Optional[dict]
    tasks: tuple
    interrupts: tuple


def _snapshot(raw: Optional[tuple], config: dict) -> StateSnapshot:
    if raw is None:
        return StateSnapshot({}, (), config, None, None, None, (), ())
    values, next_, configurable, metadata, created_ms, parent, interrupts = raw
    created_at = datetime.fromtimestamp(created_ms / 1000, tz=timezone.utc).isoformat()
    return StateSnapshot(
        values,
        next_,
        {"configurable": configurable},
        metadata,
        created_at,
        {"configurable": parent} if parent is not None else None,
        (),
        interrupts,
    )


class CompiledStateGraph:
    """The runnable graph (LangGraph's `CompiledStateGraph`)."""

    stream_mode = "updates"
    store: Any = None

    def __init__(self, native: Any, builder: StateGraph, triggers: dict) -> None:
        self._native = native
        self.builder = builder
        self._node_triggers = triggers

    def invoke(self, input: Any, config: Optional[dict] = None, *, context: Any = None, **_: Any) -> Any:
        return self._native.invoke(input, _run_config(config, context, self.store))

    async def ainvoke(
        self, input: Any, config: Optional[dict] = None, *, context: Any = None, **_: Any
    ) -> Any:
        return await self._native.ainvoke(input, _run_config(config, context, self.store))

    def get_state(self, config: dict, *, subgraphs: bool = False) -> StateSnapshot:
        return _snapshot(self._native.get_state(dict(config)), config)

    async def aget_state(self, config: dict, *, subgraphs: bool = False) -> StateSnapshot:
        import asyncio

        return await asyncio.to_thread(self.get_state, config, subgraphs=subgraphs)

    def stream(
        self,
        input: Any,
        config: Optional[dict] = None,
        *,
        stream_mode: Union[str, Sequence[str], None] = None,
        context: Any = None,
        **_: Any,
    ) -> Iterator[Any]:
        modes, tagged = _modes(stream_mode, self.stream_mode)
        state = StreamState(modes, self._node_triggers)
        run_config = _run_config(config, context, self.store)
        first, parent = resumed(self, input, run_config, modes, tagged)
        stream = self._native.stream(input, run_config, modes, tagged, state, False, parent)
        yield from first
        while (part := stream.next()) is not None:
            yield part

    async def astream(
        self,
        input: Any,
        config: Optional[dict] = None,
        *,
        stream_mode: Union[str, Sequence[str], None] = None,
        context: Any = None,
        **_: Any,
    ) -> AsyncIterator[Any]:
        modes, tagged = _modes(stream_mode, self.stream_mode)
        state = StreamState(modes, self._node_triggers)
        run_config = _run_config(config, context, self.store)
        first, parent = resumed(self, input, run_config, modes, tagged)
        stream = self._native.stream(input, run_config, modes, tagged, state, True, parent)
        for part in first:
            yield part
        while (part := await stream.anext()) is not None:
            yield part
