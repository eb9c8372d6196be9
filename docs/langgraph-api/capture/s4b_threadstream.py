import json, time, threading
import httpx
from cap import Transcript, client, BASE
t = Transcript("04b_thread_stream", "GET /threads/{id}/stream (thread-level join), bounded read")
tid = client.post("/threads", json={}).json()["thread_id"]
def later():
    time.sleep(1.0)
    httpx.Client(base_url=BASE).post(f"/threads/{tid}/runs", json={"assistant_id": "agent", "input": {"messages": [{"role": "user", "content": "hello"}]}, "stream_mode": ["updates"]})
    time.sleep(2.5)
    httpx.Client(base_url=BASE).post(f"/threads/{tid}/runs", json={"assistant_id": "agent", "input": {"messages": [{"role": "user", "content": "again"}]}})
for params in [{}, {"stream_mode": "run_modes"}, {"stream_mode": ["lifecycle", "state_update"]}]:
    threading.Thread(target=later).start()
    t0 = time.time(); lines = []
    with client.stream("GET", f"/threads/{tid}/stream", params=params, timeout=30) as r:
        hs = dict(r.headers); st = r.status_code
        for line in r.iter_lines():
            lines.append(f"+{time.time()-t0:6.3f} | {line[:400]}")
            if time.time() - t0 > 7:
                break
    t.note(f"## GET /threads/{{id}}/stream params `{json.dumps(params)}` (runs created 1 s and 3.5 s after connecting; read 7 s)\n\n-> **{st}** headers `{json.dumps({k: v for k, v in hs.items() if k in ('content-type','location','content-location')})}`\n\n```\n" + "\n".join(lines) + "\n```")
    time.sleep(1)
