//! Turning options into what a flow runs with: the model (`--model`), the thread store
//! (`--db`), the flow's options (`--set`, `--form`, `--mode`...), the MCP servers whose tools
//! join the flow's (`--mcp`, `--mcp-config`), the remote A2A agents that join them as tools
//! (`--a2a`), and logging.

use std::io::IsTerminal;
use std::path::PathBuf;
use std::sync::Arc;

use agent_core::{Checkpointer, GraphError, PostgresSaver, SqliteSaver};
use agent_flows::FlowEnv;
use agent_tools::DynTool;
use agent_tools::mcp::{McpConfig, McpServerConfig, McpTransport, MultiServerMcpClient};

use crate::Failure;
use crate::cli::{LogFormat, ReactMode, RunArgs};

/// The flow environment the options describe.
pub fn env(args: &RunArgs) -> Result<FlowEnv, Failure> {
    let mut env = FlowEnv::offline();
    let spec = args.model.trim();
    if !spec.is_empty() && spec != "offline" {
        let model = agent_llm::init_chat_model(spec).map_err(|e| Failure::runtime(e.into()))?;
        env = env.with_model(model);
    }
    for (key, value) in &args.set {
        env = env.with_option(key.clone(), value.clone());
    }
    if let Some(form) = &args.form {
        env = env.with_option("form", form.display().to_string());
    }
    if let Some(mode) = args.mode {
        let mode = match mode {
            ReactMode::Static => "static",
            ReactMode::Llm => "llm",
        };
        env = env.with_option("mode", mode);
    }
    if let Some(fallback) = args.llm_fallback {
        env = env.with_option("llm_fallback", if fallback { "1" } else { "0" });
    }
    if let Some(user) = &args.user {
        env = env.with_option("user", user.clone());
    }
    Ok(env)
}

/// The MCP servers `--mcp` and `--mcp-config` name, connected, and their tools (named so
/// that none shadows one of the react flow's own), or `None` when there are none. The
/// servers stay up while the returned client (or a tool) lives.
pub async fn mcp(
    args: &RunArgs,
) -> Result<Option<(MultiServerMcpClient, Vec<Arc<dyn DynTool>>)>, Failure> {
    let mut config = match &args.mcp_config {
        Some(path) => McpConfig::from_file(path).map_err(|e| Failure::usage(e.to_string()))?,
        None => McpConfig::new(),
    };
    for line in &args.mcp {
        let server =
            McpServerConfig::command_line(line).map_err(|e| Failure::usage(e.to_string()))?;
        let name = server_name(&server, &config);
        config.insert(name, server);
    }
    if config.is_empty() {
        return Ok(None);
    }
    let servers = MultiServerMcpClient::connect(&config)
        .await
        .map_err(|e| Failure::message(e.to_string()))?;
    agent_flows::react::ensure_tools_registered();
    let own = agent_flows::react::TOOL_REGISTRY.names();
    let own: Vec<&str> = own.iter().map(String::as_str).collect();
    let tools = servers
        .tools_avoiding(&own)
        .await
        .map_err(|e| Failure::message(e.to_string()))?;
    let tools = tools
        .into_iter()
        .map(|tool| Arc::new(tool) as Arc<dyn DynTool>)
        .collect();
    Ok(Some((servers, tools)))
}

/// The remote agents `--a2a` names (their cards fetched), each a tool named so that none
/// shadows one of the react flow's own or of `taken` (the MCP servers' tools). The URLs come
/// from the command line only.
pub async fn a2a(args: &RunArgs, taken: &[String]) -> Result<Vec<Arc<dyn DynTool>>, Failure> {
    if args.a2a.is_empty() {
        return Ok(Vec::new());
    }
    let mut headers = Vec::new();
    for line in &args.a2a_header {
        let Some((name, value)) = line.split_once(':') else {
            return Err(Failure::usage(format!(
                "--a2a-header `{}`: write it as \"Name: value\"",
                line.split(':').next().unwrap_or_default()
            )));
        };
        headers.push((name.trim().to_owned(), value.trim().to_owned()));
    }
    let configs = args
        .a2a
        .iter()
        .map(|url| {
            headers.iter().fold(
                agent_tools::a2a::A2aConfig::new(url.clone()),
                |config, (name, value)| config.header(name.clone(), value.clone()),
            )
        })
        .collect();
    agent_flows::react::ensure_tools_registered();
    let mut names = agent_flows::react::TOOL_REGISTRY.names();
    names.extend(taken.iter().cloned());
    let names: Vec<&str> = names.iter().map(String::as_str).collect();
    let tools = agent_tools::a2a::connect_all(configs, &names)
        .await
        .map_err(|e| Failure::message(e.to_string()))?;
    Ok(tools
        .into_iter()
        .map(|tool| Arc::new(tool) as Arc<dyn DynTool>)
        .collect())
}

/// A name for the server of `--mcp LINE` (a tool's prefix when names collide): the script or
/// package it runs (`my_server` for `python my_server.py`, `server-filesystem` for
/// `npx -y @modelcontextprotocol/server-filesystem`), else the program; made unique.
fn server_name(server: &McpServerConfig, config: &McpConfig) -> String {
    let words: Vec<&String> = match &server.transport {
        McpTransport::Stdio { command, args, .. } => std::iter::once(command).chain(args).collect(),
        _ => Vec::new(),
    };
    let stem = |word: &str| {
        let last = word.rsplit('/').next().unwrap_or(word);
        let stem = last.split('.').next().unwrap_or(last);
        stem.chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                    c
                } else {
                    '_'
                }
            })
            .collect::<String>()
    };
    let script = words
        .iter()
        .skip(1)
        .find(|w| !w.starts_with('-') && (w.contains('.') || w.contains('/')));
    let base = script
        .or(words.first())
        .copied()
        .map(|w| stem(w))
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| "mcp".to_owned());
    let mut name = base.clone();
    let mut n = 2;
    while config.get(&name).is_some() {
        name = format!("{base}{n}");
        n += 1;
    }
    name
}

/// The thread store: `--db` / `AGENTGRAPH_DB` (a SQLite path or a postgres:// URL), else the
/// SQLite file in the user's data directory.
pub async fn saver(db: Option<&str>) -> Result<Arc<dyn Checkpointer>, Failure> {
    let target = match db {
        Some(db) if !db.trim().is_empty() => db.trim().to_owned(),
        _ => default_db()?.display().to_string(),
    };
    if target.starts_with("postgres://") || target.starts_with("postgresql://") {
        let saver = PostgresSaver::connect(&target)
            .await
            .map_err(|e| Failure::runtime(e.into()))?;
        return Ok(Arc::new(saver));
    }
    let path = PathBuf::from(&target);
    if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
        std::fs::create_dir_all(parent).map_err(|e| {
            Failure::message(format!(
                "cannot create the directory of the thread store {}: {e}",
                parent.display()
            ))
        })?;
    }
    let saver = SqliteSaver::open(&path).map_err(|e: GraphError| {
        Failure::message(format!(
            "cannot open the thread store {}: {e}; pass another file with --db",
            path.display()
        ))
    })?;
    Ok(Arc::new(saver))
}

/// The long-term memory: `--store` / `AGENTGRAPH_STORE`, else the thread store's file or
/// database (`--db`, else the default file); a SQLite path or a postgres:// URL. Items are
/// embedded with the offline embedding (hashed character n-grams: lexical similarity, no
/// model) so that `agent memory search --query` ranks them.
pub async fn store(
    store: Option<&str>,
    db: Option<&str>,
) -> Result<Arc<dyn agent_core::store::Store>, Failure> {
    let target = match store.or(db) {
        Some(t) if !t.trim().is_empty() => t.trim().to_owned(),
        _ => default_db()?.display().to_string(),
    };
    let embeddings = agent_llm::embeddings::OfflineEmbeddings::new(256);
    let index = agent_core::store::IndexConfig::new(256, Arc::new(embeddings));
    let failed = |e: agent_core::store::StoreError| {
        Failure::message(format!(
            "cannot open the store {target}: {e}; pass another with --store"
        ))
    };
    if target.starts_with("postgres://") || target.starts_with("postgresql://") {
        let store = agent_core::store::PostgresStore::connect(&target)
            .await
            .map_err(failed)?;
        return Ok(Arc::new(store.with_index(index)));
    }
    let path = PathBuf::from(&target);
    if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
        std::fs::create_dir_all(parent).map_err(|e| {
            Failure::message(format!(
                "cannot create the directory of the store {}: {e}",
                parent.display()
            ))
        })?;
    }
    let store = agent_core::store::SqliteStore::open(&path).map_err(failed)?;
    Ok(Arc::new(store.with_index(index)))
}

/// `agentgraph/threads.sqlite` in the user's data directory.
pub fn default_db() -> Result<PathBuf, Failure> {
    let base = dirs::data_dir().ok_or_else(|| {
        Failure::message(
            "no data directory is known for this user (HOME unset?); pass --db PATH or set AGENTGRAPH_DB"
                .to_owned(),
        )
    })?;
    Ok(base.join("agentgraph").join("threads.sqlite"))
}

/// Where `agent chat` keeps its line history.
pub fn history_file() -> Option<PathBuf> {
    let dir = dirs::data_dir()?.join("agentgraph");
    std::fs::create_dir_all(&dir).ok()?;
    Some(dir.join("chat-history.txt"))
}

/// Logs to stderr, filtered by `RUST_LOG` (default: warnings), colour only on a terminal;
/// and, when the OpenTelemetry variables name a collector (`OTEL_EXPORTER_OTLP_ENDPOINT`...),
/// spans and metrics sent there (agent-otel, its own filter: `info` by default). The guard
/// flushes them: keep it until the program ends. With `recorder` (`agent serve`), the spans of
/// each run are also kept for the web page's trace view (agentgraph's own, at `info`).
pub fn logging(
    format: LogFormat,
    recorder: Option<&agent_server::SpanRecorder>,
) -> Result<agent_otel::OtelGuard, Failure> {
    use tracing_subscriber::Layer as _;
    use tracing_subscriber::layer::SubscriberExt as _;
    use tracing_subscriber::util::SubscriberInitExt as _;

    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn"));
    let logs = tracing_subscriber::fmt::layer()
        .with_writer(std::io::stderr)
        .with_span_events(tracing_subscriber::fmt::format::FmtSpan::CLOSE);
    let logs = match format {
        LogFormat::Json => logs.json().with_filter(filter).boxed(),
        LogFormat::Text => logs
            .with_ansi(std::io::stderr().is_terminal() && std::env::var_os("NO_COLOR").is_none())
            .with_filter(filter)
            .boxed(),
    };
    let (otel, guard) = agent_otel::layer().map_err(|e| Failure::message(e.to_string()))?;
    let recorded = recorder.map(|r| {
        use tracing_subscriber::filter::FilterExt as _;
        let ours = tracing_subscriber::filter::Targets::new().with_targets(
            ["agent_core", "agent_llm", "agent_tools", "agent_server"]
                .map(|t| (t, tracing::Level::INFO)),
        );
        // A request's span is never under a run: not made for the recorder alone.
        let runs_only = tracing_subscriber::filter::filter_fn(|m| m.name() != "http_request");
        r.layer().with_filter(ours.and(runs_only))
    });
    let _ = tracing_subscriber::registry()
        .with(otel)
        .with(recorded)
        .with(logs)
        .try_init();
    Ok(guard)
}
