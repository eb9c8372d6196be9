"""`ValidationNode`: checks the last `AIMessage`'s tool calls against schemas (pydantic
models, tools' argument schemas, functions' signatures) without running anything, and
answers each call with a `ToolMessage`: the validated arguments as JSON, or the validation
error (marked `is_error`) for the model to fix. Deprecated in LangGraph 1.x, kept for
programs that still use it."""

from __future__ import annotations

from typing import Any, Callable, Optional, Sequence, Union

from langchain_core.messages import AIMessage, ToolCall, ToolMessage
from langchain_core.tools import BaseTool, create_schema_from_function
from pydantic import BaseModel, ValidationError
from pydantic.v1 import BaseModel as BaseModelV1
from pydantic.v1 import ValidationError as ValidationErrorV1


def _default_format_error(error: BaseException, call: ToolCall, schema: type) -> str:
    return f"{repr(error)}\n\nRespond after fixing all validation errors."


class ValidationNode:
    """A node that validates tool calls (LangGraph's `ValidationNode`)."""

    def __init__(
        self,
        schemas: Sequence[Union[BaseTool, type, Callable]],
        *,
        format_error: Optional[Callable[[BaseException, ToolCall, type], str]] = None,
        name: str = "validation",
        tags: Optional[list[str]] = None,
    ) -> None:
        self.name = name
        self.tags = tags
        self._format_error = format_error or _default_format_error
        self.schemas_by_name: dict[str, type] = {}
        for schema in schemas:
            if isinstance(schema, BaseTool):
                args_schema = schema.args_schema
                if args_schema is None:
                    raise ValueError(f"Tool {schema.name} does not have an args_schema defined.")
                if not (isinstance(args_schema, type) and issubclass(args_schema, (BaseModel, BaseModelV1))):
                    raise ValueError(
                        "Validation node only works with tools that have a pydantic BaseModel args_schema. "
                        f"Got {schema.name} with args_schema: {args_schema}."
                    )
                self.schemas_by_name[schema.name] = args_schema
            elif isinstance(schema, type) and issubclass(schema, (BaseModel, BaseModelV1)):
                self.schemas_by_name[schema.__name__] = schema
            elif callable(schema):
                self.schemas_by_name[schema.__name__] = create_schema_from_function("Validation", schema)
            else:
                raise ValueError(
                    f"Unsupported input to ValidationNode. Expected BaseModel, tool or function. Got: {type(schema)}."
                )

    def __call__(self, input: Any) -> Any:
        if isinstance(input, list):
            as_list, messages = True, input
        elif messages := input.get("messages", []):
            as_list = False
        else:
            raise ValueError("No message found in input")
        message = messages[-1]
        if not isinstance(message, AIMessage):
            raise ValueError("Last message is not an AIMessage")
        outputs = [self._validate(call) for call in message.tool_calls]
        return outputs if as_list else {"messages": outputs}

    def invoke(self, input: Any, config: Optional[dict] = None, **_: Any) -> Any:
        return self(input)

    def _validate(self, call: ToolCall) -> ToolMessage:
        schema = self.schemas_by_name[call["name"]]
        try:
            if issubclass(schema, BaseModel):
                content = schema.model_validate(call["args"]).model_dump_json()
            else:
                content = schema.validate(call["args"]).json()
            return ToolMessage(content=content, name=call["name"], tool_call_id=call["id"])
        except (ValidationError, ValidationErrorV1) as error:
            return ToolMessage(
                content=self._format_error(error, call, schema),
                name=call["name"],
                tool_call_id=call["id"],
                additional_kwargs={"is_error": True},
            )


__all__ = ["ValidationNode"]
