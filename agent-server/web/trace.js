// A run's waterfall: what the server recorded of the run (GET /threads/{t}/runs/{r}/trace):
// the run, its graph, each step and the nodes it ran (parallel ones overlap in time), model
// calls with their tokens and time to first token, tool calls, checkpoint writes, errors.
// Each span is a row, indented under its parent, its bar placed on the run's time line.

import * as api from "./api.js";
import { h, fill, errorBox, short } from "./dom.js";

/** Milliseconds, readable: "0.8 ms", "12 ms", "1.4 s". */
export function duration(us) {
  const ms = us / 1000;
  if (ms < 10) return `${ms.toFixed(1)} ms`;
  if (ms < 1000) return `${Math.round(ms)} ms`;
  return `${(ms / 1000).toFixed(ms < 10000 ? 2 : 1)} s`;
}

/** What kind of span a row is (its colour): run, agent, step, node, model, tool, checkpoint. */
function kind(span) {
  const a = span.attributes || {};
  const op = a["gen_ai.operation.name"];
  if (span.parent === null || span.parent === undefined) return "run";
  if (op === "invoke_agent") return "agent";
  if (op === "chat" || op === "embeddings") return "model";
  if (op === "execute_tool") return "tool";
  if (a["agentgraph.checkpoint.backend"]) return "checkpoint";
  if (a["agentgraph.node"]) return "node";
  if (span.name === "step") return "step";
  return "other";
}

/** The row's words after its name: step number, tokens, first token, bytes, status. */
function details(span) {
  const a = span.attributes || {};
  const out = [];
  if (span.name === "step" && a["agentgraph.step"] !== undefined) out.push(`#${a["agentgraph.step"]}`);
  const tokensIn = a["gen_ai.usage.input_tokens"], tokensOut = a["gen_ai.usage.output_tokens"];
  if (tokensIn !== undefined || tokensOut !== undefined) out.push(`${tokensIn ?? "?"} in · ${tokensOut ?? "?"} out tokens`);
  const first = a["gen_ai.response.time_to_first_chunk"];
  if (typeof first === "number") out.push(`first token ${duration(first * 1e6)}`);
  if (a["agentgraph.checkpoint.bytes"] !== undefined) out.push(`${a["agentgraph.checkpoint.bytes"]} B`);
  if (a["agentgraph.node.attempts"] > 1) out.push(`${a["agentgraph.node.attempts"]} attempts`);
  if (a["agentgraph.cache.hit"] === true) out.push("cached");
  if (a["agentgraph.interrupted"] === true) out.push("interrupted");
  if (a["agentgraph.run.status"]) out.push(a["agentgraph.run.status"]);
  return out.join(" · ");
}

/** The spans in tree order (each after its parent, siblings by start), with their depth. */
export function ordered(spans) {
  const children = new Map();
  const ids = new Set(spans.map((s) => s.id));
  const roots = [];
  for (const s of spans) {
    const parent = s.parent;
    if (parent === null || parent === undefined || !ids.has(parent)) roots.push(s);
    else {
      if (!children.has(parent)) children.set(parent, []);
      children.get(parent).push(s);
    }
  }
  const byStart = (a, b) => a.start_us - b.start_us || a.id - b.id;
  const out = [];
  const walk = (s, depth) => {
    out.push({ span: s, depth });
    for (const c of (children.get(s.id) || []).sort(byStart)) walk(c, depth + 1);
  };
  for (const r of roots.sort(byStart)) walk(r, 0);
  return out;
}

/** The waterfall of a trace (the route's answer). */
export function waterfall(trace) {
  const spans = trace.spans || [];
  if (!spans.length) return h("p", { class: "empty" }, "Nothing was recorded of this run.");
  const start = Math.min(...spans.map((s) => s.start_us));
  const end = Math.max(...spans.map((s) => s.start_us + s.duration_us));
  const total = Math.max(end - start, 1);
  const rows = ordered(spans).map(({ span, depth }) => {
    const left = ((span.start_us - start) / total) * 100;
    const width = Math.max((span.duration_us / total) * 100, 0.4);
    const k = kind(span);
    const words = details(span);
    // Placed through the CSSOM: the page's CSP allows no inline style attribute.
    const label = h("div", { class: "trace-label" },
      h("span", { class: "trace-name" }, span.name),
      words ? h("span", { class: "trace-details dim" }, words) : null,
      span.error ? h("span", { class: "trace-error" }, span.error) : null);
    label.style.paddingLeft = `${depth * 0.9}rem`;
    const bar = h("div", { class: "trace-bar", title: `${span.name}: ${duration(span.duration_us)}` });
    bar.style.left = `${left.toFixed(3)}%`;
    bar.style.width = `${Math.min(width, 100 - left).toFixed(3)}%`;
    return h("li", { class: `trace-row k-${k}${span.error ? " failed" : ""}`, "data-name": span.name, "data-kind": k },
      label,
      h("div", { class: "trace-track", "aria-hidden": "true" }, bar),
      h("span", { class: "trace-duration mono" }, duration(span.duration_us)));
  });
  return h("div", { class: "waterfall" },
    h("p", { class: "dim", id: "trace-summary" }, `${spans.length} spans over ${duration(total)}`,
      trace.truncated ? " (truncated: the run made more than the server keeps)" : ""),
    h("ol", { class: "trace", id: "trace", "aria-label": "Spans, each under the one it ran in" }, rows));
}

/** The trace screen of run `runId` of thread `threadId`. */
export async function traceScreen(root, threadId, runId) {
  const body = h("section", { id: "trace-view", "aria-live": "polite" }, h("p", { class: "dim" }, "Loading…"));
  fill(root,
    h("div", { class: "chat-head" },
      h("h1", {}, `Trace of run ${short(runId)}`),
      h("a", { class: "button", href: `#/threads/${threadId}` }, "Thread history")),
    h("p", { class: "dim" }, "As this server recorded it: the run, its steps and nodes, model and tool calls, checkpoint writes. ",
      h("span", { class: "mono" }, runId)),
    body);
  // A run that just ended closes its own span a moment after its answer: look again briefly.
  for (let attempt = 0; ; attempt++) {
    try {
      const trace = await api.runTrace(threadId, runId);
      const whole = (trace.spans || []).some((s) => s.parent === null || s.parent === undefined);
      if (whole || attempt >= 10) { fill(body, waterfall(trace)); return; }
    } catch (e) {
      if (attempt >= 3 || e.status !== 404) { fill(body, errorBox(e.message)); return; }
    }
    await new Promise((r) => setTimeout(r, 300));
  }
}
