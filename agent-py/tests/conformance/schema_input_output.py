"""`input_schema`/`output_schema`, private state (a key only a node's input annotation
declares), `add_node(input_schema=...)`, and the legacy `input=`/`output=` keywords."""

import warnings

from typing_extensions import TypedDict

from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, StateGraph

warnings.filterwarnings("ignore")
seen = []  # what nodes got, printed after each run


def show(result=None):
    print(*seen, sep="\n")
    seen.clear()
    if result is not None:
        print(result)


class In(TypedDict):
    question: str


class Out(TypedDict):
    answer: str


class Overall(In, Out):
    notes: str


class Private(TypedDict):
    secret: str


def first(state: In) -> Private:
    seen.append(("first", state))
    return {"secret": "s-" + state["question"], "notes": "n", "unknown": 1}


def second(state: Private):
    seen.append(("second", state))
    return {"answer": state["secret"] + "!"}


def third(state: Overall):
    seen.append(("third", state))
    return {"notes": state["notes"] + "3"}


def build(**schemas):
    builder = StateGraph(Overall, **schemas)
    builder.add_node("first", first)
    builder.add_node("second", second)
    builder.add_node("third", third)
    builder.add_edge(START, "first")
    builder.add_edge("first", "second")
    builder.add_edge("second", "third")
    builder.add_edge("third", END)
    return builder


graph = build(input_schema=In, output_schema=Out).compile()
show(graph.invoke({"question": "q", "notes": "dropped", "answer": "dropped"}))
for mode in ["values", "updates"]:
    print(mode, list(graph.stream({"question": "q"}, stream_mode=mode)))
    show()
show(build(input=In, output=Out).compile().invoke({"question": "legacy"}))
show(build().compile().invoke({"question": "all", "notes": "kept"}))

saved = build(input_schema=In, output_schema=Out).compile(checkpointer=InMemorySaver())
config = {"configurable": {"thread_id": "1"}}
show(saved.invoke({"question": "q"}, config))
print(saved.get_state(config).values)


class Reordered(TypedDict):
    notes: str
    question: str


def fourth(state):
    seen.append(("fourth", state))
    return {"answer": "4", "notes": "n4"}


builder = StateGraph(Overall, output_schema=Reordered)
builder.add_node("fourth", fourth, input_schema=In)
builder.add_edge(START, "fourth")
builder.add_edge("fourth", END)
show(builder.compile().invoke({"question": "q", "notes": "x"}))


def pick(state: In):
    seen.append(("pick", state))
    return END


def answer(state: Overall):
    return {"answer": "a", "notes": "n"}


routed = StateGraph(Overall)
routed.add_node("answer", answer)
routed.add_edge(START, "answer")
routed.add_conditional_edges("answer", pick)
show(routed.compile().invoke({"question": "q"}))
