"""`ToolNode`: runs the tool calls of the last `AIMessage` (in parallel, each in a thread
with the node's context) and answers with their `ToolMessage`s, in the calls' order.

LangGraph 1.x's rules: a call of an unknown tool answers an error message; by default only
a tool's invalid arguments (`ToolInvocationError`) become an error message and other
exceptions propagate; `handle_tool_errors=True` (or a string, a function, exception types)
turns those into error messages too. A tool's arguments annotated `InjectedState` or
`InjectedStore`, or a `runtime: ToolRuntime`, get the graph's state (or one key of it), store
or the call's runtime, hidden from the model. A tool may return a `Command` (its update must
answer the call with a `ToolMessage`); `wrap_tool_call` wraps each call's execution. With
async-only tools the node is async, so they run on the caller's loop under `ainvoke`.
"""

from __future__ import annotations

import asyncio
import contextvars
import inspect
import json
from concurrent.futures import ThreadPoolExecutor
from copy import copy, deepcopy
from dataclasses import dataclass, field, replace
from typing import (
    Any,
    Callable,
    Generic,
    Literal,
    Optional,
    Sequence,
    TypedDict,
    TypeVar,
    Union,
    get_args,
    get_origin,
    get_type_hints,
)

from langchain_core.messages import AIMessage, RemoveMessage, ToolCall, ToolMessage, convert_to_messages
from langchain_core.messages.tool import ToolOutputMixin
from langchain_core.tools import BaseTool, InjectedToolArg
from langchain_core.tools import tool as create_tool
from langchain_core.tools.base import (
    TOOL_MESSAGE_BLOCK_TYPES,
    ToolException,
    _DirectlyInjectedToolArg,
    _is_injected_arg_type,
    get_all_basemodel_annotations,
)
from pydantic import ValidationError

from agentgraph.errors import GraphInterrupt
from agentgraph.graph.message import REMOVE_ALL_MESSAGES
from agentgraph.types import Command, Send

# A tool's `Command` must reach the node as itself (see `agentgraph.types._ToolOutput`).
if not issubclass(Command, ToolOutputMixin):
    Command.__bases__ = (*Command.__bases__, ToolOutputMixin)

ContextT = TypeVar("ContextT")
StateT = TypeVar("StateT")

INVALID_TOOL_NAME_ERROR_TEMPLATE = "Error: {requested_tool} is not a valid tool, try one of [{available_tools}]."
TOOL_CALL_ERROR_TEMPLATE = "Error: {error}\n Please fix your mistakes."
TOOL_INVOCATION_ERROR_TEMPLATE = (
    "Error invoking tool '{tool_name}' with kwargs {tool_kwargs} with error:\n"
    " {error}\n"
    " Please fix the error and try again."
)


class ToolCallWithContext(TypedDict):
    """A tool call sent to a `ToolNode` on its own, with the state it was sent from."""

    __type: Literal["tool_call_with_context"]
    tool_call: ToolCall
    state: Any


class InjectedState(InjectedToolArg):
    """Marks a tool argument as the graph's state (`field`: one key of it)."""

    def __init__(self, field: Optional[str] = None) -> None:
        self.field = field


class InjectedStore(InjectedToolArg):
    """Marks a tool argument as the graph's store."""


class ToolInvocationError(ToolException):
    """A tool called with arguments its schema refuses."""

    def __init__(self, tool_name: str, source: ValidationError, tool_kwargs: dict, filtered_errors: list) -> None:
        lines = [f"{'.'.join(str(p) for p in e.get('loc', ()))}: {e.get('msg', 'Unknown error')}" for e in filtered_errors]
        self.message = TOOL_INVOCATION_ERROR_TEMPLATE.format(
            tool_name=tool_name, tool_kwargs=tool_kwargs, error="\n".join(lines)
        )
        self.tool_name = tool_name
        self.tool_kwargs = tool_kwargs
        self.source = source
        self.filtered_errors = filtered_errors
        super().__init__(self.message)


def _default_handle_tool_errors(e: Exception) -> str:
    if isinstance(e, ToolInvocationError):
        return e.message
    raise e


def msg_content_output(output: Any) -> Union[str, list]:
    """A tool's output as message content: strings and content blocks as they are, anything
    else as JSON (or its `str`)."""
    if isinstance(output, str) or (
        isinstance(output, list)
        and all(isinstance(x, dict) and x.get("type") in TOOL_MESSAGE_BLOCK_TYPES for x in output)
    ):
        return output
    try:
        return json.dumps(output, ensure_ascii=False)
    except Exception:
        return str(output)


@dataclass
class ToolRuntime(_DirectlyInjectedToolArg, Generic[ContextT, StateT]):
    """What a tool's `runtime` argument gets: the state, the run's context, config, stream
    writer and store, the call's id, the node's tools."""

    state: Any
    context: Any
    config: dict
    stream_writer: Callable[[Any], None]
    tool_call_id: Optional[str]
    store: Any
    tools: list = field(default_factory=list)
    execution_info: Any = None
    server_info: Any = None


class _Injected:
    """A tool's injected arguments: state ones (argument -> key or `None` for all of it), the
    store's, the runtime's, and every injected name (stripped from the model's arguments)."""

    __slots__ = ("state", "store", "runtime", "all")

    def __init__(self, state: dict, store: Optional[str], runtime: Optional[str], all: set) -> None:
        self.state = state
        self.store = store
        self.runtime = runtime
        self.all = all

    def __bool__(self) -> bool:
        return bool(self.state or self.store or self.runtime)


def _injected_args(tool: BaseTool) -> _Injected:
    state: dict[str, Optional[str]] = {}
    store = runtime = None
    names: set[str] = set()
    try:
        annotations = get_all_basemodel_annotations(tool.get_input_schema())
    except Exception:
        annotations = {}
    func = getattr(tool, "func", None) or getattr(tool, "coroutine", None)
    try:
        hints = get_type_hints(func, include_extras=True) if func else {}
    except Exception:
        hints = {}
    for name, annotation in {**hints, **annotations}.items():
        if _is_injected_arg_type(annotation):
            names.add(name)
        if name == "runtime" or annotation is ToolRuntime or get_origin(annotation) is ToolRuntime:
            runtime = name
        for marker in _markers(annotation):
            if marker is InjectedState or isinstance(marker, InjectedState):
                state[name] = marker.field if isinstance(marker, InjectedState) else None
            elif marker is InjectedStore or isinstance(marker, InjectedStore):
                store = name
            elif marker is ToolRuntime:
                runtime = name
    return _Injected(state, store, runtime, names)


def _markers(annotation: Any) -> list:
    """The metadata of `Annotated` types in `annotation` (through unions)."""
    out = []
    if hasattr(annotation, "__metadata__"):
        out.extend(annotation.__metadata__)
    for arg in get_args(annotation) if get_origin(annotation) is Union else ():
        out.extend(_markers(arg))
    return out


class ToolNode:
    """A node that runs the last `AIMessage`'s tool calls (LangGraph's `ToolNode`)."""

    def __init__(
        self,
        tools: Sequence[Union[BaseTool, Callable]],
        *,
        name: str = "tools",
        tags: Optional[list[str]] = None,
        handle_tool_errors: Any = _default_handle_tool_errors,
        messages_key: str = "messages",
        wrap_tool_call: Optional[Callable] = None,
        awrap_tool_call: Optional[Callable] = None,
    ) -> None:
        self.name = name
        self.tags = tags
        self._handle_tool_errors = handle_tool_errors
        self._messages_key = messages_key
        self._wrap_tool_call = wrap_tool_call
        self._awrap_tool_call = awrap_tool_call
        self._tools_by_name: dict[str, BaseTool] = {}
        self._injected: dict[str, _Injected] = {}
        for tool in tools:
            tool_ = tool if isinstance(tool, BaseTool) else create_tool(tool)
            self._tools_by_name[tool_.name] = tool_
            self._injected[tool_.name] = _injected_args(tool_)
        if any(_async_only(t) for t in self._tools_by_name.values()):
            # Async-only tools (MCP's, say) are awaited on the caller's loop under `ainvoke`,
            # where their clients live: the node is async (see `_AsyncToolNode`).
            self.__class__ = _AsyncToolNode

    @property
    def tools_by_name(self) -> dict[str, BaseTool]:
        return self._tools_by_name

    # The node: `config` and `runtime` are injected by name.
    def __call__(self, input: Any, config: dict, runtime: Any = None) -> Any:
        return self._run(input, config, runtime)

    def invoke(self, input: Any, config: Optional[dict] = None, **_: Any) -> Any:
        """Runs outside a graph (LangChain's `Runnable.invoke`), or in a node's code."""
        runtime = None
        if config is None:
            try:
                from agentgraph.config import get_config, get_store
                from agentgraph.runtime import Runtime

                config = get_config()
                runtime = Runtime(store=get_store())
            except RuntimeError:
                config = {}
        return self._run(input, config, runtime)

    async def ainvoke(self, input: Any, config: Optional[dict] = None, **kwargs: Any) -> Any:
        return await asyncio.to_thread(contextvars.copy_context().run, self.invoke, input, config, **kwargs)

    def _run(self, input: Any, config: dict, runtime: Any) -> Any:
        tool_calls, input_type = self._parse_input(input)
        config = {k: v for k, v in (config or {}).items() if k != "run_id"}
        if len(tool_calls) <= 1:
            outputs = [self._run_one(call, input, input_type, config, runtime) for call in tool_calls]
        else:
            # Each call in a thread with a copy of this context (the task stays current).
            with ThreadPoolExecutor(max_workers=len(tool_calls)) as pool:
                futures = [
                    pool.submit(contextvars.copy_context().run, self._run_one, call, input, input_type, config, runtime)
                    for call in tool_calls
                ]
                outputs = [f.result() for f in futures]
        return self._combine(outputs, input_type)

    def _combine(self, outputs: list, input_type: str) -> Any:
        commands = [o for o in outputs if isinstance(o, Command)]
        if not commands:
            return outputs if input_type == "list" else {self._messages_key: outputs}
        parent = _parent_command(commands)
        if parent is not None:
            return parent
        if len(outputs) == 1:
            return outputs[0]
        return self._merged(outputs, input_type)

    def _merged(self, outputs: list, input_type: str) -> Command:
        """Several calls' outputs, some `Command`s, as one `Command` whose update lists their
        writes in the calls' order (a key written by several goes through its reducer for
        each, and the `updates` stream shows one dict a write, as LangGraph's list of
        updates; a key without a reducer written twice is LangGraph's `InvalidUpdateError`);
        their gotos together."""
        if input_type == "list":
            raise NotImplementedError("agentgraph's ToolNode merges tools' Commands for a dict input only")
        writes: list[tuple[str, Any]] = []
        goto: list = []
        for output in outputs:
            if not isinstance(output, Command):
                writes.append((self._messages_key, [output]))
                continue
            if output.graph is not None:
                raise NotImplementedError("agentgraph's ToolNode merges Commands to its own graph only")
            update = output.update or {}
            writes.extend(update.items() if isinstance(update, dict) else update)
            goto.extend([output.goto] if isinstance(output.goto, (str, Send)) else list(output.goto))
        return Command(update=writes, goto=goto)

    def _parse_input(self, input: Any) -> tuple[list[ToolCall], Literal["list", "dict", "tool_calls"]]:
        if isinstance(input, dict) and input.get("__type") == "tool_call_with_context":
            # One call sent to this node with the state it was sent from (`Send`).
            return [input["tool_call"]], "tool_calls"
        if isinstance(input, list):
            input_type, messages = "list", input
        elif isinstance(input, dict) and (messages := input.get(self._messages_key, [])):
            input_type = "dict"
        elif messages := getattr(input, self._messages_key, []):
            input_type = "dict"
        else:
            raise ValueError("No message found in input")
        last = next((m for m in reversed(messages) if isinstance(m, AIMessage)), None)
        if last is None:
            raise ValueError("No AIMessage found in input")
        return list(last.tool_calls), input_type

    def _request(self, call: ToolCall, input: Any, config: dict, runtime: Any) -> "ToolCallRequest":
        """The call, its tool and what it may be given: the state it came with, the run's."""
        if isinstance(input, dict) and input.get("__type") == "tool_call_with_context":
            input = input["state"]
        tool_runtime = ToolRuntime(
            state=input,
            context=getattr(runtime, "context", None),
            config=config,
            stream_writer=getattr(runtime, "stream_writer", None) or _no_op,
            tool_call_id=call["id"],
            store=getattr(runtime, "store", None),
            tools=list(self._tools_by_name.values()),
        )
        return ToolCallRequest(call, self._tools_by_name.get(call["name"]), input, tool_runtime)

    def _run_one(self, call: ToolCall, input: Any, input_type: str, config: dict, runtime: Any) -> Any:
        request = self._request(call, input, config, runtime)
        if self._wrap_tool_call is None:
            return self._execute(request, input_type)
        try:
            return self._wrap_tool_call(request, lambda req: self._execute(req, input_type))
        except GraphInterrupt:
            raise
        except Exception as e:
            return self._wrapper_failed(request, e)

    async def _arun_one(self, call: ToolCall, input: Any, input_type: str, config: dict, runtime: Any) -> Any:
        request = self._request(call, input, config, runtime)
        if self._awrap_tool_call is None and self._wrap_tool_call is None:
            return await self._aexecute(request, input_type)
        try:
            if self._awrap_tool_call is not None:

                async def execute(req: ToolCallRequest) -> Any:
                    return await self._aexecute(req, input_type)

                return await self._awrap_tool_call(request, execute)
            return self._wrap_tool_call(request, lambda req: self._execute(req, input_type))
        except GraphInterrupt:
            raise
        except Exception as e:
            return self._wrapper_failed(request, e)

    def _wrapper_failed(self, request: "ToolCallRequest", e: Exception) -> ToolMessage:
        # A wrapper's exception: any becomes a message when errors are handled at all.
        if not self._handle_tool_errors:
            raise e
        call = request.tool_call
        return ToolMessage(
            content=_error_content(e, self._handle_tool_errors),
            name=call["name"],
            tool_call_id=call["id"],
            status="error",
        )

    def _execute(self, request: "ToolCallRequest", input_type: str) -> Any:
        call, tool = request.tool_call, request.tool
        if tool is None:
            return self._unregistered(call)
        try:
            call_args = {**self._inject(call, request.runtime, tool), "type": "tool_call"}
            try:
                if _async_only(tool):
                    # No event loop runs in this thread (a node's worker or the pool's).
                    response = asyncio.run(tool.ainvoke(call_args, request.runtime.config))
                else:
                    response = tool.invoke(call_args, request.runtime.config)
            except ValidationError as exc:
                raise self._invalid(call, exc, tool) from exc
            return self._normalize(response, call, input_type)
        except GraphInterrupt:
            raise
        except Exception as e:
            return self._handled(call, e)

    async def _aexecute(self, request: "ToolCallRequest", input_type: str) -> Any:
        call, tool = request.tool_call, request.tool
        if tool is None:
            return self._unregistered(call)
        try:
            call_args = {**self._inject(call, request.runtime, tool), "type": "tool_call"}
            try:
                response = await tool.ainvoke(call_args, request.runtime.config)
            except ValidationError as exc:
                raise self._invalid(call, exc, tool) from exc
            return self._normalize(response, call, input_type)
        except GraphInterrupt:
            raise
        except Exception as e:
            return self._handled(call, e)

    def _unregistered(self, call: ToolCall) -> ToolMessage:
        if call["name"] not in self._tools_by_name:
            return self._unknown(call)
        raise TypeError(f"Tool {call['name']} is not registered with ToolNode")

    def _unknown(self, call: ToolCall) -> ToolMessage:
        content = INVALID_TOOL_NAME_ERROR_TEMPLATE.format(
            requested_tool=call["name"], available_tools=", ".join(self._tools_by_name)
        )
        return ToolMessage(content, name=call["name"], tool_call_id=call["id"], status="error")

    def _invalid(self, call: ToolCall, exc: ValidationError, tool: BaseTool) -> ToolInvocationError:
        injected = self._injected.get(call["name"]) or _injected_args(tool)
        hidden = set(injected.state) | {n for n in (injected.store, injected.runtime) if n}
        errors = [e for e in exc.errors() if e["loc"] and e["loc"][0] not in hidden]
        return ToolInvocationError(call["name"], exc, call["args"], errors)

    def _handled(self, call: ToolCall, e: Exception) -> ToolMessage:
        """The error message for a tool's exception, or the exception raised again."""
        flag = self._handle_tool_errors
        if not flag or not isinstance(e, _handled_types(flag)):
            raise e
        return ToolMessage(content=_error_content(e, flag), name=call["name"], tool_call_id=call["id"], status="error")

    def _normalize(self, response: Any, call: ToolCall, input_type: str) -> Any:
        if isinstance(response, ToolMessage):
            response.content = msg_content_output(response.content)
            return response
        if isinstance(response, Command):
            return self._validate_command(response, call, input_type)
        raise TypeError(f"Tool {call['name']} returned unexpected type: {type(response)}")

    def _validate_command(self, command: Command, call: ToolCall, input_type: str) -> Command:
        """A tool's `Command`, checked as LangGraph does: its update answers the call with a
        `ToolMessage` (named for the tool) unless it goes to another graph."""
        if isinstance(command.update, dict):
            if input_type not in ("dict", "tool_calls"):
                raise ValueError(
                    "Tools can provide a dict in Command.update only when using dict "
                    f"with '{self._messages_key}' key as ToolNode input, "
                    f"got: {command.update} for tool '{call['name']}'"
                )
            command = deepcopy(command)
            messages = (command.update or {}).get(self._messages_key, [])
        elif isinstance(command.update, list):
            if input_type != "list":
                raise ValueError(
                    "Tools can provide a list of messages in Command.update "
                    "only when using list of messages as ToolNode input, "
                    f"got: {command.update} for tool '{call['name']}'"
                )
            command = deepcopy(command)
            messages = command.update
        else:
            return command
        # Messages given as dicts are checked as messages but stay dicts in the update (and
        # so unnamed), as in LangGraph.
        messages = convert_to_messages(messages)
        if len(messages) == 1 and isinstance(messages[0], RemoveMessage) and messages[0].id == REMOVE_ALL_MESSAGES:
            return command
        matched = False
        for message in messages:
            if isinstance(message, ToolMessage) and message.tool_call_id == call["id"]:
                message.name = call["name"]
                matched = True
        if command.graph is None and not matched:
            example = (
                '`Command(update={"messages": [ToolMessage("Success", tool_call_id=tool_call_id), ...]}, ...)`'
                if input_type == "dict"
                else '`Command(update=[ToolMessage("Success", tool_call_id=tool_call_id), ...], ...)`'
            )
            raise ValueError(
                "Expected to have a matching ToolMessage in Command.update "
                f"for tool '{call['name']}', got: {messages}. "
                "Every tool call (LLM requesting to call a tool) "
                "in the message history MUST have a corresponding ToolMessage. "
                f"You can fix it by modifying the tool to return {example}."
            )
        return command

    def _inject(self, call: ToolCall, tool_runtime: "ToolRuntime", tool: BaseTool) -> ToolCall:
        # A wrapper may have swapped the tool: its injections are read from it then.
        injected = self._injected.get(call["name"]) if self._tools_by_name.get(call["name"]) is tool else None
        if injected is None:
            injected = _injected_args(tool)
        if not injected:
            return call
        args: dict[str, Any] = {}
        input, store = tool_runtime.state, tool_runtime.store
        if injected.runtime:
            args[injected.runtime] = tool_runtime
        state = {self._messages_key: input} if isinstance(input, list) else input
        for arg, key in injected.state.items():
            if key is None:
                args[arg] = state
            elif isinstance(state, dict):
                args[arg] = state[key]
            else:
                args[arg] = getattr(state, key)
        if injected.store:
            if store is None:
                raise ValueError(
                    "Cannot inject store into tools with InjectedStore annotations - "
                    "please compile your graph with a store."
                )
            args[injected.store] = store
        out = copy(call)
        out["args"] = {**{k: v for k, v in call["args"].items() if k not in injected.all}, **args}
        return out


@dataclass
class ToolCallRequest:
    """One tool call as a `wrap_tool_call` wrapper sees it: the call, its tool (`None` when
    unknown), the state it came with, the tool's runtime."""

    tool_call: ToolCall
    tool: Optional[BaseTool]
    state: Any
    runtime: ToolRuntime

    def override(self, **overrides: Any) -> "ToolCallRequest":
        """A copy with `tool_call`, `tool` or `state` replaced (a new state is the runtime's too)."""
        request = replace(self, **overrides)
        if "state" in overrides:
            request = replace(request, runtime=replace(request.runtime, state=request.state))
        return request


class _AsyncToolNode(ToolNode):
    """A `ToolNode` with async-only tools: an async node, its calls gathered on the running
    loop (sync tools in LangChain's executor threads), as LangGraph's under `ainvoke`."""

    async def __call__(self, input: Any, config: dict, runtime: Any = None) -> Any:
        tool_calls, input_type = self._parse_input(input)
        config = {k: v for k, v in (config or {}).items() if k != "run_id"}
        outputs = await asyncio.gather(
            *(self._arun_one(call, input, input_type, config, runtime) for call in tool_calls)
        )
        return self._combine(list(outputs), input_type)


def _parent_command(commands: list) -> Optional[Command]:
    """The command a turn's outputs send to the parent graph, as LangGraph's node ends with
    it: the parent commands whose gotos are all `Send`s go as one (their Sends together,
    after the others, without updates, as LangGraph's), and the first parent command ends
    the node (its siblings' writes are dropped: LangGraph raises it before writing them)."""
    sends: list = []
    for command in commands:
        if command.graph != Command.PARENT:
            continue
        if isinstance(command.goto, (list, tuple)) and command.goto and all(isinstance(g, Send) for g in command.goto):
            sends.extend(command.goto)
        else:
            return command
    return Command(graph=Command.PARENT, goto=sends) if sends else None


def _async_only(tool: BaseTool) -> bool:
    return getattr(tool, "func", True) is None and getattr(tool, "coroutine", None) is not None


def _no_op(_chunk: Any) -> None:
    pass


def _handled_types(flag: Any) -> tuple:
    if isinstance(flag, type) and issubclass(flag, Exception):
        return (flag,)
    if isinstance(flag, tuple):
        return flag
    if callable(flag) and not isinstance(flag, type):
        return _infer_handled_types(flag)
    return (Exception,)


def _infer_handled_types(handler: Callable) -> tuple:
    """The exception types a handler's first parameter is annotated with (all by default)."""
    params = list(inspect.signature(handler).parameters.values())
    if not params:
        return (Exception,)
    first = params[1] if params[0].name in ("self", "cls") and len(params) == 2 else params[0]
    hints = get_type_hints(handler)
    if first.name not in hints:
        return (Exception,)
    hint = hints[first.name]
    if get_origin(hint) is Union or type(hint).__name__ == "UnionType":
        return tuple(get_args(hint))
    return (hint,)


def _error_content(e: Exception, flag: Any) -> str:
    if isinstance(flag, (bool, tuple)) or (isinstance(flag, type) and issubclass(flag, Exception)):
        return TOOL_CALL_ERROR_TEMPLATE.format(error=repr(e))
    if isinstance(flag, str):
        return flag
    if callable(flag):
        return flag(e)
    raise ValueError(
        f"Got unexpected type of `handle_tool_error`. Expected bool, str or callable. Received: {flag}"
    )


def tools_condition(state: Any, messages_key: str = "messages") -> Literal["tools", "__end__"]:
    """`"tools"` when the last message calls tools, else `END` (a conditional edge's path)."""
    if isinstance(state, list):
        ai_message = state[-1]
    elif (isinstance(state, dict) and (messages := state.get(messages_key, []))) or (
        messages := getattr(state, messages_key, [])
    ):
        ai_message = messages[-1]
    else:
        raise ValueError(f"No messages found in input state to tool_edge: {state}")
    if hasattr(ai_message, "tool_calls") and len(ai_message.tool_calls) > 0:
        return "tools"
    return "__end__"


__all__ = ["ToolCallRequest", "ToolCallWithContext", "ToolRuntime", "InjectedState", "InjectedStore", "ToolNode", "tools_condition", "msg_content_output"]
