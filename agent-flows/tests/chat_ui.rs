//! A chat UI as LangGraph users have one, against `agent serve` (issue 58): LangChain's Agent
//! Chat UI is not published on npm (its copy inside `create-agent-chat-app`'s templates is
//! old), so the test is a page of our own on the same hook, `@langchain/langgraph-sdk`'s React
//! `useStream`, used the way Agent Chat UI uses it (`tests/chat_ui/`, built with Vite by
//! `tests/chat_ui/build.sh` from a pinned lock, cached under `~/.cache/agentgraph`), served
//! from an origin of its own like Agent Chat UI, in headless Chromium.
//!
//! For each of the five flows: a question the flow answers and a follow-up on the same
//! thread; each answer becomes visible, streamed token by token where a model writes it
//! (the chunks' id is the id of the message the thread keeps, their text adds up to it); tool
//! calls are drawn where the flow uses tools (an AI message's `tool_calls`, each answered by
//! its ToolMessage); the human message keeps the client's id, text and content blocks; no
//! streamed message lacks an id; no message ever shows an internal model call's output (every
//! text each message showed is recorded over time by a MutationObserver: none is a router's or
//! classifier's JSON, and no message appears that the thread does not keep); the last answer
//! regenerated (a run from the checkpoint before it) is the same turn with a new answer; the
//! thread is in the thread list, and after a reload the history shows the same messages.
//! A router graph of the test's own whose model call is not `nostream` is the control: the
//! same checks see its JSON flash. No flow calls `interrupt()`, so the interrupt is the
//! reference graph's (`agent-server/examples/reference`, as the SDK checks serve it, here in
//! process): shown, still shown after a reload, resumed with a `Command`.
//!
//! It installs npm packages on first use, so it runs under CI (`CI` set) or with
//! `AGENTGRAPH_CHAT_UI_TESTS=1`, like the SDK checks, and needs Chromium and chromedriver like the
//! web page's tests. Screens are saved to `target/web-screenshots/chat-ui-*.png`.

mod common;

#[path = "../../agent-server/tests/browser/mod.rs"]
mod browser;

#[allow(dead_code)]
#[path = "../../agent-server/examples/reference/graphs.rs"]
mod graphs;

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::Command;

use browser::{Browser, Page, click, css, shot, type_in, until};
use common::Scratch;
use common::serve::serve;
use serde_json::Value;

fn wanted() -> bool {
    if std::env::var_os("CI").is_none() && std::env::var_os("AGENTGRAPH_CHAT_UI_TESTS").is_none() {
        eprintln!(
            "skipped: set AGENTGRAPH_CHAT_UI_TESTS=1 to install the chat page's npm packages and run it (CI does)"
        );
        return false;
    }
    true
}

/// `tests/chat_ui/build.sh`: the built page's directory.
fn build_page() -> PathBuf {
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/chat_ui/build.sh");
    let out = Command::new("bash")
        .arg(script)
        .stderr(std::process::Stdio::inherit())
        .output()
        .unwrap_or_else(|e| panic!("cannot run {script}: {e}"));
    assert!(
        out.status.success(),
        "{script} failed (its output is above)"
    );
    let dir = String::from_utf8(out.stdout).unwrap();
    let dir = PathBuf::from(dir.lines().last().unwrap_or_default().trim());
    assert!(dir.join("index.html").is_file(), "no page in {dir:?}");
    dir
}

/// The built page served from an origin of its own (a loopback port, as Agent Chat UI's
/// `localhost:3000`); its URL.
async fn serve_page(dir: PathBuf) -> String {
    use axum::http::{StatusCode, Uri, header};
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let app = axum::Router::new().fallback(move |uri: Uri| {
        let dir = dir.clone();
        async move {
            let path = uri.path().trim_start_matches('/');
            let path = if path.is_empty() { "index.html" } else { path };
            if path.split('/').any(|p| p == ".." || p.is_empty()) {
                return (
                    StatusCode::NOT_FOUND,
                    [(header::CONTENT_TYPE, "text/plain")],
                    vec![],
                );
            }
            let kind = match Path::new(path).extension().and_then(|e| e.to_str()) {
                Some("html") => "text/html; charset=utf-8",
                Some("js") => "text/javascript",
                Some("css") => "text/css",
                Some("svg") => "image/svg+xml",
                _ => "application/octet-stream",
            };
            match std::fs::read(dir.join(path)) {
                Ok(body) => (StatusCode::OK, [(header::CONTENT_TYPE, kind)], body),
                Err(_) => (
                    StatusCode::NOT_FOUND,
                    [(header::CONTENT_TYPE, "text/plain")],
                    vec![],
                ),
            }
        }
    });
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    url
}

/// A router that calls a model for its decision, then an answer a model writes: the bug
/// issue 58 saw in Agent Chat UI. With `quiet` the router's call is tagged nostream (as the
/// flows' internal calls are); without, its JSON streams as a chat message, and the page's
/// observer must see it flash (the test's own control).
fn router_graph(quiet: bool) -> agent_core::StateGraph<graphs::State> {
    use agent_llm::{CallOptions, Message, Reply, ScriptedModel, invoke_in_node};
    use std::sync::Arc;
    let router = move |state: Arc<graphs::State>, ctx: agent_core::NodeContext| async move {
        let model = ScriptedModel::from_fn(|_: &[Message]| {
            Reply::text(r#"{"calls":[{"tool":"datetime","args":{"timezone":"Asia/Tokyo"}}]}"#)
        })
        .without_recording();
        let options = if quiet {
            CallOptions::new().nostream()
        } else {
            CallOptions::new()
        };
        invoke_in_node(&model, &state.messages, &options, &ctx).await?;
        Ok::<_, agent_core::BoxError>(graphs::StateUpdate::default())
    };
    let answer = |state: Arc<graphs::State>, ctx: agent_core::NodeContext| async move {
        let model = ScriptedModel::from_fn(|_: &[Message]| Reply::text("It is noon in Tokyo."))
            .without_recording();
        let reply = invoke_in_node(&model, &state.messages, &CallOptions::new(), &ctx).await?;
        Ok::<_, agent_core::BoxError>(
            graphs::StateUpdate::default().messages(vec![Message::Ai(reply.message)]),
        )
    };
    agent_core::StateGraph::new()
        .add_node("router", router)
        .add_node("answer", answer)
        .add_edge(agent_core::START, "router")
        .add_edge("router", "answer")
        .add_edge("answer", agent_core::END)
}

/// The reference graphs (`agent`, whose `human` node interrupts on the word "ask") on an
/// in-memory server, as `examples/reference` serves them, with the two router graphs of
/// [`router_graph`] (`leaky`, `quiet`); its URL.
async fn serve_reference() -> String {
    let server = graphs::server()
        .graph("leaky", router_graph(false))
        .graph("quiet", router_graph(true))
        .build()
        .await
        .unwrap();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move { server.serve(listener).await.unwrap() });
    url
}

/// One message of a turn.
struct Turn {
    text: &'static str,
    /// The flow uses tools on it: AI `tool_calls` and ToolMessages come before the answer.
    tools: bool,
    /// A model writes the answer, so it streams in chunks.
    streamed: bool,
}

const fn turn(text: &'static str, tools: bool, streamed: bool) -> Turn {
    Turn {
        text,
        tools,
        streamed,
    }
}

/// Each flow with a question it answers and a follow-up (what its docs and tests ask it).
fn cases() -> Vec<(&'static str, [Turn; 2])> {
    vec![
        (
            "tool-router",
            [
                turn("What time is it in Tokyo?", true, true),
                turn("And how much is 6*7?", true, true),
            ],
        ),
        (
            "form",
            [
                turn("Me llamo Juan", false, false),
                turn("juan@ejemplo.com", false, true),
            ],
        ),
        (
            "orchestrator",
            [
                turn("What was the unemployment rate in 2008?", true, true),
                turn("And in 2009?", true, true),
            ],
        ),
        (
            "data",
            [
                turn(
                    "What was the average unemployment rate in 2008?",
                    false,
                    false,
                ),
                turn("Hello! What can you do?", false, true),
            ],
        ),
        (
            "react",
            [
                turn("¿Cuánto es 12*(3+4) y qué hora es en Tokio?", true, false),
                turn("Repite: hola", true, false),
            ],
        ),
    ]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn use_stream_chats_with_every_flow_and_resumes_an_interrupt() {
    if !wanted() {
        return;
    }
    let Some(browser) = Browser::open().await else {
        return;
    };
    let dir = tokio::task::spawn_blocking(build_page).await.unwrap();
    let page = serve_page(dir).await;
    let s = Scratch::new("chat-ui");
    let served = serve(&s, &[]);
    let api = served.url.clone();
    let reference = serve_reference().await;
    let c = browser.page();
    browser
        .run(async move {
            for (flow, turns) in cases() {
                chat_with(&c, &page, &api, flow, &turns).await;
            }
            the_observer_sees_a_flash(&c, &page, &reference).await;
            an_interrupt_is_resumed(&c, &page, &reference).await;
        })
        .await;
    drop(served);
}

fn page_url(page: &str, api: &str, assistant: &str) -> String {
    format!("{page}/?apiUrl={api}&assistantId={assistant}")
}

/// What the page shows and recorded.
const READ: &str = r#"
const st = document.querySelector('#status');
return {
  status: st.textContent,
  finished: Number(st.dataset.finished),
  thread: st.dataset.thread,
  error: document.querySelector('#error').textContent,
  interrupt: document.querySelector('#interrupt .value')?.textContent ?? null,
  threads: [...document.querySelectorAll('#threads a')].map(a => a.dataset.thread),
  msgs: [...document.querySelectorAll('#messages .msg')].map(e => ({
    type: e.dataset.type, id: e.dataset.id, text: e.querySelector('.text').textContent,
    streamed: e.dataset.streamed, content: e.dataset.content, tool_call_id: e.dataset.toolCallId ?? null,
    calls: [...e.querySelectorAll('.tool-call')].map(t => ({id: t.dataset.id, name: t.dataset.name})),
  })),
  seen: window.__seen, frames: window.__frames, sent: window.__sent, dangling: window.__dangling,
};"#;

async fn read(c: &Page) -> Value {
    c.execute(READ, vec![]).await.unwrap()
}

/// Waits until the page is idle after `finished` runs ended (the hook's `onFinish`).
async fn idle_after(c: &Page, what: &str, finished: usize) {
    until(
        c,
        what,
        &format!(
            "const st = document.querySelector('#status');
             return (st.textContent === 'idle' && Number(st.dataset.finished) >= {finished})
                 || document.querySelector('#error').textContent !== ''"
        ),
    )
    .await;
}

async fn send(c: &Page, text: &str) {
    type_in(c, "#input", text).await;
    click(c, "#send").await;
}

fn s(v: &Value) -> &str {
    v.as_str().unwrap_or_default()
}

/// A router's, classifier's or extractor's structured output: a JSON object (or one in a
/// code fence), or the router's `{"calls":...}` anywhere.
/// Partial output counts: a message streamed token by token shows `{"ca` before the rest.
fn internal_output(text: &str) -> bool {
    let t = text.trim_start();
    t.starts_with('{') || t.starts_with("```json") || text.contains("\"calls\"")
}

async fn chat_with(c: &Page, page: &str, api: &str, flow: &str, turns: &[Turn]) {
    c.goto(&page_url(page, api, flow)).await.unwrap();
    idle_after(c, &format!("{flow}: the page ready"), 0).await;
    for (i, t) in turns.iter().enumerate() {
        let before = read(c).await;
        let frames_before = before["frames"].as_array().map_or(0, Vec::len);
        send(c, t.text).await;
        idle_after(c, &format!("{flow}: the answer to {:?}", t.text), i + 1).await;
        let now = read(c).await;
        assert_eq!(s(&now["error"]), "", "{flow}: {now:#}");
        check_turn(flow, t, &now, frames_before);
        shot(c, &format!("chat-ui-{flow}-{}", i + 1)).await;
    }
    let now = read(c).await;
    check_no_flash(flow, &now, 0);
    // The follow-up went to the same thread: both questions are in it, in order.
    let humans: Vec<&Value> = now["msgs"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["type"] == "human")
        .map(|m| &m["id"])
        .collect();
    let sent: Vec<&Value> = now["sent"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| &m["id"])
        .collect();
    assert_eq!(humans, sent, "{flow}: one thread holds both questions");

    // The last answer regenerated, as Agent Chat UI's button does it: a run from the
    // checkpoint before that answer (the parent of the state it was first seen in). The
    // branch holds the same turn with a new answer.
    let last = turns.last().unwrap();
    let old = shown(&now);
    let frames_before = now["frames"].as_array().map_or(0, Vec::len);
    let seen_before = now["seen"].as_array().map_or(0, Vec::len);
    click(c, "#messages .msg:last-child .regenerate").await;
    idle_after(
        c,
        &format!("{flow}: the regenerated answer"),
        turns.len() + 1,
    )
    .await;
    let now = read(c).await;
    assert_eq!(s(&now["error"]), "", "{flow}: {now:#}");
    check_turn(flow, last, &now, frames_before);
    check_no_flash(flow, &now, seen_before);
    let new = shown(&now);
    assert_eq!(
        new.len(),
        old.len(),
        "{flow}: the same turns after a regenerate"
    );
    assert_eq!(
        new[..new.len() - 1]
            .iter()
            .filter(|m| m.0 == "human")
            .collect::<Vec<_>>(),
        old[..old.len() - 1]
            .iter()
            .filter(|m| m.0 == "human")
            .collect::<Vec<_>>(),
        "{flow}: the same questions after a regenerate"
    );
    assert_ne!(
        new.last().unwrap().1,
        old.last().unwrap().1,
        "{flow}: the regenerated answer is a new message"
    );
    shot(c, &format!("chat-ui-{flow}-regenerated")).await;
    let thread = s(&now["thread"]).to_owned();
    assert!(!thread.is_empty(), "{flow}: the thread id is in the page");

    // The thread list (searched by graph_id, as Agent Chat UI's) holds it.
    until(
        c,
        &format!("{flow}: the thread in the thread list"),
        &format!("return document.querySelector('#threads a[data-thread=\"{thread}\"]') !== null"),
    )
    .await;

    // A reload (the thread id in the URL) shows the same conversation from the thread's
    // history, tool calls included.
    let before = shown(&now);
    c.refresh().await.unwrap();
    let count = before.len();
    until(
        c,
        &format!("{flow}: the history after a reload"),
        &format!(
            "return document.querySelector('#status').textContent === 'idle'
                 && document.querySelectorAll('#messages .msg').length >= {count}"
        ),
    )
    .await;
    let after = read(c).await;
    assert_eq!(
        s(&after["thread"]),
        thread,
        "{flow}: same thread after reload"
    );
    assert_eq!(
        shown(&after),
        before,
        "{flow}: the history after a reload is the conversation"
    );
    check_no_flash(flow, &after, 0);
    shot(c, &format!("chat-ui-{flow}-reloaded")).await;
}

/// The messages as shown: type, id, text, tool calls, the call a ToolMessage answers, and
/// whether the content is a string or blocks.
fn shown(page: &Value) -> Vec<(String, String, String, Vec<String>, String, String)> {
    page["msgs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| {
            (
                s(&m["type"]).to_owned(),
                s(&m["id"]).to_owned(),
                s(&m["text"]).to_owned(),
                m["calls"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|c| format!("{}:{}", s(&c["name"]), s(&c["id"])))
                    .collect(),
                s(&m["tool_call_id"]).to_owned(),
                s(&m["content"]).to_owned(),
            )
        })
        .collect()
}

/// One turn's messages (after the human message sent) and its streamed frames.
fn check_turn(flow: &str, t: &Turn, page: &Value, frames_before: usize) {
    let msgs = page["msgs"].as_array().unwrap();
    let sent = page["sent"].as_array().unwrap().last().unwrap();
    let ids: Vec<&str> = msgs.iter().map(|m| s(&m["id"])).collect();
    assert!(
        ids.iter().all(|id| !id.is_empty()),
        "{flow}: every message has an id: {page:#}"
    );
    assert_eq!(
        ids.iter().collect::<BTreeSet<_>>().len(),
        ids.len(),
        "{flow}: no message twice: {ids:?}"
    );
    // The human message as the client sent it: its id and its text.
    let at = msgs
        .iter()
        .position(|m| m["id"] == sent["id"])
        .unwrap_or_else(|| panic!("{flow}: the human message keeps the client's id: {page:#}"));
    assert_eq!(msgs[at]["type"], "human", "{flow}");
    assert_eq!(msgs[at]["text"], sent["text"], "{flow}: the human text");
    assert_eq!(
        msgs[at]["content"], "blocks",
        "{flow}: the human message keeps its content blocks"
    );
    let turn = &msgs[at + 1..];
    let answer = turn
        .last()
        .unwrap_or_else(|| panic!("{flow}: no answer to {:?}: {page:#}", t.text));
    assert_eq!(answer["type"], "ai", "{flow}: the answer is an AI message");
    assert!(
        !s(&answer["text"]).trim().is_empty(),
        "{flow}: the answer has text"
    );
    assert!(
        answer["calls"].as_array().unwrap().is_empty(),
        "{flow}: the answer calls no tool"
    );
    assert!(
        !internal_output(s(&answer["text"])),
        "{flow}: the answer is not a model's structured output: {answer}"
    );

    // Tool use: AI tool calls, each followed by its ToolMessage.
    let mut calls = Vec::new();
    let mut answered = BTreeSet::new();
    for m in turn {
        match s(&m["type"]) {
            "ai" => calls.extend(
                m["calls"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|c| s(&c["id"]).to_owned()),
            ),
            "tool" => {
                let call = s(&m["tool_call_id"]).to_owned();
                assert!(
                    calls.contains(&call),
                    "{flow}: a ToolMessage answers a call drawn before it: {page:#}"
                );
                answered.insert(call);
            }
            other => panic!("{flow}: a {other} message in the turn: {page:#}"),
        }
    }
    if t.tools {
        assert!(
            !calls.is_empty(),
            "{flow}: tool calls drawn for {:?}: {page:#}",
            t.text
        );
        assert!(
            calls.iter().all(|c| !c.is_empty() && answered.contains(c)),
            "{flow}: every tool call has its ToolMessage: {calls:?} {answered:?}"
        );
    } else {
        assert!(calls.is_empty(), "{flow}: no tool calls: {page:#}");
    }
    assert_eq!(
        page["dangling"].as_array().map_or(0, Vec::len),
        0,
        "{flow}: no tool call left without its ToolMessage (Agent Chat UI would make one up)"
    );

    // The frames the hook read in this turn: AI chunks by message id.
    let frames = &page["frames"].as_array().unwrap()[frames_before..];
    let mut chunks: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
    for f in frames {
        if !s(&f["event"]).starts_with("messages") {
            continue;
        }
        // A chunk without an id is one the hook drops ("No message ID found for chunk").
        assert!(
            !s(&f["id"]).is_empty(),
            "{flow}: a streamed message without an id: {f}"
        );
        let kind = s(&f["type"]);
        if kind == "ai" || kind == "AIMessageChunk" {
            assert!(
                !internal_output(s(&f["text"])),
                "{flow}: an internal model call streamed as a chat message: {f}"
            );
            chunks.entry(s(&f["id"])).or_default().push(s(&f["text"]));
        }
    }
    for (id, parts) in &chunks {
        assert!(
            ids.contains(id),
            "{flow}: streamed chunks of a message the thread does not keep ({id}: {parts:?}); kept: {ids:?}"
        );
    }
    if t.streamed {
        let id = s(&answer["id"]);
        let parts = chunks.get(id).unwrap_or_else(|| {
            panic!("{flow}: the answer {id} was not streamed; chunks: {chunks:?}")
        });
        assert!(
            parts.len() >= 2,
            "{flow}: the answer streamed token by token: {parts:?}"
        );
        assert_eq!(
            parts.concat(),
            s(&answer["text"]),
            "{flow}: the chunks add up to the answer"
        );
        assert_eq!(answer["streamed"], "yes", "{flow}: the hook saw it stream");
        let shown = page["seen"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|e| e["id"] == answer["id"])
            .count();
        assert!(
            shown >= 2,
            "{flow}: the answer grew on the page as it streamed (shown {shown} times)"
        );
    }
    let states = page["seen"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["id"] == answer["id"])
        .count();
    eprintln!(
        "{flow}: {:?}: {} messages in the turn, {} tool calls, answer in {} streamed chunks, shown in {states} successive texts; {} frames",
        t.text,
        turn.len(),
        calls.len(),
        chunks.get(s(&answer["id"])).map_or(0, Vec::len),
        frames.len()
    );
}

/// Nothing a message ever showed (since the `from`th text the page recorded) was an internal
/// model call's output, and no message showed up that the conversation does not keep (a
/// flash: shown while streaming, then gone).
fn check_no_flash(flow: &str, page: &Value, from: usize) {
    let kept: BTreeSet<&str> = page["msgs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| s(&m["id"]))
        .collect();
    let seen = &page["seen"].as_array().unwrap()[from..];
    assert!(!seen.is_empty(), "{flow}: the observer saw the messages");
    for entry in seen {
        let text = s(&entry["text"]);
        if entry["type"] != "tool" {
            assert!(
                !internal_output(text),
                "{flow}: a message showed a model's structured output: {entry}"
            );
        }
        let id = s(&entry["id"]);
        assert!(
            kept.contains(id),
            "{flow}: message {id:?} was shown ({text:?}) and is not in the conversation: {kept:?}"
        );
    }
}

/// The reference graph's `human` node interrupts on "ask": the hook shows the interrupt,
/// a reload shows it again (from the thread's state), and a resume finishes the run.
async fn an_interrupt_is_resumed(c: &Page, page: &str, api: &str) {
    c.goto(&page_url(page, api, "agent")).await.unwrap();
    idle_after(c, "the reference page ready", 0).await;
    send(c, "please ask me").await;
    let shown = until(
        c,
        "the interrupt",
        "return document.querySelector('#interrupt .value')?.textContent",
    )
    .await;
    assert!(s(&shown).contains("approve?"), "{shown}");
    idle_after(c, "the interrupted run to end", 1).await;
    let now = read(c).await;
    assert_eq!(s(&now["error"]), "", "{now:#}");
    let sent = &now["sent"][0];
    assert!(
        now["msgs"]
            .as_array()
            .unwrap()
            .iter()
            .any(|m| m["id"] == sent["id"] && m["type"] == "human"),
        "{now:#}"
    );
    check_no_flash("agent", &now, 0);
    shot(c, "chat-ui-interrupt").await;

    c.refresh().await.unwrap();
    let again = until(
        c,
        "the interrupt after a reload",
        "return document.querySelector('#interrupt .value')?.textContent",
    )
    .await;
    assert!(s(&again).contains("approve?"), "{again}");

    let resume = css(c, "#resume-value").await;
    resume.clear().await.unwrap();
    resume.send_keys("yes").await.unwrap();
    click(c, "#resume").await;
    idle_after(c, "the resumed run to end", 1).await;
    until(
        c,
        "the interrupt gone and the answer shown",
        "return document.querySelector('#interrupt') === null
             && [...document.querySelectorAll('#messages .msg[data-type=\"ai\"] .text')]
                  .some(e => e.textContent.includes('yes'))",
    )
    .await;
    let done = read(c).await;
    assert_eq!(s(&done["error"]), "", "{done:#}");
    check_no_flash("agent", &done, 0);
    shot(c, "chat-ui-resumed").await;
}

/// The test's control: a router whose model call is not tagged nostream flashes its JSON in
/// the page, and the checks above catch it; tagged, it does not.
async fn the_observer_sees_a_flash(c: &Page, page: &str, api: &str) {
    for (graph, leaks) in [("leaky", true), ("quiet", false)] {
        c.goto(&page_url(page, api, graph)).await.unwrap();
        idle_after(c, &format!("{graph}: the page ready"), 0).await;
        send(c, "What time is it in Tokyo?").await;
        idle_after(c, &format!("{graph}: the answer"), 1).await;
        let now = read(c).await;
        assert_eq!(s(&now["error"]), "", "{graph}: {now:#}");
        let flashed = now["seen"]
            .as_array()
            .unwrap()
            .iter()
            .any(|e| s(&e["text"]).contains("\"calls\""));
        assert_eq!(flashed, leaks, "{graph}: the router's JSON shown: {now:#}");
        // The checks panic on a leak; their message is not this test's failure.
        let hook = std::panic::take_hook();
        std::panic::set_hook(Box::new(|_| {}));
        let page_checks = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            check_no_flash(graph, &now, 0)
        }));
        assert_eq!(
            page_checks.is_err(),
            leaks,
            "{graph}: the page's checks catch a flash exactly when there is one"
        );
        let turn_checks = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            check_turn(
                graph,
                &turn("What time is it in Tokyo?", false, true),
                &now,
                0,
            )
        }));
        std::panic::set_hook(hook);
        assert_eq!(
            turn_checks.is_err(),
            leaks,
            "{graph}: the streamed frames' checks catch it exactly when it streams"
        );
    }
}
