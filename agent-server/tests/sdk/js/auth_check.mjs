#!/usr/bin/env node
// Two users against `agent serve` with JWT auth, through the real JS SDK
// (@langchain/langgraph-sdk). Usage: node auth_check.mjs URL
//
// Tokens come from the environment (the test mints them with the server's secret):
// AUTH_TOKEN_ADA, AUTH_TOKEN_BOB, AUTH_TOKEN_FORGED, AUTH_TOKEN_EXPIRED, and AUTH_OPERATOR_KEY.
// Each user uses the five flows; neither sees or touches the other's threads, runs, crons or
// store items; bad tokens are 401; the operator sees both. Prints `ok NAME` / `FAIL NAME: why`,
// then `js auth: N passed, M failed`.
import { Client } from "@langchain/langgraph-sdk";
import { randomUUID } from "node:crypto";

const URL = process.argv[2];
const TAG = randomUUID().replaceAll("-", "");
const FLOWS = {
  "tool-router": "What time is it in Tokyo?",
  form: "My name is John",
  orchestrator: "Hello! What can you do?",
  data: "What was the average unemployment rate in 2008?",
  react: "What is 12 * 7?",
};

const bearer = (name) =>
  new Client({ apiUrl: URL, apiKey: null, defaultHeaders: { Authorization: `Bearer ${process.env[name]}` } });
const chat = (text) => ({ messages: [{ role: "user", content: text }] });

function expect(cond, msg) {
  if (!cond) throw new Error(msg);
}

async function refused(promiseOrIter, status, what) {
  let got;
  try {
    if (promiseOrIter && typeof promiseOrIter[Symbol.asyncIterator] === "function") {
      got = [];
      for await (const p of promiseOrIter) got.push(p);
    } else {
      got = await promiseOrIter;
    }
  } catch (e) {
    expect(e?.status === status, `${what}: expected ${status}, got ${e?.status}: ${e?.message ?? e}`);
    return;
  }
  throw new Error(`${what}: expected ${status}, got a success: ${JSON.stringify(got)}`);
}

const checks = {
  async both_users_use_the_five_flows(ada, bob) {
    for (const [client, who] of [[ada, "ada"], [bob, "bob"]]) {
      for (const [flow, text] of Object.entries(FLOWS)) {
        const thread = await client.threads.create({ metadata: { tag: TAG } });
        expect(thread.metadata.owner === who, JSON.stringify(thread));
        const out = await client.runs.wait(thread.thread_id, flow, { input: chat(text) });
        expect(out && !out.__error__, `${who} ${flow}: ${JSON.stringify(out)}`);
        if (flow === "orchestrator") {
          // The orchestrator runs for the token's user, whatever a request says.
          expect(out.user_id === who, `${who} orchestrator ran for ${out.user_id}`);
        }
      }
    }
  },

  async threads_and_runs_are_their_owners(ada, bob) {
    const t = await ada.threads.create({ metadata: { tag: TAG, owner: "bob" } });
    const tid = t.thread_id;
    expect(t.metadata.owner === "ada", JSON.stringify(t));
    await ada.runs.wait(tid, "tool-router", { input: chat("What time is it in London?") });
    const [run] = await ada.runs.list(tid);
    await refused(bob.threads.get(tid), 404, "bob reads ada's thread");
    await refused(bob.threads.update(tid, { metadata: { owner: "bob" } }), 404, "bob patches it");
    await refused(bob.threads.getState(tid), 404, "bob reads its state");
    await refused(bob.threads.getHistory(tid), 404, "bob reads its history");
    await refused(bob.runs.list(tid), 404, "bob lists its runs");
    await refused(bob.runs.get(tid, run.run_id), 404, "bob reads its run");
    await refused(bob.runs.cancel(tid, run.run_id), 404, "bob cancels its run");
    await refused(bob.runs.wait(tid, "tool-router", { input: chat("hi") }), 404, "bob runs on it");
    await refused(bob.runs.stream(tid, "tool-router", { input: chat("hi") }), 404, "bob streams on it");
    await refused(bob.threads.delete(tid), 404, "bob deletes it");
    const mine = await bob.threads.search({ metadata: { tag: TAG }, limit: 100 });
    expect(mine.every((x) => x.metadata.owner === "bob"), JSON.stringify(mine));
    const adas = await ada.threads.search({ metadata: { tag: TAG }, limit: 100 });
    expect(adas.some((x) => x.thread_id === tid), "ada finds her thread");
  },

  async crons_are_their_owners(ada, bob) {
    const cron = await ada.crons.create("tool-router", { schedule: "0 0 1 1 *", input: chat("What time is it?") });
    expect(cron.user_id === "ada", JSON.stringify(cron));
    const bobs = await bob.crons.search({ limit: 100 });
    expect(!bobs.some((c) => c.cron_id === cron.cron_id), "bob does not see ada's cron");
    await refused(bob.crons.delete(cron.cron_id), 404, "bob deletes ada's cron");
    await ada.crons.delete(cron.cron_id);
  },

  async store_namespaces_start_with_the_identity(ada, bob) {
    await ada.store.putItem(["ada", "notes", TAG], "k", { text: "ada's" });
    await refused(ada.store.putItem(["bob", "notes"], "k", { text: "x" }), 403, "ada writes bob's namespace");
    await refused(bob.store.getItem(["ada", "notes", TAG], "k"), 403, "bob reads ada's item");
    await refused(bob.store.searchItems(["ada"]), 403, "bob searches ada's namespace");
    const got = await ada.store.searchItems([], { limit: 100 });
    expect(got.items.length > 0 && got.items.every((i) => i.namespace[0] === "ada"), JSON.stringify(got));
    const spaces = await bob.store.listNamespaces();
    expect(spaces.namespaces.every((ns) => ns[0] === "bob"), JSON.stringify(spaces));
  },

  async bad_tokens_are_401() {
    for (const name of ["AUTH_TOKEN_FORGED", "AUTH_TOKEN_EXPIRED"]) {
      await refused(bearer(name).threads.search(), 401, name);
    }
    await refused(new Client({ apiUrl: URL, apiKey: null }).threads.search(), 401, "no credential");
  },

  async the_operator_sees_both(ada, bob, op) {
    const a = await ada.threads.create({ metadata: { tag: TAG, who: "a" } });
    const b = await bob.threads.create({ metadata: { tag: TAG, who: "b" } });
    const seen = await op.threads.search({ metadata: { tag: TAG }, limit: 1000 });
    const ids = seen.map((t) => t.thread_id);
    expect(ids.includes(a.thread_id) && ids.includes(b.thread_id), JSON.stringify(ids));
    expect(new Set(seen.map((t) => t.metadata.owner)).size === 2, "both owners");
  },
};

const ada = bearer("AUTH_TOKEN_ADA");
const bob = bearer("AUTH_TOKEN_BOB");
const op = new Client({ apiUrl: URL, apiKey: process.env.AUTH_OPERATOR_KEY });
let passed = 0;
let failed = 0;
for (const [name, check] of Object.entries(checks)) {
  try {
    await check(ada, bob, op);
    console.log(`ok ${name}`);
    passed++;
  } catch (e) {
    console.log(`FAIL ${name}: ${e?.stack ?? e}`);
    failed++;
  }
}
console.log(`js auth: ${passed} passed, ${failed} failed`);
process.exit(failed ? 1 : 0);
