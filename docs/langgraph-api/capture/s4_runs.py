import json, time, threading
import httpx
from cap import Transcript, client, sse_events, BASE
t = Transcript("04_runs_background_cancel_multitask", "Background runs, join, join_stream + Last-Event-ID, cancel, multitask, batch, statuses")
def new_thread():
    return client.post("/threads", json={}).json()["thread_id"]
def msg(text):
    return {"messages": [{"role": "user", "content": text}]}
def status_timeline(tid, run_id, secs, out):
    c = httpx.Client(base_url=BASE)
    t0 = time.time()
    while time.time() - t0 < secs:
        th = c.get(f"/threads/{tid}").json().get("status")
        r = c.get(f"/threads/{tid}/runs/{run_id}")
        rs = r.json().get("status") if r.status_code == 200 else r.status_code
        if not out or out[-1][1:] != (th, rs):
            out.append((round(time.time() - t0, 2), th, rs))
        time.sleep(0.1)

t.note("## A. Background run with stream_resumable, status timeline, join_stream, Last-Event-ID")
tid = new_thread()
r, run = t.req("create background run", "POST", f"/threads/{tid}/runs", body={"assistant_id": "agent", "input": msg("sleep 3"), "stream_mode": ["values", "updates", "custom"], "stream_resumable": True})
rid = run["run_id"]
tl = []
th = threading.Thread(target=status_timeline, args=(tid, rid, 5, tl)); th.start()
t.req("get thread right after create", "GET", f"/threads/{tid}", limit=1500)
t.req("get run right after create", "GET", f"/threads/{tid}/runs/{rid}", limit=3000)
status, hs, lines = t.stream("join_stream (GET /threads/{t}/runs/{r}/stream) while running", "GET", f"/threads/{tid}/runs/{rid}/stream")
th.join()
t.note("thread/run status timeline (seconds, thread.status, run.status): `" + json.dumps(tl) + "`")
ids = [l[4:].strip() for _, l in lines if l.startswith("id:")]
t.note(f"event ids seen: `{ids}`")
if len(ids) >= 2:
    t.stream("join_stream after finish with Last-Event-ID = 2nd id (resumable)", "GET", f"/threads/{tid}/runs/{rid}/stream", headers={"Last-Event-ID": ids[1]})
t.stream("join_stream after finish with Last-Event-ID: -1 (replay all)", "GET", f"/threads/{tid}/runs/{rid}/stream", headers={"Last-Event-ID": "-1"})
t.stream("join_stream after finish, no Last-Event-ID", "GET", f"/threads/{tid}/runs/{rid}/stream", timeout=15)
t.stream("join_stream after finish, stream_mode=updates filter + Last-Event-ID -1", "GET", f"/threads/{tid}/runs/{rid}/stream", params={"stream_mode": "updates"}, headers={"Last-Event-ID": "-1"})
t.raw_wait("join finished run", "GET", f"/threads/{tid}/runs/{rid}/join")
t.req("get finished run", "GET", f"/threads/{tid}/runs/{rid}", limit=2000)
t.req("list runs (limit, offset, status, select)", "GET", f"/threads/{tid}/runs", params={"limit": 5, "status": "success", "select": ["run_id", "status"]})
t.req("get run unknown", "GET", f"/threads/{tid}/runs/00000000-0000-0000-0000-000000000000")

t.note("## B. join_stream of a NON-resumable background run, joined late")
tid = new_thread()
r, run = t.req("create background run (not resumable)", "POST", f"/threads/{tid}/runs", body={"assistant_id": "agent", "input": msg("sleep 2"), "stream_mode": ["updates"]}, limit=600)
rid = run["run_id"]
time.sleep(1.5)
t.stream("join_stream mid-run (not resumable)", "GET", f"/threads/{tid}/runs/{rid}/stream")
t.stream("join_stream after finish (not resumable)", "GET", f"/threads/{tid}/runs/{rid}/stream", timeout=15)
t.raw_wait("join while running (separate run, sleep 6): whitespace", "GET", f"/threads/{tid}/runs/" + client.post(f"/threads/{tid}/runs", json={"assistant_id": "agent", "input": msg("sleep 6")}).json()["run_id"] + "/join")

t.note("## C. cancel wait=true action=interrupt")
tid = new_thread()
rid = client.post(f"/threads/{tid}/runs", json={"assistant_id": "agent", "input": msg("sleep 6")}).json()["run_id"]
time.sleep(1.5)
tl = []; th = threading.Thread(target=status_timeline, args=(tid, rid, 3, tl)); th.start()
t.raw_wait("cancel?wait=true&action=interrupt", "POST", f"/threads/{tid}/runs/{rid}/cancel", params={"wait": "true", "action": "interrupt"})
th.join(); t.note("timeline: `" + json.dumps(tl) + "`")
t.req("run after cancel", "GET", f"/threads/{tid}/runs/{rid}", limit=800)
t.req("thread after cancel", "GET", f"/threads/{tid}", limit=2000)
t.req("cancel a finished run", "POST", f"/threads/{tid}/runs/{rid}/cancel")
t.req("cancel unknown run", "POST", f"/threads/{tid}/runs/00000000-0000-0000-0000-000000000000/cancel")

t.note("## D. cancel action=rollback (no wait)")
tid = new_thread()
client.post(f"/threads/{tid}/runs/wait", json={"assistant_id": "agent", "input": msg("first")})
rid = client.post(f"/threads/{tid}/runs", json={"assistant_id": "agent", "input": msg("sleep 6")}).json()["run_id"]
time.sleep(1.5)
t.req("cancel?action=rollback", "POST", f"/threads/{tid}/runs/{rid}/cancel", params={"action": "rollback"})
time.sleep(1.5)
t.req("run after rollback", "GET", f"/threads/{tid}/runs/{rid}")
t.req("thread after rollback (values back to the previous run's)", "GET", f"/threads/{tid}", limit=1500)

t.note("## E. multitask strategies (run1 = sleep 4 in background)")
for strat in ["reject", "enqueue", "interrupt", "rollback"]:
    tid = new_thread()
    r1 = client.post(f"/threads/{tid}/runs", json={"assistant_id": "agent", "input": msg("sleep 4")}).json()["run_id"]
    time.sleep(1.2)
    r, run2 = t.req(f"second run multitask_strategy={strat}", "POST", f"/threads/{tid}/runs", body={"assistant_id": "agent", "input": msg("second"), "multitask_strategy": strat}, limit=700)
    time.sleep(0.5)
    t.req(f"[{strat}] runs list right after", "GET", f"/threads/{tid}/runs", params={"select": ["run_id", "status", "multitask_strategy"]})
    t.req(f"[{strat}] thread status right after", "GET", f"/threads/{tid}", limit=300)
    if r.status_code == 200:
        t.raw_wait(f"[{strat}] join run2", "GET", f"/threads/{tid}/runs/{run2['run_id']}/join")
    time.sleep(3)
    t.req(f"[{strat}] runs list at end", "GET", f"/threads/{tid}/runs", params={"select": ["run_id", "status"]})
tid = new_thread()
r1 = client.post(f"/threads/{tid}/runs", json={"assistant_id": "agent", "input": msg("sleep 3")}).json()["run_id"]
time.sleep(1.2)
t.stream("reject on /runs/stream (streamed second run)", "POST", f"/threads/{tid}/runs/stream", body={"assistant_id": "agent", "input": msg("x"), "multitask_strategy": "reject"})
t.req("reject on /runs/wait", "POST", f"/threads/{tid}/runs/wait", body={"assistant_id": "agent", "input": msg("x"), "multitask_strategy": "reject"})

t.note("## F. cancelling a PENDING (enqueued) run")
tid = new_thread()
r1 = client.post(f"/threads/{tid}/runs", json={"assistant_id": "agent", "input": msg("sleep 3")}).json()["run_id"]
r2 = client.post(f"/threads/{tid}/runs", json={"assistant_id": "agent", "input": msg("queued")}).json()["run_id"]
time.sleep(0.5)
t.req("runs before cancel of pending", "GET", f"/threads/{tid}/runs", params={"select": ["run_id", "status"]})
t.req("cancel pending run2", "POST", f"/threads/{tid}/runs/{r2}/cancel")
time.sleep(0.5)
t.req("run2 after cancel", "GET", f"/threads/{tid}/runs/{r2}", params=None, limit=600)
time.sleep(3)
t.req("runs at end", "GET", f"/threads/{tid}/runs", params={"select": ["run_id", "status"]})
t.req("thread at end", "GET", f"/threads/{tid}", limit=300)

t.note("## G. /runs/cancel (cancel_many), DELETE run")
tid = new_thread()
r1 = client.post(f"/threads/{tid}/runs", json={"assistant_id": "agent", "input": msg("sleep 5")}).json()["run_id"]
time.sleep(1.2)
t.req("DELETE running run", "DELETE", f"/threads/{tid}/runs/{r1}")
t.req("POST /runs/cancel by thread_id+run_ids", "POST", "/runs/cancel", body={"thread_id": tid, "run_ids": [r1]})
time.sleep(1)
t.req("run after cancel_many", "GET", f"/threads/{tid}/runs/{r1}", limit=400)
t.req("DELETE finished run", "DELETE", f"/threads/{tid}/runs/{r1}")
t.req("GET deleted run", "GET", f"/threads/{tid}/runs/{r1}")
t.req("POST /runs/cancel status=all", "POST", "/runs/cancel", body={"status": "all"})
t.req("POST /runs/cancel status + thread_id (422)", "POST", "/runs/cancel", body={"status": "all", "thread_id": tid})

t.note("## H. batch, stateless background")
t.req("POST /runs/batch", "POST", "/runs/batch", body=[{"assistant_id": "simple", "input": {"value": "a"}}, {"assistant_id": "simple", "input": {"value": "b"}}], limit=3000)
t.req("POST /runs/batch empty", "POST", "/runs/batch", body=[])
r, sr = t.req("POST /runs (stateless background)", "POST", "/runs", body={"assistant_id": "simple", "input": {"value": "bg"}}, limit=3000)

t.note("## I. on_disconnect=cancel, after_seconds, if_not_exists on background create, error join")
tid = new_thread()
rid_box = []
with client.stream("POST", f"/threads/{tid}/runs/stream", json={"assistant_id": "agent", "input": msg("sleep 5"), "on_disconnect": "cancel"}) as resp:
    for line in resp.iter_lines():
        if line.startswith("data:"):
            rid_box.append(json.loads(line[5:])["run_id"]); break
time.sleep(1.5)
t.req("run after client disconnected (on_disconnect=cancel)", "GET", f"/threads/{tid}/runs/{rid_box[0]}", limit=500)
t.req("thread after disconnect-cancel", "GET", f"/threads/{tid}", limit=300)
tid = new_thread()
r, run = t.req("background run after_seconds=2", "POST", f"/threads/{tid}/runs", body={"assistant_id": "simple", "input": {"value": "later"}, "after_seconds": 2}, limit=3000)
time.sleep(1)
t.req("run after 1s (pending?)", "GET", f"/threads/{tid}/runs/{run['run_id']}", limit=500)
t.req("background create on unknown thread if_not_exists=create", "POST", "/threads/33333333-3333-3333-3333-333333333333/runs", body={"assistant_id": "simple", "input": {"value": "x"}, "if_not_exists": "create"}, limit=800)
t.req("background create on unknown thread (default reject)", "POST", "/threads/44444444-4444-4444-4444-444444444444/runs", body={"assistant_id": "simple", "input": {"value": "x"}})
tid = new_thread()
rid = client.post(f"/threads/{tid}/runs", json={"assistant_id": "agent", "input": msg("please fail")}).json()["run_id"]
t.raw_wait("join a failing run", "GET", f"/threads/{tid}/runs/{rid}/join")
t.stream("join_stream a failed run (after the fact)", "GET", f"/threads/{tid}/runs/{rid}/stream", timeout=15)
t.req("failed run record", "GET", f"/threads/{tid}/runs/{rid}", limit=500)
tid = new_thread()
rid = client.post(f"/threads/{tid}/runs", json={"assistant_id": "agent", "input": msg("please ask")}).json()["run_id"]
t.raw_wait("join an interrupting run", "GET", f"/threads/{tid}/runs/{rid}/join")
t.req("interrupted run record (run status)", "GET", f"/threads/{tid}/runs/{rid}", limit=500)
t.note("## J. GET /threads/{id}/stream (thread-level stream)")
tid = new_thread()
def later():
    time.sleep(1.0)
    client2 = httpx.Client(base_url=BASE)
    client2.post(f"/threads/{tid}/runs", json={"assistant_id": "agent", "input": msg("hello"), "stream_mode": ["updates"]})
threading.Thread(target=later).start()
try:
    t.stream("GET /threads/{id}/stream (join the thread; run created 1s later)", "GET", f"/threads/{tid}/stream", timeout=httpx.Timeout(8, read=8))
except Exception as e:
    t.note(f"thread stream ended with {type(e).__name__}: {e}")
