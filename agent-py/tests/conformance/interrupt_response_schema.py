"""`interrupt(value, response_schema=...)`: a Pydantic model (or `TypedDict`) is shown as its
JSON schema on the `Interrupt` and the answer comes back validated into it; a dict schema is
shown as is and the answer is not validated. A rejected answer is not kept."""

from typing import Any

from langgraph.checkpoint.memory import InMemorySaver
from langgraph.errors import is_invalid_resume
from langgraph.graph import START, StateGraph
from langgraph.types import Command, interrupt
from pydantic import BaseModel, ValidationError
from typing_extensions import TypedDict


class Decision(BaseModel):
    approved: bool
    note: str = ""


class Reply(TypedDict):
    text: str


class State(TypedDict):
    answer: Any


def run(schema, answer):
    def node(state):
        return {"answer": interrupt("approve?", response_schema=schema)}

    graph = StateGraph(State).add_node("node", node).add_edge(START, "node").compile(checkpointer=InMemorySaver())
    config = {"configurable": {"thread_id": "1"}}
    first = graph.invoke({"answer": None}, config)["__interrupt__"][0]
    print("value:", first.value, "schema:", first.response_schema)
    print("state:", graph.get_state(config).tasks[0].interrupts[0].response_schema == first.response_schema)
    print("answer:", repr(graph.invoke(Command(resume=answer), config)["answer"]))


run(Decision, {"approved": True})
run(Reply, {"text": "ok"})
run({"type": "string"}, "anything")
run(None, {"approved": "not checked"})


def check(schema, answer):
    graph = (
        StateGraph(State)
        .add_node("node", lambda s: {"answer": interrupt("?", response_schema=schema)})
        .add_edge(START, "node")
        .compile(checkpointer=InMemorySaver())
    )
    config = {"configurable": {"thread_id": "1"}}
    graph.invoke({"answer": None}, config)
    try:
        graph.invoke(Command(resume=answer), config)
    except ValidationError as error:
        print("invalid:", is_invalid_resume(error), error.error_count())
    # Nothing of the rejected answer is kept: the interrupt is answered again.
    print("pending:", [i.value for i in graph.get_state(config).interrupts])
    print("answer:", repr(graph.invoke(Command(resume={"approved": False}), config)["answer"]))


check(Decision, {"approved": "nope"})
