//! Traces in a receiver no one here wrote: Arize Phoenix (`arize-phoenix` from PyPI, `phoenix
//! serve`, which ingests OTLP and answers span queries over its REST API) gets the `agent`
//! program's spans, and they are read back from it:
//!
//! - `agent run tool-router` over OTLP/HTTP: one trace, the tree run > step > node > model
//!   and tool calls, the GenAI attributes (Phoenix recognizes them: the run is its `AGENT`,
//!   a model call its `LLM`, a tool call its `TOOL`), token counts that add up to the run's
//!   `usage`; the same run over OTLP/gRPC;
//! - a run whose model is unreachable: an error on the node that failed, its model call and
//!   the run;
//! - `agent serve` driven by the Python `langgraph-sdk` with a `traceparent` header: every
//!   request and both runs (one waited for, one queued to start a second later) in the
//!   caller's one trace, each run under the request that created it, its graph under it.
//!
//! Phoenix (and the SDK) are installed once into venvs under `~/.cache/agentgraph` (or
//! `$AGENTGRAPH_CACHE`) from PyPI; Phoenix runs on free ports (`PHOENIX_PORT`,
//! `PHOENIX_GRPC_PORT`), bound to loopback, with its data in a scratch directory and its
//! telemetry off: nothing else leaves the machine. Runs in CI (`CI` set) or with
//! `AGENTGRAPH_OTEL_TESTS=1`, and says it skipped otherwise.

mod common;

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use common::Scratch;
use common::serve::serve_with;
use serde_json::{Value, json};

const PHOENIX: &str = "20.26.1";

fn wanted() -> bool {
    if std::env::var_os("CI").is_none() && std::env::var_os("AGENTGRAPH_OTEL_TESTS").is_none() {
        eprintln!(
            "skipped: set AGENTGRAPH_OTEL_TESTS=1 to install Arize Phoenix and read the traces back from it (CI does)"
        );
        return false;
    }
    true
}

fn cache() -> PathBuf {
    std::env::var_os("AGENTGRAPH_CACHE")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| Path::new(&h).join(".cache/agentgraph")))
        .expect("HOME or AGENTGRAPH_CACHE")
}

/// A venv under the cache named `name`, with `requirements` installed on first use.
fn venv(name: &str, requirements: &[&str]) -> PathBuf {
    let venv = cache().join(name);
    if !venv.join(".installed").exists() {
        eprintln!("== installing {requirements:?} into {}", venv.display());
        let python = std::env::var("PYTHON").unwrap_or_else(|_| "python3".to_owned());
        let _ = std::fs::remove_dir_all(&venv);
        let ok = Command::new(&python)
            .args(["-m", "venv"])
            .arg(&venv)
            .status()
            .is_ok_and(|s| s.success());
        assert!(ok, "{python} -m venv {} failed", venv.display());
        let ok = Command::new(venv.join("bin/pip"))
            .args(["install", "--quiet", "--disable-pip-version-check"])
            .args(requirements)
            .status()
            .is_ok_and(|s| s.success());
        assert!(ok, "could not install {requirements:?}");
        std::fs::write(venv.join(".installed"), requirements.join("\n")).unwrap();
    }
    venv
}

/// The Python SDK's venv, as agent-server's SDK checks make it (shared with them).
fn sdk_python() -> PathBuf {
    let requirements = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../agent-server/tests/sdk/python/requirements.txt"
    );
    let pinned = std::fs::read_to_string(requirements).unwrap();
    let version = pinned
        .lines()
        .find_map(|l| l.strip_prefix("langgraph-sdk=="))
        .expect("langgraph-sdk pinned")
        .trim()
        .to_owned();
    venv(&format!("sdk-py-{version}"), &["-r", requirements]).join("bin/python")
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// A running Phoenix, killed when dropped.
struct Phoenix {
    child: Child,
    /// `http://127.0.0.1:<port>`: the UI, the REST API and OTLP/HTTP (`/v1/traces`).
    url: String,
    /// `http://127.0.0.1:<port>`: OTLP/gRPC.
    grpc: String,
    log: PathBuf,
}

impl Drop for Phoenix {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Phoenix {
    /// Starts Phoenix with its data and its log under `dir`.
    fn start(dir: &Path) -> Phoenix {
        let exe = venv(
            &format!("phoenix-{PHOENIX}"),
            &[&format!("arize-phoenix=={PHOENIX}")],
        )
        .join("bin/phoenix");
        let (port, grpc) = (free_port(), free_port());
        let work = dir.join("phoenix");
        std::fs::create_dir_all(&work).unwrap();
        let log = dir.join("phoenix.log");
        let out = std::fs::File::create(&log).unwrap();
        let child = Command::new(exe)
            .arg("serve")
            .env("PHOENIX_HOST", "127.0.0.1")
            .env("PHOENIX_PORT", port.to_string())
            .env("PHOENIX_GRPC_PORT", grpc.to_string())
            .env("PHOENIX_WORKING_DIR", &work)
            .env("PHOENIX_TELEMETRY_ENABLED", "false")
            .env_remove("PHOENIX_SQL_DATABASE_URL")
            .env_remove("PHOENIX_COLLECTOR_ENDPOINT")
            .stdin(Stdio::null())
            .stdout(out.try_clone().unwrap())
            .stderr(out)
            .spawn()
            .expect("phoenix serve");
        Phoenix {
            child,
            url: format!("http://127.0.0.1:{port}"),
            grpc: format!("http://127.0.0.1:{grpc}"),
            log,
        }
    }

    fn log_tail(&self) -> String {
        let text = std::fs::read_to_string(&self.log).unwrap_or_default();
        let lines: Vec<&str> = text.lines().collect();
        lines[lines.len().saturating_sub(30)..].join("\n")
    }

    async fn ready(&mut self, http: &reqwest::Client) {
        let start = Instant::now();
        loop {
            if let Ok(r) = http.get(format!("{}/healthz", self.url)).send().await
                && r.status().is_success()
            {
                return;
            }
            if let Ok(Some(status)) = self.child.try_wait() {
                panic!("phoenix exited ({status}):\n{}", self.log_tail());
            }
            assert!(
                start.elapsed() < Duration::from_secs(120),
                "phoenix did not start:\n{}",
                self.log_tail()
            );
            tokio::time::sleep(Duration::from_millis(250)).await;
        }
    }

    /// Every span of `project` Phoenix holds (an unknown project has none yet).
    async fn spans(&self, http: &reqwest::Client, project: &str) -> Vec<Span> {
        let url = format!("{}/v1/projects/{project}/spans?limit=1000", self.url);
        let Ok(response) = http.get(url).send().await else {
            return Vec::new();
        };
        if !response.status().is_success() {
            return Vec::new();
        }
        let body: Value = response.json().await.unwrap();
        body["data"]
            .as_array()
            .unwrap()
            .iter()
            .map(Span::of)
            .collect()
    }

    /// The spans of `project` once `ready` holds of them (Phoenix ingests in the background).
    async fn wait(
        &self,
        http: &reqwest::Client,
        project: &str,
        ready: impl Fn(&Tree) -> bool,
    ) -> Tree {
        let start = Instant::now();
        loop {
            let tree = Tree(self.spans(http, project).await);
            if ready(&tree) {
                return tree;
            }
            assert!(
                start.elapsed() < Duration::from_secs(30),
                "phoenix never had the spans of {project}: {:#?}",
                tree.0
            );
            tokio::time::sleep(Duration::from_millis(250)).await;
        }
    }
}

/// A span as Phoenix's REST API gives it back.
#[derive(Debug, Clone)]
struct Span {
    name: String,
    kind: String,
    trace: String,
    id: String,
    parent: Option<String>,
    status: String,
    attributes: Value,
}

impl Span {
    fn of(v: &Value) -> Span {
        let text = |v: &Value| v.as_str().unwrap_or_default().to_owned();
        Span {
            name: text(&v["name"]),
            kind: text(&v["span_kind"]),
            trace: text(&v["context"]["trace_id"]),
            id: text(&v["context"]["span_id"]),
            parent: v["parent_id"].as_str().map(str::to_owned),
            status: text(&v["status_code"]),
            attributes: v["attributes"].clone(),
        }
    }

    fn attr(&self, key: &str) -> &Value {
        &self.attributes[key]
    }

    fn str(&self, key: &str) -> &str {
        self.attr(key).as_str().unwrap_or_default()
    }
}

/// The spans of one project.
struct Tree(Vec<Span>);

impl Tree {
    fn named(&self, name: &str) -> Vec<&Span> {
        self.0.iter().filter(|s| s.name == name).collect()
    }

    fn one(&self, name: &str) -> &Span {
        let found = self.named(name);
        assert_eq!(found.len(), 1, "one span named {name}: {:#?}", self.0);
        found[0]
    }

    fn has(&self, name: &str, count: usize) -> bool {
        self.named(name).len() >= count
    }

    fn by_id(&self, id: &str) -> Option<&Span> {
        self.0.iter().find(|s| s.id == id)
    }

    fn parent(&self, span: &Span) -> &Span {
        let id = span.parent.as_deref().expect("a parent");
        self.by_id(id)
            .unwrap_or_else(|| panic!("the parent of {} is in the trace", span.name))
    }

    fn traces(&self) -> std::collections::BTreeSet<&str> {
        self.0.iter().map(|s| s.trace.as_str()).collect()
    }
}

/// The tree every tool-router run has: checks it under `root` (its `invoke_agent` span),
/// and returns the tokens its model calls report.
fn check_run_tree(tree: &Tree, root: &Span) -> (i64, i64) {
    assert_eq!(
        root.kind, "AGENT",
        "Phoenix reads the run as an agent: {root:?}"
    );
    assert_eq!(root.str("gen_ai.operation.name"), "invoke_agent");
    assert_eq!(root.str("gen_ai.agent.name"), "tool-router");
    let under = |span: &Span, ancestor: &Span| {
        let mut at = span;
        while let Some(parent) = at.parent.as_deref().and_then(|p| tree.by_id(p)) {
            if parent.id == ancestor.id {
                return true;
            }
            at = parent;
        }
        false
    };
    let steps: Vec<&Span> = tree
        .named("step")
        .into_iter()
        .filter(|s| s.parent.as_deref() == Some(root.id.as_str()))
        .collect();
    assert!(steps.len() >= 3, "router, tools, answer: {:#?}", tree.0);
    for node in ["router", "tool_executor", "generator"] {
        let node = tree
            .named(node)
            .into_iter()
            .find(|n| under(n, root))
            .unwrap_or_else(|| panic!("node {node} under the run"));
        assert_eq!(tree.parent(node).name, "step", "{node:?}");
        assert_eq!(node.str("agentgraph.node"), node.name);
    }
    let mut tokens = (0, 0);
    let calls: Vec<&Span> = tree
        .0
        .iter()
        .filter(|s| s.str("gen_ai.operation.name") == "chat" && under(s, root))
        .collect();
    assert!(
        calls.len() >= 2,
        "the router's and the answer's model calls"
    );
    for call in calls {
        assert_eq!(call.kind, "LLM", "{call:?}");
        assert!(
            ["router", "generator"].contains(&tree.parent(call).name.as_str()),
            "{call:?}"
        );
        assert!(!call.str("gen_ai.provider.name").is_empty(), "{call:?}");
        assert!(!call.str("gen_ai.request.model").is_empty(), "{call:?}");
        assert_eq!(
            call.name,
            format!("chat {}", call.str("gen_ai.request.model"))
        );
        tokens.0 += call.attr("gen_ai.usage.input_tokens").as_i64().unwrap();
        tokens.1 += call.attr("gen_ai.usage.output_tokens").as_i64().unwrap();
    }
    let tools: Vec<&Span> = tree
        .named("execute_tool datetime")
        .into_iter()
        .filter(|s| under(s, root))
        .collect();
    assert!(!tools.is_empty(), "{:#?}", tree.0);
    for tool in tools {
        assert_eq!(tool.kind, "TOOL");
        assert_eq!(tree.parent(tool).name, "tool_executor");
        assert_eq!(tool.str("gen_ai.operation.name"), "execute_tool");
        assert_eq!(tool.str("gen_ai.tool.name"), "datetime");
        assert!(!tool.str("gen_ai.tool.call.id").is_empty());
    }
    tokens
}

fn otel_env<'a>(endpoint: &'a str, project: &str) -> Vec<(&'a str, String)> {
    vec![
        ("OTEL_EXPORTER_OTLP_ENDPOINT", endpoint.to_owned()),
        ("OTEL_SERVICE_NAME", "agentgraph-test".to_owned()),
        (
            "OTEL_RESOURCE_ATTRIBUTES",
            format!("openinference.project.name={project}"),
        ),
    ]
}

/// The SDK client of `agent serve`: a thread, a run waited for, a run queued to start a
/// second later and joined; every request with the caller's `traceparent`.
const SDK_SCRIPT: &str = r#"
import asyncio, json, sys
from langgraph_sdk import get_client

async def main(url, traceparent):
    client = get_client(url=url, headers={"traceparent": traceparent})
    thread = await client.threads.create()
    t = thread["thread_id"]
    human = lambda text: {"messages": [{"role": "user", "content": text}]}
    waited = await client.runs.wait(t, "tool-router", input=human("What time is it in Tokyo?"))
    later = await client.runs.create(t, "tool-router", input=human("What time is it in London?"), after_seconds=1)
    joined = await client.runs.join(t, later["run_id"])
    run = await client.runs.get(t, later["run_id"])
    print(json.dumps({"thread_id": t, "waited": waited, "joined": joined, "status": run["status"]}))

asyncio.run(main(sys.argv[1], sys.argv[2]))
"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_agent_programs_traces_arrive_in_phoenix_whole() {
    if !wanted() {
        return;
    }
    let began = Instant::now();
    let scratch = Scratch::new("phoenix");
    let http = common::serve::client();
    // Installs (first time) and starts Phoenix while the SDK's venv is checked.
    let mut phoenix = tokio::task::spawn_blocking({
        let dir = scratch.dir.clone();
        move || Phoenix::start(&dir)
    })
    .await
    .unwrap();
    let python = tokio::task::spawn_blocking(sdk_python).await.unwrap();
    phoenix.ready(&http).await;
    eprintln!("phoenix ready after {:?}", began.elapsed());

    // `agent run` over OTLP/HTTP: one trace with the whole tree, tokens = usage.
    let mut run = scratch.agent(&[
        "run",
        "tool-router",
        "What time is it in Tokyo and London?",
        "--json",
    ]);
    run.envs(otel_env(&phoenix.url, "cli-http"));
    let out = run.output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let printed: Value = serde_json::from_slice(&out.stdout).unwrap();
    let tree = phoenix
        .wait(&http, "cli-http", |t| {
            t.has("invoke_agent tool-router", 1)
                && t.has("generator", 1)
                && t.has("execute_tool datetime", 2)
        })
        .await;
    assert_eq!(tree.traces().len(), 1, "one trace: {:#?}", tree.0);
    let root = tree.one("invoke_agent tool-router");
    assert!(root.parent.is_none(), "the run is the trace's root");
    assert_eq!(root.status, "UNSET");
    let tokens = check_run_tree(&tree, root);
    assert_eq!(
        tokens,
        (
            printed["usage"]["input_tokens"].as_i64().unwrap(),
            printed["usage"]["output_tokens"].as_i64().unwrap()
        ),
        "the model calls' tokens add up to the run's usage"
    );
    assert_eq!(
        tree.named("execute_tool datetime").len(),
        2,
        "Tokyo and London"
    );

    // The same over OTLP/gRPC.
    let mut run = scratch.agent(&["run", "tool-router", "What time is it in Lima?"]);
    run.envs(otel_env(&phoenix.grpc, "cli-grpc"))
        .env("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc");
    let out = run.output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let tree = phoenix
        .wait(&http, "cli-grpc", |t| {
            t.has("invoke_agent tool-router", 1) && t.has("generator", 1)
        })
        .await;
    check_run_tree(&tree, tree.one("invoke_agent tool-router"));

    // A node that fails (its model is unreachable): the error is on the model call, the
    // node and the run.
    let dead = format!("http://127.0.0.1:{}/v1", free_port());
    let mut run = scratch.agent(&[
        "run",
        "tool-router",
        "What time is it in Oslo?",
        "--model",
        "openai:gpt-4o-mini",
    ]);
    run.envs(otel_env(&phoenix.url, "cli-error"))
        .env("OPENAI_API_KEY", "not-a-key")
        .env("OPENAI_BASE_URL", &dead);
    let out = run.output().unwrap();
    assert_eq!(out.status.code(), Some(1), "the run fails");
    let tree = phoenix
        .wait(&http, "cli-error", |t| {
            t.has("invoke_agent tool-router", 1) && t.has("router", 1)
        })
        .await;
    let root = tree.one("invoke_agent tool-router");
    assert_eq!(root.status, "ERROR", "{root:?}");
    assert_eq!(root.str("error.type"), "node_error");
    let router = tree.one("router");
    assert_eq!(router.status, "ERROR", "{router:?}");
    assert_eq!(router.str("error.type"), "node_error");
    let call = tree.one("chat gpt-4o-mini");
    assert_eq!(call.status, "ERROR", "{call:?}");
    assert_eq!(tree.parent(call).id, router.id);
    assert!(!call.str("error.type").is_empty(), "{call:?}");
    assert!(
        tree.named("generator").is_empty(),
        "nothing ran after the failure"
    );

    // `agent serve` driven by the Python SDK with a traceparent: one trace.
    let trace = format!("{:032x}", fastrand::u128(1..));
    let caller = format!("{:016x}", fastrand::u64(1..));
    let traceparent = format!("00-{trace}-{caller}-01");
    let mut env = otel_env(&phoenix.url, "serve");
    // Batches go out every 200 ms, not every 5 s: the spans are there while the server runs.
    env.push(("OTEL_BSP_SCHEDULE_DELAY", "200".to_owned()));
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let db = scratch.path("serve.db").display().to_string();
    let server = serve_with(&scratch, &["--db", &db], &env);
    let script = scratch.path("sdk_trace.py");
    std::fs::write(&script, SDK_SCRIPT).unwrap();
    let out = Command::new(&python)
        .arg(&script)
        .args([server.url.as_str(), traceparent.as_str()])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "the SDK script failed:\n{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let sdk: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(sdk["status"], "success", "{sdk}");
    assert!(sdk["waited"]["messages"].as_array().is_some(), "{sdk}");
    let tree = phoenix
        .wait(&http, "serve", |t| {
            t.has("run tool-router", 2)
                && t.has("invoke_agent tool-router", 2)
                && t.has("GET /threads/{thread_id}/runs/{run_id}/join", 1)
        })
        .await;
    assert_eq!(
        tree.traces(),
        std::collections::BTreeSet::from([trace.as_str()]),
        "every span in the caller's trace: {:#?}",
        tree.0
    );
    for request in [
        "POST /threads",
        "POST /threads/{thread_id}/runs/wait",
        "POST /threads/{thread_id}/runs",
        "GET /threads/{thread_id}/runs/{run_id}/join",
        "GET /threads/{thread_id}/runs/{run_id}",
    ] {
        let span = tree.one(request);
        assert_eq!(span.parent.as_deref(), Some(caller.as_str()), "{span:?}");
        assert_eq!(
            span.str("http.request.method"),
            request.split(' ').next().unwrap()
        );
        assert_eq!(span.str("http.route"), request.split(' ').nth(1).unwrap());
        assert_eq!(
            span.attr("http.response.status_code"),
            &json!(200),
            "{span:?}"
        );
    }
    for run in tree.named("run tool-router") {
        let created_by = tree.parent(run);
        assert!(
            [
                "POST /threads/{thread_id}/runs/wait",
                "POST /threads/{thread_id}/runs"
            ]
            .contains(&created_by.name.as_str()),
            "a run is a child of the request that created it: {run:?} under {created_by:?}"
        );
        assert_eq!(run.str("agentgraph.run.status"), "success");
        assert_eq!(
            run.str("gen_ai.conversation.id"),
            sdk["thread_id"].as_str().unwrap()
        );
        let graph = tree
            .named("invoke_agent tool-router")
            .into_iter()
            .find(|g| g.parent.as_deref() == Some(run.id.as_str()))
            .expect("the graph under its run");
        check_run_tree(&tree, graph);
    }
    let parents: std::collections::BTreeSet<&str> = tree
        .named("run tool-router")
        .iter()
        .map(|r| tree.parent(r).name.as_str())
        .collect();
    assert_eq!(parents.len(), 2, "one run per creating request");
    drop(server);
    eprintln!("done after {:?}", began.elapsed());
}
