import operator
from typing import Annotated, TypedDict

from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, StateGraph
from langgraph.types import Command, interrupt


class Draft(TypedDict):
    text: str
    log: Annotated[list, operator.add]


def write(state):
    return {"text": f"draft of {state['text']}", "log": ["write"]}


def review(state):
    answer = interrupt({"question": "ship it?", "text": state["text"]})
    return {"text": f"{state['text']} ({answer})", "log": [f"review:{answer}"]}


def route(state):
    return Command(goto="publish" if "yes" in state["text"] else END, update={"log": ["routed"]})


builder = StateGraph(Draft)
builder.add_node("write", write)
builder.add_node("review", review)
builder.add_node("decide", route)
builder.add_node("publish", lambda s: {"log": ["published"]})
builder.add_edge(START, "write")
builder.add_edge("write", "review")
builder.add_edge("review", "decide")
graph = builder.compile(checkpointer=InMemorySaver())

config = {"configurable": {"thread_id": "t1"}}
out = graph.invoke({"text": "post"}, config)
print(sorted(k for k in out), out["text"], out["log"])
print([i.value for i in out["__interrupt__"]])
state = graph.get_state(config)
print(state.values, state.next, [i.value for i in state.interrupts])
print(graph.invoke(Command(resume="yes"), config))
state = graph.get_state(config)
print(state.values, state.next)
print(graph.get_state({"configurable": {"thread_id": "nobody"}}).values)
