//! [`McpClient`]: one live connection to an MCP server, over a child's stdio or streamable
//! HTTP, on the official SDK (`rmcp`).
//!
//! A stdio server is spawned here (not by rmcp's child-process transport, which keeps the
//! process to itself) so that its failures can be told precisely: a program that is not
//! there, one that exits before or after the handshake (its exit status and the last lines of
//! its stderr), one that hangs (the timeout). The child is killed when the last handle to the
//! connection is dropped; [`McpClient::close`] ends it politely first (stdin closed, as the
//! MCP spec asks, then a kill after a grace period). A child gets only [`INHERITED_ENV`] of
//! this process's environment plus its configured `env`: API keys stay with us.

use std::collections::{HashMap, VecDeque};
use std::process::Stdio;
use std::sync::{Arc, Mutex as SyncMutex};
use std::time::Duration;

use rmcp::ServiceExt;
use rmcp::model::{
    CallToolRequestParams, CallToolResult, ClientCapabilities, ClientConfig, Implementation,
    ProtocolVersion,
};
use rmcp::service::{Peer, RoleClient, RunningService, ServiceError};
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use serde_json::{Map, Value};
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, ChildStderr};
use tokio::sync::Mutex;
use tokio::task::JoinHandle;
use tracing::Instrument as _;

use super::config::{McpServerConfig, McpTransport};
use super::error::McpError;
use super::tool::McpTool;

/// How many of a stdio server's last stderr lines are kept for error reports.
const STDERR_LINES: usize = 20;
/// The longest stderr line kept, in characters.
const STDERR_LINE_CHARS: usize = 400;
/// How long a server whose connection broke gets to exit before it is reported as running
/// (and killed), and how long [`McpClient::close`] waits before killing it.
const EXIT_GRACE: Duration = Duration::from_secs(2);

/// A connection to one MCP server. Cheap to clone: clones share the connection, and the
/// tools it makes ([`McpClient::tools`]) hold one, so the server stays up while they exist.
#[derive(Clone)]
pub struct McpClient {
    inner: Arc<Connection>,
}

impl std::fmt::Debug for McpClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("McpClient")
            .field("server", &self.inner.name)
            .field("target", &self.inner.target)
            .field("timeout", &self.inner.timeout)
            .finish_non_exhaustive()
    }
}

struct Connection {
    name: String,
    target: String,
    timeout: Duration,
    peer: Peer<RoleClient>,
    service: Mutex<Option<RunningService<RoleClient, ClientConfig>>>,
    child: Option<ChildProcess>,
}

/// A stdio server's process and what it wrote to stderr.
struct ChildProcess {
    process: Mutex<Child>,
    stderr: Arc<StderrTail>,
    stderr_task: Mutex<Option<JoinHandle<()>>>,
}

/// The last lines a server wrote to stderr.
#[derive(Default)]
struct StderrTail {
    lines: SyncMutex<VecDeque<String>>,
}

impl StderrTail {
    fn push(&self, line: &str) {
        let mut lines = self.lines.lock().unwrap_or_else(|e| e.into_inner());
        if lines.len() == STDERR_LINES {
            lines.pop_front();
        }
        let line: String = line.chars().take(STDERR_LINE_CHARS).collect();
        lines.push_back(line);
    }

    fn text(&self) -> String {
        let lines = self.lines.lock().unwrap_or_else(|e| e.into_inner());
        lines
            .iter()
            .map(String::as_str)
            .collect::<Vec<_>>()
            .join("\n")
    }
}

async fn read_stderr(stderr: ChildStderr, tail: Arc<StderrTail>, server: String) {
    // Bytes, not `lines()`: a line that is not UTF-8 must not stop the reading (the pipe
    // would fill or close, and the server block or die on its next write).
    let mut reader = BufReader::new(stderr);
    let mut buf = Vec::new();
    loop {
        buf.clear();
        match reader.read_until(b'\n', &mut buf).await {
            Ok(0) | Err(_) => break,
            Ok(_) => {
                let line = String::from_utf8_lossy(&buf);
                let line = line.trim_end_matches(['\n', '\r']);
                tracing::debug!(mcp_server = %server, "{line}");
                tail.push(line);
            }
        }
    }
}

/// What a stdio server inherits from this process's environment: the few variables a
/// program needs to start (as the official Python SDK passes), not the provider keys and
/// other secrets beside them. The server's configured `env` adds to these.
pub const INHERITED_ENV: [&str; 6] = ["HOME", "LOGNAME", "PATH", "SHELL", "TERM", "USER"];

fn inherited_env() -> impl Iterator<Item = (&'static str, std::ffi::OsString)> {
    INHERITED_ENV
        .into_iter()
        .filter_map(|name| std::env::var_os(name).map(|value| (name, value)))
}

fn client_config() -> ClientConfig {
    ClientConfig::new(
        ClientCapabilities::default(),
        Implementation::new("agentgraph", env!("CARGO_PKG_VERSION")),
    )
    .with_protocol_version(ProtocolVersion::LATEST_WITH_INITIALIZE)
}

impl McpClient {
    /// Connects to the server `name` as `config` says: starts the program (stdio) or opens
    /// a session (HTTP), and completes the MCP handshake within the server's timeout.
    pub async fn connect(
        name: impl Into<String>,
        config: &McpServerConfig,
    ) -> Result<McpClient, McpError> {
        let name = name.into();
        match &config.transport {
            McpTransport::Stdio {
                command,
                args,
                env,
                cwd,
            } => {
                let mut process = tokio::process::Command::new(command);
                process
                    .args(args)
                    .env_clear()
                    .envs(inherited_env())
                    .envs(env)
                    .stdin(Stdio::piped())
                    .stdout(Stdio::piped())
                    .stderr(Stdio::piped())
                    .kill_on_drop(true);
                if let Some(cwd) = cwd {
                    process.current_dir(cwd);
                }
                connect_stdio(name, config, process).await
            }
            McpTransport::Http { url, headers } => connect_http(name, config, url, headers).await,
        }
    }

    /// The server's name.
    pub fn name(&self) -> &str {
        &self.inner.name
    }

    /// The command line or URL the server was reached at.
    pub fn target(&self) -> &str {
        &self.inner.target
    }

    /// The process id of a stdio server while it runs (`None` for HTTP).
    pub fn process_id(&self) -> Option<u32> {
        let child = self.inner.child.as_ref()?;
        child.process.try_lock().ok()?.id()
    }

    /// The timeout of listing and each call.
    pub fn timeout(&self) -> Duration {
        self.inner.timeout
    }

    /// The server's tools (every page of `tools/list`), named as the server names them
    /// (characters providers refuse replaced by `_`).
    pub async fn tools(&self) -> Result<Vec<McpTool>, McpError> {
        let listed = self
            .request("tools/list", self.inner.peer.list_all_tools())
            .await?;
        listed
            .into_iter()
            .map(|tool| McpTool::new(self.clone(), tool))
            .collect()
    }

    /// Calls the tool the server calls `tool` with `arguments` (an object), returning the
    /// server's result as is (`isError` included); [`McpTool`] is the model-facing form.
    ///
    /// The call is a client span (`tools/call {tool}`, the OpenTelemetry MCP conventions'
    /// `mcp.method.name`, `gen_ai.tool.name`, `network.transport`), and its trace context
    /// goes to the server in `params._meta` (`traceparent`, `tracestate`, `baggage`: the
    /// conventions' carrier, MCP's SEP-414), so a server that reads it joins the trace.
    pub async fn call_tool(
        &self,
        tool: &str,
        arguments: Map<String, Value>,
    ) -> Result<CallToolResult, McpError> {
        let span = tracing::info_span!(
            "mcp_call",
            otel.name = tracing::field::Empty,
            otel.kind = "client",
            mcp.method.name = "tools/call",
            gen_ai.operation.name = "execute_tool",
            gen_ai.tool.name = tool,
            network.transport = if self.inner.child.is_some() {
                "pipe"
            } else {
                "tcp"
            },
            "error.type" = tracing::field::Empty,
            otel.status_code = tracing::field::Empty,
            otel.status_description = tracing::field::Empty,
        );
        let mut params = CallToolRequestParams::new(tool.to_owned()).with_arguments(arguments);
        if !span.is_disabled() {
            span.record("otel.name", format!("tools/call {tool}"));
            params.meta = super::trace::meta_of(&span);
        }
        let result = self
            .request(
                &format!("tools/call `{tool}`"),
                self.inner.peer.call_tool(params),
            )
            .instrument(span.clone())
            .await;
        match &result {
            Err(e) => agent_core::telemetry::record_error(&span, super::trace::error_type(e), e),
            Ok(r) if r.is_error == Some(true) => {
                agent_core::telemetry::record_error(
                    &span,
                    "tool_error",
                    &"the tool answered isError",
                );
            }
            Ok(_) => {}
        }
        result
    }

    /// Ends the session: the connection is closed, a stdio server is given a moment to exit
    /// and killed if it does not. Tools of this client fail after it.
    pub async fn close(&self) {
        let service = self.inner.service.lock().await.take();
        if let Some(service) = service {
            let _ = service.cancel().await;
        }
        if let Some(child) = &self.inner.child {
            let mut process = child.process.lock().await;
            if tokio::time::timeout(EXIT_GRACE, process.wait())
                .await
                .is_err()
            {
                let _ = process.kill().await;
            }
        }
    }

    /// Runs one request under the server's timeout, telling its failures apart.
    async fn request<T>(
        &self,
        request: &str,
        future: impl Future<Output = Result<T, ServiceError>>,
    ) -> Result<T, McpError> {
        match tokio::time::timeout(self.inner.timeout, future).await {
            Ok(Ok(value)) => Ok(value),
            Ok(Err(error)) => Err(self.failure(request, error).await),
            Err(_) => Err(McpError::TimedOut {
                server: self.inner.name.clone(),
                request: request.to_owned(),
                after: self.inner.timeout,
            }),
        }
    }

    async fn failure(&self, request: &str, error: ServiceError) -> McpError {
        let inner = &self.inner;
        match error {
            ServiceError::McpError(data) => McpError::Refused {
                server: inner.name.clone(),
                request: request.to_owned(),
                message: match data.data {
                    Some(extra) => format!("{} ({extra})", data.message),
                    None => data.message.into_owned(),
                },
            },
            ServiceError::Timeout { timeout } => McpError::TimedOut {
                server: inner.name.clone(),
                request: request.to_owned(),
                after: timeout,
            },
            // A reply the client could not use (an unexpected result type, a cancelled
            // request...): this call failed, the server and its other tools are fine.
            other @ (ServiceError::UnexpectedResponse
            | ServiceError::Cancelled { .. }
            | ServiceError::SubscriptionLagged { .. }
            | ServiceError::InputRequiredRoundsExceeded { .. }) => McpError::Refused {
                server: inner.name.clone(),
                request: request.to_owned(),
                message: error_chain(&other),
            },
            // The connection broke: for a child process, find out why (its exit status).
            other => {
                let message = format!("{request} failed: {}", error_chain(&other));
                match &inner.child {
                    Some(child) => child.failure(&inner.name, &inner.target, message).await,
                    None => McpError::Connection {
                        server: inner.name.clone(),
                        target: inner.target.clone(),
                        message,
                        stderr: String::new(),
                    },
                }
            }
        }
    }
}

impl ChildProcess {
    /// Why the connection broke: the process's exit (with its status and stderr) when it
    /// exits within [`EXIT_GRACE`], else `message` (and the process is killed).
    async fn failure(&self, server: &str, command: &str, message: String) -> McpError {
        let status = {
            let mut process = self.process.lock().await;
            match tokio::time::timeout(EXIT_GRACE, process.wait()).await {
                Ok(Ok(status)) => Some(status),
                _ => {
                    let _ = process.kill().await;
                    None
                }
            }
        };
        // After an exit the stderr pipe ends; its reader holds the last lines.
        if let Some(task) = self.stderr_task.lock().await.take() {
            let _ = tokio::time::timeout(EXIT_GRACE, task).await;
        }
        let stderr = self.stderr.text();
        match status {
            Some(status) => McpError::Exited {
                server: server.to_owned(),
                command: command.to_owned(),
                status: status.to_string(),
                stderr,
            },
            None => McpError::Connection {
                server: server.to_owned(),
                target: format!("`{command}`"),
                message,
                stderr,
            },
        }
    }
}

async fn connect_stdio(
    name: String,
    config: &McpServerConfig,
    mut process: tokio::process::Command,
) -> Result<McpClient, McpError> {
    let target = config.describe();
    let mut child = process.spawn().map_err(|source| McpError::Spawn {
        server: name.clone(),
        command: target.clone(),
        source,
    })?;
    let (Some(stdin), Some(stdout), Some(stderr)) =
        (child.stdin.take(), child.stdout.take(), child.stderr.take())
    else {
        return Err(McpError::Connection {
            server: name,
            target,
            message: "the child process has no piped stdio".to_owned(),
            stderr: String::new(),
        });
    };
    let tail = Arc::new(StderrTail::default());
    let task = tokio::spawn(read_stderr(stderr, tail.clone(), name.clone()));
    let child = ChildProcess {
        process: Mutex::new(child),
        stderr: tail,
        stderr_task: Mutex::new(Some(task)),
    };
    let handshake = tokio::time::timeout(
        config.startup_timeout,
        client_config().serve((stdout, stdin)),
    );
    match handshake.await {
        Ok(Ok(service)) => Ok(McpClient {
            inner: Arc::new(Connection {
                name,
                target,
                timeout: config.timeout,
                peer: service.peer().clone(),
                service: Mutex::new(Some(service)),
                child: Some(child),
            }),
        }),
        Ok(Err(error)) => Err(child
            .failure(&name, &target, format!("the MCP handshake failed: {error}"))
            .await),
        Err(_) => {
            let _ = child.process.lock().await.kill().await;
            Err(McpError::TimedOut {
                server: name,
                request: "the handshake (initialize)".to_owned(),
                after: config.startup_timeout,
            })
        }
    }
}

async fn connect_http(
    name: String,
    config: &McpServerConfig,
    url: &str,
    headers: &std::collections::BTreeMap<String, String>,
) -> Result<McpClient, McpError> {
    let mut custom = HashMap::new();
    for (key, value) in headers {
        let bad = |what: &str| McpError::Config {
            message: format!("MCP server `{name}`: header `{key}`: {what}"),
        };
        let key_ = reqwest::header::HeaderName::from_bytes(key.as_bytes())
            .map_err(|_| bad("not a valid header name"))?;
        let value = reqwest::header::HeaderValue::from_str(value)
            .map_err(|_| bad("its value is not a valid header value"))?;
        custom.insert(key_, value);
    }
    // reqwest's rustls comes without a crypto provider; ring's is installed once per process
    // (agent-llm does the same), else building the client panics.
    let _ = rustls::crypto::ring::default_provider().install_default();
    let transport = StreamableHttpClientTransport::from_config(
        StreamableHttpClientTransportConfig::with_uri(url).custom_headers(custom),
    );
    let handshake = tokio::time::timeout(config.startup_timeout, client_config().serve(transport));
    match handshake.await {
        Ok(Ok(service)) => Ok(McpClient {
            inner: Arc::new(Connection {
                name,
                target: url.to_owned(),
                timeout: config.timeout,
                peer: service.peer().clone(),
                service: Mutex::new(Some(service)),
                child: None,
            }),
        }),
        Ok(Err(error)) => Err(McpError::Connection {
            server: name,
            target: url.to_owned(),
            message: format!("cannot connect: {}", error_chain(&error)),
            stderr: String::new(),
        }),
        Err(_) => Err(McpError::TimedOut {
            server: name,
            request: "the handshake (initialize)".to_owned(),
            after: config.startup_timeout,
        }),
    }
}

/// An error and its causes on one line (a refused connection hides under two layers).
fn error_chain(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        let cause_text = cause.to_string();
        if !text.contains(&cause_text) {
            text.push_str(": ");
            text.push_str(&cause_text);
        }
        source = cause.source();
    }
    text
}
