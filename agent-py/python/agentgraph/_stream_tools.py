"""The `tools` stream mode: a LangChain callback handler reports each tool a node calls
(`ToolNode`, or `tool.invoke` in the node) as `tool-started`, then `tool-finished` or
`tool-error` (LangGraph's `StreamToolCallHandler`; an interrupted tool is paused, not
failed, and reports nothing more).

The events travel as `messages` items wrapped in `ToolEvent`: they take the same route to
the streams that take them (a subgraph's, a node's nested stream) as chat messages, and the
stream turns them back into `tools` items (`as_v1`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Optional

from agentgraph._stream import NOSTREAM


class ToolEvent:
    """A `tools` payload on its way through the `messages` route."""

    __slots__ = ("payload",)

    def __init__(self, payload: dict) -> None:
        self.payload = payload


def native_modes(modes: Sequence[str]) -> list[str]:
    """The modes asked of the native stream: `tools` rides on `messages`."""
    out = [("messages" if mode == "tools" else mode) for mode in modes]
    return [mode for i, mode in enumerate(out) if mode not in out[:i]]


def as_v1(part: Any, modes: Sequence[str], tagged: bool, subgraphs: bool) -> Optional[tuple]:
    """A native item as the caller's stream shows it, in a 1-tuple (`None`: not shown): a
    `ToolEvent` as a `tools` item, a chat message only if `messages` was asked."""
    if tagged:
        ns, mode, chunk = part if subgraphs else ((), *part)
    else:
        ns, chunk = part if subgraphs else ((), part)
        mode = "tools" if isinstance(chunk, ToolEvent) else modes[0]
    if mode == "messages" or mode == "tools":
        if isinstance(chunk, ToolEvent):
            mode, chunk = "tools", chunk.payload
        if mode not in modes:
            return None
    if tagged:
        return ((ns, mode, chunk) if subgraphs else (mode, chunk),)
    return ((ns, chunk) if subgraphs else chunk,)


_HANDLER: Optional[type] = None


def handler_class() -> type:
    """The `tools` handler's class, made on first use (LangChain loads only then)."""
    global _HANDLER
    if _HANDLER is None:
        _HANDLER = _make_handler_class()
    return _HANDLER


def _make_handler_class() -> type:
    from langchain_core.callbacks import BaseCallbackHandler

    try:  # a handler LangChain runs inline, keeping the events in order
        from langchain_core.tracers._streaming import _StreamingCallbackHandler
    except ImportError:  # pragma: no cover
        _StreamingCallbackHandler = object

    class ToolsHandler(BaseCallbackHandler, _StreamingCallbackHandler):
        run_inline = True

        def __init__(self) -> None:
            self.calls: dict[Any, str] = {}

        @staticmethod
        def _emit(payload: dict) -> None:
            from agentgraph._stream import emit_scope

            emit_scope().emit(ToolEvent(payload), True)

        def tap_output_iter(self, run_id, output):
            return output

        def tap_output_aiter(self, run_id, output):
            return output

        def on_tool_start(self, serialized, input_str, *, run_id, tags=None, metadata=None, inputs=None, **kwargs):
            if not metadata or NOSTREAM in (tags or ()):
                return
            call_id = kwargs.get("tool_call_id") or str(run_id)
            self.calls[run_id] = call_id
            payload = {
                "event": "tool-started",
                "tool_call_id": call_id,
                "tool_name": (serialized or {}).get("name") or kwargs.get("name") or "",
            }
            if inputs is not None:
                payload["input"] = inputs
            self._emit(payload)

        def on_tool_end(self, output, *, run_id, **_):
            call_id = self.calls.pop(run_id, None)
            if call_id is not None:
                self._emit({"event": "tool-finished", "tool_call_id": call_id, "output": output})

        def on_tool_error(self, error, *, run_id, **_):
            call_id = self.calls.pop(run_id, None)
            if call_id is None or type(error).__name__ in ("GraphInterrupt", "NodeInterrupt", "GraphDrained"):
                return
            self._emit({"event": "tool-error", "tool_call_id": call_id, "message": str(error)})

    return ToolsHandler
