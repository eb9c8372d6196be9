//! The LangGraph server API over agentgraph graphs.
//!
//! LangGraph users deploy a graph behind the LangGraph server and talk to it with
//! `langgraph-sdk` (Python), `@langchain/langgraph-sdk` (JS), Studio or a chat UI. This crate
//! serves the same HTTP API — assistants, threads, runs with SSE streaming, interrupts,
//! double texting — over any set of compiled graphs, so those clients work against a Rust
//! graph unchanged. It is the Rust counterpart of `langgraph.json`: name your graphs, give
//! them a database, serve.
//!
//! ```no_run
//! # use std::sync::Arc;
//! # use agent_core::{GraphState, StateGraph, START, END};
//! # #[derive(GraphState, Clone, Default, Debug)] struct S { value: String }
//! # async fn run() -> Result<(), Box<dyn std::error::Error>> {
//! let graph = StateGraph::<S>::new()
//!     .add_node("upper", |s: Arc<S>| async move { SUpdate::default().value(s.value.to_uppercase()) })
//!     .add_edge(START, "upper")
//!     .add_edge("upper", END);
//! let server = agent_server::Server::builder()
//!     .graph("simple", graph)
//!     .sqlite("agent.db")
//!     .build()
//!     .await?;
//! let listener = tokio::net::TcpListener::bind("127.0.0.1:2024").await?;
//! server.serve(listener).await?;
//! # Ok(()) }
//! ```
//!
//! Every run goes through a queue in the database; `workers` runs execute at once, one per
//! thread at a time. Crons (scheduled runs) queue their runs there at each tick, and a
//! run's `webhook` gets its final result when it ends. Each assistant is also an MCP tool at
//! `/mcp` (streamable HTTP), as LangGraph server exposes it: MCP clients list the graphs and
//! run them, and an agent of the Agent2Agent protocol at `/a2a/{assistant_id}`, which other
//! agents (the `a2a-sdk` clients, Google ADK, CrewAI) discover by its card and talk to in
//! conversations of tasks. State travels as JSON through the state's serde; message fields
//! (reduced by `add_messages`) speak LangChain's message dicts on the wire.

mod api;
pub mod auth;
mod drawing;
mod error;
pub mod graph;
pub mod limits;
mod messages;
pub mod recorder;
mod redact;
mod runs;
mod schema;
pub mod store;
mod time;
mod trace;
mod translate;

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;

use agent_core::{
    Checkpointer, GraphError, GraphState, InMemorySaver, PostgresSaver, SqliteSaver, StateGraph,
};
use serde::de::DeserializeOwned;
use serde_json::Value;

pub use api::guard::{Hosts, Origins};
pub use api::openapi;
pub use api::retention::{ThreadTtl, TtlStrategy};
pub use auth::{Auth, User};
pub use error::ApiError;
pub use graph::{Served, ServedGraph};
pub use limits::Limits;
pub use recorder::SpanRecorder;
pub use runs::Leases;
pub use store::{PostgresStore, RunStore, SqliteStore};
pub use time::{Clock, ManualClock, SystemClock};

use crate::store::Kind;

/// Why a server could not be built or started.
#[derive(Debug, thiserror::Error)]
pub enum ServerError {
    /// A graph did not compile.
    #[error("graph '{id}': {source}")]
    Graph {
        /// The graph id.
        id: String,
        /// Why.
        source: Box<GraphError>,
    },
    /// The database could not be opened.
    #[error("{0}")]
    Store(#[from] store::StoreError),
    /// The checkpointer could not be opened.
    #[error("checkpoints: {0}")]
    Checkpoints(Box<GraphError>),
    /// The long-term memory store could not be opened.
    #[error("store: {0}")]
    Memory(#[from] agent_core::store::StoreError),
    /// No graph to serve.
    #[error("no graphs to serve: add one with Server::builder().graph(id, graph)")]
    NoGraphs,
    /// Two graphs under one id.
    #[error("graph id '{0}' is used twice")]
    DuplicateGraph(String),
    /// Serving failed.
    #[error("serving: {0}")]
    Io(#[from] std::io::Error),
    /// A setting that cannot be used (an empty API key, a malformed origin...).
    #[error("{0}")]
    Config(String),
}

type Compile = Box<
    dyn FnOnce(
            Arc<dyn Checkpointer>,
            Arc<dyn agent_core::store::Store>,
            Option<Value>,
            Option<graph::WriteCheck>,
        ) -> Result<Arc<dyn ServedGraph>, GraphError>
        + Send,
>;

/// Where the server keeps its data.
enum Storage {
    Memory,
    Sqlite(PathBuf),
    Postgres(String),
}

/// A graph added to the builder, compiled by `build`.
struct Pending {
    id: String,
    context_schema: Option<Value>,
    write_check: Option<graph::WriteCheck>,
    description: Option<String>,
    timeout: Option<std::time::Duration>,
    compile: Compile,
}

/// Builds a [`Server`]: its graphs (by id), its database, its limits.
pub struct ServerBuilder {
    graphs: Vec<Pending>,
    storage: Storage,
    workers: usize,
    api_key: Option<String>,
    auth: Option<auth::SharedAuth>,
    origins: Result<Origins, String>,
    hosts: Option<Vec<String>>,
    limits: Limits,
    run_timeout: Option<std::time::Duration>,
    thread_ttl: Option<ThreadTtl>,
    ttl_sweep: std::time::Duration,
    body_limit: usize,
    leases: runs::Leases,
    grace: std::time::Duration,
    web_page: bool,
    mcp: bool,
    a2a: bool,
    memory: Option<Arc<dyn agent_core::store::Store>>,
    store_index: Option<agent_core::store::IndexConfig>,
    clock: Arc<dyn Clock>,
    cron_poll: std::time::Duration,
    webhooks: runs::webhook::WebhookPolicy,
    recorder: Option<recorder::SpanRecorder>,
}

impl ServerBuilder {
    /// Serves `graph` under `id`; each run's `context` JSON (over its assistant's) is
    /// deserialized into the graph's context type (`()` takes none), which `/schemas`
    /// reports as the graph's `context_schema` (Studio's configuration form).
    pub fn graph<S, C>(self, id: impl Into<String>, graph: StateGraph<S, C>) -> Self
    where
        S: GraphState,
        C: DeserializeOwned + schemars::JsonSchema + Send + Sync + 'static,
    {
        let schema = serde_json::to_value(schemars::schema_for!(C)).unwrap_or(Value::Null);
        // The caller (`langgraph_auth_user`, on a server with auth) reaches a context type
        // that declares the field, and is left out of one that does not.
        let wants_user = schema["properties"].get(api::AUTH_USER).is_some();
        let schema = (schema["type"] != "null").then_some(schema);
        self.graph_with_context(id, graph, move |context: &Value| {
            let mut context = context.clone();
            if !wants_user && let Some(c) = context.as_object_mut() {
                c.remove(api::AUTH_USER);
            }
            let empty = context.as_object().is_none_or(|o| o.is_empty()) || context.is_null();
            let parse = |v: Value| serde_path_to_error::deserialize::<_, C>(v);
            parse(context)
                .or_else(|e| {
                    if empty {
                        parse(Value::Null).map_err(|_| e)
                    } else {
                        Err(e)
                    }
                })
                .map_err(|e| match e.path().to_string().as_str() {
                    "." => format!("the run's context does not fit the graph: {}", e.inner()),
                    path => format!("context.{path}: {}", e.inner()),
                })
        })
        .context_schema_opt(schema)
    }

    /// Reports `schema` (a JSON Schema object) as the `context_schema` of the graph added
    /// last, for graphs added with [`graph_with_context`](Self::graph_with_context) or
    /// [`graph_with_turns`](Self::graph_with_turns).
    pub fn context_schema(self, schema: Value) -> Self {
        self.context_schema_opt(Some(schema))
    }

    fn context_schema_opt(mut self, schema: Option<Value>) -> Self {
        if let Some(last) = self.graphs.last_mut() {
            last.context_schema = schema;
        }
        self
    }

    /// Checks every client write to the state of the graph added last (a run's input, a
    /// command's `update`, `update_state`'s values) with `check` before it is taken: an
    /// `Err` is a 422 carrying its message (see [`graph::WriteCheck`]).
    pub fn write_check(
        mut self,
        check: impl Fn(&Value) -> Result<(), String> + Send + Sync + 'static,
    ) -> Self {
        if let Some(last) = self.graphs.last_mut() {
            last.write_check = Some(Arc::new(check));
        }
        self
    }

    /// Describes the graph added last: its system assistant's `description`, which clients
    /// (and the web page) show beside the graph's name.
    pub fn description(mut self, text: impl Into<String>) -> Self {
        if let Some(last) = self.graphs.last_mut() {
            last.description = Some(text.into());
        }
        self
    }

    /// The time limit of the graph added last's runs (over [`run_timeout`](Self::run_timeout)).
    pub fn graph_timeout(mut self, limit: std::time::Duration) -> Self {
        if let Some(last) = self.graphs.last_mut() {
            last.timeout = Some(limit);
        }
        self
    }

    /// How long a run may take (default: no limit, as langgraph-api without
    /// `BG_JOB_TIMEOUT_SECS`): a run past it is stopped as a cancel stops it and ends
    /// `timeout`, with an error its clients see; its last checkpoint is kept.
    pub fn run_timeout(mut self, limit: std::time::Duration) -> Self {
        self.run_timeout = Some(limit);
        self
    }

    /// The ttl of threads created without one of their own (default: none, kept until
    /// deleted): `delete` deletes a thread that long after its last activity, `keep_latest`
    /// keeps only its latest checkpoint.
    pub fn thread_ttl(mut self, ttl: ThreadTtl) -> Self {
        self.thread_ttl = Some(ttl);
        self
    }

    /// How often expired threads are looked for (default: every minute); each look takes
    /// at most 100.
    pub fn ttl_sweep(mut self, every: std::time::Duration) -> Self {
        self.ttl_sweep = every.max(std::time::Duration::from_millis(10));
        self
    }

    /// Serves the web page (chat, drawings, threads) at `/` for browsers and under `/ui/`
    /// (default: on). API clients asking `/` for JSON get `{"ok": true}` either way.
    pub fn web_page(mut self, on: bool) -> Self {
        self.web_page = on;
        self
    }

    /// Serves every assistant as an MCP tool at `/mcp` (streamable HTTP, as LangGraph
    /// server does; default: on): MCP clients list the graphs and run them statelessly.
    pub fn mcp(mut self, on: bool) -> Self {
        self.mcp = on;
        self
    }

    /// Serves every assistant as an agent of the Agent2Agent protocol at
    /// `/a2a/{assistant_id}`, with its card at `/.well-known/agent-card.json?assistant_id=...`
    /// (as LangGraph server does; default: on).
    pub fn a2a(mut self, on: bool) -> Self {
        self.a2a = on;
        self
    }

    /// Serves `graph` under `id`, building each run's context with `context` from the
    /// run's `context` JSON; an `Err` refuses the run with a 422 carrying its message.
    pub fn graph_with_context<S, C>(
        mut self,
        id: impl Into<String>,
        graph: StateGraph<S, C>,
        context: impl Fn(&Value) -> Result<C, String> + Send + Sync + 'static,
    ) -> Self
    where
        S: GraphState,
        C: Send + Sync + 'static,
    {
        let context: graph::ContextFn<C> = Arc::new(context);
        let id = id.into();
        let name = id.clone();
        self.graphs.push(Pending::new(
            id,
            Box::new(move |saver, memory, schema, check| {
                // Its runs' spans are `invoke_agent {id}` (`gen_ai.agent.name`).
                let compiled = graph
                    .compile_with(saver)?
                    .with_store(memory)
                    .with_name(name);
                let mut served = Served::new(compiled, context);
                if let Some(schema) = schema {
                    served = served.with_context_schema(schema);
                }
                if let Some(check) = check {
                    served = served.with_write_check(check);
                }
                Ok(Arc::new(served) as Arc<dyn ServedGraph>)
            }),
        ));
        self
    }

    /// Like [`graph_with_context`](Self::graph_with_context), and a chat turn (an input of
    /// one human message, what chat UIs send) becomes the graph's input through
    /// `turn(message, context)`, the message whole (its id and content blocks as sent): for
    /// graphs whose input is more than their messages (see [`graph::TurnFn`]).
    pub fn graph_with_turns<S, C>(
        mut self,
        id: impl Into<String>,
        graph: StateGraph<S, C>,
        context: impl Fn(&Value) -> Result<C, String> + Send + Sync + 'static,
        turn: impl Fn(agent_llm::HumanMessage, &Value) -> Result<S::Update, String>
        + Send
        + Sync
        + 'static,
    ) -> Self
    where
        S: GraphState,
        C: Send + Sync + 'static,
    {
        let context: graph::ContextFn<C> = Arc::new(context);
        let turn: graph::TurnFn<S::Update> = Arc::new(turn);
        let id = id.into();
        let name = id.clone();
        self.graphs.push(Pending::new(
            id,
            Box::new(move |saver, memory, schema, check| {
                let compiled = graph
                    .compile_with(saver)?
                    .with_store(memory)
                    .with_name(name);
                let mut served = Served::new(compiled, context).with_turns(turn);
                if let Some(schema) = schema {
                    served = served.with_context_schema(schema);
                }
                if let Some(check) = check {
                    served = served.with_write_check(check);
                }
                Ok(Arc::new(served) as Arc<dyn ServedGraph>)
            }),
        ));
        self
    }

    /// Keeps assistants, threads, runs and checkpoints in the SQLite file at `path`
    /// (created if missing). Without it, everything lives in memory and is gone at exit.
    pub fn sqlite(mut self, path: impl Into<PathBuf>) -> Self {
        self.storage = Storage::Sqlite(path.into());
        self
    }

    /// Keeps everything in PostgreSQL at `url` (`postgres://user@host/db?sslmode=...`), for
    /// many instances on one database: each claims runs from the shared queue, holds a
    /// lease on what it runs, and takes over the runs of an instance that stopped.
    pub fn postgres(mut self, url: impl Into<String>) -> Self {
        self.storage = Storage::Postgres(url.into());
        self
    }

    /// Uses `store` as the long-term memory (`/store/*`, and `ctx.store()` in the graphs)
    /// instead of the default: a store in the server's SQLite file or PostgreSQL database
    /// (in memory without one). For a store with an index (semantic search) or TTLs.
    pub fn store(mut self, store: Arc<dyn agent_core::store::Store>) -> Self {
        self.memory = Some(store);
        self
    }

    /// Embeds the items of the store the server opens (in its SQLite file, its PostgreSQL
    /// database or in memory) with `index`, so searches with a `query` rank by meaning
    /// (`POST /store/items/search`, and `ctx.store()` in the graphs). Without one a query is
    /// ignored, as langgraph-api does. A store given with [`store`](Self::store) brings its
    /// own index instead.
    pub fn store_index(mut self, index: agent_core::store::IndexConfig) -> Self {
        self.store_index = Some(index);
        self
    }

    /// Leases on a shared store (default: 20 s, 3 attempts): how long an instance that
    /// stopped holds its runs before another takes them over.
    pub fn leases(mut self, leases: Leases) -> Self {
        self.leases = leases;
        self
    }

    /// How long a stopping server lets its runs finish before handing them back to the
    /// queue (default 30 s).
    pub fn shutdown_grace(mut self, grace: std::time::Duration) -> Self {
        self.grace = grace;
        self
    }

    /// The clock crons are due by (default: the system's); tests pass a [`ManualClock`].
    pub fn clock(mut self, clock: Arc<dyn Clock>) -> Self {
        self.clock = clock;
        self
    }

    /// How often the cron scheduler looks for due crons (default 1 s): a tick fires at most
    /// this late.
    pub fn cron_poll(mut self, every: std::time::Duration) -> Self {
        self.cron_poll = every.max(std::time::Duration::from_millis(10));
        self
    }

    /// Answers `GET /threads/{thread_id}/runs/{run_id}/trace` (the web page's trace view)
    /// from `recorder`, whose [`layer`](SpanRecorder::layer) the program adds to its
    /// subscriber (`agent serve` does). Without it the route is a 404 that says so.
    pub fn span_recorder(mut self, recorder: SpanRecorder) -> Self {
        self.recorder = Some(recorder);
        self
    }

    /// Allows webhooks to loopback, private and link-local addresses (default: refused,
    /// so a run's creator cannot make the server call into its own network).
    pub fn allow_private_webhooks(mut self, allow: bool) -> Self {
        self.webhooks.allow_private = allow;
        self
    }

    /// How a webhook delivery retries (default: 5 tries, the first retry after 500 ms and
    /// each next after twice as long) and how long one try may take (default 10 s).
    pub fn webhook_retries(
        mut self,
        attempts: u32,
        backoff: std::time::Duration,
        timeout: std::time::Duration,
    ) -> Self {
        self.webhooks.attempts = attempts.max(1);
        self.webhooks.backoff = backoff;
        self.webhooks.timeout = timeout;
        self
    }

    /// How many runs execute at once (default 10).
    pub fn workers(mut self, n: usize) -> Self {
        self.workers = n.max(1);
        self
    }

    /// Requires this key in every request's `x-api-key` header (but `/ok`'s): the
    /// operator's, with all access. An empty key fails [`build`](Self::build). For users
    /// of their own (a keys file, JWTs, your own check), use [`auth`](Self::auth).
    pub fn api_key(mut self, key: impl Into<String>) -> Self {
        self.api_key = Some(key.into());
        self
    }

    /// Authenticates every request (but `/ok`'s, preflights and the web page's files) and
    /// authorizes each action with `auth` (see [`auth`]): the users, what they
    /// own, what they may do. Without it the server serves one trusted person on loopback.
    pub fn auth(mut self, auth: impl Auth) -> Self {
        self.auth = Some(Arc::new(auth));
        self
    }

    /// The web origins whose pages may call the API, replacing the default (Studio,
    /// `https://smith.langchain.com`, and loopback origins); `*` allows any. The server's
    /// own page is always allowed. A malformed origin fails [`build`](Self::build).
    pub fn cors_allow_origins<I, S>(mut self, origins: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: AsRef<str>,
    {
        self.origins = Origins::list(origins);
        self
    }

    /// Host names a server without auth answers to besides loopback ones (`*`: any; a
    /// server with auth answers to any). Without auth, any page could otherwise reach a
    /// loopback server through a name that resolves to 127.0.0.1 (DNS rebinding).
    pub fn allowed_hosts<I, S>(mut self, hosts: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.hosts = Some(hosts.into_iter().map(Into::into).collect());
        self
    }

    /// What one request, user, thread or run may ask of the server (see [`Limits`]).
    pub fn limits(mut self, limits: Limits) -> Self {
        self.limits = limits;
        self
    }

    /// The largest request body accepted (default 16 MiB); larger ones get a 413.
    pub fn body_limit(mut self, bytes: usize) -> Self {
        self.body_limit = bytes;
        self
    }

    /// Compiles the graphs against the checkpointer and opens the run store (connecting to
    /// PostgreSQL when asked).
    pub async fn build(self) -> Result<Server, ServerError> {
        if self.graphs.is_empty() {
            return Err(ServerError::NoGraphs);
        }
        let origins = self.origins.map_err(ServerError::Config)?;
        let auth: Option<auth::SharedAuth> = match (self.auth, &self.api_key) {
            (Some(_), Some(_)) => {
                return Err(ServerError::Config(
                    "give the API key to the auth (auth::ApiKeys::with_operator) rather than both api_key and auth".to_owned(),
                ));
            }
            (Some(auth), None) => Some(auth),
            (None, Some(key)) => {
                let keys =
                    auth::ApiKeys::operator(key).map_err(|e| ServerError::Config(e.to_string()))?;
                Some(Arc::new(auth::Builtin::new().keys(keys)))
            }
            (None, None) => None,
        };
        let hosts = match (&auth, self.hosts) {
            (_, Some(h)) if h.iter().any(|h| h == "*") => Hosts::Any,
            (Some(_), _) => Hosts::Any,
            (None, h) => Hosts::Loopback(h.unwrap_or_default()),
        };
        type Opened = (
            Arc<dyn RunStore>,
            Arc<dyn Checkpointer>,
            Arc<dyn agent_core::store::Store>,
        );
        if self.memory.is_some() && self.store_index.is_some() {
            return Err(ServerError::Config(
                "give the index to the store passed with `store` rather than both store and store_index".to_owned(),
            ));
        }
        let index = self.store_index;
        let mut postgres = None;
        let (store, saver, memory): Opened = match &self.storage {
            Storage::Postgres(url) => {
                let saver = PostgresSaver::connect(url)
                    .await
                    .map_err(|e| ServerError::Checkpoints(Box::new(e)))?;
                let store = PostgresStore::open(&saver, url).await?;
                let memory = match self.memory {
                    Some(memory) => memory,
                    None => {
                        let memory =
                            agent_core::store::PostgresStore::from_pool(saver.pool().clone())
                                .await?;
                        match index {
                            Some(index) => Arc::new(memory.with_index(index)),
                            None => Arc::new(memory),
                        }
                    }
                };
                postgres = Some(saver.clone());
                (Arc::new(store), Arc::new(saver), memory)
            }
            Storage::Memory => (
                Arc::new(SqliteStore::in_memory()?),
                Arc::new(InMemorySaver::new()),
                self.memory.unwrap_or_else(|| {
                    let memory = agent_core::store::InMemoryStore::new();
                    match index {
                        Some(index) => Arc::new(memory.with_index(index)),
                        None => Arc::new(memory),
                    }
                }),
            ),
            Storage::Sqlite(path) => {
                let store = Arc::new(SqliteStore::open_with(path, self.leases.max_attempts)?);
                let saver =
                    SqliteSaver::open(path).map_err(|e| ServerError::Checkpoints(Box::new(e)))?;
                let memory = match self.memory {
                    Some(memory) => memory,
                    None => {
                        let memory = agent_core::store::SqliteStore::open(path)?;
                        match index {
                            Some(index) => Arc::new(memory.with_index(index)),
                            None => Arc::new(memory),
                        }
                    }
                };
                (store, Arc::new(saver), memory)
            }
        };
        let mut graphs = BTreeMap::new();
        let mut descriptions = BTreeMap::new();
        let mut timeouts = runs::Timeouts {
            default: self.run_timeout,
            per_graph: BTreeMap::new(),
        };
        for pending in self.graphs {
            let id = pending.id;
            if let Some(limit) = pending.timeout {
                timeouts.per_graph.insert(id.clone(), limit);
            }
            if graphs.contains_key(&id) {
                return Err(ServerError::DuplicateGraph(id));
            }
            let served = (pending.compile)(
                saver.clone(),
                memory.clone(),
                pending.context_schema,
                pending.write_check,
            )
            .map_err(|source| ServerError::Graph {
                id: id.clone(),
                source: Box::new(source),
            })?;
            if let Some(text) = pending.description {
                descriptions.insert(id.clone(), text);
            }
            graphs.insert(id, served);
        }
        let graphs = Arc::new(graphs);
        let runs = runs::Runs::new(
            store.clone(),
            graphs.clone(),
            self.workers,
            self.leases,
            self.webhooks,
            self.limits.clone(),
            saver.clone(),
            postgres,
            timeouts,
        );
        Ok(Server {
            app: Arc::new(api::App {
                store,
                graphs,
                runs,
                auth,
                limits: self.limits,
                streams: Arc::default(),
                guard: Arc::new(api::guard::Guard { origins, hosts }),
                web_page: self.web_page,
                mcp: self.mcp,
                a2a: self.a2a,
                memory,
                scheduling: api::Scheduling {
                    clock: self.clock,
                    poll: self.cron_poll,
                },
                shutdown: tokio::sync::watch::channel(false).0,
                thread_ttl: self.thread_ttl,
                recorder: self.recorder,
                body_limit: self.body_limit,
            }),
            descriptions,
            body_limit: self.body_limit,
            grace: self.grace,
            ttl_sweep: self.ttl_sweep,
        })
    }
}

/// The LangGraph API over a set of graphs.
pub struct Server {
    app: Arc<api::App>,
    descriptions: BTreeMap<String, String>,
    body_limit: usize,
    grace: std::time::Duration,
    ttl_sweep: std::time::Duration,
}

impl Server {
    /// A builder with no graphs, in-memory storage, 10 workers, no API key.
    pub fn builder() -> ServerBuilder {
        ServerBuilder {
            graphs: Vec::new(),
            storage: Storage::Memory,
            workers: 10,
            api_key: None,
            auth: None,
            origins: Ok(Origins::default()),
            hosts: None,
            limits: Limits::default(),
            run_timeout: None,
            thread_ttl: None,
            ttl_sweep: std::time::Duration::from_secs(60),
            body_limit: 16 * 1024 * 1024,
            leases: Leases::default(),
            grace: std::time::Duration::from_secs(30),
            web_page: true,
            mcp: true,
            a2a: true,
            memory: None,
            store_index: None,
            clock: Arc::new(SystemClock),
            cron_poll: std::time::Duration::from_secs(1),
            webhooks: runs::webhook::WebhookPolicy::default(),
            recorder: None,
        }
    }

    /// The graph ids served.
    pub fn graph_ids(&self) -> Vec<String> {
        self.app.graphs.keys().cloned().collect()
    }

    /// Writes the system assistants (one per graph) and starts the workers; returns the
    /// router, ready for `axum::serve` or tests. Needs a tokio runtime.
    pub async fn start(&self) -> Result<axum::Router, ServerError> {
        for id in self.app.graphs.keys() {
            let description = self.descriptions.get(id).map(String::as_str);
            let doc = api::system_assistant(id, description);
            if !self.app.store.insert(Kind::Assistant, &doc).await? {
                // Kept from an earlier start: its description follows the code's.
                let aid = doc["assistant_id"].as_str().unwrap_or_default();
                if let Some(mut kept) = self.app.store.get(Kind::Assistant, aid).await?
                    && kept["description"] != doc["description"]
                {
                    kept["description"] = doc["description"].clone();
                    self.app.store.put(Kind::Assistant, &kept).await?;
                }
            }
            let aid = doc["assistant_id"].as_str().unwrap_or_default().to_owned();
            if self.app.store.versions(&aid).await?.is_empty() {
                self.app.store.put_version(&aid, 1, &doc).await?;
            }
        }
        // Threads a stopped server left `busy` with no run (it stopped between a run's end
        // and its thread's update) are set right before serving.
        if let Err(e) = self.app.runs.repair_busy().await {
            tracing::warn!(error = %e.detail, "looking for threads left busy failed");
        }
        self.app.runs.spawn_workers();
        api::spawn_scheduler(self.app.clone());
        api::retention::spawn_sweeper(self.app.clone(), self.ttl_sweep);
        Ok(api::router(self.app.clone(), self.body_limit))
    }

    /// Serves on `listener` until ctrl-c or SIGTERM; then stops accepting requests, lets
    /// the runs executing here finish within the shutdown grace, and hands the rest back to
    /// the queue: another instance takes them over (PostgreSQL), or the next start resumes
    /// them (SQLite), from their last checkpoint.
    pub async fn serve(self, listener: tokio::net::TcpListener) -> Result<(), ServerError> {
        let router = self.start().await?;
        // Without TCP_NODELAY a response's second write (an SSE event after the headers, a
        // `/wait` result after its headers) waits for the client's delayed ACK: 40 ms on a
        // kept-alive connection, as every SDK holds one.
        let listener = axum::serve::ListenerExt::tap_io(listener, |tcp| {
            if let Err(e) = tcp.set_nodelay(true) {
                tracing::warn!(error = %e, "cannot set TCP_NODELAY");
            }
        });
        // On ctrl-c or SIGTERM: no more claims; the runs executing here get the grace to
        // finish (their streams go on meanwhile), the rest are handed back; then the open
        // streams end with a last event, and the server waits for its connections to close.
        let app = self.app.clone();
        let grace = self.grace;
        axum::serve(listener, router)
            .with_graceful_shutdown(async move {
                shutdown().await;
                app.runs.drain(grace).await;
                app.shutdown.send_replace(true);
            })
            .await?;
        Ok(())
    }
}

impl Pending {
    fn new(id: String, compile: Compile) -> Self {
        Pending {
            id,
            context_schema: None,
            write_check: None,
            description: None,
            timeout: None,
            compile,
        }
    }
}

async fn shutdown() {
    let ctrl_c = tokio::signal::ctrl_c();
    #[cfg(unix)]
    {
        let mut term =
            match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
                Ok(s) => s,
                Err(_) => {
                    let _ = ctrl_c.await;
                    return;
                }
            };
        tokio::select! {
            _ = ctrl_c => {}
            _ = term.recv() => {}
        }
    }
    #[cfg(not(unix))]
    {
        let _ = ctrl_c.await;
    }
}
