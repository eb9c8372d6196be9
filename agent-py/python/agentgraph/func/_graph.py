"""The graph `@entrypoint` makes: a compiled one-node `StateGraph` whose private state keys
it hides, showing what LangGraph's entrypoint `Pregel` shows (the return value as output and
state values, `{name: value}` updates, tasks' results in `updates`)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator, Sequence
from typing import Any, Callable, Optional, Union

from agentgraph import _stream_v2
from agentgraph.func import _INPUT, _OUTPUT, _PREVIOUS, _TaskEvent, _TaskUpdate
from agentgraph.types import Command, StateSnapshot

_MODES = ("values", "updates", "custom", "messages", "debug", "tasks", "checkpoints")


class _Entrypoint:
    """LangGraph's `Pregel` of an entrypoint: `invoke`/`stream` and the thread API."""

    stream_mode = "updates"

    def __init__(self, graph: Any, name: str, func: Callable) -> None:
        self._graph = graph
        self.name = name
        self.func = func
        self.checkpointer = getattr(graph.builder, "checkpointer", None)
        self.store = graph.store
        self.builder = graph.builder

    def __repr__(self) -> str:
        return f"<entrypoint {self.name}>"

    @staticmethod
    def _input(input: Any) -> Any:
        if isinstance(input, Command) or input is None:
            return input
        return {_INPUT: input}

    @staticmethod
    def _output(out: Any) -> Any:
        if isinstance(out, dict):
            if "__interrupt__" in out:
                return {"__interrupt__": out["__interrupt__"]}
            return out.get(_OUTPUT)
        return out

    def invoke(self, input: Any, config: Optional[dict] = None, **kwargs: Any) -> Any:
        kwargs.pop("stream_mode", None)
        if _stream_v2.check(kwargs.pop("version", "v1")):
            parts = self.stream(input, config, stream_mode="values", version="v2", **kwargs)
            return _stream_v2.graph_output(list(parts), "values")
        return self._output(self._graph.invoke(self._input(input), config, **kwargs))

    async def ainvoke(self, input: Any, config: Optional[dict] = None, **kwargs: Any) -> Any:
        kwargs.pop("stream_mode", None)
        if _stream_v2.check(kwargs.pop("version", "v1")):
            parts = self.astream(input, config, stream_mode="values", version="v2", **kwargs)
            return _stream_v2.graph_output([part async for part in parts], "values")
        return self._output(await self._graph.ainvoke(self._input(input), config, **kwargs))

    def _modes(self, stream_mode: Union[str, Sequence[str], None]) -> tuple[list[str], bool, list[str]]:
        """The user's modes, whether chunks are tagged with theirs, the modes asked of the
        graph (`custom` carries tasks' updates; `updates` tells a values chunk that follows
        the entrypoint's own from the input's)."""
        if stream_mode is None:
            modes, tagged = [self.stream_mode], False
        elif isinstance(stream_mode, str):
            modes, tagged = [stream_mode], False
        else:
            modes, tagged = list(stream_mode), True
        inner = list(modes)
        if "updates" in modes and "custom" not in inner:
            inner.append("custom")
        if "tasks" in modes and "custom" not in inner:
            inner.append("custom")
        if "values" in modes and "updates" not in inner:
            inner.append("updates")
        return modes, tagged, inner

    def _translate(self, modes: list[str], tagged: bool, subgraphs: bool, input: Any) -> Callable[[Any], list]:
        # A values chunk shows the return value after the entrypoint wrote it; a resumed run
        # (no new input) shows the stored one first too, as LangGraph's does.
        wrote: dict = {(): input is None or isinstance(input, Command)}

        def out(ns: tuple, mode: str, chunk: Any) -> list:
            if mode not in modes:
                return []
            item = (mode, chunk) if tagged else chunk
            return [(ns, *item) if tagged and subgraphs else (ns, item) if subgraphs else item]

        def translate(part: Any) -> list:
            if subgraphs:
                ns, mode, chunk = part
            else:
                ns, (mode, chunk) = (), part
            if ns:
                return out(ns, mode, chunk)
            if mode == "custom" and isinstance(chunk, _TaskUpdate):
                return out(ns, "updates", {chunk.name: chunk.value})
            if mode == "custom" and isinstance(chunk, _TaskEvent):
                return out(ns, "tasks", {"id": chunk.id, **chunk.payload})
            if mode == "tasks" and isinstance(chunk, dict) and chunk.get("name") == self.name:
                return out(ns, mode, self._own_task(chunk))
            if mode == "updates" and isinstance(chunk, dict):
                if self.name in chunk:
                    wrote[ns] = True
                    value = chunk[self.name]
                    return out(ns, mode, {self.name: value.get(_OUTPUT) if isinstance(value, dict) else value})
                return out(ns, mode, chunk)
            if mode == "values" and isinstance(chunk, dict):
                if "__interrupt__" in chunk:
                    return out(ns, mode, {"__interrupt__": chunk["__interrupt__"]})
                if not wrote.pop(ns, False):
                    return []
                return out(ns, mode, chunk.get(_OUTPUT))
            return out(ns, mode, chunk)

        return translate

    @staticmethod
    def _own_task(chunk: dict) -> dict:
        """The entrypoint's own `tasks` item as LangGraph shows it: its input and return
        value, triggered by `__start__`."""
        chunk = dict(chunk)
        if "input" in chunk:
            given = chunk["input"]
            chunk["input"] = given.get(_INPUT) if isinstance(given, dict) else given
            chunk["triggers"] = ("__start__",)
        result = chunk.get("result")
        if isinstance(result, dict) and _OUTPUT in result:
            chunk["result"] = {"__end__": result[_OUTPUT]}
        return chunk

    def stream(
        self,
        input: Any,
        config: Optional[dict] = None,
        *,
        stream_mode: Union[str, Sequence[str], None] = None,
        subgraphs: bool = False,
        version: str = "v1",
        **kwargs: Any,
    ) -> Iterator[Any]:
        if _stream_v2.check(version):
            stream_v1 = self.stream(
                input, config, stream_mode=_stream_v2.modes(stream_mode, self.stream_mode), subgraphs=subgraphs, **kwargs
            )
            yield from _stream_v2.parts(stream_v1, subgraphs)
            return
        modes, tagged, inner = self._modes(stream_mode)
        translate = self._translate(modes, tagged, subgraphs, input)
        for part in self._graph.stream(self._input(input), config, stream_mode=inner, subgraphs=subgraphs, **kwargs):
            yield from translate(part)

    async def astream(
        self,
        input: Any,
        config: Optional[dict] = None,
        *,
        stream_mode: Union[str, Sequence[str], None] = None,
        subgraphs: bool = False,
        version: str = "v1",
        **kwargs: Any,
    ) -> AsyncIterator[Any]:
        if _stream_v2.check(version):
            stream_v1 = self.astream(
                input, config, stream_mode=_stream_v2.modes(stream_mode, self.stream_mode), subgraphs=subgraphs, **kwargs
            )
            async for part in _stream_v2.aparts(stream_v1, subgraphs):
                yield part
            return
        modes, tagged, inner = self._modes(stream_mode)
        translate = self._translate(modes, tagged, subgraphs, input)
        async for part in self._graph.astream(self._input(input), config, stream_mode=inner, subgraphs=subgraphs, **kwargs):
            for item in translate(part):
                yield item

    def _snapshot(self, snapshot: StateSnapshot) -> StateSnapshot:
        """The snapshot as LangGraph's entrypoint shows it: the return value (`None` before
        the first one; `{}` for a thread with no checkpoint)."""
        if snapshot.metadata is None:
            return snapshot
        values = snapshot.values
        return snapshot._replace(values=values.get(_OUTPUT) if isinstance(values, dict) else values)

    def get_state(self, config: dict, *, subgraphs: bool = False) -> StateSnapshot:
        return self._snapshot(self._graph.get_state(config, subgraphs=subgraphs))

    async def aget_state(self, config: dict, *, subgraphs: bool = False) -> StateSnapshot:
        return self._snapshot(await self._graph.aget_state(config, subgraphs=subgraphs))

    def get_state_history(self, config: dict, **kwargs: Any) -> Iterator[StateSnapshot]:
        for snapshot in self._graph.get_state_history(config, **kwargs):
            yield self._snapshot(snapshot)

    async def aget_state_history(self, config: dict, **kwargs: Any) -> AsyncIterator[StateSnapshot]:
        async for snapshot in self._graph.aget_state_history(config, **kwargs):
            yield self._snapshot(snapshot)

    def _update(self, values: Any) -> Any:
        if isinstance(values, dict) and set(values) <= {_OUTPUT, _PREVIOUS}:
            return values
        return {_OUTPUT: values, _PREVIOUS: values}

    def update_state(self, config: dict, values: Any, as_node: Optional[str] = None, **kwargs: Any) -> dict:
        """Writes `values` as the entrypoint's return value (and saved value)."""
        return self._graph.update_state(config, self._update(values), as_node or self.name, **kwargs)

    async def aupdate_state(self, config: dict, values: Any, as_node: Optional[str] = None, **kwargs: Any) -> dict:
        return await self._graph.aupdate_state(config, self._update(values), as_node or self.name, **kwargs)

    def get_graph(self, config: Optional[dict] = None, *, xray: Any = False) -> Any:
        return self._graph.get_graph(config, xray=xray)
