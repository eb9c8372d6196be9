// A chat page on @langchain/langgraph-sdk's React `useStream`, used the way LangChain's Agent
// Chat UI uses it (its `Stream` provider and thread view): the hook on `apiUrl` and
// `assistantId` from the query string, `threadId` kept in the URL, `fetchStateHistory`, a
// human message sent with the client's id and content blocks, `streamMode: ["values"]`,
// `streamSubgraphs`, `streamResumable`, optimistic values, dangling tool calls answered before
// a send, tool calls drawn from an AI message's `tool_calls` with their ToolMessages, an
// answer regenerated from the checkpoint before it (its first seen state's parent), an
// interrupt shown and resumed with a `Command`, the thread list searched by `graph_id`.
//
// What the test reads (tests/chat_ui.rs): the DOM (`.msg[data-type][data-id] .text`,
// `.tool-call`, `#interrupt`, `#status`, `#threads`), and what the page records for it:
// `window.__seen` (every distinct text a message showed, in order, by a MutationObserver),
// `window.__frames` (each SSE frame the hook read: event name, and for `messages` frames the
// chunk's id, type and text), `window.__sent` (the human messages sent) and
// `window.__dangling` (tool messages Agent Chat UI would have made up for unanswered calls).

import { StrictMode, useEffect, useState, useCallback } from "react";
import { createRoot } from "react-dom/client";
import { useStream } from "@langchain/langgraph-sdk/react";
import { Client } from "@langchain/langgraph-sdk";

const params = new URLSearchParams(location.search);
const apiUrl = params.get("apiUrl") ?? "http://127.0.0.1:2024";
const assistantId = params.get("assistantId") ?? "tool-router";

window.__seen = [];
window.__frames = [];
window.__sent = [];
window.__dangling = [];

// Every distinct text each message shows, in the order it showed them: a message whose text
// changes is recorded again, so a flash of anything is kept even when it is replaced.
const lastText = new Map();
function record() {
  for (const el of document.querySelectorAll(".msg")) {
    const key = el.dataset.key;
    const text = el.querySelector(".text")?.textContent ?? "";
    if (lastText.get(key) !== text) {
      lastText.set(key, text);
      window.__seen.push({ at: performance.now(), type: el.dataset.type, id: el.dataset.id, text });
    }
  }
}
new MutationObserver(record).observe(document.documentElement, {
  subtree: true,
  childList: true,
  characterData: true,
});

function textOf(content) {
  if (typeof content === "string") return content;
  if (Array.isArray(content)) {
    return content
      .map((b) => (typeof b === "string" ? b : b?.type === "text" ? b.text : ""))
      .join("");
  }
  return "";
}

function typeOf(m) {
  const t = typeof m.getType === "function" ? m.getType() : m.type;
  return { AIMessageChunk: "ai", HumanMessageChunk: "human", ToolMessageChunk: "tool" }[t] ?? t;
}

// The SSE frames the hook reads, for the test (a copy of each stream; the hook gets the
// response unchanged).
function recordFrame(frame) {
  let event = "";
  let data = "";
  for (const line of frame.split("\n")) {
    if (line.startsWith("event:")) event = line.slice(6).trim();
    else if (line.startsWith("data:")) data += line.slice(5).trim();
  }
  if (!event) return;
  const entry = { event };
  if (event.startsWith("messages")) {
    try {
      const parsed = JSON.parse(data);
      const chunk = Array.isArray(parsed) ? parsed[0] : parsed;
      entry.id = chunk?.id ?? null;
      entry.type = chunk?.type ?? null;
      entry.text = textOf(chunk?.content);
      entry.node = Array.isArray(parsed) ? parsed[1]?.langgraph_node ?? null : null;
    } catch {
      entry.unparsed = data;
    }
  }
  window.__frames.push(entry);
}

async function observingFetch(input, init) {
  const res = await fetch(input, init);
  const type = res.headers.get("content-type") ?? "";
  if (!res.body || !type.includes("text/event-stream")) return res;
  const [mine, theirs] = res.body.tee();
  (async () => {
    const reader = mine.pipeThrough(new TextDecoderStream()).getReader();
    let buf = "";
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      buf += value.replace(/\r\n/g, "\n");
      let i;
      while ((i = buf.indexOf("\n\n")) >= 0) {
        recordFrame(buf.slice(0, i));
        buf = buf.slice(i + 2);
      }
    }
  })().catch(() => {});
  return new Response(theirs, { status: res.status, statusText: res.statusText, headers: res.headers });
}

function setThreadInUrl(id) {
  const url = new URL(location.href);
  url.searchParams.set("threadId", id);
  history.replaceState(null, "", url);
}

// Tool messages for an AI message's tool calls that no ToolMessage follows, as Agent Chat UI
// adds them to its next input (hidden from its view). A chat graph leaves none.
function toolCallsWithoutResponses(messages) {
  const made = [];
  messages.forEach((m, i) => {
    const calls = m.tool_calls ?? [];
    if (typeOf(m) !== "ai" || calls.length === 0) return;
    const next = messages[i + 1];
    if (next && typeOf(next) === "tool") return;
    for (const call of calls) {
      made.push({
        type: "tool",
        tool_call_id: call.id ?? "",
        id: `do-not-render-${crypto.randomUUID()}`,
        name: call.name,
        content: "Successfully handled tool call.",
      });
    }
  });
  return made;
}

function Message({ m, index, stream }) {
  const type = typeOf(m);
  const meta = stream.getMessagesMetadata(m, index);
  const calls = type === "ai" ? (m.tool_calls ?? []) : [];
  return (
    <div
      className="msg"
      data-type={type}
      data-id={m.id ?? ""}
      data-key={m.id ?? `index-${index}`}
      data-streamed={meta?.streamMetadata ? "yes" : "no"}
      data-content={Array.isArray(m.content) ? "blocks" : typeof m.content}
      data-tool-call-id={type === "tool" ? m.tool_call_id : undefined}
      data-name={m.name ?? undefined}
    >
      <div className="text">{textOf(m.content)}</div>
      {type === "ai" && calls.length === 0 ? (
        <button
          className="regenerate"
          type="button"
          disabled={stream.isLoading}
          onClick={() =>
            stream.submit(undefined, {
              checkpoint: meta?.firstSeenState?.parent_checkpoint,
              streamMode: ["values"],
              streamSubgraphs: true,
              streamResumable: true,
            })
          }
        >
          Regenerate
        </button>
      ) : null}
      {calls.map((c) => (
        <div className="tool-call" key={c.id ?? c.name} data-id={c.id ?? ""} data-name={c.name}>
          <b>{c.name}</b> <code className="args">{JSON.stringify(c.args)}</code>
        </div>
      ))}
    </div>
  );
}

function Threads({ client, current }) {
  const [threads, setThreads] = useState([]);
  useEffect(() => {
    client.threads
      .search({ metadata: { graph_id: assistantId }, limit: 100 })
      .then(setThreads)
      .catch((e) => console.error(e));
  }, [client, current]);
  return (
    <nav id="threads">
      {threads.map((t) => (
        <a key={t.thread_id} data-thread={t.thread_id} href={`?apiUrl=${encodeURIComponent(apiUrl)}&assistantId=${encodeURIComponent(assistantId)}&threadId=${t.thread_id}`}>
          {t.thread_id}
        </a>
      ))}
    </nav>
  );
}

const client = new Client({ apiUrl, callerOptions: { fetch: observingFetch } });

function App() {
  const [threadId, setThreadId] = useState(params.get("threadId"));
  const [finished, setFinished] = useState(0);
  const stream = useStream({
    client,
    assistantId,
    threadId,
    fetchStateHistory: true,
    onThreadId: (id) => {
      setThreadId(id);
      setThreadInUrl(id);
    },
    onFinish: () => setFinished((n) => n + 1),
    onError: (e) => console.error(e),
  });
  const [input, setInput] = useState("");
  const [resume, setResume] = useState("yes");
  const messages = stream.messages;

  const send = useCallback(
    (e) => {
      e.preventDefault();
      const text = input.trim();
      if (!text) return;
      const human = { id: crypto.randomUUID(), type: "human", content: [{ type: "text", text }] };
      const dangling = toolCallsWithoutResponses(stream.messages);
      window.__dangling.push(...dangling);
      window.__sent.push({ id: human.id, text });
      stream.submit(
        { messages: [...dangling, human] },
        {
          streamMode: ["values"],
          streamSubgraphs: true,
          streamResumable: true,
          optimisticValues: (prev) => ({
            ...prev,
            messages: [...(prev.messages ?? []), ...dangling, human],
          }),
        },
      );
      setInput("");
    },
    [input, stream],
  );

  const doResume = useCallback(
    (e) => {
      e.preventDefault();
      stream.submit(undefined, {
        command: { resume },
        streamMode: ["values"],
        streamSubgraphs: true,
        streamResumable: true,
      });
    },
    [resume, stream],
  );

  const status = stream.isLoading ? "streaming" : stream.isThreadLoading ? "loading" : "idle";
  return (
    <>
      <Threads client={client} current={`${threadId}-${finished}`} />
      <main>
        <div id="status" data-finished={finished} data-thread={threadId ?? ""}>
          {status}
        </div>
        <div id="error">{stream.error ? String(stream.error.message ?? stream.error) : ""}</div>
        <div id="messages">
          {messages.map((m, i) =>
            (m.id ?? "").startsWith("do-not-render-") ? null : (
              <Message key={m.id ?? i} m={m} index={i} stream={stream} />
            ),
          )}
        </div>
        {stream.interrupt ? (
          <form id="interrupt" onSubmit={doResume}>
            <pre className="value">{JSON.stringify(stream.interrupt.value)}</pre>
            <input id="resume-value" value={resume} onChange={(e) => setResume(e.target.value)} />
            <button id="resume" type="submit">
              Resume
            </button>
          </form>
        ) : null}
        <form id="composer" onSubmit={send}>
          <input id="input" value={input} onChange={(e) => setInput(e.target.value)} placeholder="Type your message..." />
          <button id="send" type="submit" disabled={stream.isLoading}>
            Send
          </button>
        </form>
      </main>
    </>
  );
}

createRoot(document.getElementById("root")).render(
  <StrictMode>
    <App />
  </StrictMode>,
);
