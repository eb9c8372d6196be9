// The page's entry: the header, the credential prompt (an API key or a JWT), hash routes to the screens, and the
// graphs list (each graph with its description and drawing).

import * as api from "./api.js";
import { h, fill, errorBox } from "./dom.js";
import { drawGraph } from "./draw.js";
import { chatScreen } from "./chat.js";
import { threadsScreen, threadScreen } from "./threads.js";
import { traceScreen } from "./trace.js";

const main = document.getElementById("main");
const keyForm = document.getElementById("key-form");

api.whenUnauthorized(() => { keyForm.hidden = false; document.getElementById("api-key").focus(); });
keyForm.addEventListener("submit", (e) => {
  e.preventDefault();
  api.setApiKey(document.getElementById("api-key").value.trim());
  keyForm.hidden = true;
  route();
});

async function graphsScreen(root) {
  const list = await api.assistants();
  const drawings = await Promise.all(list.map((a) => api.drawing(a.assistant_id).catch((e) => e)));
  fill(root,
    h("h1", {}, "Graphs"),
    h("p", { class: "dim" }, `${list.length} served here. Pick one to chat with it.`),
    h("ul", { class: "cards", id: "graphs" }, list.map((a, i) => {
      const d = drawings[i];
      return h("li", { class: "card", "data-graph": a.graph_id },
        h("h2", {}, a.name || a.graph_id),
        a.name !== a.graph_id ? h("p", { class: "dim mono" }, a.graph_id) : null,
        h("p", { class: "description" }, a.description || "No description."),
        h("div", { class: "drawing" }, d instanceof Error ? errorBox(d.message) : drawGraph(d, `Drawing of the ${a.graph_id} graph`)),
        h("a", { class: "button primary", href: `#/chat/${a.assistant_id}`, "aria-label": `Chat with ${a.name || a.graph_id}` }, "Chat"));
    })));
}

async function route() {
  const parts = location.hash.replace(/^#\/?/, "").split("/").filter(Boolean);
  for (const a of document.querySelectorAll("nav a")) {
    a.setAttribute("aria-current", String(a.dataset.screen === (parts[0] || "graphs") || (a.dataset.screen === "threads" && (parts[0] === "threads" || parts[0] === "trace"))));
  }
  fill(main, h("p", { class: "dim" }, "Loading…"));
  try {
    if (parts[0] === "chat" && parts[1]) await chatScreen(main, parts[1], parts[2]);
    else if (parts[0] === "trace" && parts[1] && parts[2]) await traceScreen(main, parts[1], parts[2]);
    else if (parts[0] === "threads" && parts[1]) await threadScreen(main, parts[1]);
    else if (parts[0] === "threads") await threadsScreen(main);
    else await graphsScreen(main);
    document.title = `${main.querySelector("h1")?.textContent || "agentgraph"} · agentgraph`;
    // Keyboard users land on the new screen, not on the link they left.
    if (!main.contains(document.activeElement)) main.focus({ preventScroll: true });
  } catch (e) {
    fill(main, errorBox(e.message || String(e)));
  }
}

window.addEventListener("hashchange", route);
route();
