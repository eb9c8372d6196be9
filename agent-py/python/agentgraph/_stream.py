"""The Python half of the stream modes LangGraph fills from Python objects.

- A task's config, as LangGraph builds it: the caller's, with `langgraph_*` metadata and
  `checkpoint_ns` for the task, and (streaming `messages`) a LangChain callback handler.
- `messages`: the handler reports a chat model's tokens (`on_llm_new_token`) and its final
  message when it did not stream; messages a node returns that were neither in its input nor
  streamed are reported when it returns (LangGraph's `StreamMessagesHandler` rules).
- `tasks`, `checkpoints`, `debug`: the payloads LangGraph streams, built from what agent-core
  reports (`chunk`).

Items reach the caller through the node's scope (`scope.emit`), in agent-core's stream.
"""

from __future__ import annotations

import contextvars
import uuid
from collections.abc import Sequence
from datetime import datetime, timezone
from typing import Any, Optional

from agentgraph import _native

NOSTREAM = "nostream"
CONTEXT_KEY = "__agentgraph_context__"
"""Where `invoke(..., context=...)` travels in the run's `configurable` (private, as
LangGraph's own `__pregel_*` keys there)."""
STORE_KEY = "__agentgraph_store__"
"""Where the graph's store (`compile(store=...)`) travels in the run's `configurable`
(private, as `CONTEXT_KEY`)."""


task_id = _native.task_id

_ROOTED: contextvars.ContextVar = contextvars.ContextVar("agentgraph_rooted_emits", default=None)
"""The scope that takes the `messages`/`tools` items of a graph invoked inside a node with a
config of its own (`configurable`): LangGraph runs that graph as no task of the caller's, so
its items stream under the caller's namespace, not a subgraph's."""


def emit_scope() -> Any:
    """The scope a handler's `messages`/`tools` item goes through."""
    from agentgraph._runtime import current

    scope = current()
    rooted = _ROOTED.get()
    # Only for the invoked graph's own tasks, not a stream one of them runs.
    if rooted is not None and rooted[0] is scope.stream_state:
        return rooted[1]
    return scope


def rooted(scope: Any, config: Optional[dict]) -> Optional[contextvars.Token]:
    """Inside a node, a graph invoked with a `configurable` of its own streams its items
    through `scope` (the caller's): the token to reset, or `None`."""
    if not isinstance(config, dict) or "configurable" not in config:
        return None
    return _ROOTED.set((scope.stream_state, scope))


def node_config(scope: Any, run_config: dict, triggers: Optional[tuple] = None) -> dict:
    """The config a task runs with (LangGraph's keys; ids are agentgraph's own)."""
    node, step = scope.node, scope.step
    ns = f"{node}:{scope.task_id}"
    configurable = dict(run_config.get("configurable") or {})
    metadata = dict(run_config.get("metadata") or {})
    if "thread_id" in configurable and "thread_id" not in metadata:
        metadata["thread_id"] = configurable["thread_id"]
    metadata.update(
        langgraph_step=step,
        langgraph_node=node,
        langgraph_triggers=triggers or (f"branch:to:{node}",),
        langgraph_path=("__pregel_pull", node),
        langgraph_checkpoint_ns=ns,
    )
    configurable["checkpoint_ns"] = ns
    config = {**run_config, "metadata": metadata, "configurable": configurable}
    stream = scope.stream_state
    if stream is not None and stream.handlers:
        config["callbacks"] = _with_handlers(run_config.get("callbacks"), stream.handlers, run_config.get("tags"))
    return config


def _with_handlers(callbacks: Any, ours: list, tags: Optional[list]) -> Any:
    """The task's callbacks: the caller's and the `messages`/`tools` handlers, in a manager
    that passes the run's tags on to what the node calls (a model called with a config of its
    own keeps them, as under LangGraph, whose task callbacks are such a manager)."""
    from langchain_core.callbacks import CallbackManager

    if callbacks is None or isinstance(callbacks, list):
        handlers = [*(callbacks or ()), *ours]
        tags = list(tags or ())
        return CallbackManager(handlers, handlers, tags=tags, inheritable_tags=tags)
    manager = callbacks.copy()
    for handler in ours:
        manager.add_handler(handler, inherit=True)
    return manager


class StreamState:
    """One stream's Python state: its modes, and the `messages` handler."""

    def __init__(self, modes: Sequence[str], triggers: Optional[dict] = None) -> None:
        self.modes = tuple(modes)
        self.triggers = triggers or {}
        self.messages = "messages" in self.modes
        self.tasks = "tasks" in self.modes or "debug" in self.modes
        self.handler = _handler_class()() if self.messages else None
        self.handlers = [self.handler] if self.handler is not None else []
        if "tools" in self.modes:
            from agentgraph._stream_tools import handler_class

            self.handlers.append(handler_class()())

    def node_start(self, task: Any, state: Any) -> None:
        if self.handler is not None:
            self.handler.seen_in(state)

    def node_done(self, task: Any, out: Any) -> None:
        if self.handler is not None:
            self.handler.node_output(_node_meta(task.config()["metadata"]), out)
        if self.tasks:
            if type(out).__name__ == "CachedWrites":  # read from the node cache
                task.scope.task_cached()
            else:
                task.scope.task_result({"result": _task_result(out)})

    def node_failed(self, task: Any, error: BaseException) -> None:
        if not self.tasks:
            return
        if type(error).__name__ == "GraphInterrupt":
            task.scope.task_paused()
        else:
            task.scope.task_result({"error": error})


def _node_meta(metadata: dict) -> dict:
    """A node's own run metadata: LangGraph adds `ls_integration` after `thread_id`."""
    out = {}
    if "thread_id" in metadata:
        out["thread_id"] = metadata["thread_id"]
    out["ls_integration"] = "langgraph"
    out.update((k, v) for k, v in metadata.items() if k not in out)
    return out


def _task_result(out: Any) -> dict:
    update = getattr(out, "update", out) if type(out).__name__ == "Command" else out
    return dict(update) if isinstance(update, dict) else {}


_HANDLER: Optional[type] = None


def _handler_class() -> type:
    """The `messages` handler's class, made on first use (LangChain loads only then)."""
    global _HANDLER
    if _HANDLER is None:
        _HANDLER = _make_handler_class()
    return _HANDLER


def _make_handler_class() -> type:
    from langchain_core.callbacks import BaseCallbackHandler
    from langchain_core.messages import BaseMessage
    from langchain_core.outputs import ChatGeneration, ChatGenerationChunk

    try:  # what makes a chat model's `invoke` stream to its callbacks
        from langchain_core.tracers._streaming import _StreamingCallbackHandler
    except ImportError:  # pragma: no cover
        _StreamingCallbackHandler = object

    def messages_in(value: Any):
        if isinstance(value, BaseMessage):
            yield value
        elif isinstance(value, dict):
            for item in value.values():
                if isinstance(item, BaseMessage):
                    yield item
                elif isinstance(item, Sequence) and not isinstance(item, str):
                    yield from (m for m in item if isinstance(m, BaseMessage))
        elif isinstance(value, Sequence) and not isinstance(value, str):
            yield from (m for m in value if isinstance(m, BaseMessage))

    class MessagesHandler(BaseCallbackHandler, _StreamingCallbackHandler):
        """LangChain callbacks to the `messages` stream mode (run inline, on the node's
        thread, whose task is current)."""

        run_inline = True

        def __init__(self) -> None:
            self.runs: dict[Any, dict] = {}
            self.seen: set = set()

        def _emit(self, message: Any, meta: dict, dedupe: bool = False) -> None:
            if dedupe and message.id in self.seen:
                return
            if message.id is None:
                message.id = str(uuid.uuid4())
            self.seen.add(message.id)
            emit_scope().emit((message, meta), True)

        def seen_in(self, state: Any) -> None:
            for message in messages_in(state):
                if message.id is not None:
                    self.seen.add(message.id)

        def node_output(self, meta: dict, out: Any) -> None:
            if type(out).__name__ == "Command":
                out = out.update
            for message in list(messages_in(out)):
                self._emit(message, meta, dedupe=True)

        # LangChain's streaming-handler protocol: outputs pass through untouched.
        def tap_output_iter(self, run_id, output):
            return output

        def tap_output_aiter(self, run_id, output):
            return output

        def on_chat_model_start(self, serialized, messages, *, run_id, tags=None, metadata=None, **_):
            if metadata and NOSTREAM not in (tags or ()):
                # LangGraph shows the call's tags, less its sequences' bookkeeping ones.
                shown = [t for t in tags or () if not t.startswith("seq:step")]
                if shown:
                    metadata["tags"] = shown
                self.runs[run_id] = metadata

        def on_llm_new_token(self, token, *, chunk=None, run_id, **_):
            meta = self.runs.get(run_id)
            if meta is not None and isinstance(chunk, ChatGenerationChunk):
                self._emit(chunk.message, meta)

        def on_llm_end(self, response, *, run_id, **_):
            meta = self.runs.pop(run_id, None)
            if meta is not None and response.generations and response.generations[0]:
                generation = response.generations[0][0]
                if isinstance(generation, ChatGeneration):
                    self._emit(generation.message, meta, dedupe=True)

        def on_llm_error(self, error, *, run_id, **_):
            self.runs.pop(run_id, None)

    return MessagesHandler


def _now() -> str:
    return datetime.now(timezone.utc).isoformat()


def _configurable(thread_id: Optional[str], checkpoint_id: Optional[str]) -> Optional[dict]:
    if checkpoint_id is None:
        return None
    return {"configurable": {"checkpoint_ns": "", "thread_id": thread_id, "checkpoint_id": checkpoint_id}}


def chunk(kind: str, fields: dict) -> tuple[int, str, dict]:
    """`(step, type, payload)` of a `tasks`/`checkpoints` item from what agent-core reported;
    `debug` wraps it with a timestamp (`debug`)."""
    run_id, step = fields["run_id"], fields["step"]
    if kind == "task":
        node = fields["node"]
        payload = {
            "id": task_id(run_id, step, node),
            "name": node,
            "input": fields["input"],
            "triggers": fields["stream"].triggers.get(node, (f"branch:to:{node}",)),
        }
    elif kind == "task_result":
        node = fields["node"]
        outcome = fields.get("outcome") or {}
        payload = {
            "id": task_id(run_id, step, node),
            "name": node,
            "error": outcome.get("error", fields.get("error")),
            "result": outcome.get("result", {}),
            "interrupts": [
                {"value": i.value, "id": i.id, "response_schema": i.response_schema}
                for i in fields.get("interrupts", ())
            ],
        }
    else:
        next_ = list(fields["next"])
        if step < 0 and not next_:
            next_ = ["__start__"]  # LangGraph's input checkpoint plans the input's own task
        payload = {
            "config": _configurable(fields["thread_id"], fields["checkpoint_id"]),
            "parent_config": _configurable(fields["thread_id"], fields.get("parent_id")),
            "values": fields["values"],
            "metadata": {"source": "input" if step < 0 else "loop", "step": step, "parents": {}},
            "next": next_,
            "tasks": [
                {"id": task_id(run_id, step + 1, name), "name": name, "interrupts": (), "state": None}
                for name in next_
            ],
        }
    return step, kind, payload


def debug(step: int, kind: str, payload: dict) -> dict:
    """A `debug` item: LangGraph's envelope around a task, result or checkpoint."""
    return {"step": step, "timestamp": _now(), "type": kind, "payload": payload}


def resumed(graph: Any, input: Any, run_config: dict, modes: Sequence[str], tagged: bool) -> tuple[list, Optional[str]]:
    """What a resumed run streams first in `checkpoints`/`debug`: the checkpoint it resumes
    from (LangGraph shows it again, its tasks' interrupts in), and that checkpoint's id (the
    parent of the run's first). Nothing for a run from an input."""
    if not ({"checkpoints", "debug"} & set(modes)):
        return [], None
    if input is not None and type(input).__name__ != "Command":
        return [], None
    if (run_config.get("configurable") or {}).get("thread_id") is None:
        return [], None
    snapshot = graph.get_state(run_config)
    if snapshot.created_at is None:
        return [], None
    run_config.setdefault("run_id", str(uuid.uuid4()))
    metadata = snapshot.metadata or {}
    step = metadata.get("step", -1)
    configurable = snapshot.config["configurable"]

    def interrupts_of(name: str) -> tuple:
        # agent-core's interrupt ids end in `<node>#<index>`.
        mine = [i for i in snapshot.interrupts if len(snapshot.next) == 1 or f":{name}#" in i.id]
        return tuple({"value": i.value, "id": i.id, "response_schema": i.response_schema} for i in mine)

    payload = {
        "config": _configurable(configurable.get("thread_id"), configurable.get("checkpoint_id")),
        "parent_config": snapshot.parent_config,
        "values": snapshot.values,
        "metadata": {"source": metadata.get("source"), "step": step, "parents": metadata.get("parents", {})},
        "next": list(snapshot.next),
        "tasks": [
            {"id": task_id(run_config["run_id"], step + 1, name), "name": name, "interrupts": interrupts_of(name), "state": None}
            for name in snapshot.next
        ],
    }
    parts: list = []
    if "checkpoints" in modes:
        parts.append(("checkpoints", payload))
    if "debug" in modes:
        parts.append(("debug", debug(step, "checkpoint", payload)))
    if not tagged:
        parts = [chunk for _, chunk in parts]
    return parts, configurable.get("checkpoint_id")
