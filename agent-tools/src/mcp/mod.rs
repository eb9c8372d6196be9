//! Tools from MCP servers (the Model Context Protocol), as `langchain-mcp-adapters` gives
//! them to LangGraph: connect to servers, list their tools, and use each as a [`DynTool`] in a
//! [`ToolRegistry`], so `create_react_agent`, `ToolNode` and the flows call them like any tool.
//!
//! Why here, and on `rmcp`: tools are this crate's subject, and MCP servers are where most
//! tools now come from; `rmcp` is the protocol's official Rust SDK (the same one agent-server
//! serves `/mcp` with), so protocol versions, pagination and the streamable-HTTP session rules
//! are the SDK's, not ours. Behind the `mcp` feature, since it brings a process spawner and an
//! HTTP client.
//!
//! - [`McpServerConfig`]: one server, a program spoken to over stdio (command, args, env) or a
//!   streamable-HTTP URL (with headers), with a timeout for listing and each call
//!   ([`DEFAULT_TIMEOUT`], 60 s) and one for start-up ([`DEFAULT_STARTUP_TIMEOUT`], 60 s). [`McpConfig`] holds many by name and reads the
//!   `mcpServers` JSON of Claude Desktop and Cursor.
//! - [`McpClient`]: one connection; [`MultiServerMcpClient`] connects many at once.
//! - [`McpTool`]: one tool. Its name, description and input schema are the server's; the
//!   call checks the arguments against the schema ([`crate::schema`]), then asks the server.
//!
//! # Errors reach the model as tool errors
//!
//! A result with `isError`, an error the server answers with, a call that outlives the
//! timeout ([`ToolError::TimedOut`]; the server is told to cancel)
//! and a server that died (its exit status and the end of its stderr) are each a
//! [`ToolError`], which `ToolNode` turns into an error `ToolMessage` the
//! model reads. Starting a server that does not exist, exits or hangs fails
//! [`McpClient::connect`] with an [`McpError`] that says which server, which command, and
//! what it wrote to stderr.
//!
//! # Results
//!
//! Text content is the result's text (blocks joined by newlines); images, audio and binary
//! resources, which a tool message cannot carry, become a note such as
//! `[image: image/png, 68 bytes]`; embedded text resources their text; resource links a
//! note with their URI. A result with no content is its `structuredContent`, as JSON. See
//! [`output_of`].
//!
//! # Names
//!
//! A tool keeps the server's name (characters providers refuse, outside `A-Za-z0-9_-`, made
//! `_`). Only on a collision — two servers with a tool of the same name, or a name already
//! taken by the program's own tools ([`MultiServerMcpClient::tools_avoiding`]) — does each
//! colliding tool get its server's name as a prefix: `search` of the servers `web` and
//! `docs` becomes `web_search` and `docs_search`. The server is always called with its own
//! name.
//!
//! # Lifetime
//!
//! A stdio server runs as a child process while its client or any of its tools exists, and is
//! killed when the last is dropped; [`MultiServerMcpClient::close`] ends the sessions
//! politely first (stdin closed, a grace period, then a kill).
//!
//! # Example
//!
//! ```no_run
//! use std::sync::Arc;
//! use agent_tools::mcp::{McpConfig, MultiServerMcpClient};
//! use agent_tools::{ToolRegistry, create_react_agent};
//! # async fn run(model: Arc<dyn agent_llm::ChatModel>) -> Result<(), Box<dyn std::error::Error>> {
//! let config = McpConfig::from_json(r#"{"mcpServers": {
//!     "math": {"command": "python", "args": ["math_server.py"]},
//!     "weather": {"url": "http://127.0.0.1:8000/mcp"}
//! }}"#)?;
//! let servers = MultiServerMcpClient::connect(&config).await?;
//! let registry = servers.registry().await?;
//! let agent = create_react_agent(model, registry).build()?;
//! # let _ = agent; Ok(()) }
//! ```
//!
//! [`DynTool`]: crate::DynTool
//! [`ToolRegistry`]: crate::ToolRegistry

mod client;
mod config;
mod error;
mod tool;
mod trace;

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

pub use client::{INHERITED_ENV, McpClient};
pub use config::{
    DEFAULT_STARTUP_TIMEOUT, DEFAULT_TIMEOUT, McpConfig, McpServerConfig, McpTransport,
};
pub use error::McpError;
pub use tool::{McpTool, output_of};

use crate::error::ToolError;
use crate::registry::ToolRegistry;
use crate::tool::DynTool;

/// Connections to several MCP servers (langchain-mcp-adapters' `MultiServerMCPClient`).
#[derive(Clone, Debug, Default)]
pub struct MultiServerMcpClient {
    clients: Vec<McpClient>,
}

impl MultiServerMcpClient {
    /// Connects to every server of `config` at once. When one fails, the others are closed
    /// and the first failure (in name order) is the error.
    pub async fn connect(config: &McpConfig) -> Result<Self, McpError> {
        let attempts = futures::future::join_all(
            config
                .iter()
                .map(|(name, server)| McpClient::connect(name, server)),
        )
        .await;
        let mut clients = Vec::new();
        let mut failure = None;
        for attempt in attempts {
            match attempt {
                Ok(client) => clients.push(client),
                Err(error) => {
                    failure.get_or_insert(error);
                }
            }
        }
        if let Some(error) = failure {
            futures::future::join_all(clients.iter().map(McpClient::close)).await;
            return Err(error);
        }
        Ok(MultiServerMcpClient { clients })
    }

    /// These connections and `client`.
    pub fn with_client(mut self, client: McpClient) -> Self {
        self.clients.push(client);
        self
    }

    /// The connections, in name order.
    pub fn clients(&self) -> &[McpClient] {
        &self.clients
    }

    /// Every server's tools, named as the module docs say (a prefix only on a collision).
    pub async fn tools(&self) -> Result<Vec<McpTool>, McpError> {
        self.tools_avoiding(&[]).await
    }

    /// [`tools`](Self::tools), with `taken` (the program's own tools' names) counted as
    /// collisions too: an MCP tool named like one of them gets its server's prefix.
    pub async fn tools_avoiding(&self, taken: &[&str]) -> Result<Vec<McpTool>, McpError> {
        let listed =
            futures::future::try_join_all(self.clients.iter().map(McpClient::tools)).await?;
        resolve_names(listed.into_iter().flatten().collect(), taken)
    }

    /// A registry of every server's tools.
    pub async fn registry(&self) -> Result<ToolRegistry, McpError> {
        let mut registry = ToolRegistry::new();
        for tool in self.tools().await? {
            let name = tool.name().to_owned();
            let server = tool.server().to_owned();
            registry
                .register_arc(Arc::new(tool))
                .map_err(|e: ToolError| McpError::ToolName {
                    server,
                    tool: name,
                    message: e.to_string(),
                })?;
        }
        Ok(registry)
    }

    /// Ends every session (see [`McpClient::close`]).
    pub async fn close(&self) {
        futures::future::join_all(self.clients.iter().map(McpClient::close)).await;
    }
}

/// Names the tools: each keeps its own name unless another server's tool or `taken` has it,
/// then every holder gets `server_name`. A name that still collides is an error.
fn resolve_names(tools: Vec<McpTool>, taken: &[&str]) -> Result<Vec<McpTool>, McpError> {
    let mut servers_by_name: HashMap<String, HashSet<String>> = HashMap::new();
    for tool in &tools {
        servers_by_name
            .entry(tool.name().to_owned())
            .or_default()
            .insert(tool.server().to_owned());
    }
    let taken: HashSet<&str> = taken.iter().copied().collect();
    let mut used: HashSet<String> = taken.iter().map(|t| (*t).to_owned()).collect();
    let mut named = Vec::with_capacity(tools.len());
    for tool in tools {
        let collides = taken.contains(tool.name())
            || servers_by_name
                .get(tool.name())
                .is_some_and(|s| s.len() > 1);
        let name = if collides {
            format!("{}_{}", tool::sanitize(tool.server()), tool.name())
        } else {
            tool.name().to_owned()
        };
        if !crate::registry::is_valid_tool_name(&name) {
            return Err(McpError::ToolName {
                server: tool.server().to_owned(),
                tool: tool.remote_name().to_owned(),
                message: format!(
                    "`{name}` (prefixed with the server's name, as another tool has the same name) is longer than the 64 characters model providers accept; give the server a shorter name"
                ),
            });
        }
        if !used.insert(name.clone()) {
            return Err(McpError::ToolName {
                server: tool.server().to_owned(),
                tool: tool.remote_name().to_owned(),
                message: format!(
                    "the name `{name}` is already taken by another tool; rename the server"
                ),
            });
        }
        named.push(tool.renamed(name));
    }
    Ok(named)
}
