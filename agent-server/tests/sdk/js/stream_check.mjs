#!/usr/bin/env node
// The thread-streaming protocol (v2) with the real JS SDK (@langchain/langgraph-sdk 1.15.x):
// `client.threads.stream(...)` over SSE and over a WebSocket (commands in-band).
//
// Usage: node stream_check.mjs URL [--only a,b] [--serial] [--timeout S] [--api-key K]
//
// The server must serve the reference graphs with `--with-tools` (see stream_check.py).
// Prints `ok NAME` or `FAIL NAME: why` per check, then `js stream: N passed, M failed`; exits
// 0 only when every check passed. Node 20 has a WebSocket only behind a flag: without one,
// the script runs itself again with `--experimental-websocket`.
import { spawnSync } from "node:child_process";
import { Client } from "@langchain/langgraph-sdk";

if (typeof globalThis.WebSocket === "undefined" && !process.env.STREAM_CHECK_REEXEC) {
  const r = spawnSync(process.execPath, ["--experimental-websocket", ...process.argv.slice(1)], {
    stdio: "inherit",
    env: { ...process.env, STREAM_CHECK_REEXEC: "1" },
  });
  process.exit(r.status ?? 1);
}

const CHECKS = [];
class CheckFailed extends Error {}
const check = (name, fn) => CHECKS.push([name, fn]);
function expect(cond, msg) {
  if (!cond) throw new CheckFailed(msg);
}
function short(x, n = 300) {
  let s;
  try {
    s = JSON.stringify(x);
  } catch {
    s = String(x);
  }
  if (s === undefined) s = String(x);
  return s.length <= n ? s : s.slice(0, n) + "...";
}
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const human = (text) => ({ messages: [{ role: "user", content: text }] });
// Messages come as LangChain class instances (thread.output) or as dicts (raw events).
const field = (m, k) => m?.[k] ?? m?.kwargs?.[k] ?? m?.lc_kwargs?.[k];
const typeOf = (m) => (typeof m?._getType === "function" ? m._getType() : field(m, "type"));
const texts = (values, type) =>
  ((values ?? {}).messages ?? []).filter((m) => !type || typeOf(m) === type).map((m) => field(m, "content"));
function within(ms, promise, what) {
  let timer;
  return Promise.race([
    promise,
    new Promise((_, reject) => {
      timer = setTimeout(() => reject(new CheckFailed(`${what}: nothing after ${ms} ms`)), ms);
    }),
  ]).finally(() => clearTimeout(timer));
}

let URL_ = "";
let client;

async function withThread(assistantId, fn, transport = "sse") {
  const thread = client.threads.stream({ assistantId, transport });
  try {
    return await fn(thread);
  } finally {
    await thread.close().catch(() => {});
  }
}

async function tokens(transport) {
  await withThread(
    "agent",
    async (thread) => {
      // Projections asked for before the run see all of it: one asked for later widens the
      // shared stream, which rotates and goes on after what the stream already read (and a
      // projection whose events come after the run's end stays paused). Their subscriptions
      // are made on a later tick.
      const messages = thread.messages;
      const output = thread.output;
      await sleep(200);
      await thread.run.start({ input: human("hello js") });
      const reads = [];
      for await (const m of messages) {
        reads.push(
          (async () => {
            const pieces = [];
            for await (const t of m.text) pieces.push(t);
            return pieces;
          })(),
        );
        break; // the root's one answer
      }
      const [pieces] = await within(10000, Promise.all(reads), "the message's text");
      expect(pieces.length > 1, `the answer should come token by token: ${short(pieces)}`);
      expect(pieces.join("") === "echo: hello js", `the streamed text: ${short(pieces)}`);
      const final = await within(10000, output, "thread.output");
      expect(texts(final, "ai")[0] === "echo: hello js", `thread.output: ${short(final)}`);
    },
    transport,
  );
}

check("tokens", () => tokens("sse"));
check("tokens_websocket", () => tokens("websocket"));

check("tool_calls", () =>
  withThread("tools", async (thread) => {
    const toolCalls = thread.toolCalls;
    const output = thread.output;
    await sleep(200);
    await thread.run.start({ input: human("add 2 and 40") });
    let call;
    for await (const tc of toolCalls) {
      call = tc;
      break;
    }
    expect(call, "thread.toolCalls yielded nothing");
    expect(call.name === "add" && call.input?.a === 2 && call.input?.b === 40, `the call: ${short({ name: call.name, input: call.input })}`);
    const result = await within(10000, call.output, "the tool's output");
    const content = typeof result === "object" && result !== null ? (result.content ?? result.kwargs?.content) : result;
    expect(String(content) === "42", `the tool's output: ${short(result)}`);
    const final = await within(10000, output, "thread.output");
    expect(texts(final, "ai").at(-1) === "the sum is 42", `the final answer: ${short(final)}`);
  }),
);

async function interruptRespond(transport) {
  await withThread(
    "agent",
    async (thread) => {
      await thread.run.start({ input: human("please ask me") });
      const deadline = Date.now() + 10000;
      while (!thread.interrupts.length && Date.now() < deadline) await sleep(50);
      expect(thread.interrupted && thread.interrupts.length === 1, `one interrupt expected: ${short(thread.interrupts)}`);
      const intr = thread.interrupts[0];
      expect(intr.payload?.question === "approve?", `the interrupt's payload: ${short(intr)}`);
      await thread.input.respond({ interrupt_id: intr.interruptId, namespace: intr.namespace, response: "yes" });
      // The resumed run (its own run, queued by the command) answers with the response.
      let state;
      const until = Date.now() + 10000;
      do {
        state = await client.threads.getState(thread.threadId);
        if (texts(state.values, "ai").at(-1) === "human said: yes") break;
        await sleep(100);
      } while (Date.now() < until);
      expect(texts(state.values, "ai").at(-1) === "human said: yes", `after respond: ${short(state.values)}`);
    },
    transport,
  );
}

check("interrupt_respond", () => interruptRespond("sse"));
check("interrupt_respond_websocket", () => interruptRespond("websocket"));

check("subgraph_namespace", () =>
  withThread("agent", async (thread) => {
    const sub = await thread.subscribe(["lifecycle", "values"], { namespaces: [["sub"]] });
    const output = thread.output;
    await sleep(200);
    await thread.run.start({ input: human("go") });
    const events = [];
    await within(
      10000,
      (async () => {
        for await (const e of sub) {
          events.push(e);
          if (e.method === "lifecycle" && e.params.data.event === "completed") break;
        }
      })(),
      "the subgraph's events",
    );
    expect(events.every((e) => e.params.namespace[0]?.split(":")[0] === "sub"), `events outside sub: ${short(events)}`);
    expect(events[0].method === "lifecycle" && events[0].params.data.event === "started", `first: ${short(events[0])}`);
    expect(
      events.some((e) => e.method === "values" && texts(e.params.data).includes("from inner subgraph node")),
      `the subgraph's values: ${short(events)}`,
    );
    await within(10000, output, "thread.output");
  }),
);

check("subgraph_handles", () =>
  withThread("agent", async (thread) => {
    const subgraphs = thread.subgraphs;
    const output = thread.output;
    await sleep(200);
    await thread.run.start({ input: human("go") });
    let found;
    await within(
      10000,
      (async () => {
        for await (const sg of subgraphs) {
          found = sg;
          break;
        }
      })(),
      "thread.subgraphs",
    );
    expect(found && found.name === "sub" && found.namespace[0].startsWith("sub:"), `thread.subgraphs: ${short({ name: found?.name, ns: found?.namespace })}`);
    await within(10000, output, "thread.output");
  }),
);

check("reconnect_since", () =>
  withThread("agent", async (thread) => {
    const output = thread.output;
    await sleep(200);
    await thread.run.start({ input: human("hi") });
    await within(10000, output, "thread.output");
    const tid = thread.threadId;
    const read = async (body, n) => {
      const ctl = new AbortController();
      const res = await fetch(`${URL_}/threads/${tid}/stream/events`, {
        method: "POST",
        headers: { "content-type": "application/json", ...HEADERS },
        body: JSON.stringify(body),
        signal: ctl.signal,
      });
      expect(res.status === 200, `stream/events: ${res.status}`);
      const out = [];
      const decoder = new TextDecoder();
      let buf = "";
      for await (const chunk of res.body) {
        buf += decoder.decode(chunk, { stream: true });
        let i;
        while ((i = buf.indexOf("\r\n\r\n")) >= 0) {
          const frame = buf.slice(0, i);
          buf = buf.slice(i + 4);
          const id = /^id: (.*)$/m.exec(frame)?.[1];
          const data = /^data: (.*)$/m.exec(frame)?.[1];
          if (data) out.push([id, JSON.parse(data)]);
        }
        if (out.length >= n) break;
      }
      ctl.abort();
      return out.slice(0, n);
    };
    const body = { channels: ["values", "messages", "lifecycle"] };
    const first = await read(body, 8);
    expect(first.every(([id, e]) => String(e.seq) === id), `SSE id is the seq: ${short(first)}`);
    const cut = first[2][1].seq;
    const again = await read({ ...body, since: cut }, 5);
    expect(
      short(again.map(([, e]) => e.event_id)) === short(first.slice(3, 8).map(([, e]) => e.event_id)),
      `after since=${cut}: ${short(again)}`,
    );
  }),
);

// ---------------------------------------------------------------- driver

let HEADERS = {};

async function runOne(name, fn, timeoutS, results) {
  const t0 = Date.now();
  let line;
  let ok = false;
  try {
    await within(timeoutS * 1000, fn(), name);
    line = `ok ${name} (${((Date.now() - t0) / 1000).toFixed(1)}s)`;
    ok = true;
  } catch (e) {
    line = e instanceof CheckFailed ? `FAIL ${name}: ${e.message}` : `FAIL ${name}: ${e?.name}: ${short(String(e?.message ?? e), 400)}`;
  }
  console.log(line);
  results.push([name, ok]);
}

async function main() {
  const args = process.argv.slice(2);
  const url = args.find((a) => !a.startsWith("--") && !/^\d/.test(a));
  const opt = (name) => {
    const i = args.indexOf(name);
    return i >= 0 ? args[i + 1] : undefined;
  };
  if (!url) {
    console.log("usage: node stream_check.mjs URL [--only a,b] [--serial] [--timeout S] [--api-key K]");
    return 2;
  }
  URL_ = url.replace(/\/$/, "");
  const apiKey = opt("--api-key");
  HEADERS = apiKey ? { "x-api-key": apiKey } : {};
  client = new Client({ apiUrl: URL_, ...(apiKey ? { apiKey } : {}) });
  const timeout = Number(opt("--timeout") ?? 40);
  let checks = CHECKS;
  const only = opt("--only");
  if (only) {
    const want = new Set(only.split(","));
    checks = CHECKS.filter(([n]) => want.has(n));
  }
  const results = [];
  const t0 = Date.now();
  if (args.includes("--serial")) {
    for (const [n, f] of checks) await runOne(n, f, timeout, results);
  } else {
    await Promise.all(checks.map(([n, f]) => runOne(n, f, timeout, results)));
  }
  const passed = results.filter(([, ok]) => ok).length;
  console.log(`js stream: ${passed} passed, ${results.length - passed} failed`);
  console.log(`(@langchain/langgraph-sdk, ${((Date.now() - t0) / 1000).toFixed(1)}s against ${URL_})`);
  return results.length === passed ? 0 : 1;
}

process.exit(await main());
