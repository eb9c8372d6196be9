// Threads: a list searched by metadata and status, and one thread's checkpoints as a
// timeline; a checkpoint shows its state (a JSON tree) and the step's writes, and a run can
// start from it (a fork: LangGraph's time travel).

import * as api from "./api.js";
import { h, fill, jsonFields, errorBox, short, when } from "./dom.js";

/** "key=value, key2=value2" to a metadata filter (values parsed as JSON when they are). */
export function parseFilter(text) {
  const out = {};
  for (const part of text.split(",")) {
    const at = part.indexOf("=");
    if (at <= 0) continue;
    const raw = part.slice(at + 1).trim();
    let value = raw;
    try { value = JSON.parse(raw); } catch { /* a plain string */ }
    out[part.slice(0, at).trim()] = value;
  }
  return out;
}

/**
 * What the step that made checkpoint `c` wrote: the checkpoint's own record when it keeps
 * one (`metadata.writes`), else the channels whose value differs from its parent's, by the
 * tasks the parent had pending. Null for a thread's first checkpoint.
 */
export function stepWrites(c, parent) {
  const meta = c.metadata || {};
  if (meta.writes && typeof meta.writes === "object") {
    return { nodes: Object.keys(meta.writes), values: meta.writes };
  }
  if (!parent) return null;
  const now = c.values || {}, before = parent.values || {};
  const values = {};
  for (const key of Object.keys(now)) {
    if (JSON.stringify(now[key]) !== JSON.stringify(before[key])) values[key] = now[key];
  }
  const nodes = (parent.tasks || []).map((t) => t.name);
  return { nodes: meta.source === "input" ? ["input"] : nodes, values };
}

export async function threadsScreen(root) {
  const filter = h("input", { id: "thread-filter", type: "search", placeholder: "graph_id=tool-router" });
  const status = h("select", { id: "thread-status" },
    ...["", "idle", "busy", "interrupted", "error"].map((s) => h("option", { value: s }, s || "any")));
  const list = h("ul", { class: "threads", id: "thread-list", "aria-live": "polite" });
  const form = h("form", { class: "search", role: "search", onsubmit: (e) => { e.preventDefault(); load(); } },
    h("div", { class: "field" }, h("label", { for: "thread-filter" }, "Metadata (key=value, comma-separated)"), filter),
    h("div", { class: "field" }, h("label", { for: "thread-status" }, "Status"), status),
    h("button", { type: "submit" }, "Search"));
  fill(root, h("h1", {}, "Threads"), form, list);
  await load();

  async function load() {
    const query = { metadata: parseFilter(filter.value) };
    if (status.value) query.status = status.value;
    try {
      const found = await api.searchThreads(query);
      fill(list, found.length ? found.map((t) => h("li", {},
        h("a", { href: `#/threads/${t.thread_id}`, class: "thread-link" },
          h("span", { class: "mono" }, short(t.thread_id)),
          h("span", {}, (t.metadata && t.metadata.graph_id) || "(no runs)"),
          h("span", { class: `badge ${t.status}` }, t.status),
          h("span", { class: "dim" }, when(t.updated_at))))) : h("li", { class: "empty" }, "No thread matches."));
    } catch (e) { fill(list, h("li", {}, errorBox(e.message))); }
  }
}

export async function threadScreen(root, threadId) {
  const thread = await api.thread(threadId);
  const assistantId = thread.metadata && thread.metadata.assistant_id;
  const timeline = h("ol", { class: "timeline", id: "timeline", "aria-label": "Checkpoints, oldest first" });
  const detail = h("section", { class: "checkpoint", id: "checkpoint", "aria-live": "polite", "aria-label": "Checkpoint" });
  fill(root,
    h("div", { class: "chat-head" },
      h("h1", {}, `Thread ${short(threadId)}`),
      assistantId ? h("a", { class: "button", href: `#/chat/${assistantId}/${threadId}` }, "Open in chat") : null),
    h("p", { class: "dim" }, `${(thread.metadata && thread.metadata.graph_id) || "no graph yet"} · ${thread.status} · `,
      h("span", { class: "mono" }, threadId)),
    h("div", { class: "history-layout" },
      h("section", { "aria-labelledby": "timeline-title" }, h("h2", { id: "timeline-title" }, "History"), timeline),
      detail));
  await load();

  async function load(select) {
    let items;
    try { items = (await api.history(threadId)).slice().reverse(); } catch (e) { fill(timeline, h("li", {}, errorBox(e.message))); return; }
    const id = (c) => c.checkpoint_id || (c.checkpoint && c.checkpoint.checkpoint_id);
    const byId = new Map(items.map((c) => [id(c), c]));
    const buttons = items.map((c, i) => {
      const meta = c.metadata || {};
      // A checkpoint whose parent is not the one listed before it starts a branch (a fork).
      const parentId = c.parent_checkpoint && c.parent_checkpoint.checkpoint_id;
      const branch = i > 0 && parentId && parentId !== id(items[i - 1]);
      const parent = c.parent_checkpoint && byId.get(c.parent_checkpoint.checkpoint_id);
      c.writes = stepWrites(c, parent);
      const writes = c.writes ? c.writes.nodes : [];
      const b = h("button", { type: "button", class: "step", "aria-pressed": "false", "data-checkpoint": id(c), onclick: () => choose(c, b) },
        branch ? h("span", { class: "branch" }, `branch from ${short(parentId)}`) : null,
        h("span", { class: "step-n" }, `step ${meta.step ?? "?"}`),
        h("span", {}, meta.source || ""),
        h("span", { class: "dim" }, writes.length ? `wrote: ${writes.join(", ")}` : (c.next || []).length ? `next: ${c.next.join(", ")}` : ""));
      return b;
    });
    fill(timeline, items.length ? buttons.map((b) => h("li", {}, b)) : h("li", { class: "empty" }, "No checkpoints yet."));
    const chosen = select ? buttons.find((b) => b.dataset.checkpoint === select) : buttons[buttons.length - 1];
    if (chosen) chosen.click();
    else fill(detail, h("p", { class: "empty" }, "Pick a checkpoint."));
  }

  function choose(c, button) {
    for (const b of timeline.querySelectorAll("button.step")) b.setAttribute("aria-pressed", String(b === button));
    const meta = c.metadata || {};
    const checkpointId = c.checkpoint_id || (c.checkpoint && c.checkpoint.checkpoint_id);
    const message = h("textarea", { id: "fork-message", rows: 2, placeholder: "Leave empty to run again from here" });
    const go = h("button", { type: "submit", id: "fork", class: "primary" }, "Fork from this checkpoint");
    const outcome = h("div", { id: "fork-outcome", "aria-live": "polite" });
    const form = h("form", { class: "fork", onsubmit: async (e) => {
      e.preventDefault();
      go.disabled = true;
      fill(outcome, "Running from this checkpoint…");
      const text = message.value.trim();
      const body = { assistant_id: assistantId, checkpoint_id: checkpointId, stream_mode: ["values"],
        input: text ? { messages: [{ role: "user", content: text }] } : null };
      let error = null;
      try {
        const { done } = await api.streamRun(threadId, body, ({ event, data }) => {
          if (event === "error") error = (data && (data.message || data.error)) || String(data);
        });
        await done;
      } catch (err) { error = err.message; }
      if (error) { fill(outcome, errorBox(error)); go.disabled = false; return; }
      const head = await api.threadState(threadId);
      const headId = head.checkpoint && head.checkpoint.checkpoint_id;
      await load(headId);
      outcome.textContent = "";
      detail.prepend(h("p", { class: "notice", id: "forked" }, `Forked from ${short(checkpointId)}: the new branch ends at ${short(headId)}.`));
    } },
      h("h3", {}, "Fork"),
      h("label", { for: "fork-message" }, "New message for the branch (optional)"), message,
      h("div", { class: "buttons" }, go), outcome);
    fill(detail,
      h("h2", {}, `Checkpoint ${short(checkpointId)}`),
      h("p", { class: "dim" }, `step ${meta.step ?? "?"} · ${meta.source || ""} · ${when(c.created_at)}`,
        (c.next || []).length ? ` · next: ${c.next.join(", ")}` : "",
        c.parent_checkpoint ? ` · parent ${short(c.parent_checkpoint.checkpoint_id)}` : ""),
      meta.run_id ? h("p", {}, "Written by run ", h("span", { class: "mono" }, short(meta.run_id)), " · ",
        h("a", { id: "trace-link", href: `#/trace/${threadId}/${meta.run_id}` }, "see its trace")) : null,
      h("h3", {}, "State"), h("div", { class: "tree", id: "state-tree" }, jsonFields(c.values ?? null, 2)),
      h("h3", {}, c.writes && c.writes.nodes.length ? `Writes of this step (by ${c.writes.nodes.join(", ")})` : "Writes of this step"),
      h("div", { class: "tree", id: "writes-tree" }, c.writes ? jsonFields(c.writes.values, 2) : h("p", { class: "empty" }, "None (the thread's first checkpoint).")),
      assistantId ? form : null);
  }
}
