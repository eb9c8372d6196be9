"""Drives langgraph dev with langgraph-sdk (python) and logs every HTTP request the SDK sends."""
import asyncio, json
from langgraph_sdk import get_client
LOG = []
async def on_request(req):
    body = req.content.decode() if req.content else ""
    hs = {k: v for k, v in req.headers.items() if k.lower() in ("user-agent", "x-api-key", "accept", "content-type", "cache-control", "last-event-id", "prefer")}
    LOG.append(f"{req.method} {req.url.raw_path.decode()}  headers={json.dumps(hs)}" + (f"\n    body={body[:400]}" if body else ""))
async def main():
    c = get_client(url="http://127.0.0.1:2099", api_key="test-key")
    c.http.client.event_hooks["request"] = [on_request]
    def mark(s): LOG.append(f"\n### {s}")
    mark("assistants.search(graph_id='agent')"); a = await c.assistants.search(graph_id="agent")
    aid = a[0]["assistant_id"]
    mark("assistants.get"); await c.assistants.get(aid)
    mark("assistants.get_graph(xray=True)"); await c.assistants.get_graph(aid, xray=True)
    mark("assistants.get_schemas"); await c.assistants.get_schemas(aid)
    mark("assistants.get_subgraphs(recurse=True)"); await c.assistants.get_subgraphs(aid, recurse=True)
    mark("assistants.create"); na = await c.assistants.create(graph_id="agent", context={"model": "x"}, name="n", if_exists="do_nothing")
    mark("assistants.update"); await c.assistants.update(na["assistant_id"], metadata={"k": 1})
    mark("assistants.get_versions"); await c.assistants.get_versions(na["assistant_id"])
    mark("assistants.set_latest"); await c.assistants.set_latest(na["assistant_id"], 1)
    mark("assistants.count"); await c.assistants.count()
    mark("assistants.delete"); await c.assistants.delete(na["assistant_id"])
    mark("threads.create"); th = await c.threads.create(metadata={"u": 1}, if_exists="do_nothing")
    tid = th["thread_id"]
    mark("threads.get"); await c.threads.get(tid)
    mark("threads.update"); await c.threads.update(tid, metadata={"v": 2})
    mark("threads.search"); await c.threads.search(metadata={"u": 1}, status="idle", limit=5)
    mark("threads.count"); await c.threads.count()
    mark("runs.stream(stream_mode=['values','messages-tuple'], stream_subgraphs=True)")
    parts = []
    async for p in c.runs.stream(tid, "agent", input={"messages": [{"role": "human", "content": "hi"}]}, stream_mode=["values", "messages-tuple"], stream_subgraphs=True):
        parts.append(p.event)
    LOG.append(f"    -> events: {parts}")
    mark("runs.wait"); w = await c.runs.wait(tid, "agent", input={"messages": [{"type": "human", "content": "please ask"}]})
    LOG.append(f"    -> keys {list(w)}")
    mark("threads.get_state(subgraphs=True)"); st = await c.threads.get_state(tid, subgraphs=True)
    mark("runs.wait(command=resume)"); await c.runs.wait(tid, "agent", command={"resume": "yes"})
    mark("threads.get_history(limit=3)"); h = await c.threads.get_history(tid, limit=3)
    mark("threads.get_state(checkpoint_id=...)"); await c.threads.get_state(tid, checkpoint_id=h[-1]["checkpoint_id"])
    mark("threads.get_state(checkpoint=...)"); await c.threads.get_state(tid, checkpoint=h[-1]["checkpoint"])
    mark("threads.update_state(as_node)"); await c.threads.update_state(tid, {"count": 1}, as_node="human")
    mark("runs.create(stream_resumable=True)"); r = await c.runs.create(tid, "agent", input={"messages": [{"role": "user", "content": "sleep 1"}]}, stream_resumable=True, stream_mode=["updates"])
    mark("runs.join_stream(last_event_id='-1')")
    ev = [p.event async for p in c.runs.join_stream(tid, r["run_id"], last_event_id="-1")]
    LOG.append(f"    -> events: {ev}")
    mark("runs.join"); await c.runs.join(tid, r["run_id"])
    mark("runs.get"); await c.runs.get(tid, r["run_id"])
    mark("runs.list"); await c.runs.list(tid, limit=5)
    mark("runs.create + runs.cancel(wait=True, action='interrupt')"); r2 = await c.runs.create(tid, "agent", input={"messages": [{"role": "user", "content": "sleep 5"}]})
    await asyncio.sleep(1.5)
    res = await c.runs.cancel(tid, r2["run_id"], wait=True, action="interrupt")
    LOG.append(f"    -> {res!r}"[:300])
    mark("runs.delete"); await c.runs.delete(tid, r2["run_id"])
    mark("runs.create_batch"); await c.runs.create_batch([{"assistant_id": "simple", "input": {"value": "z"}}])
    mark("runs.wait stateless (thread_id=None)"); await c.runs.wait(None, "simple", input={"value": "q"})
    mark("runs.stream stateless"); [p async for p in c.runs.stream(None, "simple", input={"value": "q"}, stream_mode="updates")]
    mark("runs.cancel_many(status='pending')")
    try: await c.runs.cancel_many(status="pending")
    except Exception as e: LOG.append(f"    -> raised {type(e).__name__}: {str(e)[:200]}")
    mark("threads.copy"); await c.threads.copy(tid)
    mark("threads.join_stream (thread-level, bounded)")
    async def js():
        async for p in await c.threads.join_stream(tid):
            pass
    try: await asyncio.wait_for(js(), 1.5)
    except asyncio.TimeoutError: LOG.append("    -> (timed out as expected)")
    mark("threads.delete"); await c.threads.delete(tid)
    mark("error mapping: get unknown thread")
    try: await c.threads.get("00000000-0000-0000-0000-000000000000")
    except Exception as e: LOG.append(f"    -> raised {type(e).__module__}.{type(e).__name__}: {str(e)[:300]}")
asyncio.run(main())
open("transcripts/05_python_sdk_requests.md", "w").write("# Requests sent by langgraph-sdk 0.4.14 (python) for each SDK call\n\nLogged with an httpx request hook; api_key='test-key'.\n" + "\n".join(LOG) + "\n")
