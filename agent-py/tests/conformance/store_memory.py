"""Cross-thread memory (the docs' "add memory" how-to shape): `compile(store=...)` with a
checkpointer, nodes taking `store` by name or reading `runtime.store` / `get_store()`,
memories written under a user's namespace on one thread and found on another by semantic
search (a fake embedding), and the store's own calls: get/put/delete/search with filters,
list_namespaces, batch, and their async twins."""

import asyncio
import uuid
from datetime import datetime

from langchain_core.embeddings import Embeddings
from langchain_core.messages import AIMessage, HumanMessage
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.config import get_store
from langgraph.graph import START, MessagesState, StateGraph
from langgraph.runtime import Runtime
from langgraph.store.base import BaseStore, GetOp, Item, ListNamespacesOp, PutOp, SearchItem, SearchOp
from langgraph.store.memory import InMemoryStore

VOCAB = ["pizza", "rust", "python", "cats", "name", "bob", "food", "language"]


def embed(texts):
    """A bag of words over a small vocabulary (plus a constant, so no vector is zero)."""
    out = []
    for text in texts:
        words = text.lower().replace('"', " ").replace(":", " ").replace(",", " ").split()
        out.append([float(words.count(w)) for w in VOCAB] + [0.1])
    return out


store = InMemoryStore(index={"dims": len(VOCAB) + 1, "embed": embed})


def call_model(state: MessagesState, config, *, store: BaseStore):
    user_id = config["configurable"]["user_id"]
    namespace = ("memories", user_id)
    last = state["messages"][-1].content
    memories = store.search(namespace, query=str(last))
    info = "; ".join(d.value["data"] for d in memories[:1])
    if "remember" in last.lower():
        memory = last.split(":", 1)[1].strip()
        store.put(namespace, str(uuid.uuid4()), {"data": memory})
    return {"messages": [AIMessage(f"known: {info or 'nothing'}")]}


def check_runtime(state: MessagesState, runtime: Runtime):
    same = runtime.store is store and get_store() is store
    return {"messages": [AIMessage(f"runtime store is the store: {same}")]}


builder = StateGraph(MessagesState)
builder.add_node("call_model", call_model)
builder.add_node("check_runtime", check_runtime)
builder.add_edge(START, "call_model")
builder.add_edge("call_model", "check_runtime")
graph = builder.compile(checkpointer=InMemorySaver(), store=store)


def chat(thread, user, text):
    config = {"configurable": {"thread_id": thread, "user_id": user}}
    out = graph.invoke({"messages": [HumanMessage(text)]}, config)
    print(thread, user, [m.content for m in out["messages"][-2:]])


chat("1", "u1", "Hi! Remember: my name is Bob")
chat("1", "u1", "Remember: I like pizza food")
chat("2", "u1", "what is my name?")
chat("2", "u1", "which food do I like? pizza?")
chat("3", "u2", "what is my name?")

hits = store.search(("memories", "u1"), query="pizza")
print([(h.value, type(h).__name__, isinstance(h, Item), round(h.score, 3)) for h in hits])
print([m.value["data"] for m in store.search(("memories",))])
print(store.list_namespaces())

# The store's own calls.
plain = InMemoryStore()
plain.put(("users", "ada"), "profile", {"name": "Ada", "age": 36, "tags": ["math"]})
plain.put(("users", "ada"), "prefs", {"lang": "en", "age": 1})
plain.put(("users", "bob"), "profile", {"name": "Bob", "age": 41})
plain.put(("docs",), "a", {"text": "x"})
item = plain.get(("users", "ada"), "profile")
print(type(item).__name__, item.namespace, item.key, item.value)
print(isinstance(item.created_at, datetime), item.created_at.tzinfo is not None, item.created_at <= item.updated_at)
print(sorted(k for k in item.dict()))
print(plain.get(("users", "ada"), "missing"))
print([(h.namespace, h.key, h.score) for h in plain.search(("users",))])
print([(h.namespace, h.key) for h in plain.search(("users",), filter={"age": {"$gt": 35}})])
print([(h.namespace, h.key) for h in plain.search(("users",), filter={"name": "Bob"})])
print([h.key for h in plain.search(("users",), limit=2)], [h.key for h in plain.search((), limit=2, offset=2)])
# Without an index a query and an index choice are ignored; order stays the puts'.
plain.put(("users", "ada"), "prefs", {"lang": "fr", "age": 1}, index=["lang"])
print([(h.key, h.value) for h in plain.search(("users",), query="anything")])
print(plain.list_namespaces(prefix=("users",)))
print(plain.list_namespaces(max_depth=1))
print(plain.list_namespaces(suffix=("ada",)))
plain.put(("users", "ada"), "profile", {"name": "Ada L."})
again = plain.get(("users", "ada"), "profile")
print(again.value, again.created_at == item.created_at)
plain.delete(("users", "ada"), "profile")
print(plain.get(("users", "ada"), "profile"))
results = plain.batch(
    [
        GetOp(("users", "bob"), "profile"),
        PutOp(("users", "cy"), "profile", {"name": "Cy"}),
        SearchOp(("users", "bob")),
        ListNamespacesOp(),
    ]
)
print(type(results[0]).__name__, results[1], [type(r).__name__ for r in results[2]], results[3])
# Reads see the store as it was before the batch's puts.
print(plain.batch([PutOp(("b",), "k", {"v": 1}), GetOp(("b",), "k"), PutOp(("b",), "k", {"v": 2})]))
print(plain.get(("b",), "k").value)
# The very dict put comes back.
mine = {"z": 1, "a": 2}
plain.put(("ident",), "k", mine)
print(plain.get(("ident",), "k").value is mine, list(plain.search(("ident",))[0].value))
for bad in [(), ("langgraph", "x"), ("a.b",), ("",)]:
    try:
        plain.put(bad, "k", {"v": 1})
    except ValueError as error:
        print(type(error).__name__, isinstance(error, ValueError))
print(SearchItem.__mro__[1].__name__, issubclass(InMemoryStore, BaseStore))


async def main():
    await plain.aput(("async",), "k", {"v": 1})
    got = await plain.aget(("async",), "k")
    found = await plain.asearch(("async",))
    print(got.value, [f.value for f in found], await plain.alist_namespaces(prefix=("async",)))
    await plain.adelete(("async",), "k")
    print(await plain.aget(("async",), "k"))
    [cy] = await plain.abatch([GetOp(("users", "cy"), "profile")])
    print(type(cy).__name__, cy.value, cy.created_at <= cy.updated_at)


asyncio.run(main())

# The how-to without an index: memories come back in the order they were stored.
notes = InMemoryStore()
for i, text in enumerate(["likes tea", "lives in Oslo", "has a cat", "likes tea a lot"]):
    notes.put(("memories", "u9"), f"m{9 - i}", {"data": text})
notes.put(("memories", "u9"), "m8", {"data": "lives in Bergen"})
notes.put(("memories", "a0"), "x", {"data": "other user"})
print([m.value["data"] for m in notes.search(("memories", "u9"), query="where")])
print([m.value["data"] for m in notes.search(("memories",), limit=3, offset=1)])

# By meaning: ties in score keep the puts' order; items without vectors come last.
ranked = InMemoryStore(index={"dims": len(VOCAB) + 1, "embed": embed, "fields": ["text"]})
ranked.put(("r",), "z", {"text": "cats"})
ranked.put(("r",), "y", {"text": "rust"})
ranked.put(("r",), "x", {"text": "cats"})
ranked.put(("r",), "w", {"other": "no text"})
ranked.put(("r",), "v", {"text": "cats"}, index=False)
print([(h.key, round(h.score, 3) if h.score is not None else None) for h in ranked.search(("r",), query="cats")])
print([h.key for h in ranked.search(("r",), query="cats", limit=2, offset=1)])

# A LangChain `Embeddings` as the index's `embed`, streaming `values` as the how-to does.

class BagEmbeddings(Embeddings):
    def embed_documents(self, texts):
        return embed(texts)

    def embed_query(self, text):
        return embed([text])[0]


lc_store = InMemoryStore(index={"dims": len(VOCAB) + 1, "embed": BagEmbeddings(), "fields": ["text"]})
for text in ["rust and cats", "python", "cats"]:
    lc_store.put(("docs",), text, {"text": text})
print([(h.key, round(h.score, 3)) for h in lc_store.search(("docs",), query="cats")])
graph = builder.compile(checkpointer=InMemorySaver(), store=lc_store)
config = {"configurable": {"thread_id": "lc", "user_id": "u5"}}
for chunk in graph.stream({"messages": [HumanMessage("Remember: I am Eve")]}, config, stream_mode="values"):
    print(type(chunk["messages"][-1]).__name__, chunk["messages"][-1].content)
print([m.value for m in lc_store.search(("memories", "u5"))])
