"""`InMemoryStore` details: a namespace whose items were all deleted is still listed (and its
prefix at a depth), values beyond JSON (datetimes, sets, objects) come back as themselves, and
an async `embed` function used through the async API."""

import asyncio
from datetime import datetime, timezone

from langgraph.store.memory import InMemoryStore

store = InMemoryStore()
store.put(("docs", "a"), "k1", {"v": 1})
store.put(("docs", "a"), "k2", {"v": 2})
store.put(("docs", "b"), "k", {"v": 3})
store.delete(("docs", "a"), "k1")
store.delete(("docs", "a"), "k2")
print("listed", store.list_namespaces())
print("depth", store.list_namespaces(max_depth=1), store.list_namespaces(prefix=("docs",), limit=1, offset=1))
print("search emptied", store.search(("docs", "a")))
store.put(("docs", "a"), "k3", {"v": 4})
print("refilled", [i.key for i in store.search(("docs",))])


class Point:
    def __init__(self, x):
        self.x = x


when = datetime(2026, 1, 2, 3, 4, 5, tzinfo=timezone.utc)
point = Point(7)
store.put(("objects",), "o", {"when": when, "tags": {"a"}, "point": point, "n": 1})
value = store.get(("objects",), "o").value
print("objects", value["when"] == when, value["tags"], value["point"] is point, value["n"])
print("found", [i.key for i in store.search(("objects",), filter={"n": 1})])

VOCAB = ["cat", "dog", "fish"]


async def aembed(texts):
    await asyncio.sleep(0)
    return [[float(w in t) for w in VOCAB] + [0.1] for t in texts]


async def main():
    indexed = InMemoryStore(index={"dims": 4, "embed": aembed})
    await indexed.aput(("pets",), "c", {"text": "a cat"})
    await indexed.aput(("pets",), "d", {"text": "a dog"})
    await indexed.aput(("pets",), "f", {"text": "a fish and a cat"})
    hits = await indexed.asearch(("pets",), query="cat")
    print("async embed", [(h.key, round(h.score, 4)) for h in hits])


asyncio.run(main())
