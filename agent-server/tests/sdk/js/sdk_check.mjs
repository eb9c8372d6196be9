#!/usr/bin/env node
// Conformance checks of a LangGraph server API with the real JS SDK (@langchain/langgraph-sdk 1.15.x).
//
// Usage: node sdk_check.mjs URL [--only a,b] [--serial] [--timeout S]
//
// The server must serve the reference graphs `agent` and `simple` of
// docs/langgraph-api/capture/app/graph.py (see ../README.md). Prints `ok NAME` or
// `FAIL NAME: why` per check, then `js: N passed, M failed`; exits 0 only when every check
// passed. Checks are about shapes and semantics, never exact ids or timestamps.
import { Client } from "@langchain/langgraph-sdk";
import { randomUUID } from "node:crypto";

const TAG = randomUUID().replaceAll("-", "");
const CHECKS = [];
const UUID_RE = /^[0-9a-f]{8}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{12}$/i;

class CheckFailed extends Error {}

function check(name, fn) {
  CHECKS.push([name, fn]);
}

function expect(cond, msg) {
  if (!cond) throw new CheckFailed(msg);
}

function short(x, n = 300) {
  let s;
  try {
    s = typeof x === "string" ? JSON.stringify(x) : JSON.stringify(x);
  } catch {
    s = String(x);
  }
  if (s === undefined) s = String(x);
  return s.length <= n ? s : s.slice(0, n) + "...";
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const eq = (a, b) => JSON.stringify(a) === JSON.stringify(b);

// The SDK throws HTTPError { status, message: "HTTP <status>: <body>" } on 4xx/5xx.
async function expectStatus(promiseOrIter, status, what, contains = []) {
  let res;
  try {
    if (promiseOrIter && typeof promiseOrIter[Symbol.asyncIterator] === "function") {
      res = [];
      for await (const p of promiseOrIter) res.push(p);
    } else {
      res = await promiseOrIter;
    }
  } catch (e) {
    if (e instanceof CheckFailed) throw e;
    expect(e?.status === status, `${what}: expected HTTP ${status}, got ${e?.status}: ${short(String(e?.message ?? e))}`);
    const text = String(e?.message ?? "");
    for (const c of contains) expect(text.includes(c), `${what}: error detail should mention ${short(c)}: ${short(text)}`);
    return text;
  }
  throw new CheckFailed(`${what}: expected HTTP ${status}, got a success: ${short(res)}`);
}

async function poll(fetchFn, pred, what, timeoutMs = 20000, intervalMs = 100) {
  const deadline = Date.now() + timeoutMs;
  let last;
  for (;;) {
    try {
      last = await fetchFn();
      if (pred(last)) return last;
    } catch (e) {
      last = e; // also CheckFailed: not there yet
    }
    if (Date.now() > deadline) throw new CheckFailed(`timed out after ${timeoutMs / 1000}s waiting for ${what}; last: ${short(last instanceof Error ? String(last) : last)}`);
    await sleep(intervalMs);
  }
}

const human = (text) => ({ messages: [{ role: "user", content: text }] });
const contents = (values, type) =>
  ((values ?? {}).messages ?? []).filter((m) => type === undefined || m.type === type).map((m) => m.content);

async function newThread(c, name, meta = {}) {
  const t = await c.threads.create({ metadata: { sdk_check: TAG, check: name, ...meta } });
  return t.thread_id;
}

async function collect(iter) {
  const out = [];
  for await (const p of iter) out.push(p);
  return out;
}

function checkStreamFrame(parts, what) {
  expect(parts.length, `${what}: the stream had no events`);
  const names = parts.map((p) => p.event);
  expect(names[0] === "metadata", `${what}: the first event must be \`metadata\`, got ${short(names.slice(0, 5))}`);
  const md = parts[0].data;
  expect(md && typeof md.run_id === "string" && md.run_id, `${what}: metadata event needs a run_id: ${short(md)}`);
  expect(md.attempt === 1, `${what}: metadata event should carry attempt 1: ${short(md)}`);
  expect(!names.includes("end"), `${what}: LangGraph sends no \`end\` event, got ${short(names)}`);
  return md;
}

// ---------------------------------------------------------------- system & assistants

let BASE_URL;
let PLAIN_HEADERS = {};

check("health", async () => {
  // the SDK has no call for these two: plain fetch
  const ok = await (await fetch(`${BASE_URL}/ok`, { headers: PLAIN_HEADERS })).json();
  expect(ok.ok === true, `/ok should answer {"ok": true, ...}: ${short(ok)}`);
  const info = await (await fetch(`${BASE_URL}/info`, { headers: PLAIN_HEADERS })).json();
  expect(typeof info.version === "string", `/info should carry a version string: ${short(info)}`);
});

async function systemAssistant(c, graphId) {
  const found = await c.assistants.search({ graphId, metadata: { created_by: "system" }, limit: 100 });
  const sys = found.filter((a) => a.graph_id === graphId && a.metadata?.created_by === "system");
  expect(sys.length === 1, `exactly one system assistant for ${graphId} expected, got ${short(found)}`);
  return sys[0];
}

check("assistants_search_system", async (c) => {
  for (const g of ["agent", "simple"]) {
    const a = await systemAssistant(c, g);
    for (const k of ["assistant_id", "graph_id", "config", "metadata", "name", "created_at", "updated_at", "version"])
      expect(k in a, `assistant ${g} lacks ${k}: ${short(a)}`);
    expect(UUID_RE.test(a.assistant_id), `assistant_id should be a UUID: ${a.assistant_id}`);
    expect(a.name === g, `system assistant name should be the graph id ${g}: ${a.name}`);
  }
  const every = await c.assistants.search({ metadata: { created_by: "system" }, limit: 100 });
  const graphs = new Set(every.map((a) => a.graph_id));
  expect(graphs.has("agent") && graphs.has("simple"), `search(metadata created_by=system) should list both graphs: ${short([...graphs])}`);
  const page = await c.assistants.search({ limit: 1, includePagination: true });
  expect(page.assistants.length === 1, `search(limit 1) returns one assistant: ${page.assistants.length}`);
  expect(page.next === "1", `X-Pagination-Next should give the next offset "1" when more assistants exist: ${short(page.next)}`);
});

check("assistants_get", async (c) => {
  const a = await systemAssistant(c, "agent");
  const got = await c.assistants.get(a.assistant_id);
  expect(got.assistant_id === a.assistant_id && got.graph_id === "agent", `get returned ${short(got)}`);
  expect(got.metadata.created_by === "system", `get lost metadata: ${short(got)}`);
});

check("assistants_crud", async (c) => {
  const a = await c.assistants.create({
    graphId: "agent", name: `sdk-check-js-${TAG.slice(0, 8)}`, metadata: { sdk_check: TAG, check: "js_crud", k: 1 }, context: { model: "offline" },
  });
  const aid = a.assistant_id;
  expect(a.graph_id === "agent" && a.version === 1, `created assistant: ${short(a)}`);
  expect(a.metadata.sdk_check === TAG, `created assistant metadata: ${short(a.metadata)}`);
  expect(a.context?.model === "offline", `created assistant context: ${short(a.context)}`);
  const same = await c.assistants.create({ graphId: "agent", assistantId: aid, ifExists: "do_nothing", name: "other" });
  expect(same.assistant_id === aid && same.name === a.name, `create(ifExists do_nothing) returns the existing assistant unchanged: ${short(same)}`);
  await expectStatus(c.assistants.create({ graphId: "agent", assistantId: aid }), 409, "create with an existing assistant_id");
  const up = await c.assistants.update(aid, { metadata: { k: 2, extra: true } });
  expect(up.version === 2, `update should make version 2: ${up.version}`);
  expect(up.metadata.sdk_check === TAG && up.metadata.k === 2 && up.metadata.extra === true, `update should merge metadata: ${short(up.metadata)}`);
  const got = await c.assistants.get(aid);
  expect(got.version === 2 && got.metadata.extra === true, `get after update: ${short(got)}`);
  const mine = await c.assistants.search({ metadata: { sdk_check: TAG, check: "js_crud" }, limit: 100 });
  expect(eq(mine.map((x) => x.assistant_id), [aid]), `search by metadata should find exactly the new assistant: ${short(mine)}`);
  await c.assistants.delete(aid);
  await expectStatus(c.assistants.get(aid), 404, "get of a deleted assistant");
});

check("assistants_graph_schemas", async (c) => {
  const a = await systemAssistant(c, "agent");
  const g = await c.assistants.getGraph(a.assistant_id);
  const ids = new Set(g.nodes.map((n) => n.id));
  for (const n of ["__start__", "chat", "sub", "human", "__end__"]) expect(ids.has(n), `graph nodes should include ${n}: ${short([...ids])}`);
  const edges = new Set(g.edges.map((e) => `${e.source}>${e.target}`));
  for (const e of ["__start__>chat", "chat>sub", "sub>human", "human>__end__"]) expect(edges.has(e), `graph edges should include ${e}: ${short([...edges])}`);
  const x = await c.assistants.getGraph(a.assistant_id, { xray: true });
  const xids = new Set(x.nodes.map((n) => n.id));
  expect(xids.has("sub:inner") && xids.has("sub:sub_ask"), `xray graph flattens the subgraph: ${short([...xids])}`);
  const s = await c.assistants.getSchemas(a.assistant_id);
  expect(s.graph_id === "agent", `schemas.graph_id: ${s.graph_id}`);
  for (const k of ["input_schema", "output_schema", "state_schema"]) {
    const props = Object.keys(s[k]?.properties ?? {});
    expect(props.includes("messages") && props.includes("count"), `${k} should describe messages and count: ${short(props)}`);
  }
  const ctx = Object.keys(s.context_schema?.properties ?? {});
  expect(ctx.includes("model") && ctx.includes("user"), `context_schema should describe model and user: ${short(s.context_schema)}`);
  const simple = await systemAssistant(c, "simple");
  const s2 = await c.assistants.getSchemas(simple.assistant_id);
  expect("value" in (s2.input_schema?.properties ?? {}), `simple input_schema: ${short(s2.input_schema)}`);
  expect(!s2.context_schema, `simple has no context: context_schema should be null: ${short(s2.context_schema)}`);
  const subs = await c.assistants.getSubgraphs(a.assistant_id);
  expect("sub" in subs, `getSubgraphs should list namespace 'sub': ${short(Object.keys(subs))}`);
});

// ---------------------------------------------------------------- threads

check("store_items", async (c) => {
  const tag = `t${Date.now()}${Math.floor(Math.random() * 1e6)}`;
  const ns = ["sdk_check_js", tag, "users", "ada"];
  await c.store.putItem(ns, "profile", { name: "Ada", age: 36 });
  await c.store.putItem(["sdk_check_js", tag, "users", "bob"], "profile", { name: "Bob", age: 51 });
  await c.store.putItem([...ns, "facts"], "tea", { likes: "tea" }, { index: false, ttl: 60 });
  const item = await c.store.getItem(ns, "profile");
  expect(item && item.value.name === "Ada" && item.value.age === 36 && Object.keys(item.value).length === 2, `getItem: ${short(item)}`);
  expect(eq(item.namespace, ns) && typeof item.createdAt === "string", `getItem fields: ${short(item)}`);
  const found = await c.store.searchItems(["sdk_check_js", tag], { filter: { age: { $gt: 40 } } });
  expect(eq(found.items.map((i) => i.value.name), ["Bob"]), `searchItems with $gt: ${short(found)}`);
  const listed = await c.store.listNamespaces({ prefix: ["sdk_check_js", tag], maxDepth: 4 });
  expect(eq(listed.namespaces, [ns, ["sdk_check_js", tag, "users", "bob"]]), `listNamespaces: ${short(listed)}`);
  const facts = await c.store.listNamespaces({ prefix: ["sdk_check_js", tag], suffix: ["facts"] });
  expect(eq(facts.namespaces, [[...ns, "facts"]]), `listNamespaces(suffix): ${short(facts)}`);
  await c.store.deleteItem(ns, "profile");
  const gone = await c.store.getItem(ns, "profile");
  expect(gone === null, `getItem after deleteItem: ${short(gone)}`);
  await expectStatus(c.store.putItem(["langgraph"], "k", { v: 1 }), 422, "a reserved namespace");
});

check("threads_create_get", async (c) => {
  const t = await c.threads.create({ metadata: { sdk_check: TAG, check: "create" } });
  const tid = t.thread_id;
  expect(UUID_RE.test(tid), `thread_id should be a UUID: ${tid}`);
  expect(t.status === "idle", `a new thread is idle: ${t.status}`);
  expect(t.metadata.sdk_check === TAG, `thread metadata: ${short(t.metadata)}`);
  expect(!t.values || Object.keys(t.values).length === 0, `a new thread has no values yet: ${short(t.values)}`);
  const got = await c.threads.get(tid);
  expect(got.thread_id === tid && got.metadata.sdk_check === TAG, `get: ${short(got)}`);
  const given = randomUUID();
  const t1 = await c.threads.create({ threadId: given, metadata: { sdk_check: TAG, first: 1 } });
  expect(t1.thread_id === given, `create(threadId) should use the given id: ${t1.thread_id}`);
  const t2 = await c.threads.create({ threadId: given, metadata: { sdk_check: TAG, second: 2 }, ifExists: "do_nothing" });
  expect(t2.thread_id === given && t2.metadata.first === 1 && !("second" in t2.metadata),
    `create(ifExists do_nothing) returns the existing thread unchanged: ${short(t2)}`);
  await expectStatus(c.threads.create({ threadId: given }), 409, "create of an existing thread_id");
});

check("threads_update_search_copy_delete", async (c) => {
  const tid = await newThread(c, "js_update_search");
  const other = await newThread(c, "js_update_search_other");
  const up = await c.threads.update(tid, { metadata: { extra: "yes" } });
  expect(up.metadata.extra === "yes" && up.metadata.sdk_check === TAG, `update merges metadata: ${short(up.metadata)}`);
  const found = await c.threads.search({ metadata: { sdk_check: TAG, extra: "yes" }, limit: 100 });
  expect(eq(found.map((t) => t.thread_id), [tid]), `search by metadata finds exactly the updated thread: ${short(found.map((t) => t.thread_id))}`);
  const idle = await c.threads.search({ metadata: { sdk_check: TAG, check: "js_update_search_other" }, status: "idle", limit: 100 });
  expect(eq(idle.map((t) => t.thread_id), [other]), `search(status idle) by metadata: ${short(idle)}`);
  const busy = await c.threads.search({ metadata: { sdk_check: TAG, check: "js_update_search_other" }, status: "busy", limit: 100 });
  expect(busy.length === 0, `search(status busy) should not find an idle thread: ${short(busy)}`);
  await c.runs.wait(tid, "agent", { input: human("copy me") });
  const cp = await c.threads.copy(tid);
  expect(cp?.thread_id && cp.thread_id !== tid, `copy returns a new thread: ${short(cp)}`);
  const a = await c.threads.getState(tid);
  const b = await c.threads.getState(cp.thread_id);
  expect(eq(contents(b.values), contents(a.values)), `the copy has the same state: ${short(b.values)}`);
  await c.threads.delete(cp.thread_id);
  await expectStatus(c.threads.get(cp.thread_id), 404, "get of a deleted thread");
});

// ---------------------------------------------------------------- streaming

check("stream_values", async (c) => {
  const tid = await newThread(c, "js_stream_values");
  let created;
  const parts = await collect(c.runs.stream(tid, "agent", { input: human("hi values"), streamMode: "values", onRunCreated: (m) => (created = m) }));
  const md = checkStreamFrame(parts, "values stream");
  const names = parts.map((p) => p.event);
  expect(names.every((n) => n === "metadata" || n === "values"), `only metadata and values events: ${short(names)}`);
  expect(eq(contents(parts[1].data), ["hi values"]), `the first values event holds the input only: ${short(parts[1].data)}`);
  const last = parts.at(-1).data;
  expect(contents(last, "ai").includes("echo: hi values") && last.count === 2, `last values: ${short(last)}`);
  expect(created?.run_id === md.run_id && created?.thread_id === tid,
    `onRunCreated (Content-Location header) gives the run and thread ids: ${short(created)} vs ${md.run_id}`);
  const run = await c.runs.get(tid, md.run_id);
  expect(run.status === "success", `the run is \`success\` once its stream closed: ${run.status}`);
});

check("stream_modes", async (c) => {
  const tid = await newThread(c, "js_stream_modes");
  const parts = await collect(c.runs.stream(tid, "agent", {
    input: human("hi all"), streamMode: ["values", "updates", "messages-tuple", "custom"],
  }));
  checkStreamFrame(parts, "multi-mode stream");
  const names = parts.map((p) => p.event);
  expect(eq([...new Set(names)].sort(), ["custom", "messages", "metadata", "updates", "values"]), `event names: ${short(names)}`);
  const nodes = parts.filter((p) => p.event === "updates").map((p) => Object.keys(p.data)[0]);
  expect(eq(nodes, ["chat", "sub", "human"]), `one update per node: ${short(nodes)}`);
  const custom = parts.filter((p) => p.event === "custom").map((p) => p.data);
  expect(eq(custom, [{ progress: "chat started", text: "hi all" }]), `custom event: ${short(custom)}`);
  const msgs = parts.filter((p) => p.event === "messages").map((p) => p.data);
  expect(msgs.every((d) => Array.isArray(d) && d.length === 2), `messages events are [chunk, metadata]: ${short(msgs)}`);
  const text = msgs.filter((d) => d[1].langgraph_node === "chat").map((d) => d[0].content).join("");
  expect(text === "echo: hi all", `chat chunks add up to the reply: ${short(text)}`);
  const last = parts.filter((p) => p.event === "values").at(-1).data;
  expect(contents(last, "ai").includes("echo: hi all"), `last values: ${short(last)}`);
});

check("stream_subgraphs", async (c) => {
  const tid = await newThread(c, "js_stream_subgraphs");
  const parts = await collect(c.runs.stream(tid, "agent", { input: human("hi sub"), streamMode: ["values", "updates"], streamSubgraphs: true }));
  checkStreamFrame(parts, "subgraph stream");
  const names = parts.map((p) => p.event);
  const sub = names.filter((n) => n.includes("|"));
  expect(sub.length && sub.every((n) => /^(values|updates)\|sub:[^|:]+$/.test(n)), `subgraph events named <mode>|sub:<task id>: ${short(names)}`);
  expect(new Set(sub.map((n) => n.split("|")[1])).size === 1, `one subgraph task, one namespace: ${short(sub)}`);
});

check("wait", async (c) => {
  const tid = await newThread(c, "js_wait");
  const out = await c.runs.wait(tid, "agent", { input: human("hi wait") });
  expect(eq(contents(out), ["hi wait", "echo: hi wait", "from inner subgraph node"]) && out.count === 2, `wait returns the final values: ${short(out)}`);
  const out2 = await c.runs.wait(tid, "agent", { input: { messages: [{ type: "human", content: "again" }] } });
  expect(eq(contents(out2, "human"), ["hi wait", "again"]) && out2.count === 4, `a second run continues the state: ${short(out2)}`);
});

check("background_join_get_list", async (c) => {
  const tid = await newThread(c, "js_background");
  const run = await c.runs.create(tid, "agent", { input: human("hi background") });
  expect(["pending", "running"].includes(run.status) && run.thread_id === tid, `a new background run: ${short(run)}`);
  expect(UUID_RE.test(run.assistant_id), `run.assistant_id is a UUID: ${run.assistant_id}`);
  const out = await c.runs.join(tid, run.run_id);
  expect(contents(out, "ai").includes("echo: hi background"), `join returns the final values: ${short(out)}`);
  const got = await c.runs.get(tid, run.run_id);
  expect(got.status === "success", `run after join: ${got.status}`);
  const runs = await c.runs.list(tid);
  expect(eq(runs.map((r) => r.run_id), [run.run_id]), `runs.list: ${short(runs)}`);
});

check("join_stream", async (c) => {
  const tid = await newThread(c, "js_join_stream");
  const run = await c.runs.create(tid, "agent", { input: human("sleep 1"), streamMode: ["values", "updates"], streamResumable: true });
  const parts = await collect(c.runs.joinStream(tid, run.run_id, { lastEventId: "-1" }));
  checkStreamFrame(parts, "joinStream(lastEventId -1)");
  expect(parts[0].data.run_id === run.run_id, `metadata.run_id of the joined run: ${short(parts[0].data)}`);
  const names = new Set(parts.map((p) => p.event));
  expect(names.has("values") && names.has("updates"), `joinStream replays the run's modes: ${short([...names])}`);
  const last = parts.filter((p) => p.event === "values").at(-1).data;
  expect(contents(last, "ai").includes("echo: sleep 1"), `last values: ${short(last)}`);
  expect(parts.every((p) => p.id), `a resumable stream gives every event an id: ${short(parts.map((p) => p.id))}`);
  const rest = await collect(c.runs.joinStream(tid, run.run_id, { lastEventId: parts[2].id }));
  expect(eq(rest.map((p) => [p.event, p.id]), parts.slice(3).map((p) => [p.event, p.id])),
    `joinStream(lastEventId <3rd id>) replays the events after it: ${short(rest.map((p) => p.event))}`);
});

// ---------------------------------------------------------------- interrupts & state

check("interrupt_resume", async (c) => {
  const tid = await newThread(c, "js_interrupt");
  const out = await c.runs.wait(tid, "agent", { input: human("please ask me") });
  const intr = out.__interrupt__;
  expect(Array.isArray(intr) && intr.length === 1 && eq(intr[0].value, { question: "approve?", text: "please ask me" }) && intr[0].id,
    `wait returns the values plus __interrupt__: ${short(out)}`);
  const t = await c.threads.get(tid);
  expect(t.status === "interrupted", `thread status after interrupt(): ${t.status}`);
  const flat = Object.values(t.interrupts ?? {}).flat();
  expect(flat.length && flat[0].value?.question === "approve?", `thread.interrupts by task id: ${short(t.interrupts)}`);
  const st = await c.threads.getState(tid);
  expect(eq(st.next, ["human"]), `state.next while paused: ${short(st.next)}`);
  expect(st.tasks[0]?.name === "human" && st.tasks[0].interrupts.length, `state.tasks shows the paused task: ${short(st.tasks)}`);
  const res = await c.runs.wait(tid, "agent", { command: { resume: "yes" } });
  expect(contents(res).at(-1) === "human said: yes", `resume by command: ${short(contents(res))}`);
  const t2 = await c.threads.get(tid);
  expect(t2.status === "idle", `thread status after resume: ${t2.status}`);
});

check("state_update_history", async (c) => {
  const tid = await newThread(c, "js_state");
  await c.runs.wait(tid, "agent", { input: human("hi state") });
  const st = await c.threads.getState(tid);
  expect(st.values.count === 2 && eq(st.next, []) && st.checkpoint?.checkpoint_id, `state after a run: ${short(st)}`);
  const res = await c.threads.updateState(tid, { values: { count: 5 }, asNode: "human" });
  expect(res?.checkpoint?.checkpoint_id, `updateState returns the new checkpoint: ${short(res)}`);
  const st2 = await c.threads.getState(tid);
  expect(st2.values.count === 7, `updateState goes through the reducer (2 + 5): ${short(st2.values)}`);
  expect(st2.metadata?.source === "update", `source 'update': ${short(st2.metadata)}`);
  const hist = await c.threads.getHistory(tid, { limit: 3 });
  expect(hist.length === 3, `getHistory(limit 3): ${hist.length}`);
  expect(hist[0].checkpoint.checkpoint_id === st2.checkpoint.checkpoint_id, "history is newest first");
  expect(hist[1].checkpoint.checkpoint_id === st.checkpoint.checkpoint_id && hist[1].values.count === 2, `history[1]: ${short(hist[1])}`);
  const old = await c.threads.getState(tid, st.checkpoint.checkpoint_id);
  expect(old.values.count === 2, `state at a checkpoint id: ${short(old.values)}`);
  const old2 = await c.threads.getState(tid, hist[1].checkpoint);
  expect(old2.values.count === 2, `state at a checkpoint object: ${short(old2.values)}`);
  await expectStatus(c.threads.updateState(tid, { values: { count: 1 }, asNode: "nope" }), 400, "updateState as an unknown node");
});

check("interrupt_subgraph", async (c) => {
  const tid = await newThread(c, "js_interrupt_subgraph");
  const parts = await collect(c.runs.stream(tid, "agent", { input: human("please subask"), streamMode: "updates" }));
  checkStreamFrame(parts, "subgraph interrupt stream");
  const ints = parts.filter((p) => p.event === "updates" && p.data?.__interrupt__).map((p) => p.data.__interrupt__);
  expect(ints.length && eq(ints.at(-1)[0].value, { question: "sub approve?" }), `the subgraph's interrupt reaches the root updates: ${short(parts.map((p) => p.data))}`);
  const st = await c.threads.getState(tid, undefined, { subgraphs: true });
  expect(eq(st.next, ["sub"]) && st.tasks[0] && typeof st.tasks[0].state === "object" && st.tasks[0].state,
    `getState(subgraphs) nests the paused subgraph's state: ${short(st.tasks)}`);
  const res = await c.runs.wait(tid, "agent", { command: { resume: "ok" } });
  expect(contents(res, "ai").includes("sub answer: ok"), `resuming the subgraph: ${short(contents(res))}`);
});

check("interrupt_before_after", async (c) => {
  const tid = await newThread(c, "js_interrupt_before");
  const out = await c.runs.wait(tid, "agent", { input: human("hi before"), interruptBefore: ["human"] });
  expect(contents(out, "ai").includes("echo: hi before") && out.count === 1, `paused before human: ${short(out)}`);
  const t = await c.threads.get(tid);
  expect(t.status === "interrupted", `a thread paused by interruptBefore is interrupted: ${t.status}`);
  expect(eq((await c.threads.getState(tid)).next, ["human"]), "next is the node we paused before");
  const out2 = await c.runs.wait(tid, "agent", { input: null });
  expect(out2.count === 2, `a run without input resumes from the pause: ${short(out2)}`);
  await c.runs.wait(tid, "agent", { input: human("hi after"), interruptAfter: ["chat"] });
  const st = await c.threads.getState(tid);
  expect(eq(st.next, ["sub"]), `paused after chat: ${short(st.next)}`);
});

check("fork_from_checkpoint", async (c) => {
  const tid = await newThread(c, "js_fork");
  await c.runs.wait(tid, "agent", { input: human("one") });
  const st1 = await c.threads.getState(tid);
  await c.runs.wait(tid, "agent", { input: human("two") });
  const out = await c.runs.wait(tid, "agent", { input: human("three"), checkpointId: st1.checkpoint.checkpoint_id });
  expect(eq(contents(out, "human"), ["one", "three"]) && out.count === 4, `a run from an earlier checkpoint forks there: ${short(contents(out))}`);
});

check("runs_misc", async (c) => {
  const batch = await c.runs.createBatch([{ assistantId: "simple", input: { value: "a" } }, { assistantId: "simple", input: { value: "b" } }]);
  expect(Array.isArray(batch) && batch.length === 2 && batch.every((r) => r.run_id), `createBatch returns one run per payload: ${short(batch)}`);
  const given = randomUUID();
  const out = await c.runs.wait(given, "agent", { input: human("brand new"), ifNotExists: "create" });
  expect(contents(out, "ai").includes("echo: brand new"), `ifNotExists create runs on a new thread: ${short(out)}`);
  expect((await c.threads.get(given)).thread_id === given, "ifNotExists create made the thread with the given id");
  const tid = await newThread(c, "js_runs_misc");
  const r = await startSleeper(c, tid, 5);
  await c.runs.cancelMany({ threadId: tid, runIds: [r.run_id] });
  const got = await poll(() => c.runs.get(tid, r.run_id), (x) => !["pending", "running"].includes(x.status), "cancelMany to take effect");
  expect(got.status === "interrupted", `cancelMany interrupts the run: ${got.status}`);
  await c.runs.delete(tid, r.run_id);
  await expectStatus(c.runs.get(tid, r.run_id), 404, "get of a deleted run");
});

// ---------------------------------------------------------------- double texting & cancel

async function startSleeper(c, tid, secs, waitRunning = true) {
  const run = await c.runs.create(tid, "agent", { input: human(`sleep ${secs}`) });
  if (waitRunning) {
    // running, and its input is in the thread's state (so its node is sleeping now)
    await poll(() => c.runs.get(tid, run.run_id), (r) => r.status === "running", "the first run to be running");
    await poll(() => c.threads.getState(tid), (st) => contents(st.values).includes(`sleep ${secs}`), "the first run's input to be checkpointed");
  }
  return run;
}

check("multitask_reject", async (c) => {
  const tid = await newThread(c, "js_reject");
  const r1 = await startSleeper(c, tid, 5, false);
  const t = await c.threads.get(tid);
  expect(t.status === "busy", `a thread is busy as soon as a run is created: ${t.status}`);
  await expectStatus(c.runs.create(tid, "agent", { input: human("second"), multitaskStrategy: "reject" }), 409, "runs.create(reject) while a run is active");
  await expectStatus(c.runs.wait(tid, "agent", { input: human("second"), multitaskStrategy: "reject" }), 409, "runs.wait(reject) while a run is active");
  await expectStatus(c.runs.stream(tid, "agent", { input: human("second"), multitaskStrategy: "reject" }), 409, "runs.stream(reject) while a run is active");
  const out = await c.runs.join(tid, r1.run_id);
  expect(eq(contents(out, "human"), ["sleep 5"]), `the first run goes on alone: ${short(contents(out))}`);
});

check("multitask_enqueue", async (c) => {
  const tid = await newThread(c, "js_enqueue");
  const r1 = await startSleeper(c, tid, 2, false);
  const r2 = await c.runs.create(tid, "agent", { input: human("second"), multitaskStrategy: "enqueue" });
  expect(r2.status === "pending", `an enqueued run waits: ${r2.status}`);
  const out = await c.runs.join(tid, r2.run_id);
  expect(eq(contents(out, "human"), ["sleep 2", "second"]) && contents(out, "ai")[0] === "echo: sleep 2" && contents(out, "ai").includes("echo: second"),
    `the enqueued run runs after the first and sees its output: ${short(contents(out))}`);
  const s1 = await c.runs.get(tid, r1.run_id);
  expect(s1.status === "success", `run 1: ${s1.status}`);
});

check("multitask_interrupt_rollback", async (c) => {
  const tid = await newThread(c, "js_mt_interrupt");
  const r1 = await startSleeper(c, tid, 3);
  const r2 = await c.runs.create(tid, "agent", { input: human("second"), multitaskStrategy: "interrupt" });
  const out = await c.runs.join(tid, r2.run_id);
  expect(contents(out, "ai").includes("echo: second") && !contents(out, "ai").includes("echo: sleep 3") && contents(out, "human").includes("sleep 3"),
    `interrupt: run 1 stopped, its input kept, run 2 done: ${short(contents(out))}`);
  const s1 = await poll(() => c.runs.get(tid, r1.run_id), (r) => !["pending", "running"].includes(r.status), "run 1 to stop");
  expect(s1.status === "interrupted", `the interrupted run: ${s1.status}`);
  const tid2 = await newThread(c, "js_rollback");
  const q1 = await startSleeper(c, tid2, 3);
  const q2 = await c.runs.create(tid2, "agent", { input: human("second"), multitaskStrategy: "rollback" });
  const out2 = await c.runs.join(tid2, q2.run_id);
  expect(eq(contents(out2), ["second", "echo: second", "from inner subgraph node"]), `rollback erases run 1: ${short(contents(out2))}`);
  await poll(() => expectStatus(c.runs.get(tid2, q1.run_id), 404, "get of the rolled-back run"), () => true, "the rolled-back run to be deleted");
});

check("cancel", async (c) => {
  const tid = await newThread(c, "js_cancel");
  const r = await startSleeper(c, tid, 5);
  await c.runs.cancel(tid, r.run_id, true);
  const got = await c.runs.get(tid, r.run_id);
  expect(got.status === "interrupted", `a cancelled run ends \`interrupted\`: ${got.status}`);
  const t = await poll(() => c.threads.get(tid), (t) => t.status !== "busy", "the thread to leave busy");
  expect(t.status === "interrupted", `the thread of a cancelled run is \`interrupted\`: ${t.status}`);
  await expectStatus(c.runs.cancel(tid, r.run_id), 404, "cancel of a finished run");
  // cancelling a pending (enqueued) run
  const r1 = await startSleeper(c, tid, 2, false);
  const r2 = await c.runs.create(tid, "agent", { input: human("never") });
  await c.runs.cancel(tid, r2.run_id);
  const s2 = await poll(() => c.runs.get(tid, r2.run_id), (x) => x.status !== "pending", "the pending run to be cancelled");
  expect(s2.status === "interrupted", `a cancelled pending run is \`interrupted\`: ${s2.status}`);
  const out = await c.runs.join(tid, r1.run_id);
  expect(!contents(out).includes("never"), `the cancelled pending run never ran: ${short(contents(out))}`);
});

check("join_stream_live", async (c) => {
  const tid = await newThread(c, "js_join_stream_live");
  const run = await c.runs.create(tid, "agent", { input: human("sleep 5"), streamMode: "values" });
  await poll(() => c.runs.get(tid, run.run_id), (r) => r.status === "running", "the run to be running");
  const parts = await collect(c.runs.joinStream(tid, run.run_id));
  const vals = parts.filter((p) => p.event === "values").map((p) => p.data);
  expect(vals.length && contents(vals.at(-1), "ai").includes("echo: sleep 5"), `joining a running run streams until it ends: ${short(parts.map((p) => p.event))}`);
});

// ---------------------------------------------------------------- stateless, errors, failures

check("stateless", async (c) => {
  const out = await c.runs.wait(null, "simple", { input: { value: "abc" } });
  expect(eq(out, { value: "ABC" }), `stateless wait on simple: ${short(out)}`);
  const parts = await collect(c.runs.stream(null, "simple", { input: { value: "abc" }, streamMode: "values" }));
  checkStreamFrame(parts, "stateless stream");
  const vals = parts.filter((p) => p.event === "values").map((p) => p.data);
  expect(vals.length && eq(vals.at(-1), { value: "ABC" }), `stateless stream values: ${short(vals)}`);
});

check("crons_crud", async (c) => {
  const tid = await newThread(c, "js_crons");
  await expectStatus(c.crons.create("simple", { schedule: "61 * * * *" }), 422, "a cron with a bad schedule", ["61 * * * *"]);
  const onThread = await c.crons.createForThread(tid, "simple", {
    schedule: "0 9 * * *", input: { value: "t" }, metadata: { sdk_check: TAG },
  });
  expect(UUID_RE.test(onThread.cron_id ?? ""), `cron_id: ${short(onThread)}`);
  expect(onThread.thread_id === tid, `thread cron's thread_id: ${short(onThread)}`);
  expect(String(onThread.next_run_date).slice(11, 19) === "09:00:00", `next_run_date at 09:00 UTC: ${short(onThread)}`);
  const stateless = await c.crons.create("simple", {
    schedule: "*/5 * * * *", input: { value: "s" }, onRunCompleted: "keep", metadata: { sdk_check: TAG },
  });
  expect(stateless.thread_id === null && stateless.on_run_completed === "keep", `stateless cron: ${short(stateless)}`);
  let found = await c.crons.search({ threadId: tid });
  expect(eq(found.map((x) => x.cron_id), [onThread.cron_id]), `search by thread: ${short(found)}`);
  found = await c.crons.search({ metadata: { sdk_check: TAG }, sortBy: "created_at", sortOrder: "asc" });
  expect(eq(found.map((x) => x.cron_id), [onThread.cron_id, stateless.cron_id]), `search by metadata: ${short(found)}`);
  expect((await c.crons.count({ metadata: { sdk_check: TAG } })) === 2, "count by metadata");
  const updated = await c.crons.update(stateless.cron_id, { schedule: "30 * * * *", enabled: false });
  expect(updated.schedule === "30 * * * *" && updated.enabled === false, `updated: ${short(updated)}`);
  await c.crons.delete(stateless.cron_id);
  await c.crons.delete(onThread.cron_id);
  await expectStatus(c.crons.delete(onThread.cron_id), 404, "deleting a deleted cron");
  expect((await c.crons.count({ metadata: { sdk_check: TAG } })) === 0, "count after delete");
});

check("errors", async (c) => {
  const tid = await newThread(c, "js_errors");
  await expectStatus(c.runs.wait(tid, "nope", { input: human("x") }), 422, "a run on an unknown graph id", ["agent", "simple"]);
  await expectStatus(c.runs.wait(tid, randomUUID(), { input: human("x") }), 404, "a run on an unknown assistant UUID");
  await expectStatus(c.runs.create(randomUUID(), "agent", { input: human("x") }), 404, "a run on an unknown thread");
  await expectStatus(c.threads.get("not-a-uuid"), 422, "threads.get of a malformed id");
  await expectStatus(c.threads.get(randomUUID()), 404, "threads.get of an unknown id");
  await expectStatus(c.assistants.get(randomUUID()), 404, "assistants.get of an unknown id");
});

check("failing_run", async (c) => {
  const tid = await newThread(c, "js_fail");
  const parts = await collect(c.runs.stream(tid, "agent", { input: human("please fail"), streamMode: ["values"] }));
  const md = checkStreamFrame(parts, "failing stream");
  const last = parts.at(-1);
  expect(last.event === "error" && typeof last.data?.error === "string" && last.data.error.length > 0 && String(last.data?.message).includes("failed on purpose"),
    `a failing run ends its stream with an error event {error, message}: ${short(parts.map((p) => [p.event, p.data]).slice(-2))}`);
  const run = await c.runs.get(tid, md.run_id);
  expect(run.status === "error", `the failed run's status: ${run.status}`);
  const t = await c.threads.get(tid);
  expect(t.status === "error", `the thread of a failed run is \`error\`: ${t.status}`);
  const out = await c.runs.wait(tid, "agent", { input: human("fail again"), raiseError: false });
  expect(typeof out?.__error__?.error === "string" && String(out?.__error__?.message).includes("failed on purpose"), `wait(raiseError false) returns __error__: ${short(out)}`);
  let threw = null;
  try {
    await c.runs.wait(tid, "agent", { input: human("fail thrice") });
  } catch (e) {
    threw = e;
  }
  expect(threw && String(threw.message).includes("failed on purpose"), `runs.wait throws on a failed run by default: ${short(String(threw))}`);
});

// ---------------------------------------------------------------- driver

async function runOne(name, fn, client, timeoutMs, results) {
  const t0 = Date.now();
  let line, ok;
  let timer;
  try {
    await Promise.race([
      fn(client),
      new Promise((_, rej) => (timer = setTimeout(() => rej(new CheckFailed(`did not finish within ${timeoutMs / 1000}s`)), timeoutMs))),
    ]);
    line = `ok ${name} (${((Date.now() - t0) / 1000).toFixed(1)}s)`;
    ok = true;
  } catch (e) {
    const where = e instanceof CheckFailed ? "" : ` ${(e?.stack ?? "").split("\n").find((l) => l.includes("sdk_check.mjs"))?.trim() ?? ""}`;
    line = `FAIL ${name}: ${e instanceof CheckFailed ? e.message : `${e?.name}: ${short(String(e?.message ?? e), 400)}`}${where}`.trimEnd();
    ok = false;
  } finally {
    clearTimeout(timer);
  }
  console.log(line);
  results.push([name, ok]);
}

async function main() {
  const args = process.argv.slice(2);
  const opt = (k) => {
    const i = args.indexOf(k);
    if (i < 0) return undefined;
    const v = args[i + 1];
    args.splice(i, 2);
    return v;
  };
  const only = opt("--only");
  const timeoutS = Number(opt("--timeout") ?? 40);
  const apiKey = opt("--api-key");
  const serial = args.includes("--serial");
  const url = args.filter((a) => a !== "--serial")[0];
  if (!url) {
    console.log("usage: node sdk_check.mjs URL [--only a,b] [--serial] [--timeout S] [--api-key K]");
    return 2;
  }
  BASE_URL = url.replace(/\/$/, "");
  let checks = CHECKS;
  if (only) {
    const want = new Set(only.split(","));
    const unknown = [...want].filter((n) => !CHECKS.some(([m]) => m === n));
    if (unknown.length) {
      console.log(`unknown checks: ${unknown}; known: ${CHECKS.map(([n]) => n)}`);
      return 2;
    }
    checks = CHECKS.filter(([n]) => want.has(n));
  }
  // maxConcurrency: the SDK's default of 4 in-flight requests would serialise the checks' long polls
  // without --api-key the SDK reads LANGGRAPH_API_KEY / LANGSMITH_API_KEY / LANGCHAIN_API_KEY as usual
  const client = new Client({ apiUrl: BASE_URL, apiKey, callerOptions: { maxConcurrency: 64 } });
  const key = apiKey ?? process.env.LANGGRAPH_API_KEY ?? process.env.LANGSMITH_API_KEY ?? process.env.LANGCHAIN_API_KEY;
  if (key) PLAIN_HEADERS = { "x-api-key": key };
  const t0 = Date.now();
  const results = [];
  if (serial) for (const [n, f] of checks) await runOne(n, f, client, timeoutS * 1000, results);
  else await Promise.all(checks.map(([n, f]) => runOne(n, f, client, timeoutS * 1000, results)));
  const passed = results.filter(([, ok]) => ok).length;
  const failed = results.length - passed;
  console.log(`js: ${passed} passed, ${failed} failed`);
  console.log(`(@langchain/langgraph-sdk, ${((Date.now() - t0) / 1000).toFixed(1)}s against ${BASE_URL})`);
  return failed === 0 ? 0 : 1;
}

main().then(
  (code) => process.exit(code),
  (e) => {
    console.log(`FAIL driver: ${e?.stack ?? e}`);
    process.exit(1);
  },
);
