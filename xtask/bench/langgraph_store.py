#!/usr/bin/env python3
"""LangGraph's side of `cargo xtask bench store`.

The same data and operations as agent-bench's `store_bench` on LangGraph's `InMemoryStore` and
`PostgresStore` (langgraph-checkpoint-postgres), through the sync API (`store.put`, `get`,
`search`), one store per process: plain put, get, filtered search, the embedding function
alone, put with an index (on `text`) and semantic search, then the process's peak RSS. Each
search phase starts with one untimed search (first-call costs such as numpy's import).

Semantic search uses agentgraph's offline embedding (agent-llm's `OfflineEmbeddings`), ported
here exactly: lowercase words split on non-alphanumeric characters; each word (weight 2) and
its character trigrams padded with spaces (weight 1) hashed with 64-bit FNV-1a to a slot
(`hash % dims`) and a sign (the top bit), the vector L2-normalized in f32. `--check` prints the
data, queries and a few vectors as `store_bench check` does; xtask fails the bench when the two
differ. LangGraph's PostgresStore needs the `vector` extension (pgvector) for an index: without
it, put with index and semantic search are reported as not run.

    python langgraph_store.py --backend memory|postgres [--items N] [--searches N] [--postgres URL]
    python langgraph_store.py --check [--items N] [--searches N]
"""

import argparse
import json
import os
import re
import sys
import time
from array import array

DIMS = 256
USERS = 100
KINDS = ["note", "fact", "preference", "todo"]
WORDS = [
    "alpha", "amber", "anchor", "apple", "arrow", "atlas", "autumn", "basil", "beacon", "birch",
    "breeze", "bridge", "canyon", "cedar", "cinder", "clover", "comet", "coral", "crystal",
    "delta", "desert", "ember", "falcon", "fern", "fjord", "forest", "garnet", "glacier", "harbor",
    "hazel", "horizon", "island", "ivory", "jasmine", "juniper", "lagoon", "lantern", "lemon",
    "maple", "meadow", "meteor", "mint", "nebula", "oasis", "ocean", "olive", "orchid", "pebble",
    "pepper", "pine", "prairie", "quartz", "raven", "river", "saffron", "sierra", "spruce",
    "summit", "thunder", "tulip", "valley", "willow", "winter", "zephyr",
]  # fmt: skip
TEXT_WORDS = 8
QUERY_WORDS = 4
CHECK_TEXTS = [
    "The cat sleeps on the sofa",
    "the CAT sleeps, on the sofa!",
    "quarterly tax report 2026",
    "Ça coûte 12€ — naïve café",
    "Straße über Ölfelder",
    "ΣΊΣΥΦΟΣ and δοκιμή",
    "snake_case and kebab-case x1y2",
    "",
]
DATABASE = "agentgraph_store_bench_lg"
MASK = (1 << 64) - 1


class Lcg:
    """A 64-bit LCG (Knuth's MMIX constants): the same stream as store_bench's."""

    def __init__(self, seed: int) -> None:
        self.state = seed

    def next(self) -> int:
        self.state = (self.state * 6364136223846793005 + 1442695040888963407) & MASK
        return self.state >> 33

    def words(self, n: int) -> str:
        return " ".join(WORDS[self.next() % len(WORDS)] for _ in range(n))


def data(items: int) -> list[tuple[str, str, dict]]:
    rng = Lcg(1)
    return [
        (f"u{i % USERS}", f"k{i}", {"kind": KINDS[i % len(KINDS)], "n": i, "text": rng.words(TEXT_WORDS)})
        for i in range(items)
    ]


def get_index(q: int, items: int) -> int:
    return (q * 7919) % items


def search_filter(q: int, items: int) -> tuple[str, int]:
    return KINDS[q % len(KINDS)], (q * 7919) % items


def queries(searches: int) -> list[str]:
    rng = Lcg(2)
    return [rng.words(QUERY_WORDS) for _ in range(searches)]


# ---------------------------------------------------------------------------------------------
# agentgraph's OfflineEmbeddings, ported
# ---------------------------------------------------------------------------------------------

# Runs of alphanumeric characters (`str.isalnum`, as Rust's `char::is_alphanumeric`).
WORD = re.compile(r"[^\W_]+")


def _add(v: list[float], feature: bytes, weight: float) -> None:
    h = 0xCBF29CE484222325
    for b in feature:
        h = ((h ^ b) * 0x100000001B3) & MASK
    v[h % DIMS] += -weight if h >> 63 else weight


def offline_vector(text: str) -> list[float]:
    v = [0.0] * DIMS
    for word in WORD.findall(text.lower()):
        _add(v, word.encode(), 2.0)
        padded = f" {word} "
        for i in range(len(padded) - 2):
            _add(v, padded[i : i + 3].encode(), 1.0)
    # Sums of small integers are exact in f32 and f64 alike; the square root and the division,
    # done in f64 and rounded once to f32, equal Rust's f32 operations.
    norm = array("f", [sum(x * x for x in v) ** 0.5])[0]
    if norm > 0.0:
        v = [x / norm for x in v]
    return array("f", v).tolist()


def offline_embed(texts: list[str]) -> list[list[float]]:
    """The `embed` callable of LangGraph's index config."""
    return [offline_vector(t) for t in texts]


def check(items: int, searches: int) -> None:
    out = sys.stdout
    for user, key, value in data(items):
        out.write(f"item bench/{user} {key} kind={value['kind']} n={value['n']} text={value['text']}\n")
    for q in range(searches):
        kind, above = search_filter(q, items)
        out.write(f"get {get_index(q, items)} filter kind={kind} n>{above}\n")
    for text in CHECK_TEXTS + queries(searches)[:20]:
        bits = array("f", offline_vector(text)).tobytes()
        hexes = "".join(f"{int.from_bytes(bits[i : i + 4], 'little'):08x}" for i in range(0, len(bits), 4))
        out.write(f"vector {rust_debug(text)} {hexes}\n")


def rust_debug(text: str) -> str:
    """A string as Rust's `{:?}` prints it (enough for the check texts: quotes and backslashes)."""
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


# ---------------------------------------------------------------------------------------------
# Measurement
# ---------------------------------------------------------------------------------------------


def peak_rss_kib() -> int:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    return 0


class Timing:
    def __init__(self) -> None:
        self.nanos: list[int] = []
        self.started = time.perf_counter()
        self.hits = 0
        self.first_keys: list[str] = []

    def row(self, backend: str, op: str) -> dict:
        seconds = time.perf_counter() - self.started
        nanos = sorted(self.nanos)

        def pct(p: float) -> float:
            i = min(max(-(-len(nanos) * p // 1), 1), len(nanos))
            return nanos[int(i) - 1] / 1000.0

        return {
            "side": "langgraph",
            "backend": backend,
            "op": op,
            "count": len(nanos),
            "seconds": seconds,
            "ops_per_s": len(nanos) / seconds,
            "mean_us": sum(nanos) / len(nanos) / 1000.0,
            "p50_us": pct(0.50),
            "p99_us": pct(0.99),
            "hits": self.hits,
            "first_keys": self.first_keys,
        }


def emit(row: dict) -> None:
    print(json.dumps(row), flush=True)


def with_database(url: str, name: str) -> str:
    base, sep, query = url.partition("?")
    start = base.find("://")
    start = 0 if start < 0 else start + 3
    slash = base.find("/", start)
    host = base if slash < 0 else base[:slash]
    return f"{host}/{name}{sep}{query}"


def fresh_database(url: str) -> str:
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{DATABASE}" WITH (FORCE)')
        conn.execute(f'CREATE DATABASE "{DATABASE}"')
    return with_database(url, DATABASE)


def has_pgvector(url: str) -> bool:
    import psycopg

    with psycopg.connect(url) as conn:
        return conn.execute("SELECT 1 FROM pg_available_extensions WHERE name = 'vector'").fetchone() is not None


def analyze(url: str) -> None:
    """The database's statistics, gathered after a put phase (untimed; agentgraph's side does
    the same): autovacuum would within a minute, and a search's plan depends on them."""
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("ANALYZE")


def measure(
    backend: str, plain, indexed, items: int, searches: int, not_indexed: str | None, settle=lambda: None
) -> None:
    rows = data(items)

    t = Timing()
    for user, key, value in rows:
        start = time.perf_counter_ns()
        plain.put(("bench", user), key, value)
        t.nanos.append(time.perf_counter_ns() - start)
    emit(t.row(backend, "put"))
    settle()

    t = Timing()
    for q in range(items):
        user, key, _ = rows[get_index(q, items)]
        start = time.perf_counter_ns()
        got = plain.get(("bench", user), key)
        t.nanos.append(time.perf_counter_ns() - start)
        t.hits += got is not None
    emit(t.row(backend, "get"))

    plain.search(("bench",), filter={"kind": "warm-up"}, limit=10)  # untimed: first-call costs
    t = Timing()
    for q in range(searches):
        kind, above = search_filter(q, items)
        start = time.perf_counter_ns()
        found = plain.search(("bench",), filter={"kind": kind, "n": {"$gt": above}}, limit=10)
        t.nanos.append(time.perf_counter_ns() - start)
        t.hits += len(found)
    emit(t.row(backend, "search_filter"))

    t = Timing()
    for _, _, value in rows:
        start = time.perf_counter_ns()
        vector = offline_vector(value["text"])
        t.nanos.append(time.perf_counter_ns() - start)
        t.hits += len(vector) // DIMS
    emit(t.row(backend, "embed"))

    if indexed is None:
        for op in ("put_indexed", "search_semantic"):
            emit({"side": "langgraph", "backend": backend, "op": op, "error": not_indexed})
        return

    t = Timing()
    for user, key, value in rows:
        start = time.perf_counter_ns()
        indexed.put(("idx", user), key, value)
        t.nanos.append(time.perf_counter_ns() - start)
    emit(t.row(backend, "put_indexed"))
    settle()

    indexed.search(("idx",), query="warm up", limit=10)  # untimed: first-call costs (numpy's import)
    t = Timing()
    for q, query in enumerate(queries(searches)):
        start = time.perf_counter_ns()
        found = indexed.search(("idx",), query=query, limit=10)
        t.nanos.append(time.perf_counter_ns() - start)
        t.hits += len(found)
        if q == 0:
            t.first_keys = [f.key for f in found]
    emit(t.row(backend, "search_semantic"))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backend", choices=["memory", "postgres"])
    parser.add_argument("--items", type=int, default=10_000)
    parser.add_argument("--searches", type=int, default=200)
    parser.add_argument("--postgres", default=os.environ.get("AGENTGRAPH_POSTGRES_URL"))
    parser.add_argument("--check", action="store_true")
    args = parser.parse_args()
    if args.check:
        check(args.items, args.searches)
        return 0
    index = {"dims": DIMS, "embed": offline_embed, "fields": ["text"]}
    if args.backend == "memory":
        from langgraph.store.memory import InMemoryStore

        measure("memory", InMemoryStore(), InMemoryStore(index=index), args.items, args.searches, None)
    elif args.backend == "postgres":
        from langgraph.store.postgres import PostgresStore

        if not args.postgres:
            parser.error("--postgres URL (or AGENTGRAPH_POSTGRES_URL) is needed")
        url = fresh_database(args.postgres)
        vector = has_pgvector(url)
        with PostgresStore.from_conn_string(url) as plain:
            plain.setup()
            if vector:
                with PostgresStore.from_conn_string(url, index=index) as indexed:
                    indexed.setup()
                    measure("postgres", plain, indexed, args.items, args.searches, None, lambda: analyze(url))
            else:
                why = "LangGraph's PostgresStore needs the `vector` extension (pgvector) for an index, and this server has none"
                measure("postgres", plain, None, args.items, args.searches, why, lambda: analyze(url))
                emit({"side": "langgraph", "backend": "postgres", "op": "note", "text": why + "."})
    else:
        parser.error("--backend or --check is needed")
    emit({"side": "langgraph", "backend": args.backend, "op": "process", "peak_rss_kib": peak_rss_kib()})
    return 0


if __name__ == "__main__":
    sys.exit(main())
