"""`StateGraph`: LangGraph's builder, recorded here and compiled by agent-core.

The builder only records nodes and edges; `compile()` reads the state schema (keys, their
`Annotated` reducers and initial values) and node signatures, and hands plain data to the
native module, which builds and validates agent-core's graph.
"""

from __future__ import annotations

import inspect
from collections.abc import AsyncIterator, Callable, Iterator, Sequence
from datetime import datetime, timezone
from typing import Any, Optional, Union

from agentgraph import _native, _stream, _stream_tools, _stream_v2
from agentgraph._runtime import current_scope
from agentgraph._stream import CONTEXT_KEY, STORE_KEY, StreamState, resumed
from agentgraph.constants import END, START
from agentgraph.errors import InvalidUpdateError
from agentgraph.graph import _policies, _schema, _subgraphs
from agentgraph.types import Command, PregelTask, Send, StateSnapshot


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
        # The state schema's managed values (`RemainingSteps`...): key to manager.
        self.managed: dict[str, Any] = _schema.managed_keys(state_schema)
        self.nodes: dict[str, Callable] = {}
        # A node's input schema when it is not the state schema (given or annotated).
        self.node_schemas: dict[str, type] = {}
        # Per node: its `retry_policy` and `cache_policy` (LangGraph's `add_node` keywords).
        self.policies: dict[str, tuple[Any, Any]] = {}
        self.default_policies: tuple[Any, Any] = (None, None)
        self.node_metadata: dict[str, dict] = {}
        # Conditional edges as given (source, path_map), for `get_graph()`.
        self.drawn_branches: list[tuple[str, Any]] = []
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
        retry_policy: Any = None,
        cache_policy: Any = None,
        **kwargs: Any,
    ) -> "StateGraph":
        if retry_policy is None:
            retry_policy = kwargs.get("retry")  # LangGraph's deprecated spelling
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
        if kwargs.get("metadata"):
            self.node_metadata[node] = kwargs["metadata"]
        if retry_policy is not None or cache_policy is not None:
            self.policies[node] = (retry_policy, cache_policy)
        return self

    def set_node_defaults(
        self,
        *,
        retry_policy: Any = None,
        cache_policy: Any = None,
        error_handler: Any = None,
        timeout: Any = None,
    ) -> "StateGraph":
        """Policies for every node that does not set its own (applied at `compile()`)."""
        if error_handler is not None or timeout is not None:
            raise NotImplementedError("set_node_defaults: error_handler and timeout are not supported by agentgraph yet")
        retry, cache = self.default_policies
        self.default_policies = (
            retry_policy if retry_policy is not None else retry,
            cache_policy if cache_policy is not None else cache,
        )
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

        # An async path function is awaited on the run's loop (LangGraph's `TypeError` under
        # the sync API).
        is_async, name = _is_async(path), getattr(path, "__name__", None)

        def route(state: dict) -> list:
            result = path(state)
            if is_async:
                result = _native.await_router(result, name)
            keys = list(result) if isinstance(result, (list, tuple)) else [result]
            if mapping is not None:
                # A `Send` names its node itself; keys go through the path map.
                return [key if isinstance(key, Send) else mapping[key] for key in keys]
            return keys

        self.branches.append((source, route, destinations))
        self.branch_schemas.append(_schema.inferred_input(path))
        self.drawn_branches.append((source, path_map))
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
        cache: Any = None,
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
        # Retry and cache policies wrap the function itself (`_policies`).
        triggers = self._triggers()
        nodes = []
        for name, action in self.nodes.items():
            if isinstance(action, CompiledStateGraph):
                # A compiled graph is a subgraph node: the native graph runs it as a child run.
                nodes.append((name, action._native, False, False))
                continue
            is_async = _is_async(action)
            retry_policy, cache_policy = self.policies.get(name, (None, None))
            if retry_policy is None:
                retry_policy = self.default_policies[0]
            if cache_policy is None:
                cache_policy = self.default_policies[1]
            action = _policies.with_retry(action, retry_policy, is_async)
            action = _policies.with_cache(name, action, cache_policy, cache, is_async)
            call = NodeCall(action, triggers[name])
            read = _schema.reader(self.node_schemas.get(name, self.state_schema), keys)
            if read is not None:
                call.fn = _schema.wrap_node(action, read, is_async)
            nodes.append((name, call, True, is_async))
        branches = []
        for (source, route, destinations), schema in zip(self.branches, self.branch_schemas):
            schema = schema or self.node_schemas.get(source, self.state_schema)
            branches.append((source, _schema.wrap_path(route, _schema.reader(schema, keys)), destinations))
        # `True`/`False` on a child: its own history per thread, or none (`_subgraphs`).
        own = checkpointer if isinstance(checkpointer, bool) else None
        if own is not None:
            checkpointer = None
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
            self._interrupt_nodes(interrupt_before),
            self._interrupt_nodes(interrupt_after),
        )
        if own:
            native = _native.with_subgraph_checkpoints(native, "thread")
        # `False` keeps checkpointing per task natively: LangGraph still lets such a child
        # `interrupt()` (resumed through its parent); the state API shows it without any.
        elif own is False:
            native = _native.with_subgraph_checkpoints(native, "task")
        names = frozenset(keys.names)
        graph = CompiledStateGraph(native, self, triggers)
        graph.checkpointer = own if own is not None else checkpointer
        graph.store = store
        if frozenset(keys.by_schema[self.input_schema]) != names:
            graph._input_names = frozenset(keys.by_schema[self.input_schema])
        if keys.by_schema[self.output_schema] != keys.names:
            graph._output_names = tuple(keys.by_schema[self.output_schema])
        graph.interrupt_before_nodes = self._interrupt_nodes(interrupt_before)
        graph.interrupt_after_nodes = self._interrupt_nodes(interrupt_after)
        return graph

    def _interrupt_nodes(self, nodes: Any) -> list[str]:
        """A list of node names; LangGraph's `"*"` is every node."""
        if nodes == "*":
            return list(self.nodes)
        return list(nodes or ())

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


def _merge_configs(base: dict, config: Optional[dict]) -> dict:
    """`config` over `base` as LangGraph merges run configs."""
    merged = dict(base)
    for key, value in (config or {}).items():
        if value is None:
            continue
        if key in ("metadata", "configurable") and isinstance(merged.get(key), dict):
            merged[key] = {**merged[key], **value}
        elif key == "tags" and merged.get(key):
            merged[key] = list(dict.fromkeys([*merged[key], *value]))
        elif key == "callbacks" and merged.get(key):
            if isinstance(merged[key], list) and isinstance(value, list):
                merged[key] = [*merged[key], *value]
            else:
                merged[key] = value
        else:
            merged[key] = value
    return merged


def _run_config(config: Optional[dict], context: Any, store: Any = None) -> dict:
    """The caller's config, with the run's `context` and the graph's store where nodes find
    them (private keys)."""
    config = dict(config or {})
    if context is not None:
        config["configurable"] = {**config.get("configurable", {}), CONTEXT_KEY: context}
    if store is not None:
        config["configurable"] = {**config.get("configurable", {}), STORE_KEY: store}
    return config


class _ToolsStream:
    """The native stream, its `tools` events shown as `tools` items (`_stream_tools`)."""

    def __init__(self, native: Any, modes: list, tagged: bool, subgraphs: bool) -> None:
        self.native, self.modes, self.tagged, self.subgraphs = native, modes, tagged, subgraphs

    def next(self) -> Any:
        while (part := self.native.next()) is not None:
            shown = _stream_tools.as_v1(part, self.modes, self.tagged, self.subgraphs)
            if shown is not None:
                return shown[0]
        return None

    async def anext(self) -> Any:
        while (part := await self.native.anext()) is not None:
            shown = _stream_tools.as_v1(part, self.modes, self.tagged, self.subgraphs)
            if shown is not None:
                return shown[0]
        return None


def _modes(stream_mode: Union[str, Sequence[str], None], default: str) -> tuple[list[str], bool]:
    if stream_mode is None:
        return [default], False
    if isinstance(stream_mode, str):
        return [stream_mode], False
    return list(stream_mode), True


def _snapshot(raw: Optional[tuple], config: dict, order: dict) -> StateSnapshot:
    """LangGraph's snapshot of the native tuple; `order` ranks nodes as LangGraph lists a
    checkpoint's next tasks (`__start__`, then the nodes as added)."""
    if raw is None:
        return StateSnapshot({}, (), config, None, None, None, (), ())
    values, next_, configurable, metadata, created_ms, parent, interrupts, tasks, _ = raw
    next_ = tuple(sorted(next_, key=lambda name: order.get(name, len(order))))
    created_at = datetime.fromtimestamp(created_ms / 1000, tz=timezone.utc).isoformat()
    return StateSnapshot(
        values,
        next_,
        {"configurable": configurable},
        _metadata(metadata),
        created_at,
        {"configurable": parent} if parent is not None else None,
        _tasks(tasks, next_, configurable, order),
        interrupts,
    )


def _tasks(raw: tuple, next_: tuple, configurable: dict, order: dict) -> tuple:
    tasks = [
        PregelTask(id, name, ("__pregel_pull", name), error, interrupts)
        for id, name, error, interrupts in raw
    ]
    # Sends' tasks first, as given; then the nodes' own, in LangGraph's order.
    pulls = [t for t in tasks if ":pull:" in t.id]
    pulls.sort(key=lambda task: order.get(task.name, len(order)))
    tasks = [t for t in tasks if ":pull:" not in t.id] + pulls
    if START in next_ and all(t.name != START for t in tasks):
        # The input not yet applied: LangGraph shows it as a task of `__start__`.
        id = f"{configurable.get('checkpoint_id')}:pull:{START}"
        tasks.insert(0, PregelTask(id, START, ("__pregel_pull", START)))
    return tuple(tasks)


def _metadata(stored: Optional[dict]) -> Optional[dict]:
    """A checkpoint's metadata as LangGraph shows it: `source`, `step`, what the run's config
    added, `parents` (agent-core's `run_id` and an update's encoded `writes` are its own)."""
    if stored is None:
        return None
    shown = {k: v for k, v in stored.items() if k not in ("run_id", "parents", "writes")}
    if shown.get("source") == "fork" and "writes" in stored:
        # agent-core names an update on an older checkpoint a fork; LangGraph 1.2 keeps
        # `fork` for the copy time travel starts its branch with (which writes nothing).
        shown["source"] = "update"
    shown["parents"] = stored.get("parents", {})
    return shown


def _run_options(
    builder: "StateGraph",
    interrupt_before: Any,
    interrupt_after: Any,
    durability: Optional[str],
    checkpoint_during: Optional[bool],
) -> Optional[dict]:
    """The run's keyword options for the native side (`None` when there are none)."""
    if checkpoint_during is not None:
        if durability is not None:
            raise ValueError(
                "Cannot use both `checkpoint_during` and `durability` parameters. Please use `durability` instead."
            )
        durability = "async" if checkpoint_during else "exit"
    options: dict = {}
    if interrupt_before is not None:
        options["interrupt_before"] = builder._interrupt_nodes(interrupt_before)
    if interrupt_after is not None:
        options["interrupt_after"] = builder._interrupt_nodes(interrupt_after)
    if durability is not None:
        options["durability"] = durability
    return options or None


class CompiledStateGraph:
    """The runnable graph (LangGraph's `CompiledStateGraph`)."""

    stream_mode = "updates"
    # The input schema's keys when they are not all the graph's (input keys outside it are
    # dropped), and the output schema's when they are not (`invoke` returns only those).
    _input_names: Optional[frozenset] = None
    _output_names: Optional[tuple] = None
    store: Any = None
    # What `compile(checkpointer=...)` got: a saver, None, or a child's True/False.
    checkpointer: Any = None
    interrupt_before_nodes: list = []
    interrupt_after_nodes: list = []

    # What `with_config` bound: the base of every run's config.
    _bound_config: dict = {}

    def with_config(self, config: Optional[dict] = None, **kwargs: Any) -> "CompiledStateGraph":
        """This graph with `config` (and `kwargs`, e.g. `recursion_limit=`) as the base of
        each run's config: a run's own config is merged over it (tags and callbacks added,
        metadata and configurable merged by key, anything else replaced)."""
        import copy

        bound = copy.copy(self)
        bound._bound_config = _merge_configs(self._bound_config, {**(config or {}), **kwargs})
        return bound

    def __init__(self, native: Any, builder: StateGraph, triggers: dict) -> None:
        self._native = native
        self.builder = builder
        self._node_triggers = triggers
        self._order = {name: i for i, name in enumerate([START, *builder.nodes])}

    def _input(self, input: Any) -> Any:
        return _schema.input_update(input, self._input_names)

    def _output(self, out: Any) -> Any:
        if self._output_names is None or not isinstance(out, dict):
            return out
        picked = {k: out[k] for k in self._output_names if k in out}
        if "__interrupt__" in out:
            picked["__interrupt__"] = out["__interrupt__"]
        return picked

    def _options(self, interrupt_before: Any, interrupt_after: Any, durability: Any, kwargs: dict) -> Optional[dict]:
        return _run_options(
            self.builder, interrupt_before, interrupt_after, durability, kwargs.get("checkpoint_during")
        )

    def _run_args(
        self, input: Any, config: Any, context: Any, before: Any, after: Any, durability: Any, kwargs: dict
    ) -> tuple:
        """The native run's arguments: the input through the input schema, the run's config,
        its keyword options."""
        options = self._options(before, after, durability, kwargs)
        if self._bound_config:
            config = _merge_configs(self._bound_config, config)
        config = _subgraphs.root_config(config)
        return self._input(input), _run_config(config, context, store=self.store), options

    def _start_stream(
        self,
        input: Any,
        config: Any,
        stream_mode: Any,
        context: Any,
        subgraphs: bool,
        before: Any,
        after: Any,
        durability: Any,
        kwargs: dict,
        *,
        is_async: bool,
    ) -> tuple:
        """`stream`'s and `astream`'s start: the chunks a resumed run shows first, and the
        native stream."""
        self._check_root()
        modes, tagged = _modes(stream_mode, self.stream_mode)
        input, run_config, options = self._run_args(input, config, context, before, after, durability, kwargs)
        state = StreamState(modes, self._node_triggers)
        first, parent = resumed(self, input, run_config, modes, tagged)
        stream = self._native.stream(
            input, run_config, _stream_tools.native_modes(modes), tagged, state, is_async, parent, options,
            subgraphs=subgraphs,
        )
        if "tools" in modes or "messages" in modes:
            # `tools` rides on `messages` (a nested stream's may reach this one too): each
            # shown as its own mode, or not at all if not asked.
            return first, _ToolsStream(stream, modes, tagged, subgraphs)
        return first, stream

    def invoke(
        self,
        input: Any,
        config: Optional[dict] = None,
        *,
        context: Any = None,
        interrupt_before: Any = None,
        interrupt_after: Any = None,
        durability: Optional[str] = None,
        version: str = "v1",
        **kwargs: Any,
    ) -> Any:
        if _stream_v2.check(version):
            parts = self.stream(
                input, config, stream_mode="values", context=context, interrupt_before=interrupt_before,
                interrupt_after=interrupt_after, durability=durability, version="v2", **kwargs,
            )
            return _stream_v2.graph_output(list(parts), "values")
        scope = current_scope()
        if scope is not None:
            # Inside a node: a subgraph of that node's task (LangGraph's nested invoke).
            self._check_no_async_inside_a_loop()
            token = _stream.rooted(scope, config)
            try:
                return self._output(_native.invoke_in(self._native, scope, self._input(input)))
            finally:
                if token is not None:
                    _stream._ROOTED.reset(token)
        self._check_root()
        run = self._run_args(input, config, context, interrupt_before, interrupt_after, durability, kwargs)
        return self._output(self._native.invoke(*run))

    def _check_root(self) -> None:
        if self.checkpointer is True:
            raise RuntimeError("checkpointer=True cannot be used for root graphs.")

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
        interrupt_before: Any = None,
        interrupt_after: Any = None,
        durability: Optional[str] = None,
        version: str = "v1",
        **kwargs: Any,
    ) -> Any:
        if _stream_v2.check(version):
            parts = self.astream(
                input, config, stream_mode="values", context=context, interrupt_before=interrupt_before,
                interrupt_after=interrupt_after, durability=durability, version="v2", **kwargs,
            )
            return _stream_v2.graph_output([part async for part in parts], "values")
        scope = current_scope()
        if scope is not None:
            token = _stream.rooted(scope, config)
            try:
                return self._output(await _native.ainvoke_in(self._native, scope, self._input(input)))
            finally:
                if token is not None:
                    _stream._ROOTED.reset(token)
        self._check_root()
        run = self._run_args(input, config, context, interrupt_before, interrupt_after, durability, kwargs)
        return self._output(await self._native.ainvoke(*run))

    def get_state(self, config: dict, *, subgraphs: bool = False) -> StateSnapshot:
        """The thread's state (a subgraph's, for a config naming its `checkpoint_ns`); with
        `subgraphs`, each pending subgraph task's own snapshot in `tasks[i].state`."""
        return _subgraphs.get_state(self, config, subgraphs)

    async def aget_state(self, config: dict, *, subgraphs: bool = False) -> StateSnapshot:
        import asyncio

        return await asyncio.to_thread(self.get_state, config, subgraphs=subgraphs)

    def get_state_history(
        self,
        config: dict,
        *,
        filter: Optional[dict] = None,
        before: Optional[dict] = None,
        limit: Optional[int] = None,
    ) -> Iterator[StateSnapshot]:
        """The thread's checkpoints, newest first (one alone when `config` names one)."""
        graph, lender, config = _subgraphs.route(self, config)
        _subgraphs.check_saver(graph, lender)
        lent = lender._native if lender is not None else None
        for raw in _native.get_state_history(graph._native, dict(config), filter, before, limit, lent):
            yield _subgraphs.with_task_states(graph, _snapshot(raw, config, graph._order), False, lender or graph)

    async def aget_state_history(
        self,
        config: dict,
        *,
        filter: Optional[dict] = None,
        before: Optional[dict] = None,
        limit: Optional[int] = None,
    ) -> AsyncIterator[StateSnapshot]:
        import asyncio

        history = await asyncio.to_thread(
            lambda: list(self.get_state_history(config, filter=filter, before=before, limit=limit))
        )
        for snapshot in history:
            yield snapshot

    def update_state(self, config: dict, values: Any, as_node: Optional[str] = None, **_: Any) -> dict:
        """Writes `values` through the keys' reducers as if node `as_node` had returned them
        (the checkpoint's last writer when it was one node), so the next step follows that
        node's edges; on an older checkpoint this forks. Returns the new checkpoint's config."""
        graph, lender, config = _subgraphs.route(self, config, for_update=True)
        if graph is not self:
            return graph._update_state(config, values, as_node, lender)
        _subgraphs.check_saver(self, None)
        return self._update_state(config, values, as_node, None)

    def _update_state(self, config: dict, values: Any, as_node: Optional[str], lender: Any) -> dict:
        if as_node == "__copy__":
            # Time travel's branch point: a sibling copy of the checkpoint (source `fork`),
            # whose next tasks run afresh. Like LangGraph, a copy takes no values (its bulk
            # form, a list of updates for the copy, is not supported yet).
            if isinstance(values, list) and values:
                raise NotImplementedError("update_state(as_node='__copy__') with a list of updates")
            if lender is not None:
                raise NotImplementedError("update_state(as_node='__copy__') on a subgraph's checkpoint")
            return {"configurable": _native.copy_checkpoint(self._native, dict(config))}
        goto: list = []
        if isinstance(values, Command):
            if values.graph is not None or values.resume is not None:
                raise InvalidUpdateError("update_state takes a Command's update and goto only")
            goto = [values.goto] if isinstance(values.goto, str) else list(values.goto)
            if not all(isinstance(name, str) for name in goto):
                raise NotImplementedError("update_state: a Command's goto with Send is not supported yet")
            values = values.update
        if values is not None and not isinstance(values, dict):
            raise InvalidUpdateError(
                f"Expected dict, got {values!r}\nFor troubleshooting, visit: "
                "https://docs.langchain.com/oss/python/langgraph/errors/INVALID_GRAPH_NODE_RETURN_VALUE"
            )
        if as_node is None:
            as_node = self._last_writer(config, lender)
        if as_node != START and as_node not in self.builder.nodes:
            raise InvalidUpdateError(f"Node {as_node} does not exist")
        lent = lender._native if lender is not None else None
        return {"configurable": _native.update_state(self._native, dict(config), values, as_node, goto, lent)}

    def _last_writer(self, config: dict, lender: Any = None) -> str:
        """The node an update counts as when none is named (LangGraph's rule): the one that
        last ran, `__start__` before any did, an error when several ran in that step. Updates
        write without running, so their checkpoints are passed over."""
        lent = lender._native if lender is not None else None
        raw = _native.get_state_in(self._native, dict(config), lent)
        while raw is not None and raw[3].get("source") in ("update", "fork") and raw[5] is not None:
            raw = _native.get_state_in(self._native, {"configurable": raw[5]}, lent)
        writers = list(dict.fromkeys(raw[8])) if raw is not None else []
        if len(writers) > 1:
            raise InvalidUpdateError("Ambiguous update, specify as_node")
        return writers[0] if writers else START

    async def aupdate_state(self, config: dict, values: Any, as_node: Optional[str] = None, **kwargs: Any) -> dict:
        import asyncio

        return await asyncio.to_thread(self.update_state, config, values, as_node, **kwargs)

    def _v2_mappers(self) -> tuple:
        """The v2 stream's coercions of `values` parts and of checkpoints' state."""
        return _stream_v2.mapper(self.builder.output_schema), _stream_v2.mapper(self.builder.state_schema)

    def get_graph(self, config: Optional[dict] = None, *, xray: Any = False) -> Any:
        """The graph's drawable structure (LangChain's `Graph`: `draw_mermaid()`, ...)."""
        from agentgraph.graph._draw import draw

        return draw(self.builder, self.interrupt_before_nodes, self.interrupt_after_nodes)

    def stream(
        self,
        input: Any,
        config: Optional[dict] = None,
        *,
        stream_mode: Union[str, Sequence[str], None] = None,
        context: Any = None,
        subgraphs: bool = False,
        interrupt_before: Any = None,
        interrupt_after: Any = None,
        durability: Optional[str] = None,
        version: str = "v1",
        **kwargs: Any,
    ) -> Iterator[Any]:
        if _stream_v2.check(version):
            yield from _stream_v2.parts(
                self.stream(
                    input, config, stream_mode=_stream_v2.modes(stream_mode, self.stream_mode),
                    context=context, subgraphs=subgraphs, interrupt_before=interrupt_before,
                    interrupt_after=interrupt_after, durability=durability, **kwargs,
                ),
                subgraphs, *self._v2_mappers(),
            )
            return
        first, stream = self._start_stream(
            input, config, stream_mode, context, subgraphs, interrupt_before, interrupt_after,
            durability, kwargs, is_async=False,
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
        interrupt_before: Any = None,
        interrupt_after: Any = None,
        durability: Optional[str] = None,
        version: str = "v1",
        **kwargs: Any,
    ) -> AsyncIterator[Any]:
        if _stream_v2.check(version):
            stream_v1 = self.astream(
                input, config, stream_mode=_stream_v2.modes(stream_mode, self.stream_mode),
                context=context, subgraphs=subgraphs, interrupt_before=interrupt_before,
                interrupt_after=interrupt_after, durability=durability, **kwargs,
            )
            async for part in _stream_v2.aparts(stream_v1, subgraphs, *self._v2_mappers()):
                yield part
            return
        first, stream = self._start_stream(
            input, config, stream_mode, context, subgraphs, interrupt_before, interrupt_after,
            durability, kwargs, is_async=True,
        )
        for part in first:
            yield part
        while (part := await stream.anext()) is not None:
            yield part
