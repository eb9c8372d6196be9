"""Capture helper: records raw HTTP exchanges with langgraph dev as Markdown transcripts."""
import json, os, time, threading
import httpx

BASE = os.environ.get("LG_BASE", "http://127.0.0.1:2099")
KEEP_HEADERS = {"content-type", "content-location", "location", "x-pagination-next", "x-pagination-total",
                "access-control-allow-origin", "access-control-allow-methods", "access-control-allow-headers",
                "access-control-expose-headers", "access-control-allow-credentials", "access-control-max-age",
                "access-control-allow-private-network", "vary", "cache-control", "x-accel-buffering",
                "connection", "transfer-encoding", "content-length", "allow", "x-request-id", "retry-after",
                "content-encoding", "x-langgraph-run-id"}
client = httpx.Client(base_url=BASE, timeout=60)


class Transcript:
    def __init__(self, name, title=None):
        self.path = os.path.join(os.path.dirname(__file__), "transcripts", name + ".md")
        self.f = open(self.path, "w")
        self.f.write(f"# {title or name}\n\nCaptured against langgraph dev (langgraph-api 0.16.7, inmem runtime 0.36.7).\n\n")
        self.lock = threading.Lock()

    def note(self, text):
        with self.lock:
            self.f.write(text + "\n\n"); self.f.flush()

    def _head(self, title, method, path, params, body, headers, raw=None):
        out = [f"## {title}", "", f"`{method} {path}`" + (f" params `{json.dumps(params)}`" if params else "")]
        if headers:
            out.append(f"request headers: `{json.dumps(headers)}`")
        if raw is not None:
            out += ["", "request body (raw):", "```", raw, "```"]
        elif body is not None:
            out += ["", "request body:", "```json", json.dumps(body, indent=1)[:4000], "```"]
        return out

    def req(self, title, method, path, body=None, params=None, headers=None, raw=None, limit=5000, quiet=False):
        t0 = time.time()
        kw = dict(params=params, headers=headers)
        if raw is not None:
            kw["content"] = raw
        elif body is not None:
            kw["json"] = body
        try:
            r = client.request(method, path, **kw)
        except httpx.TransportError:
            r = client.request(method, path, **kw)  # a 500 can leave a dead keep-alive connection
        dt = time.time() - t0
        try:
            data = r.json()
        except Exception:
            data = None
        if not quiet:
            out = self._head(title, method, path, params, body, headers, raw)
            hs = {k: v for k, v in r.headers.items() if k.lower() in KEEP_HEADERS}
            out += ["", f"-> **{r.status_code}** ({dt*1000:.0f} ms) headers `{json.dumps(hs)}`", ""]
            text = json.dumps(data, indent=1) if data is not None else repr(r.text)
            if len(text) > limit:
                text = text[:limit] + f"\n... [trimmed, {len(text)} chars total]"
            out += ["```json", text, "```", ""]
            with self.lock:
                self.f.write("\n".join(out) + "\n"); self.f.flush()
        return r, data

    def stream(self, title, method, path, body=None, params=None, headers=None, limit=12000, timeout=60, raw=None, on_line=None):
        """Records the raw SSE byte stream with arrival offsets."""
        t0 = time.time()
        lines = []
        kw = dict(params=params, headers=headers, timeout=timeout)
        if raw is not None:
            kw["content"] = raw
        elif body is not None:
            kw["json"] = body
        with client.stream(method, path, **kw) as r:
            hs = {k: v for k, v in r.headers.items() if k.lower() in KEEP_HEADERS}
            status = r.status_code
            for line in r.iter_lines():
                lines.append((time.time() - t0, line))
                if on_line:
                    on_line(line)
        out = self._head(title, method, path, params, body, headers, raw)
        out += ["", f"-> **{status}** headers `{json.dumps(hs)}`", "", "raw stream (`+seconds | line`):", "```"]
        text = "\n".join(f"+{t:6.3f} | {l}" for t, l in lines)
        if len(text) > limit:
            text = text[:limit] + f"\n... [trimmed, {len(text)} chars total]"
        out += [text, "```", ""]
        with self.lock:
            self.f.write("\n".join(out) + "\n"); self.f.flush()
        return status, hs, lines

    def raw_wait(self, title, method, path, body=None, params=None, headers=None, limit=5000):
        """Records the raw chunks of a long-poll (/wait, /join) with arrival offsets."""
        t0 = time.time(); chunks = []
        with client.stream(method, path, json=body, params=params, headers=headers, timeout=120) as r:
            hs = {k: v for k, v in r.headers.items() if k.lower() in KEEP_HEADERS}
            status = r.status_code
            for c in r.iter_raw():
                chunks.append((time.time() - t0, c))
        out = self._head(title, method, path, params, body, headers)
        out += ["", f"-> **{status}** headers `{json.dumps(hs)}`", "", "raw body chunks (`+seconds | repr(bytes)`):", "```"]
        text = "\n".join(f"+{t:6.3f} | {c[:1500]!r}" for t, c in chunks)
        if len(text) > limit:
            text = text[:limit] + "\n... [trimmed]"
        out += [text, "```", ""]
        with self.lock:
            self.f.write("\n".join(out) + "\n"); self.f.flush()
        body_all = b"".join(c for _, c in chunks)
        try:
            return status, hs, json.loads(body_all)
        except Exception:
            return status, hs, body_all

def sse_events(lines):
    """Parses recorded lines into (event, data-json) pairs."""
    evs = []; ev = None; data = []
    for _, l in lines:
        if l.startswith("event:"):
            ev = l[6:].strip()
        elif l.startswith("data:"):
            data.append(l[5:].strip())
        elif l == "" and (ev or data):
            try:
                d = json.loads("\n".join(data))
            except Exception:
                d = "\n".join(data)
            evs.append((ev, d)); ev = None; data = []
    return evs
