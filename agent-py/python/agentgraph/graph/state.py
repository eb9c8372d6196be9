"""`StateGraph`: LangGraph's builder, recorded here and compiled by agent-core.

The builder only records nodes and edges; `compile()` reads the state schema (keys, their
`Annotated` reducers and initial values) and node signatures, and hands plain data to the
native module, which builds and validates agent-core's graph.
"""

from __future__ import annotations

import inspect
from collections.abc import AsyncIterator, Callable, Iterator, Sequence
from datetime import datetime, timezone
from typing import Any, NamedTuple, Optional, Union

from agentgraph import _native
from agentgraph._runtime import current_scope
from agentgraph._stream import CONTEXT_KEY, STORE_KEY, StreamState, resumed
from agentgraph.constants import END, START
from agentgraph.graph import _schema
from agentgraph.types import Send


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

    def __init__(
        self,
        state_schema: type,
        context_schema: Optional[type] = None,
        *,
        input_schema: Optional[type] = None,
        output_schema: Optional[type] = None,
        **kwargs: Any,
    ) -> None:
        input_schema = _legacy(kwargs, "input", input_schema)
        output_schema = _legacy(kwargs, "output", output_schema)
        self.state_schema = state_schema
        self.input_schema = input_schema or state_schema
        self.output_schema = output_schema or state_schema
        self.context_schema = context_schema
        self.nodes: dict[str, Callable] = {}
        # A node's input schema when it is not the state schema (given or annotated).
        self.node_schemas: dict[str, type] = {}
        self.edges: list[tuple[list[str], str]] = []
        self.branches: list[tuple[str, Callable, Optional[list[str]]]] = []
        # The input schema each branch's path function is annotated with (or None).
        self.branch_schemas: list[Optional[type]] = []

    def add_node(
        self,
        node: Union[str, Callable],
        action: Optional[Callable] = None,
        *,
        input_schema: Optional[type] = None,
        **kwargs: Any,
    ) -> "StateGraph":
        if not isinstance(node, str):
            node, action = _node_name(node), node
        if action is None:
            raise ValueError(f"node `{node}` needs a function")
        if node in self.nodes:
            raise ValueError(f"Node `{node}` already present.")
        if node in (START, END):
            raise ValueError(f"Node `{node}` is reserved.")
        self.nodes[node] = action
        schema = _legacy(kwargs, "input", input_schema) or _schema.inferred_input(action)
        if schema is not None:
            self.node_schemas[node] = schema
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

        def route(state: dict) -> list:
            result = path(state)
            keys = list(result) if isinstance(result, (list, tuple)) else [result]
            if mapping is not None:
                # A `Send` names its node itself; keys go through the path map.
                return [key if isinstance(key, Send) else mapping[key] for key in keys]
            return keys

        self.branches.append((source, route, destinations))
        self.branch_schemas.append(_schema.inferred_input(path))
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

        keys = _schema.Keys()
        for schema in [self.state_schema, self.input_schema, self.output_schema]:
            keys.add(schema)
        for schema in [*self.node_schemas.values(), *self.branch_schemas]:
            if schema is not None:
                keys.add(schema)
        # Every node gets `(state, config)`; `NodeCall` injects what its signature asks for,
        # and reads through the node's schema where that is not the graph's state dict.
        triggers = self._triggers()
        nodes = []
        for name, action in self.nodes.items():
            if isinstance(action, CompiledStateGraph):
                # A compiled graph is a subgraph node: the native graph runs it as a child run.
                nodes.append((name, action._native, False, False))
                continue
            is_async = _is_async(action)
            call = NodeCall(action, triggers[name])
            read = _schema.reader(self.node_schemas.get(name, self.state_schema), keys)
            if read is not None:
                call.fn = _schema.wrap_node(action, read, is_async)
            nodes.append((name, call, True, is_async))
        branches = []
        for (source, route, destinations), schema in zip(self.branches, self.branch_schemas):
            schema = schema or self.node_schemas.get(source, self.state_schema)
            branches.append((source, _schema.wrap_path(route, _schema.reader(schema, keys)), destinations))
        saver = getattr(checkpointer, "_native", None) if checkpointer else None
        if checkpointer and saver is None:
            # A LangGraph `BaseCheckpointSaver`: agent-core stores through its methods.
            if not all(callable(getattr(checkpointer, m, None)) for m in ("put", "put_writes", "get_tuple", "list")):
                raise TypeError(f"not a checkpointer: {checkpointer!r}")
            saver = checkpointer
        if hasattr(checkpointer, "_bind_keys"):  # agentgraph's savers: LangGraph's read API
            checkpointer._bind_keys([(name, reducer is not None) for name, reducer, _ in keys.specs])
        native = _native.compile(
            keys.specs,
            nodes,
            self.edges,
            branches,
            saver,
            list(interrupt_before or ()),
            list(interrupt_after or ()),
        )
        names = frozenset(keys.names)
        graph = CompiledStateGraph(native, self, triggers)
        graph.store = store
        if frozenset(keys.by_schema[self.input_schema]) != names:
            graph._input_names = frozenset(keys.by_schema[self.input_schema])
        if keys.by_schema[self.output_schema] != keys.names:
            graph._output_names = tuple(keys.by_schema[self.output_schema])
        return graph

    def _triggers(self) -> dict[str, tuple[str, ...]]:
        """Each node's trigger channels as LangGraph names them (its tasks show them):
        `branch:to:<node>`, and `join:<a>+<b>:<node>` for each join edge into it."""
        channels: dict[str, list[str]] = {name: [f"branch:to:{name}"] for name in self.nodes}
        for sources, target in self.edges:
            if len(sources) > 1 and target in channels:
                channels[target].append(f"join:{'+'.join(sources)}:{target}")
        return {name: tuple(sorted(names)) for name, names in channels.items()}


def _legacy(kwargs: dict, name: str, given: Optional[type]) -> Optional[type]:
    """LangGraph's deprecated `input=`/`output=` keywords, still taken (with its warning)."""
    if name not in kwargs:
        return given
    import warnings

    warnings.warn(
        f"`{name}` is deprecated and will be removed. Please use `{name}_schema` instead.",
        DeprecationWarning,
        stacklevel=3,
    )
    return given or kwargs[name]


def _run_config(
    config: Optional[dict], context: Any, durability: Optional[str] = None, store: Any = None
) -> dict:
    """The caller's config, with the run's `context` and the graph's store where nodes find
    them (private keys), and `durability=` where LangGraph keeps it."""
    config = dict(config or {})
    if context is not None:
        config["configurable"] = {**config.get("configurable", {}), CONTEXT_KEY: context}
    if store is not None:
        config["configurable"] = {**config.get("configurable", {}), STORE_KEY: store}
    if durability is not None:
        config["configurable"] = {**config.get("configurable", {}), "__pregel_durability": durability}
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
    # The input schema's keys when they are not all the graph's (input keys outside it are
    # dropped), and the output schema's when they are not (`invoke` returns only those).
    _input_names: Optional[frozenset] = None
    _output_names: Optional[tuple] = None
    store: Any = None

    def __init__(self, native: Any, builder: StateGraph, triggers: dict) -> None:
        self._native = native
        self.builder = builder
        self._node_triggers = triggers

    def _input(self, input: Any) -> Any:
        return _schema.input_update(input, self._input_names)

    def _output(self, out: Any) -> Any:
        if self._output_names is None or not isinstance(out, dict):
            return out
        picked = {k: out[k] for k in self._output_names if k in out}
        if "__interrupt__" in out:
            picked["__interrupt__"] = out["__interrupt__"]
        return picked

    def invoke(
        self,
        input: Any,
        config: Optional[dict] = None,
        *,
        context: Any = None,
        durability: Optional[str] = None,
        **_: Any,
    ) -> Any:
        scope = current_scope()
        if scope is not None:
            # Inside a node: a subgraph of that node's task (LangGraph's nested invoke).
            self._check_no_async_inside_a_loop()
            return self._output(_native.invoke_in(self._native, scope, self._input(input)))
        run_config = _run_config(config, context, durability, self.store)
        return self._output(self._native.invoke(self._input(input), run_config))

    def _async_nodes(self) -> list[str]:
        names = []
        for name, action in self.builder.nodes.items():
            if isinstance(action, CompiledStateGraph):
                names.extend(action._async_nodes())
            elif _is_async(action):
                names.append(name)
        return names

    def _check_no_async_inside_a_loop(self) -> None:
        """A sync `invoke` inside an async node blocks the loop its async nodes would be
        awaited on: refused, as LangGraph refuses async nodes in a sync run."""
        import asyncio

        try:
            asyncio.get_running_loop()
        except RuntimeError:
            return
        names = self._async_nodes()
        if names:
            raise TypeError(
                f'No synchronous function provided to "{names[0]}".\nEither initialize with a '
                "synchronous function or invoke via the async API (ainvoke, astream, etc.)"
            )

    async def ainvoke(
        self,
        input: Any,
        config: Optional[dict] = None,
        *,
        context: Any = None,
        durability: Optional[str] = None,
        **_: Any,
    ) -> Any:
        scope = current_scope()
        if scope is not None:
            return self._output(await _native.ainvoke_in(self._native, scope, self._input(input)))
        run_config = _run_config(config, context, durability, self.store)
        return self._output(await self._native.ainvoke(self._input(input), run_config))

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
        subgraphs: bool = False,
        durability: Optional[str] = None,
        **_: Any,
    ) -> Iterator[Any]:
        modes, tagged = _modes(stream_mode, self.stream_mode)
        state = StreamState(modes, self._node_triggers)
        run_config = _run_config(config, context, durability, self.store)
        input = self._input(input)
        first, parent = resumed(self, input, run_config, modes, tagged)
        stream = self._native.stream(
            input, run_config, modes, tagged, state, False, parent, subgraphs=subgraphs
        )
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
        subgraphs: bool = False,
        durability: Optional[str] = None,
        **_: Any,
    ) -> AsyncIterator[Any]:
        modes, tagged = _modes(stream_mode, self.stream_mode)
        state = StreamState(modes, self._node_triggers)
        run_config = _run_config(config, context, durability, self.store)
        input = self._input(input)
        first, parent = resumed(self, input, run_config, modes, tagged)
        stream = self._native.stream(
            input, run_config, modes, tagged, state, True, parent, subgraphs=subgraphs
        )
        for part in first:
            yield part
        while (part := await stream.anext()) is not None:
            yield part
