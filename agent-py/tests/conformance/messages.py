from langchain_core.messages import AIMessage, HumanMessage, RemoveMessage

from langgraph.graph import END, START, MessagesState, StateGraph


def reply(state):
    last = state["messages"][-1]
    return {"messages": [AIMessage(content=f"echo: {last.content}", id="ai-1")]}


def edit(state):
    return {"messages": [AIMessage(content="edited", id="ai-1"), {"role": "user", "content": "more", "id": "u-2"}]}


builder = StateGraph(MessagesState)
builder.add_node("reply", reply)
builder.add_node("edit", edit)
builder.add_edge(START, "reply")
builder.add_edge("reply", "edit")
builder.add_edge("edit", END)
graph = builder.compile()
out = graph.invoke({"messages": [HumanMessage(content="hi", id="u-1")]})
print([(type(m).__name__, m.id, m.content) for m in out["messages"]])
out = graph.invoke({"messages": [("user", "tuple form")]})
print([(type(m).__name__, m.content, m.id is not None) for m in out["messages"]])


def forget(state):
    return {"messages": [RemoveMessage(id="ai-1")]}


pruning = StateGraph(MessagesState)
pruning.add_node("reply", reply)
pruning.add_node("forget", forget)
pruning.add_edge(START, "reply")
pruning.add_edge("reply", "forget")
out = pruning.compile().invoke({"messages": [HumanMessage(content="x", id="u-9")]})
print([(type(m).__name__, m.id, m.content) for m in out["messages"]])
