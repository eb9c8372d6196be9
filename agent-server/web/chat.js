// The chat screen: a thread with one graph. Tokens stream in (`messages-tuple`), tool calls
// and results are cards, the node running is lit on the drawing (`updates`, `debug`), the
// context form comes from the assistant's context schema, and a paused run (a breakpoint or
// an `interrupt()`) shows what it waits for with a form to resume or edit the state.

import * as api from "./api.js";
import { h, fill, jsonTree, jsonFields, errorBox, short, contentText } from "./dom.js";
import { drawGraph, mark, unmark } from "./draw.js";

const MODES = ["values", "messages-tuple", "updates", "debug"];

export async function chatScreen(root, assistantId, threadId) {
  const [assistant, graph, schemas] = await Promise.all([
    api.assistant(assistantId), api.drawing(assistantId), api.schemas(assistantId).catch(() => ({})),
  ]);
  const name = assistant.name || assistant.graph_id;
  let messages = [];
  const partial = new Map(); // message id -> {text, node}
  const opened = new Set(); // tool call ids whose cards are open
  let steps = []; // this run's node updates: {node, update, output}
  let runStart = 0; // where this run's messages begin
  let running = false, runId = null, frame = 0, stopped = false;

  const log = h("div", { class: "log", role: "log", "aria-live": "polite", "aria-label": "Conversation", id: "log" });
  const status = h("p", { class: "status", id: "chat-status", "aria-live": "polite" });
  // The run under way (or the last one): a link to its trace, live while it runs.
  const runLine = h("p", { class: "run-line dim", id: "run-line" });
  const errors = h("div", { id: "chat-errors" });
  const paused = h("section", { class: "paused", id: "paused", "aria-label": "Paused run", hidden: true });
  const input = h("textarea", { id: "message", rows: 2, placeholder: "Ask something… (Enter sends, Shift+Enter for a new line)", required: true });
  const send = h("button", { type: "submit", id: "send", class: "primary" }, "Send");
  const stop = h("button", { type: "button", id: "stop", disabled: true, onclick: () => stopRun() }, "Stop");
  const composer = h("form", { class: "composer", id: "composer", onsubmit: (e) => { e.preventDefault(); submit(); } },
    h("label", { for: "message", class: "visually-hidden" }, "Message"), input, h("div", { class: "buttons" }, send, stop));
  input.addEventListener("keydown", (e) => {
    if (e.key === "Enter" && !e.shiftKey && !e.isComposing) { e.preventDefault(); composer.requestSubmit(); }
  });

  const svg = drawGraph(graph, `Drawing of the ${assistant.graph_id} graph`);
  const { form: settings, values: contextValues } = contextForm(assistantId, schemas.context_schema);
  const breakpoints = breakpointForm(graph);
  const threadLine = h("p", { class: "thread-line", id: "thread-line" });

  fill(root,
    h("div", { class: "chat-layout" },
      h("section", { class: "chat", "aria-labelledby": "chat-title" },
        h("div", { class: "chat-head" },
          h("h1", { id: "chat-title" }, `Chat with ${name}`),
          h("a", { href: `#/chat/${assistantId}`, class: "button", id: "new-thread" }, "New thread")),
        threadLine, log, paused, errors, status, runLine, composer),
      h("aside", { class: "side", "aria-label": "Graph and settings" },
        h("h2", {}, "Graph"), h("div", { class: "drawing" }, svg),
        h("h2", {}, "Settings"), settings, breakpoints)));
  showThread();
  input.focus();

  if (threadId) {
    try {
      const [state, thread] = await Promise.all([api.threadState(threadId), api.thread(threadId)]);
      messages = (state.values && state.values.messages) || [];
      render();
      fill(status, showPaused(state, thread.status));
    } catch (e) { fail(e); }
  }

  function showThread() {
    fill(threadLine, threadId
      ? ["Thread ", h("a", { href: `#/threads/${threadId}` }, short(threadId)), " — see its history"]
      : "A new thread starts with your first message.");
  }

  function fail(e) { errors.append(errorBox(e.message || String(e))); }

  function showRun(id) {
    if (!id || !threadId) return;
    fill(runLine, "Run ", h("span", { class: "mono" }, short(id)), " · ",
      h("a", { id: "trace-link", href: `#/trace/${threadId}/${id}` }, "see its trace"));
  }

  function render() {
    frame = 0;
    const results = new Map();
    for (const m of messages) if (m.type === "tool" && m.tool_call_id) results.set(m.tool_call_id, m);
    const out = [];
    messages.forEach((m, i) => {
      if (i === runStart) out.push(...steps.map(stepCard));
      if (m.type === "human") out.push(bubble("human", "You", contentText(m.content)));
      else if (m.type === "ai") {
        const text = contentText(m.content);
        const el = bubble("ai", name, text);
        for (const call of m.tool_calls || []) el.append(toolCard(call, results.get(call.id)));
        if (text || (m.tool_calls || []).length) out.push(el);
      } else if (m.type === "tool" && !messages.some((a) => (a.tool_calls || []).some((c) => c.id === m.tool_call_id))) {
        out.push(toolCard({ id: m.tool_call_id, name: m.name || "tool", args: null }, m));
      } else if (m.type === "system") out.push(bubble("system", "System", contentText(m.content)));
    });
    if (runStart >= messages.length) out.push(...steps.map(stepCard));
    const known = new Set(messages.map((m) => m.id));
    for (const [id, p] of partial) {
      if (!known.has(id) && p.text) out.push(bubble("ai streaming", `${name} · ${p.node || ""}`, p.text));
    }
    fill(log, out.length ? out : h("p", { class: "empty" }, "No messages yet."));
    log.scrollTop = log.scrollHeight;
  }

  function later() { if (!frame) frame = requestAnimationFrame(render); }

  function bubble(kind, who, text) {
    return h("div", { class: `msg ${kind}` }, h("div", { class: "who" }, who), h("div", { class: "text" }, text));
  }

  /** A node's step in this run: its model output (when it streamed one it did not keep as
   *  a message) and its update, collapsed. */
  function stepCard(step, i) {
    const key = `step-${i}`;
    const { messages: _kept, ...update } = step.update && typeof step.update === "object" ? step.update : { value: step.update };
    const card = h("details", { class: "tool step-card", open: opened.has(key), "data-node": step.node },
      h("summary", {}, h("span", { class: "tool-name" }, `Step: ${step.node}`),
        h("span", { class: "tool-state" }, ` · wrote ${Object.keys(step.update || {}).join(", ") || "nothing"}`)),
      step.output ? [h("div", { class: "tool-label" }, "Model output"), h("pre", {}, step.output)] : null,
      Object.keys(update).length ? [h("div", { class: "tool-label" }, "Update"), jsonFields(update, 4)] : null);
    card.addEventListener("toggle", () => (card.open ? opened.add(key) : opened.delete(key)));
    return card;
  }

  function toolCard(call, result) {
    const card = h("details", { class: "tool", open: opened.has(call.id) },
      h("summary", {}, h("span", { class: "tool-name" }, `Tool: ${call.name}`),
        result ? h("span", { class: "tool-state" }, result.status === "error" ? " · failed" : " · done") : h("span", { class: "tool-state" }, " · waiting")),
      call.args != null ? [h("div", { class: "tool-label" }, "Arguments"), h("pre", {}, JSON.stringify(call.args, null, 2))] : null,
      result ? [h("div", { class: "tool-label" }, "Result"), h("pre", {}, contentText(result.content))] : null);
    card.addEventListener("toggle", () => (card.open ? opened.add(call.id) : opened.delete(call.id)));
    return card;
  }

  async function submit() {
    const text = input.value.trim();
    if (!text || running) return;
    input.value = "";
    runStart = messages.length + 1;
    messages = messages.concat([{ type: "human", content: text, id: `local-${Date.now()}` }]);
    steps = [];
    render();
    await run({ input: { messages: [{ role: "user", content: text }] } });
  }

  async function run(extra) {
    fill(errors);
    paused.hidden = true;
    running = true; stopped = false; send.disabled = true;
    fill(status, "Running…");
    fill(runLine);
    unmark(svg);
    log.dataset.streamedChunks = "0";
    try {
      if (!threadId) {
        const t = await api.newThread({ graph_id: assistant.graph_id });
        threadId = t.thread_id;
        history.replaceState(null, "", `#/chat/${assistantId}/${threadId}`);
        showThread();
      }
      const body = { assistant_id: assistantId, stream_mode: MODES, ...extra };
      const context = contextValues();
      if (Object.keys(context).length) body.context = context;
      const stops = [...breakpoints.querySelectorAll("input:checked")].map((c) => c.value);
      if (stops.length) body.interrupt_before = stops;
      const started = await api.streamRun(threadId, body, onEvent);
      runId = runId || started.runId;
      showRun(runId);
      // Stop works once the run has an id to cancel.
      if (runId && !stopped) stop.disabled = false;
      await started.done;
    } catch (e) { fail(e); }
    running = false; send.disabled = false; stop.disabled = true; runId = null;
    partial.clear();
    for (const g of svg.querySelectorAll("g.node.running")) g.classList.replace("running", "visited");
    try {
      if (threadId) {
        const [state, thread] = await Promise.all([api.threadState(threadId), api.thread(threadId)]);
        messages = (state.values && state.values.messages) || messages;
        render();
        fill(status, showPaused(state, thread.status));
      }
    } catch (e) { fail(e); fill(status, ""); }
    input.focus();
  }

  function onEvent({ event, data }) {
    const kind = event.split("|")[0];
    if (kind === "metadata" && data && data.run_id) {
      runId = data.run_id;
      showRun(runId);
      if (running && !stopped) stop.disabled = false;
    }
    else if (kind === "values" && data && Array.isArray(data.messages)) { messages = data.messages; later(); }
    else if (kind === "messages" && Array.isArray(data)) {
      const [chunk, meta] = data;
      if (!chunk || !String(chunk.type || "").toLowerCase().startsWith("ai")) return;
      const id = chunk.id || "streaming";
      const p = partial.get(id) || { text: "", node: meta && meta.langgraph_node };
      p.text += contentText(chunk.content);
      log.dataset.streamedChunks = String(Number(log.dataset.streamedChunks || 0) + 1);
      partial.set(id, p);
      if (p.node) mark(svg, p.node, "running");
      later();
    } else if (kind === "updates" && data && typeof data === "object") {
      const known = new Set(messages.map((m) => m.id));
      for (const [node, update] of Object.entries(data)) {
        if (node.startsWith("__")) continue;
        mark(svg, node, "done");
        // What the node's model streamed and the node did not keep as a message.
        let output = "";
        for (const [id, p] of partial) {
          if (p.node === node && !known.has(id)) { output += p.text; partial.delete(id); }
        }
        steps.push({ node, update, output });
      }
      later();
    } else if (kind === "debug" && data && data.payload) {
      if (data.type === "task") mark(svg, data.payload.name, "running");
      else if (data.type === "task_result") mark(svg, data.payload.name, "done");
    } else if (kind === "error") {
      fail({ message: (data && (data.message || data.error)) || String(data) });
    }
  }

  async function stopRun() {
    if (!runId || !threadId) return;
    stop.disabled = true;
    stopped = true;
    fill(status, "Stopping…");
    try { await api.cancel(threadId, runId); } catch (e) { fail(e); }
  }

  /**
   * Where the thread's last run left it, as the status line says it: done, paused (what an
   * `interrupt()` asks, or the breakpoint), failed or stopped, each but done with a form to
   * answer (`command.resume`) or go on, after editing the state if wanted.
   */
  function showPaused(state, threadStatus) {
    const next = state.next || [];
    if (!next.length) { paused.hidden = true; return "Done."; }
    const asks = (state.tasks || []).flatMap((t) => t.interrupts || []);
    const failed = (state.tasks || []).filter((t) => t.error);
    const why = failed.length || threadStatus === "error" ? "failed"
      : stopped ? "stopped" : "paused";
    const original = JSON.stringify(state.values ?? {}, null, 2);
    const editor = h("textarea", { id: "state-editor", rows: 10, spellcheck: "false" }, original);
    const answer = asks.length ? h("textarea", { id: "resume-value", rows: 2, placeholder: "Text, or JSON" }) : null;
    const go = h("button", { type: "submit", id: "resume", class: "primary" },
      asks.length ? "Resume" : why === "failed" ? "Retry" : "Continue");
    const form = h("form", { id: "resume-form", onsubmit: async (e) => {
      e.preventDefault();
      go.disabled = true;
      try {
        if (editor.value !== original) await api.editState(threadId, JSON.parse(editor.value));
      } catch (err) { fail(err); go.disabled = false; return; }
      steps = [];
      runStart = messages.length;
      if (asks.length) {
        let value = answer.value;
        try { value = JSON.parse(value); } catch { /* plain text */ }
        await run({ command: { resume: value } });
      } else await run({ input: null });
    } },
      answer ? [h("label", { for: "resume-value" }, "Your answer"), answer] : null,
      h("details", { class: "edit-state" }, h("summary", {}, "Edit the state before continuing"),
        h("label", { for: "state-editor" }, "State (JSON; what you change is written to the thread)"), editor),
      h("div", { class: "buttons" }, go));
    const where = h("strong", {}, next.join(", "));
    fill(paused,
      h("h2", {}, { failed: "Failed", paused: "Paused", stopped: "Stopped" }[why]),
      why === "failed"
        ? [h("p", {}, "The run failed; it can be tried again from ", where, "."),
          ...failed.map((t) => h("div", { class: "asks" }, `${t.name}: ${typeof t.error === "string" ? t.error : JSON.stringify(t.error)}`))]
        : asks.length
          ? [h("p", {}, "The graph asks:"), ...asks.map((i) => h("div", { class: "asks" },
            typeof i.value === "string" ? i.value : jsonTree(i.value, 2)))]
          : why === "paused"
            ? h("p", {}, "Paused before ", where, ".")
            : h("p", {}, "The run was stopped before ", where, "."),
      form);
    paused.hidden = false;
    for (const n of next) mark(svg, n, "running");
    return { failed: "Failed.", paused: "Paused.", stopped: "Stopped." }[why];
  }
}

/** The context form, built from the assistant's context JSON schema; values kept per assistant. */
function contextForm(assistantId, schema) {
  const key = `agentgraph.context.${assistantId}`;
  let saved = {};
  try { saved = JSON.parse(localStorage.getItem(key) || "{}"); } catch { saved = {}; }
  const props = (schema && schema.properties) || {};
  const fields = [];
  const read = [];
  for (const [name, p] of Object.entries(props)) {
    const id = `ctx-${name}`;
    const help = p.description ? h("small", { id: `${id}-help` }, p.description) : null;
    let control;
    if (Array.isArray(p.enum)) {
      control = h("select", { id, name }, h("option", { value: "" }, "(default)"),
        ...p.enum.map((v) => h("option", { value: String(v), selected: saved[name] === v }, String(v))));
      read.push(() => [name, control.value || null]);
    } else if (p.type === "boolean") {
      control = h("input", { id, name, type: "checkbox", checked: saved[name] === true });
      read.push(() => [name, control.checked ? true : null]);
    } else if (p.type === "number" || p.type === "integer") {
      control = h("input", { id, name, type: "number", step: p.type === "integer" ? 1 : "any", value: saved[name] ?? "" });
      read.push(() => [name, control.value === "" ? null : Number(control.value)]);
    } else {
      control = h("input", { id, name, type: "text", value: saved[name] ?? "", placeholder: name === "model" ? "offline" : "(default)" });
      read.push(() => [name, control.value.trim() || null]);
    }
    if (help) control.setAttribute("aria-describedby", `${id}-help`);
    fields.push(h("div", { class: "field" }, h("label", { for: id }, p.title || name), control, help));
  }
  const values = () => {
    const out = {};
    for (const r of read) { const [k, v] = r(); if (v !== null) out[k] = v; }
    localStorage.setItem(key, JSON.stringify(out));
    return out;
  };
  const form = h("form", { class: "settings", id: "settings", "aria-label": "Context", onsubmit: (e) => e.preventDefault() },
    fields.length ? fields : h("p", { class: "empty" }, "This graph takes no context."));
  return { form, values };
}

/** Checkboxes to pause before nodes (`interrupt_before`), one per top-level node. */
function breakpointForm(graph) {
  const names = [...new Set((graph.nodes || []).map((n) => n.id.split(":")[0]))]
    .filter((n) => n !== "__start__" && n !== "__end__");
  return h("fieldset", { class: "breakpoints", id: "breakpoints" },
    h("legend", {}, "Pause before"),
    ...names.map((n) => h("label", { class: "check" },
      h("input", { type: "checkbox", value: n, id: `bp-${n}` }), ` ${n}`)));
}
