// The server's public HTTP API (LangGraph's), and a parser for its Server-Sent Events.

const KEY = "agentgraph.apiKey";

/** Thrown for a refused request: the server's `detail`, with the status. */
export class ApiError extends Error {
  constructor(status, detail) {
    super(detail ? `${detail} (HTTP ${status})` : `HTTP ${status}`);
    this.status = status;
  }
}

/** Called when the server asks for a credential (a 401): an API key or a token. */
let onUnauthorized = () => {};
export function whenUnauthorized(f) { onUnauthorized = f; }
export function setApiKey(key) {
  if (key) localStorage.setItem(KEY, key); else localStorage.removeItem(KEY);
}

/** A JWT (three base64url parts) goes as a bearer token; anything else is an API key. */
const JWT = /^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]*$/;

function headers(json) {
  const h = {};
  if (json) h["content-type"] = "application/json";
  const key = localStorage.getItem(KEY);
  if (key && JWT.test(key)) h["authorization"] = `Bearer ${key}`;
  else if (key) h["x-api-key"] = key;
  return h;
}

async function refusal(res) {
  let detail = "";
  try {
    const body = await res.json();
    detail = body.detail || body.message || JSON.stringify(body);
  } catch { detail = res.statusText; }
  if (res.status === 401) onUnauthorized(detail);
  return new ApiError(res.status, detail);
}

/** A JSON request; resolves to the parsed body (null for 204). */
export async function call(method, path, body) {
  const res = await fetch(path, {
    method,
    headers: headers(body !== undefined),
    body: body !== undefined ? JSON.stringify(body) : undefined,
  });
  if (!res.ok) throw await refusal(res);
  const text = await res.text();
  return text.trim() ? JSON.parse(text) : null;
}

export const get = (path) => call("GET", path);
export const post = (path, body) => call("POST", path, body ?? {});

/**
 * Starts a streamed run on `thread` and calls `onEvent({event, data})` for each SSE event
 * until the stream ends. Returns `{runId, done}`: the run id as soon as the response
 * headers name it (for Stop), and a promise settled when the stream ends.
 */
export async function streamRun(thread, body, onEvent, signal) {
  const res = await fetch(`/threads/${thread}/runs/stream`, {
    method: "POST", headers: headers(true), body: JSON.stringify(body), signal,
  });
  if (!res.ok) throw await refusal(res);
  const where = res.headers.get("content-location") || "";
  const runId = where.split("/runs/")[1] || null;
  return { runId, done: readEvents(res.body, onEvent) };
}

/** Reads an SSE body: `event:` and `data:` lines, events split by a blank line. */
export async function readEvents(stream, onEvent) {
  const reader = stream.getReader();
  const decoder = new TextDecoder();
  let buffer = "";
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    buffer += decoder.decode(value, { stream: true }).replace(/\r\n?/g, "\n");
    let cut;
    while ((cut = buffer.indexOf("\n\n")) >= 0) {
      const block = buffer.slice(0, cut);
      buffer = buffer.slice(cut + 2);
      const parsed = parseEvent(block);
      if (parsed) onEvent(parsed);
    }
  }
  const last = parseEvent(buffer);
  if (last) onEvent(last);
}

/** One SSE block to `{event, data}` (data parsed as JSON when it is), or null. */
export function parseEvent(block) {
  let event = "message";
  const data = [];
  for (const line of block.split("\n")) {
    if (!line || line.startsWith(":")) continue;
    const colon = line.indexOf(":");
    const field = colon < 0 ? line : line.slice(0, colon);
    let value = colon < 0 ? "" : line.slice(colon + 1);
    if (value.startsWith(" ")) value = value.slice(1);
    if (field === "event") event = value;
    else if (field === "data") data.push(value);
  }
  if (!data.length) return null;
  const text = data.join("\n");
  try { return { event, data: JSON.parse(text) }; } catch { return { event, data: text }; }
}

/** The assistants (one per served graph, and any made through the API). */
export const assistants = () => post("/assistants/search", { limit: 100, sort_by: "name", sort_order: "asc" });
export const assistant = (id) => get(`/assistants/${id}`);
export const drawing = (id) => get(`/assistants/${id}/graph?xray=true`);
export const schemas = (id) => get(`/assistants/${id}/schemas`);
export const newThread = (metadata) => post("/threads", { metadata });
export const thread = (id) => get(`/threads/${id}`);
export const threadState = (id) => get(`/threads/${id}/state`);
export const editState = (id, values, asNode) => post(`/threads/${id}/state`, asNode ? { values, as_node: asNode } : { values });
export const history = (id) => post(`/threads/${id}/history`, { limit: 200 });
export const searchThreads = (filter) => post("/threads/search", { limit: 50, sort_by: "updated_at", sort_order: "desc", ...filter });
export const cancel = (thread, run) => post(`/threads/${thread}/runs/${run}/cancel`);
export const runTrace = (thread, run) => get(`/threads/${thread}/runs/${run}/trace`);
