//! The command line, as clap derives it: `agent list | run | chat | graph`, and the options
//! every run shares (model, thread store, flow options, streaming, output format).

use std::ffi::OsString;
use std::path::PathBuf;

use clap::{Args, Parser, Subcommand, ValueEnum};

/// Stateful LLM agents as graphs: run the reference flows of agentgraph.
#[derive(Debug, Parser)]
#[command(
    name = "agent",
    version,
    about,
    arg_required_else_help = true,
    after_help = "Examples:\n  agent list\n  agent run tool-router \"¿Qué hora es en Tokio y Londres?\"\n  agent run tool-router \"What time is it in New York?\" --thread demo --json\n  agent run react --mode llm --model ollama:qwen2.5 --mcp \"python my_server.py\" \"add 2 and 3\"\n  agent run react --mode llm --model ollama:qwen2.5 --a2a http://127.0.0.1:8123/a2a/tool-router \"ask the router the time in Lima\"\n  agent chat form\n  agent graph tool-router --ascii\n\nModels: --model offline (default: deterministic rules, no key, no server), openai:<model> (OPENAI_API_KEY, OPENAI_BASE_URL for any OpenAI-compatible server), anthropic:<model> (ANTHROPIC_API_KEY), ollama:<model> (OLLAMA_HOST)."
)]
pub struct Cli {
    /// Log format on stderr (filter with RUST_LOG, e.g. RUST_LOG=agent_core=debug).
    #[arg(long, global = true, value_enum, default_value_t = LogFormat::Text)]
    pub log_format: LogFormat,
    #[command(subcommand)]
    pub command: Command,
}

/// What to do.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// List every flow with a one-line description.
    List {
        /// One JSON object per flow.
        #[arg(long)]
        json: bool,
    },
    /// Run one turn of a flow: MESSAGE, or standard input when it is not given.
    Run {
        /// The flow (see `agent list`).
        flow: String,
        /// The user's message (checked as UTF-8 by `run`, so a bad byte gets a clear error
        /// rather than clap's usage error).
        message: Option<OsString>,
        #[command(flatten)]
        run: RunArgs,
        /// Print one JSON object: flow, thread_id, path, state, response, usage (with
        /// --stream: one object per streamed item, then the result).
        #[arg(long)]
        json: bool,
    },
    /// Talk to a flow, one turn per line, on a thread (line editing and history).
    Chat {
        /// The flow (see `agent list`).
        flow: String,
        #[command(flatten)]
        run: RunArgs,
    },
    /// Serve every flow on the LangGraph server API (langgraph-sdk, Studio, chat UIs).
    Serve(ServeArgs),
    /// Inspect the long-term memory (the store): namespaces, items, searches, deletes.
    Memory {
        #[command(subcommand)]
        action: MemoryAction,
        /// The store: a SQLite file or a postgres:// URL (default: the thread store, --db).
        #[arg(long, env = "AGENTGRAPH_STORE", global = true)]
        store: Option<String>,
        /// Where threads persist (the store's default).
        #[arg(long, env = "AGENTGRAPH_DB", global = true)]
        db: Option<String>,
    },
    /// Print a flow's diagram (Mermaid; --ascii for the terminal).
    Graph {
        /// The flow (see `agent list`).
        flow: String,
        /// An ASCII outline instead of Mermaid.
        #[arg(long)]
        ascii: bool,
    },
}

/// `agent memory` actions. Namespaces are written with dots: `users.ada`.
#[derive(Debug, Subcommand)]
pub enum MemoryAction {
    /// The namespaces items are stored under, one per line.
    List {
        /// Only those starting with this namespace.
        #[arg(long)]
        prefix: Option<String>,
        /// Cut namespaces to this many labels.
        #[arg(long)]
        max_depth: Option<usize>,
    },
    /// One item's value, as JSON.
    Get {
        /// The namespace (`users.ada`).
        namespace: String,
        /// The key.
        key: String,
    },
    /// Items under a namespace prefix, one JSON object per line (most similar first with
    /// --query, else most recently updated first).
    Search {
        /// The namespace prefix (`users`; empty for all).
        #[arg(default_value = "")]
        prefix: String,
        /// Rank by similarity to this text.
        #[arg(long)]
        query: Option<String>,
        /// Conditions on value fields, as JSON (`{"turn": {"$gte": 2}}`).
        #[arg(long)]
        filter: Option<String>,
        /// At most this many items.
        #[arg(long, default_value_t = 10)]
        limit: usize,
    },
    /// Deletes one item.
    Delete {
        /// The namespace (`users.ada`).
        namespace: String,
        /// The key.
        key: String,
    },
}

/// Options of `serve`. Each overrides the config file's (`--config`); what neither sets takes
/// the default shown.
#[derive(Debug, Args)]
pub struct ServeArgs {
    /// The operator's settings file (TOML: server, auth, limits, store, settings, assistants; the
    /// guide's "Deploying safely", docs/guide/src/deploying.md, has a complete example).
    /// Flags override it.
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// The address to listen on (default 127.0.0.1); beyond loopback only with auth.
    #[arg(long)]
    pub host: Option<String>,
    /// The port (default 2024, LangGraph's).
    #[arg(long)]
    pub port: Option<u16>,
    /// Where assistants, threads, runs and checkpoints live: a SQLite file (default: the
    /// CLI's thread store, agentgraph/threads.sqlite in the user's data directory), or a
    /// postgres:// URL that many instances share.
    #[arg(long, env = "AGENTGRAPH_DB")]
    pub db: Option<String>,
    /// Runs executed at once by this instance (default 10).
    #[arg(long)]
    pub workers: Option<usize>,
    /// The operator's key, required in the x-api-key header the SDKs send: all access.
    #[arg(long, env = "AGENTGRAPH_API_KEY", hide_env_values = true)]
    pub api_key: Option<String>,
    /// A keys file: API keys (or their SHA-256) with the identity and permissions of each,
    /// read again when it changes.
    #[arg(long, value_name = "FILE")]
    pub api_keys: Option<PathBuf>,
    /// A JWKS file of public keys: JWT bearer tokens signed with them (RS256, ES256...) are
    /// accepted, `sub` as the identity. HS256 tokens are accepted instead when the variable
    /// AGENTGRAPH_JWT_SECRET holds their secret.
    #[arg(long, value_name = "FILE")]
    pub jwks: Option<PathBuf>,
    /// The `iss` every token must carry.
    #[arg(long, value_name = "ISSUER")]
    pub jwt_issuer: Option<String>,
    /// The `aud` every token must carry.
    #[arg(long, value_name = "AUDIENCE")]
    pub jwt_audience: Option<String>,
    /// A web origin whose pages may call the API (repeatable; replaces the default, Studio
    /// and loopback origins; `*` allows any).
    #[arg(long = "cors-allow-origin", value_name = "ORIGIN")]
    pub cors_allow_origin: Vec<String>,
    /// A host name a server without auth answers to besides loopback ones (repeatable).
    #[arg(long = "allowed-host", value_name = "NAME")]
    pub allowed_host: Vec<String>,
    /// The model of runs whose context names none: offline, openai:MODEL, anthropic:MODEL,
    /// ollama:MODEL (default offline).
    #[arg(long, env = "AGENTGRAPH_MODEL")]
    pub model: Option<String>,
    /// The models a run's context may pick, comma-separated and/or repeated (default:
    /// offline); --model is always one of them. Each is built at start.
    #[arg(long, value_name = "SPEC,...", value_delimiter = ',')]
    pub models: Vec<String>,
    /// A flow option, KEY=VALUE, for every flow that takes it (repeatable; `agent list` shows
    /// each flow's options and who may set them). Requests may set only some options, within
    /// these values; files, databases and the user are the operator's alone.
    #[arg(long = "set", value_name = "KEY=VALUE", value_parser = parse_key_value)]
    pub set: Vec<(String, String)>,
    /// Let runs' and crons' webhooks reach loopback, private and link-local addresses
    /// (refused by default: a client could otherwise make the server call into its network).
    #[arg(long)]
    pub allow_private_webhooks: bool,
    /// How long a run may take, in seconds: one past it is stopped and ends `timeout`
    /// (default: no limit).
    #[arg(long, value_name = "SECONDS")]
    pub run_timeout: Option<f64>,
    /// Threads created without a ttl of their own are deleted this many minutes after their
    /// last activity (default: kept until deleted); --thread-ttl-strategy keep_latest keeps
    /// them and only their latest checkpoint instead.
    #[arg(long, value_name = "MINUTES")]
    pub thread_ttl: Option<f64>,
    /// What --thread-ttl does to an expired thread: delete (the default) or keep_latest.
    #[arg(long, value_name = "STRATEGY")]
    pub thread_ttl_strategy: Option<String>,
    /// Semantic search in the store (store searches with a query, ranked by meaning): the
    /// embeddings items are indexed with — offline (built-in, lexical: no model or network;
    /// offline:DIMS), openai:MODEL (OPENAI_API_KEY, OPENAI_BASE_URL) or ollama:MODEL
    /// (OLLAMA_HOST). Default: none (a query is ignored, as langgraph-api does).
    #[arg(long, value_name = "EMBEDDING")]
    pub store_index: Option<String>,
}

/// Options of `run` and `chat`.
#[derive(Debug, Args)]
pub struct RunArgs {
    /// The model for every decision: offline, openai:MODEL, anthropic:MODEL,
    /// ollama:MODEL.
    #[arg(long, env = "AGENTGRAPH_MODEL", default_value = "offline")]
    pub model: String,
    /// Continue (or start) this thread; its state persists between runs.
    #[arg(long)]
    pub thread: Option<String>,
    /// Where threads persist: a SQLite file (default: agentgraph/threads.sqlite in the user's
    /// data directory) or a postgres:// URL.
    #[arg(long, env = "AGENTGRAPH_DB")]
    pub db: Option<String>,
    /// Live output while the graph runs.
    #[arg(long, value_enum)]
    pub stream: Option<StreamArg>,
    /// A flow option, KEY=VALUE (repeatable; `agent list` shows each flow's options).
    #[arg(long = "set", value_name = "KEY=VALUE", value_parser = parse_key_value)]
    pub set: Vec<(String, String)>,
    /// The form to fill (`form` flow): a TOML or JSON file.
    #[arg(long, value_name = "FILE")]
    pub form: Option<PathBuf>,
    /// The `react` flow's mode.
    #[arg(long, value_enum)]
    pub mode: Option<ReactMode>,
    /// The `react` flow's deterministic echo fallback in LLM mode (also LLM_FALLBACK=1;
    /// `--llm-fallback=false` turns it off).
    #[arg(long, env = "LLM_FALLBACK", value_parser = clap::builder::BoolishValueParser::new(), num_args = 0..=1, require_equals = true, default_missing_value = "true")]
    pub llm_fallback: Option<bool>,
    /// The user the `orchestrator` flow loads the profile of.
    #[arg(long)]
    pub user: Option<String>,
    /// Where long-term memory (across threads) lives: a SQLite file or a postgres:// URL
    /// (default: the thread store, --db, when the run has a thread).
    #[arg(long, env = "AGENTGRAPH_STORE")]
    pub store: Option<String>,
    /// An MCP server to start (stdio), whose tools the `react` flow's model may call:
    /// a command line such as "python my_server.py" (split as a shell would; repeatable).
    #[arg(long, value_name = "COMMAND")]
    pub mcp: Vec<String>,
    /// MCP servers from a JSON file in the `mcpServers` format of Claude Desktop and Cursor
    /// (`command`/`args`/`env` or `url`/`headers` per server).
    #[arg(long, value_name = "FILE")]
    pub mcp_config: Option<PathBuf>,
    /// A remote agent of the Agent2Agent protocol that the `react` flow's model may call as
    /// a tool: its URL (its card at /.well-known/agent-card.json) or its card's URL, such as
    /// http://127.0.0.1:8123/a2a/tool-router (repeatable).
    #[arg(long, value_name = "URL")]
    pub a2a: Vec<String>,
    /// A header sent to every `--a2a` agent, such as "x-api-key: KEY" or
    /// "Authorization: Bearer TOKEN" (repeatable; also AGENTGRAPH_A2A_HEADER for one).
    #[arg(long, value_name = "NAME: VALUE", env = "AGENTGRAPH_A2A_HEADER")]
    pub a2a_header: Vec<String>,
}

/// `--stream` modes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum StreamArg {
    /// The whole state after each step.
    Values,
    /// Each node's update as it lands.
    Updates,
    /// Model tokens as they are generated.
    Messages,
    /// astream_events v2 events (model, tool and custom events included).
    Events,
}

/// The `react` flow's modes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum ReactMode {
    /// Deterministic routing.
    Static,
    /// A model with tools.
    Llm,
}

/// Log formats.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum LogFormat {
    /// Human-readable lines.
    Text,
    /// One JSON object per line.
    Json,
}

fn parse_key_value(text: &str) -> Result<(String, String), String> {
    match text.split_once('=') {
        Some((key, value)) if !key.trim().is_empty() => {
            Ok((key.trim().to_owned(), value.to_owned()))
        }
        _ => Err(format!("expected KEY=VALUE, got `{text}`")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    #[test]
    fn the_command_line_is_consistent() {
        Cli::command().debug_assert();
    }
}
