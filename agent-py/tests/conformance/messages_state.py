"""`MessagesState` extended with keys of one's own; a node annotated with `MessagesState`
reads only `messages`."""

from langchain_core.messages import AIMessage, HumanMessage

from langgraph.graph import END, START, MessagesState, StateGraph

seen = []  # what nodes got, printed after the run


class State(MessagesState):
    summary: str
    turns: int


def chat(state: MessagesState):
    seen.append(("chat", sorted(state)))
    return {"messages": [AIMessage(content=f"re: {state['messages'][-1].content}", id="a1")]}


def summarize(state: State):
    seen.append(("summarize", sorted(state)))
    return {"summary": " / ".join(m.content for m in state["messages"]), "turns": len(state["messages"])}


builder = StateGraph(State)
builder.add_node("chat", chat)
builder.add_node("summarize", summarize)
builder.add_edge(START, "chat")
builder.add_edge("chat", "summarize")
builder.add_edge("summarize", END)
out = builder.compile().invoke({"messages": [HumanMessage(content="hi", id="h1")], "summary": "", "turns": 0})
print(*seen, sep="\n")
print(out["summary"], out["turns"], [(type(m).__name__, m.id) for m in out["messages"]])
