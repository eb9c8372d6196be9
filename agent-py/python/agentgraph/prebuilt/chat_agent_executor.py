"""`create_react_agent`: a chat model that calls tools in a loop until it answers without
tool calls (LangGraph's prebuilt ReAct agent: an `agent` node and a `tools` `ToolNode`).

`version="v2"` (the default, as LangGraph's) sends each tool call of a turn to its own `tools`
task (a `Send` of the call with the state), so `updates`/`tasks` streams show one item a call
and a tool's `Command` is that task's own update; `version="v1"` runs a turn's calls in one
`tools` task (in parallel). `pre_model_hook` is a node before `agent` (its
`llm_input_messages`, when it writes them, are what the model reads instead of `messages`);
`post_model_hook` a node after it, routing to the pending calls' `tools` tasks, back to the
start after tool messages, or to the end. A tool's `Command(graph=Command.PARENT, ...)` ends
the agent and routes the graph it runs in, as a node's would.
`remaining_steps` comes from the run (agent-core's count) rather than a managed state key.
The model is a chat model (its tools bound here unless already bound) or a function of the
state and runtime giving one per call; `response_format` adds a last node that asks the
model for a structured answer.
"""

from __future__ import annotations

import inspect
from typing import Annotated, Any, Callable, Optional, Sequence, TypedDict, Union

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, AnyMessage, BaseMessage, SystemMessage, ToolMessage
from langchain_core.runnables import Runnable, RunnableBinding, RunnableLambda, RunnableSequence
from langchain_core.tools import BaseTool

from agentgraph.constants import END
from agentgraph.graph.message import add_messages
from agentgraph.graph.state import StateGraph
from agentgraph.prebuilt.tool_node import ToolCallWithContext, ToolNode
from agentgraph.types import Send


class AgentState(TypedDict):
    """The agent's state: its messages."""

    messages: Annotated[Sequence[BaseMessage], add_messages]


class AgentStateWithStructuredResponse(AgentState):
    """The agent's state with its final answer in `response_format`'s shape."""

    structured_response: Any


def _state_value(state: Any, key: str, default: Any = None) -> Any:
    return state.get(key, default) if isinstance(state, dict) else getattr(state, key, default)


def _prompt_runnable(prompt: Any) -> Runnable:
    """What the model is given, as a runnable named `Prompt` (as LangGraph's)."""
    if prompt is None:
        return RunnableLambda(lambda state: _state_value(state, "messages"), name="Prompt")
    if isinstance(prompt, str):
        system = SystemMessage(content=prompt)
        return RunnableLambda(lambda state: [system] + list(_state_value(state, "messages")), name="Prompt")
    if isinstance(prompt, SystemMessage):
        return RunnableLambda(lambda state: [prompt] + list(_state_value(state, "messages")), name="Prompt")
    if isinstance(prompt, Runnable):
        return prompt
    if callable(prompt):
        return RunnableLambda(prompt, name="Prompt")
    raise ValueError(f"Got unexpected type for `prompt`: {type(prompt)}")


def _should_bind_tools(model: Any, tools: Sequence[BaseTool], builtin: int = 0) -> bool:
    if isinstance(model, RunnableSequence):
        model = next((s for s in model.steps if isinstance(s, (RunnableBinding, BaseChatModel))), model)
    if not isinstance(model, RunnableBinding) or "tools" not in model.kwargs:
        return True
    bound = model.kwargs["tools"]
    if len(tools) != len(bound) - builtin:
        raise ValueError(
            "Number of tools in the model.bind_tools() and tools passed to create_react_agent must match"
            f" Got {len(tools)} tools, expected {len(bound) - builtin}"
        )
    names = set()
    for spec in bound:
        if spec.get("type") == "function":
            names.add(spec["function"]["name"])
        elif spec.get("name"):
            names.add(spec["name"])
    if missing := {t.name for t in tools} - names:
        raise ValueError(f"Missing tools '{missing}' in the model.bind_tools()")
    return False


def _chat_model(model: Any) -> BaseChatModel:
    """The chat model inside a prompt-and-model sequence or a binding (its tools unbound)."""
    if isinstance(model, RunnableSequence):
        model = next((s for s in model.steps if isinstance(s, (RunnableBinding, BaseChatModel))), model)
    if isinstance(model, RunnableBinding):
        model = model.bound
    if not isinstance(model, BaseChatModel):
        raise TypeError(
            f"Expected `model` to be a ChatModel or RunnableBinding (e.g. model.bind_tools(...)), got {type(model)}"
        )
    return model


def _validate_chat_history(messages: Sequence[BaseMessage]) -> None:
    calls = [c for m in messages if isinstance(m, AIMessage) for c in m.tool_calls]
    answered = {m.tool_call_id for m in messages if isinstance(m, ToolMessage)}
    missing = [c for c in calls if c["id"] not in answered]
    if not missing:
        return
    raise ValueError(
        "Found AIMessages with tool_calls that do not have a corresponding ToolMessage. "
        f"Here are the first few of those tool calls: {missing[:3]}.\n\n"
        "Every tool call (LLM requesting to call a tool) in the message history MUST have a corresponding ToolMessage "
        "(result of a tool invocation to return to the LLM) - this is required by most LLM providers.\n"
        "For troubleshooting, visit: https://docs.langchain.com/oss/python/langgraph/errors/INVALID_CHAT_HISTORY"
    )


def _remaining_steps() -> Optional[int]:
    """LangGraph's `RemainingSteps` for the running node: agent-core counts the node's own
    step in, LangGraph does not (1 there means one more step after this one)."""
    from agentgraph._runtime import current_task

    task = current_task()
    return task.scope.remaining_steps - 1 if task is not None else None


def create_react_agent(
    model: Any,
    tools: Union[Sequence[Union[BaseTool, Callable]], ToolNode],
    *,
    prompt: Any = None,
    response_format: Any = None,
    pre_model_hook: Any = None,
    post_model_hook: Any = None,
    state_schema: Optional[type] = None,
    context_schema: Optional[type] = None,
    checkpointer: Any = None,
    store: Any = None,
    interrupt_before: Optional[list[str]] = None,
    interrupt_after: Optional[list[str]] = None,
    debug: bool = False,
    version: str = "v2",
    name: Optional[str] = None,
    **kwargs: Any,
):
    """A compiled ReAct agent graph (LangGraph's `create_react_agent`)."""
    if kwargs:
        raise TypeError(f"create_react_agent() got unexpected keyword arguments: {kwargs}")
    if version not in ("v1", "v2"):
        raise ValueError(f"Invalid version {version}. Supported versions are 'v1' and 'v2'.")
    # A model function picks the model per call from the state and the run (its tools bound
    # by the caller, as in LangGraph).
    dynamic = not isinstance(model, (str, Runnable)) and callable(model)
    is_async_dynamic = dynamic and inspect.iscoroutinefunction(model)
    if isinstance(model, str):
        from langchain.chat_models import init_chat_model  # type: ignore[import-not-found]

        model = init_chat_model(model)
    state_schema = state_schema or (AgentStateWithStructuredResponse if response_format is not None else AgentState)

    # Provider tools (dicts) go to the model only: the provider runs them.
    builtin: list[dict] = []
    if isinstance(tools, ToolNode):
        tool_node = tools
    else:
        builtin = [t for t in tools if isinstance(t, dict)]
        tool_node = ToolNode([t for t in tools if not isinstance(t, dict)])
    tool_classes = list(tool_node.tools_by_name.values())
    if not dynamic and tool_classes + builtin and _should_bind_tools(model, tool_classes, len(builtin)):
        model = model.bind_tools(tool_classes + builtin)
    static_model = None if dynamic else _prompt_runnable(prompt) | model

    def resolve(state: Any, runtime: Any) -> Runnable:
        return _prompt_runnable(prompt) | model(state, runtime) if dynamic else static_model

    async def aresolve(state: Any, runtime: Any) -> Runnable:
        return _prompt_runnable(prompt) | await model(state, runtime)

    return_direct = {t.name for t in tool_classes if t.return_direct}

    def more_steps_needed(response: BaseMessage) -> bool:
        has_calls = isinstance(response, AIMessage) and bool(response.tool_calls)
        all_direct = isinstance(response, AIMessage) and all(c["name"] in return_direct for c in response.tool_calls)
        remaining = _remaining_steps()
        if remaining is None:
            return False
        return (remaining < 1 and all_direct) or (remaining < 2 and has_calls)

    def answer(response: BaseMessage) -> dict:
        response.name = name
        if more_steps_needed(response):
            return {"messages": [AIMessage(id=response.id, content="Sorry, need more steps to process this request.")]}
        return {"messages": [response]}

    def model_input(state: Any) -> Any:
        if pre_model_hook is not None:
            messages = _state_value(state, "llm_input_messages") or _state_value(state, "messages")
            expected = "'llm_input_messages' or 'messages' key"
        else:
            messages = _state_value(state, "messages")
            expected = "'messages' key"
        if messages is None:
            raise ValueError(f"Expected input to call_model to have {expected}, but got {state}")
        _validate_chat_history(messages)
        # The prompt reads `messages`: the hook's messages go there.
        if isinstance(state, dict):
            state["messages"] = messages
        else:
            state.messages = messages
        return state

    def agent(state: Any, config: dict, runtime: Any) -> dict:
        return answer(resolve(state, runtime).invoke(model_input(state), config))

    async def aagent(state: Any, config: dict, runtime: Any) -> dict:
        # An async model function makes the node async (awaited on the caller's loop under
        # `ainvoke`; LangGraph refuses it under `invoke`, agentgraph runs it to completion).
        return answer(await (await aresolve(state, runtime)).ainvoke(model_input(state), config))

    def generate_structured_response(state: Any, config: dict, runtime: Any) -> dict:
        messages = _state_value(state, "messages")
        schema = response_format
        if isinstance(response_format, tuple):
            system_prompt, schema = response_format
            messages = [SystemMessage(content=system_prompt)] + list(messages)
        structured = _chat_model(resolve(state, runtime)).with_structured_output(schema)
        return {"structured_response": structured.invoke(messages, config)}

    async def agenerate_structured_response(state: Any, config: dict, runtime: Any) -> dict:
        messages = _state_value(state, "messages")
        schema = response_format
        if isinstance(response_format, tuple):
            system_prompt, schema = response_format
            messages = [SystemMessage(content=system_prompt)] + list(messages)
        structured = _chat_model(await aresolve(state, runtime)).with_structured_output(schema)
        return {"structured_response": await structured.ainvoke(messages, config)}

    workflow = StateGraph(state_schema, context_schema=context_schema)

    def compile_() -> Any:
        graph = workflow.compile(
            checkpointer=checkpointer,
            store=store,
            interrupt_before=interrupt_before,
            interrupt_after=interrupt_after,
            name=name,
        )
        # The agent's name (a supervisor tells its agents apart by it), as LangGraph's.
        graph.name = name or "LangGraph"
        return graph

    # With a pre-model hook, the agent also reads the hook's `llm_input_messages` (a private
    # key of the graph's state, as in LangGraph).
    workflow.add_node(
        "agent",
        aagent if is_async_dynamic else agent,
        input_schema=_model_input_schema(state_schema) if pre_model_hook is not None else None,
    )
    entrypoint = "agent"
    if pre_model_hook is not None:
        workflow.add_node("pre_model_hook", pre_model_hook)
        workflow.add_edge("pre_model_hook", "agent")
        entrypoint = "pre_model_hook"
    workflow.set_entry_point(entrypoint)
    if post_model_hook is not None:
        workflow.add_node("post_model_hook", post_model_hook)
        workflow.add_edge("agent", "post_model_hook")
    final = END
    if response_format is not None:
        workflow.add_node(
            "generate_structured_response",
            agenerate_structured_response if is_async_dynamic else generate_structured_response,
        )
        final = "generate_structured_response"
    if not tool_classes:
        if response_format is not None:
            workflow.add_edge("post_model_hook" if post_model_hook is not None else "agent", final)
        return compile_()

    def sends(calls: list, state: Any) -> list:
        """One `tools` task a call (`v2`), each with the state the router read."""
        return [
            Send("tools", ToolCallWithContext(__type="tool_call_with_context", tool_call=call, state=state))
            for call in calls
        ]

    def should_continue(state: Any) -> Union[str, list]:
        last = _state_value(state, "messages")[-1]
        if not isinstance(last, AIMessage) or not last.tool_calls:
            return "post_model_hook" if post_model_hook is not None else final
        if version == "v1":
            return "tools"
        if post_model_hook is not None:
            return "post_model_hook"
        return sends(last.tool_calls, state)

    workflow.add_node("tools", tool_node)
    if post_model_hook is not None:
        agent_paths = ["post_model_hook"]
        hook_paths = [entrypoint, "tools", final]

        def post_model_hook_router(state: Any) -> Union[str, list]:
            """To the calls still unanswered, back to the start after tool messages, or on."""
            messages = _state_value(state, "messages")
            answered = {m.tool_call_id for m in messages if isinstance(m, ToolMessage)}
            last_ai = next(m for m in reversed(messages) if isinstance(m, AIMessage))
            pending = [c for c in last_ai.tool_calls if c["id"] not in answered]
            if pending:
                return sends(pending, state)
            if isinstance(messages[-1], ToolMessage):
                return entrypoint
            return final

        workflow.add_conditional_edges("post_model_hook", post_model_hook_router, hook_paths)
    else:
        agent_paths = ["tools", final]
    workflow.add_conditional_edges("agent", should_continue, agent_paths)

    def route_tool_responses(state: Any) -> str:
        m = None
        for m in reversed(_state_value(state, "messages")):
            if not isinstance(m, ToolMessage):
                break
            if m.name in return_direct:
                return END
        # A parallel call's `return_direct` tool ran in another `Send`.
        if isinstance(m, AIMessage) and m.tool_calls and any(c["name"] in return_direct for c in m.tool_calls):
            return END
        return entrypoint

    if return_direct:
        workflow.add_conditional_edges("tools", route_tool_responses, [entrypoint, END])
    else:
        workflow.add_edge("tools", entrypoint)
    return compile_()


def _model_input_schema(state_schema: type) -> type:
    """The agent node's input with a pre-model hook: the state and `llm_input_messages`."""
    from pydantic import BaseModel

    if isinstance(state_schema, type) and issubclass(state_schema, BaseModel):
        from pydantic import create_model

        return create_model("CallModelInputSchema", llm_input_messages=(list[AnyMessage], ...), __base__=state_schema)

    class CallModelInputSchema(state_schema):  # type: ignore[misc, valid-type]
        llm_input_messages: list[AnyMessage]

    return CallModelInputSchema


create_tool_calling_executor = create_react_agent

__all__ = ["AgentState", "AgentStateWithStructuredResponse", "create_react_agent", "create_tool_calling_executor"]
