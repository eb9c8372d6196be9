// A graph's drawing as SVG, computed here from `/assistants/{id}/graph?xray=true`:
// ranks by longest path from __start__ (cycles broken at their back edges), order within
// ranks by barycenter sweeps, curved edges (conditional ones dashed), subgraphs (node ids
// `sub:inner`) boxed around their nodes, nested as deep as they go.

const SVG = "http://www.w3.org/2000/svg";
const NODE_H = 34, RANK_GAP = 56, NODE_GAP = 24, PAD = 24, CHAR_W = 7.4, BOX_PAD = 10, VIRTUAL_W = 8;

function s(tag, attrs = {}) {
  const el = document.createElementNS(SVG, tag);
  for (const [k, v] of Object.entries(attrs)) el.setAttribute(k, String(v));
  return el;
}

const group = (id) => (id.includes(":") ? id.slice(0, id.lastIndexOf(":")) : "");
const label = (n) => (n.data && n.data.name) || n.id.split(":").pop();

/**
 * Positions for every node ({x, y, w, rank} by id), the edges that run backwards, and the
 * bend points of the edges that span several ranks (through a virtual node per rank, which
 * takes part in the ordering so long edges pass between nodes, not through them).
 */
export function layout(graph) {
  const nodes = graph.nodes || [];
  const edges = graph.edges || [];
  const ids = nodes.map((n) => n.id);
  const out = new Map(ids.map((id) => [id, []]));
  for (const e of edges) if (out.has(e.source) && out.has(e.target)) out.get(e.source).push(e.target);

  // Back edges: those closing a cycle in a depth-first walk from __start__ (then the rest).
  const back = new Set(), state = new Map(), order = [];
  const visit = (id) => {
    state.set(id, 1);
    for (const t of out.get(id)) {
      if (state.get(t) === 1) back.add(id + "\u0000" + t);
      else if (!state.has(t)) visit(t);
    }
    state.set(id, 2);
    order.push(id);
  };
  if (out.has("__start__")) visit("__start__");
  for (const id of ids) if (!state.has(id)) visit(id);
  const forward = (a, b) => !back.has(a + "\u0000" + b) && a !== b;

  // Longest path from the sources, in topological order (reverse post-order); __end__ last.
  const rank = new Map(ids.map((id) => [id, 0]));
  for (const id of order.slice().reverse()) {
    for (const t of out.get(id)) if (forward(id, t)) rank.set(t, Math.max(rank.get(t), rank.get(id) + 1));
  }
  const maxRank = Math.max(0, ...[...rank.entries()].filter(([id]) => id !== "__end__").map(([, r]) => r));
  if (rank.has("__end__")) rank.set("__end__", maxRank + 1);

  // The layered graph: forward edges cut into one-rank pieces through virtual nodes.
  const down = new Map(ids.map((id) => [id, []])), up = new Map(ids.map((id) => [id, []]));
  const link = (a, b) => { down.get(a).push(b); up.get(b).push(a); };
  const virtual = new Map(); // virtual id -> its edge index
  const chains = new Map(); // edge index -> virtual ids, top to bottom
  edges.forEach((e, i) => {
    if (!out.has(e.source) || !out.has(e.target) || !forward(e.source, e.target)) return;
    let prev = e.source;
    const chain = [];
    for (let r = rank.get(e.source) + 1; r < rank.get(e.target); r++) {
      const v = `\u0001${i}:${r}`;
      virtual.set(v, i); rank.set(v, r); down.set(v, []); up.set(v, []);
      chain.push(v); link(prev, v); prev = v;
    }
    link(prev, e.target);
    if (chain.length) chains.set(i, chain);
  });

  // Rows, first in walk order, then barycenter sweeps (down and up), members of one
  // subgraph kept side by side.
  const rows = [];
  const place = (id) => (rows[rank.get(id)] ||= []).push(id);
  for (const id of order.slice().reverse()) {
    place(id);
    for (const [i, chain] of chains) if (edges[i].source === id) chain.forEach(place);
  }
  const pos = new Map();
  const index = () => rows.forEach((row) => row && row.forEach((id, i) => pos.set(id, i)));
  index();
  const sweep = (row, neighbours) => {
    const bary = new Map(row.map((id) => {
      const ns = neighbours.get(id).filter((n) => pos.has(n));
      return [id, ns.length ? ns.reduce((a, n) => a + pos.get(n), 0) / ns.length : pos.get(id)];
    }));
    const groupMean = new Map();
    for (const id of row) {
      const g = group(id);
      const [sum, n] = groupMean.get(g) || [0, 0];
      groupMean.set(g, [sum + bary.get(id), n + 1]);
    }
    const key = (id) => {
      const g = virtual.has(id) ? "" : group(id);
      if (!g) return [bary.get(id), ""];
      const [sum, n] = groupMean.get(g);
      return [sum / n, g];
    };
    row.sort((a, b) => {
      const [ka, ga] = key(a), [kb, gb] = key(b);
      return ka - kb || ga.localeCompare(gb) || bary.get(a) - bary.get(b);
    });
  };
  for (let pass = 0; pass < 8; pass++) {
    for (let r = 1; r < rows.length; r++) if (rows[r]) { sweep(rows[r], up); index(); }
    for (let r = rows.length - 2; r >= 0; r--) if (rows[r]) { sweep(rows[r], down); index(); }
  }

  // Coordinates: each row centred on the widest.
  const byId = new Map(nodes.map((n) => [n.id, n]));
  const width = (id) => (virtual.has(id) ? VIRTUAL_W : Math.max(70, label(byId.get(id)).length * CHAR_W + 28));
  const rowWidth = (row) => row.reduce((a, id) => a + width(id), 0) + NODE_GAP * (row.length - 1);
  const widest = Math.max(0, ...rows.filter(Boolean).map(rowWidth));
  const at = new Map(), bends = new Map();
  rows.forEach((row, r) => {
    if (!row) return;
    let x = PAD + (widest - rowWidth(row)) / 2;
    for (const id of row) {
      const p = { x, y: PAD + r * (NODE_H + RANK_GAP), w: width(id), rank: r };
      if (virtual.has(id)) bends.set(id, p); else at.set(id, p);
      x += width(id) + NODE_GAP;
    }
  });
  const routes = new Map([...chains].map(([i, chain]) => [i, chain.map((v) => bends.get(v))]));
  return { at, back, routes, width: widest + 2 * PAD, height: PAD * 2 + rows.length * (NODE_H + RANK_GAP) - RANK_GAP };
}

/** The graph drawn as an <svg>: one `g.node[data-node]` per node, one `path.edge` per edge. */
export function drawGraph(graph, title) {
  const { at, back, routes, width, height } = layout(graph);
  const svg = s("svg", {
    viewBox: `0 0 ${Math.max(width, 120)} ${Math.max(height, 60)}`,
    class: "graph", role: "img", "aria-label": title,
  });
  const t = s("title"); t.textContent = title; svg.append(t);
  const defs = s("defs");
  const marker = s("marker", { id: "arrow", viewBox: "0 0 10 10", refX: 9, refY: 5, markerWidth: 7, markerHeight: 7, orient: "auto-start-reverse" });
  marker.append(s("path", { d: "M0,0 L10,5 L0,10 z", class: "arrowhead" }));
  defs.append(marker); svg.append(defs);

  // Subgraph boxes, outermost first, around every node under their prefix.
  const groups = new Set();
  for (const id of at.keys()) { let g = group(id); while (g) { groups.add(g); g = group(g); } }
  const sorted = [...groups].sort((a, b) => a.split(":").length - b.split(":").length);
  for (const g of sorted) {
    const inner = [...at.entries()].filter(([id]) => id.startsWith(g + ":"));
    const depth = g.split(":").length;
    const inset = BOX_PAD * (1 + Math.max(0, ...inner.map(([id]) => id.split(":").length - 1 - depth)));
    const x0 = Math.min(...inner.map(([, p]) => p.x)) - inset, x1 = Math.max(...inner.map(([, p]) => p.x + p.w)) + inset;
    const y0 = Math.min(...inner.map(([, p]) => p.y)) - inset - 14, y1 = Math.max(...inner.map(([, p]) => p.y + NODE_H)) + inset;
    const box = s("g", { class: "subgraph", "data-subgraph": g });
    box.append(s("rect", { x: x0, y: y0, width: x1 - x0, height: y1 - y0, rx: 10 }));
    const name = s("text", { x: x0 + 8, y: y0 + 13 }); name.textContent = g.split(":").pop();
    box.append(name); svg.append(box);
  }

  (graph.edges || []).forEach((e, i) => {
    const a = at.get(e.source), b = at.get(e.target);
    if (!a || !b) return;
    let d;
    if (back.has(e.source + "\u0000" + e.target) || e.source === e.target || b.rank <= a.rank) {
      // Back to an earlier row: out of the source's right side, round, into the target's.
      const x1 = a.x + a.w, y1 = a.y + NODE_H / 2, x2 = b.x + b.w, y2 = b.y + NODE_H / 2;
      const bulge = Math.max(x1, x2) + 30 + 8 * Math.abs(a.rank - b.rank);
      d = `M${x1},${y1} C${bulge},${y1} ${bulge},${y2} ${x2 + 2},${y2}`;
    } else {
      // Down from the source's bottom through each bend (a virtual node's column) to the
      // target's top, a smooth curve between rows.
      const points = [[a.x + a.w / 2, a.y + NODE_H]];
      for (const p of routes.get(i) || []) points.push([p.x + p.w / 2, p.y], [p.x + p.w / 2, p.y + NODE_H]);
      points.push([b.x + b.w / 2, b.y - 2]);
      d = `M${points[0][0]},${points[0][1]}`;
      for (let k = 1; k < points.length; k++) {
        const [x1, y1] = points[k - 1], [x2, y2] = points[k];
        if (k % 2 === 0) { d += ` L${x2},${y2}`; continue; } // through a virtual node
        const bend = Math.max(16, (y2 - y1) / 2);
        d += ` C${x1},${y1 + bend} ${x2},${y2 - bend} ${x2},${y2}`;
      }
    }
    svg.append(s("path", {
      d, class: "edge" + (e.conditional ? " conditional" : ""), "marker-end": "url(#arrow)",
      "data-source": e.source, "data-target": e.target,
    }));
  });

  for (const n of graph.nodes || []) {
    const p = at.get(n.id);
    const special = n.id === "__start__" || n.id === "__end__";
    const g = s("g", { class: "node" + (special ? " terminal" : ""), "data-node": n.id, transform: `translate(${p.x},${p.y})` });
    g.append(s("rect", { width: p.w, height: NODE_H, rx: special ? NODE_H / 2 : 6 }));
    const text = s("text", { x: p.w / 2, y: NODE_H / 2 + 4.5, "text-anchor": "middle" });
    text.textContent = special ? n.id.replace(/__/g, "") : label(n);
    g.append(text);
    const tip = s("title"); tip.textContent = n.id; g.append(tip);
    svg.append(g);
  }
  return svg;
}

/** Marks nodes on a drawing: `running` (now) and `visited` (earlier in this run). */
export function mark(svg, node, state) {
  if (!svg) return;
  for (const g of svg.querySelectorAll("g.node")) {
    const id = g.dataset.node;
    const hit = id === node || id.startsWith(node + ":") || node.startsWith(id + ":");
    if (!hit) continue;
    if (state === "running") { g.classList.add("running"); g.classList.remove("visited"); }
    else if (state === "done") { g.classList.remove("running"); g.classList.add("visited"); }
  }
}

/** Clears every mark. */
export function unmark(svg) {
  if (!svg) return;
  for (const g of svg.querySelectorAll("g.node")) g.classList.remove("running", "visited");
}
