#!/usr/bin/env python3
"""A proxy that breaks a correct LangGraph server in one chosen way, to show that the SDK checks bite.

Usage: python mutants.py UPSTREAM_URL PORT MUTANT   (needs starlette, httpx and uvicorn: the venv of
`langgraph dev` has them), then run the checks against http://127.0.0.1:PORT: the checks named in
MUTANTS[MUTANT] must fail, all others should pass. `none` proxies unchanged.
"""
import json
import re
import sys

import httpx
import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response, StreamingResponse
from starlette.routing import Route

# mutant -> what it does (the checks expected to catch it are printed by the driver, see README)
MUTANTS = {
    "none": "proxy unchanged",
    "no_attempt": "SSE metadata event without `attempt`",
    "end_event": "an `event: end` appended to every SSE stream",
    "conflict_400": "409 answers turned into 400",
    "unknown_graph_404": "422 answers turned into 404",
    "no_interrupt": "`__interrupt__` dropped from /wait and /join bodies",
    "no_content_location": "no Content-Location header",
    "thread_idle": "thread status `interrupted`/`busy`/`error` reported as `idle`",
    "sub_ns_plain": "`<mode>|sub:<id>` SSE names reported without the namespace",
}

UP, PORT, MUT = sys.argv[1].rstrip("/"), int(sys.argv[2]), sys.argv[3]
assert MUT in MUTANTS, f"unknown mutant {MUT}; known: {sorted(MUTANTS)}"
client = httpx.AsyncClient(base_url=UP, timeout=None)
HOP = {"content-length", "transfer-encoding", "connection", "keep-alive", "content-encoding"}


def mutate_json(obj):
    if MUT == "no_interrupt" and isinstance(obj, dict):
        obj.pop("__interrupt__", None)
    if MUT == "thread_idle":
        items = obj if isinstance(obj, list) else [obj]
        for t in items:
            if isinstance(t, dict) and "thread_id" in t and "status" in t and "run_id" not in t:
                if t["status"] in ("interrupted", "busy", "error"):
                    t["status"] = "idle"
    return obj


def mutate_event(ev: str) -> str:
    if MUT == "no_attempt" and ev.startswith("event: metadata"):
        ev = re.sub(r',\s*"attempt":\s*\d+', "", ev)
    if MUT == "sub_ns_plain":
        ev = re.sub(r"^event: ([a-z/-]+)\|[^\r\n]*", r"event: \1", ev)
    return ev


async def proxy(request: Request):
    body = await request.body()
    headers = {k: v for k, v in request.headers.items() if k.lower() not in ("host", "content-length")}
    req = client.build_request(request.method, request.url.path, params=request.url.query, content=body, headers=headers)
    up = await client.send(req, stream=True)
    out_headers = {k: v for k, v in up.headers.items() if k.lower() not in HOP}
    if MUT == "no_content_location":
        out_headers.pop("content-location", None)
    status = up.status_code
    if MUT == "conflict_400" and status == 409:
        status = 400
    if MUT == "unknown_graph_404" and status == 422:
        status = 404
    ctype = up.headers.get("content-type", "")
    if ctype.startswith("text/event-stream"):
        async def sse():
            buf = ""
            try:
                async for chunk in up.aiter_text():
                    buf += chunk
                    while True:
                        m = re.search(r"\r?\n\r?\n", buf)
                        if not m:
                            break
                        ev, buf = buf[: m.end()], buf[m.end():]
                        yield mutate_event(ev)
                if buf:
                    yield mutate_event(buf)
                if MUT == "end_event":
                    yield "event: end\r\ndata: null\r\n\r\n"
            finally:
                await up.aclose()
        return StreamingResponse(sse(), status_code=status, headers=out_headers)
    raw = await up.aread()
    await up.aclose()
    if ctype.startswith("application/json") and raw.strip():
        try:
            raw = json.dumps(mutate_json(json.loads(raw))).encode()
        except ValueError:
            pass
    return Response(raw, status_code=status, headers=out_headers)


app = Starlette(routes=[Route("/{path:path}", proxy, methods=["GET", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"])])

if __name__ == "__main__":
    uvicorn.run(app, host="127.0.0.1", port=PORT, log_level="warning")
