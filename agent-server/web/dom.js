// Small DOM helpers shared by every screen: element building, JSON trees, messages.

/** Builds an element: h("button", {class: "x", onclick: f}, "text", child...). */
export function h(tag, attrs = {}, ...children) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k.startsWith("on") && typeof v === "function") el.addEventListener(k.slice(2), v);
    else if (k === "class") el.className = v;
    else if (k === "text") el.textContent = v;
    else el.setAttribute(k, v === true ? "" : String(v));
  }
  append(el, children);
  return el;
}

function append(el, children) {
  for (const c of children.flat()) {
    if (c === undefined || c === null || c === false) continue;
    el.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
}

/** Replaces an element's children. */
export function fill(el, ...children) {
  el.replaceChildren();
  append(el, children);
  return el;
}

/** A JSON object's fields as trees (no line for the object itself). */
export function jsonFields(value, open = 2) {
  if (value === null || typeof value !== "object") return jsonTree(value, open);
  const entries = Array.isArray(value) ? value.map((v, i) => [String(i), v]) : Object.entries(value);
  if (!entries.length) return h("p", { class: "empty" }, Array.isArray(value) ? "(empty list)" : "(nothing)");
  return h("div", { class: "jt-fields" }, entries.map(([k, v]) => jsonTree(v, open - 1, k)));
}

/** A collapsible tree of a JSON value; levels above `open` start expanded. */
export function jsonTree(value, open = 2, label = null) {
  const isObj = value !== null && typeof value === "object";
  if (!isObj) {
    return h("div", { class: "jt-leaf" },
      label !== null ? h("span", { class: "jt-key" }, label + ": ") : null,
      h("span", { class: "jt-" + (value === null ? "null" : typeof value) },
        typeof value === "string" ? JSON.stringify(value) : String(value)));
  }
  const entries = Array.isArray(value) ? value.map((v, i) => [String(i), v]) : Object.entries(value);
  const summary = Array.isArray(value) ? `[${entries.length}]` : `{${entries.length}}`;
  const d = h("details", { class: "jt", open: open > 0 },
    h("summary", {}, label !== null ? h("span", { class: "jt-key" }, label + ": ") : null,
      h("span", { class: "jt-count" }, summary)));
  for (const [k, v] of entries) d.append(jsonTree(v, open - 1, k));
  return d;
}

/** A plain alert box for an error, readable and announced. */
export function errorBox(message) {
  return h("div", { class: "error", role: "alert" }, h("strong", {}, "Error: "), message);
}

/** Short form of an id for lists: its last 8 characters (UUIDv7s share their first ones,
 *  the time they were made). */
export function short(id) {
  return id ? String(id).slice(-8) : "";
}

/** A date as local time. */
export function when(iso) {
  const d = new Date(iso);
  return isNaN(d) ? String(iso || "") : d.toLocaleString();
}

/** The text of a message's content (a string or LangChain content blocks). */
export function contentText(content) {
  if (typeof content === "string") return content;
  if (Array.isArray(content)) {
    return content.map((b) => (typeof b === "string" ? b : b && b.type === "text" ? b.text : "")).join("");
  }
  return content == null ? "" : JSON.stringify(content);
}
