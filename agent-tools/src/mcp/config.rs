//! Where MCP servers are: one server's connection ([`McpServerConfig`], a command or a URL)
//! and many by name ([`McpConfig`]), read from the `mcpServers` JSON that Claude Desktop,
//! Cursor and other MCP clients write, so an existing file works as is.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::Deserialize;
use serde_json::Value;

use super::error::McpError;

/// How long listing the tools and each tool call may take unless a server says.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(60);
/// How long start-up (the process starting and the MCP handshake) may take unless set.
pub const DEFAULT_STARTUP_TIMEOUT: Duration = Duration::from_secs(60);

/// How to reach one server.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum McpTransport {
    /// A program started as a child process, speaking MCP on its stdin and stdout (its stderr
    /// is kept for error reports and logged at debug level).
    Stdio {
        /// The program (looked up on `PATH`).
        command: String,
        /// Its arguments.
        args: Vec<String>,
        /// Variables added to the environment it inherits.
        env: BTreeMap<String, String>,
        /// Its working directory (default: ours).
        cwd: Option<PathBuf>,
    },
    /// A server at a URL, over streamable HTTP.
    Http {
        /// The MCP endpoint, e.g. `http://127.0.0.1:8000/mcp`.
        url: String,
        /// Headers sent with every request (`Authorization`, API keys).
        headers: BTreeMap<String, String>,
    },
}

/// One server: how to reach it and how long to wait for it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct McpServerConfig {
    /// How to reach it.
    pub transport: McpTransport,
    /// The longest tool listing or tool call ([`DEFAULT_TIMEOUT`] unless set).
    pub timeout: Duration,
    /// The longest start-up: spawning or reaching the server and the MCP handshake
    /// ([`DEFAULT_STARTUP_TIMEOUT`] unless set).
    pub startup_timeout: Duration,
}

impl McpServerConfig {
    /// A server started as `command args...`.
    pub fn stdio<I, S>(command: impl Into<String>, args: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        McpServerConfig {
            transport: McpTransport::Stdio {
                command: command.into(),
                args: args.into_iter().map(Into::into).collect(),
                env: BTreeMap::new(),
                cwd: None,
            },
            timeout: DEFAULT_TIMEOUT,
            startup_timeout: DEFAULT_STARTUP_TIMEOUT,
        }
    }

    /// A server started from a command line such as `python my_server.py --verbose`, split
    /// as a POSIX shell splits words (quotes and backslashes; no variables, no globs).
    pub fn command_line(line: &str) -> Result<Self, McpError> {
        let words = shlex::split(line).ok_or_else(|| McpError::Config {
            message: format!(
                "cannot split the command `{line}` into words: a quote is not closed or it ends with a lone backslash"
            ),
        })?;
        let mut words = words.into_iter();
        let command = words.next().ok_or_else(|| McpError::Config {
            message: "the MCP server command is empty; give a program and its arguments, e.g. `python my_server.py`".to_owned(),
        })?;
        Ok(McpServerConfig::stdio(command, words))
    }

    /// A server at `url`, over streamable HTTP.
    pub fn http(url: impl Into<String>) -> Self {
        McpServerConfig {
            transport: McpTransport::Http {
                url: url.into(),
                headers: BTreeMap::new(),
            },
            timeout: DEFAULT_TIMEOUT,
            startup_timeout: DEFAULT_STARTUP_TIMEOUT,
        }
    }

    /// This server with an environment variable set (stdio) — ignored for HTTP servers.
    pub fn with_env(mut self, key: impl Into<String>, value: impl Into<String>) -> Self {
        if let McpTransport::Stdio { env, .. } = &mut self.transport {
            env.insert(key.into(), value.into());
        }
        self
    }

    /// This server with a header sent on every request (HTTP) — ignored for stdio servers.
    pub fn with_header(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
        if let McpTransport::Http { headers, .. } = &mut self.transport {
            headers.insert(name.into(), value.into());
        }
        self
    }

    /// This server with another timeout for listing and each call.
    pub fn with_timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    /// This server with another timeout for start-up (spawn or connect, and the handshake).
    pub fn with_startup_timeout(mut self, timeout: Duration) -> Self {
        self.startup_timeout = timeout;
        self
    }

    /// What the server is, for messages: the command line or the URL.
    pub fn describe(&self) -> String {
        match &self.transport {
            McpTransport::Stdio { command, args, .. } => std::iter::once(command)
                .chain(args)
                .map(|word| quote_word(word))
                .collect::<Vec<_>>()
                .join(" "),
            McpTransport::Http { url, .. } => url.clone(),
        }
    }
}

/// Many servers by name, in name order.
///
/// ```
/// use agent_tools::mcp::{McpConfig, McpTransport};
///
/// let config = McpConfig::from_json(r#"{"mcpServers": {
///     "files": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-filesystem", "/tmp"]},
///     "search": {"url": "http://127.0.0.1:8000/mcp", "headers": {"Authorization": "Bearer t"}, "timeout": 20}
/// }}"#)?;
/// assert_eq!(config.names().collect::<Vec<_>>(), ["files", "search"]);
/// assert!(matches!(config.get("search").unwrap().transport, McpTransport::Http { .. }));
/// assert_eq!(config.get("search").unwrap().timeout.as_secs(), 20);
/// # Ok::<(), agent_tools::mcp::McpError>(())
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct McpConfig {
    servers: BTreeMap<String, McpServerConfig>,
}

/// One entry of `mcpServers` as other clients write it.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawServer {
    command: Option<String>,
    #[serde(default)]
    args: Vec<String>,
    #[serde(default)]
    env: BTreeMap<String, String>,
    cwd: Option<PathBuf>,
    url: Option<String>,
    #[serde(default)]
    headers: BTreeMap<String, String>,
    /// Seconds.
    timeout: Option<f64>,
    /// Seconds.
    #[serde(rename = "startupTimeout", alias = "startup_timeout")]
    startup_timeout: Option<f64>,
    /// Claude Code's and VS Code's `stdio` / `http` / `streamable-http` / `sse`.
    #[serde(rename = "type", alias = "transport")]
    kind: Option<String>,
    // Fields other clients write that do not change how we connect.
    #[serde(default, rename = "disabled")]
    _disabled: Option<bool>,
    #[serde(default, rename = "autoApprove", alias = "alwaysAllow")]
    _auto_approve: Option<Value>,
    #[serde(default, rename = "description")]
    _description: Option<String>,
}

impl McpConfig {
    /// No servers.
    pub fn new() -> Self {
        McpConfig::default()
    }

    /// Adds (or replaces) the server `name`.
    pub fn with_server(mut self, name: impl Into<String>, server: McpServerConfig) -> Self {
        self.servers.insert(name.into(), server);
        self
    }

    /// Adds (or replaces) the server `name`.
    pub fn insert(&mut self, name: impl Into<String>, server: McpServerConfig) {
        self.servers.insert(name.into(), server);
    }

    /// The server called `name`.
    pub fn get(&self, name: &str) -> Option<&McpServerConfig> {
        self.servers.get(name)
    }

    /// The names, in order.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.servers.keys().map(String::as_str)
    }

    /// The servers with their names, in name order.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &McpServerConfig)> {
        self.servers
            .iter()
            .map(|(name, server)| (name.as_str(), server))
    }

    /// How many servers there are.
    pub fn len(&self) -> usize {
        self.servers.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.servers.is_empty()
    }

    /// Every server of `other` added to these (a name in both takes `other`'s).
    pub fn merge(mut self, other: McpConfig) -> Self {
        self.servers.extend(other.servers);
        self
    }

    /// Reads `{"mcpServers": {"name": {"command", "args", "env", "cwd"} | {"url", "headers"}}}`
    /// (Claude Desktop's and Cursor's format; a bare `{"name": {...}}` map works too). Either
    /// entry may give `"timeout"` (tool calls) and `"startupTimeout"` in seconds; `"type"` (`stdio`, `http`, `streamable-http`)
    /// is checked against the fields; an `"sse"` server (the old HTTP+SSE transport) is
    /// refused with a message that says so; `"disabled": true` entries are left out.
    pub fn from_json(text: &str) -> Result<Self, McpError> {
        let root: Value = serde_json::from_str(text).map_err(|e| McpError::Config {
            message: format!("the MCP configuration is not valid JSON: {e}"),
        })?;
        let servers = match root.get("mcpServers") {
            Some(servers) => servers.clone(),
            None if root.is_object() => root,
            None => {
                return Err(McpError::Config {
                    message: "the MCP configuration must be a JSON object with `mcpServers`"
                        .to_owned(),
                });
            }
        };
        let Value::Object(servers) = servers else {
            return Err(McpError::Config {
                message: "`mcpServers` must be an object of servers by name".to_owned(),
            });
        };
        let mut config = McpConfig::new();
        for (name, entry) in servers {
            if entry.get("disabled").and_then(Value::as_bool) == Some(true) {
                continue;
            }
            let raw: RawServer = serde_json::from_value(entry).map_err(|e| McpError::Config {
                message: format!("MCP server `{name}`: {e}"),
            })?;
            let server = server_of(&name, raw)?;
            config.insert(name, server);
        }
        Ok(config)
    }

    /// [`McpConfig::from_json`] of a file.
    pub fn from_file(path: impl AsRef<Path>) -> Result<Self, McpError> {
        let path = path.as_ref();
        let text = std::fs::read_to_string(path).map_err(|e| McpError::Config {
            message: format!("cannot read the MCP configuration {}: {e}", path.display()),
        })?;
        McpConfig::from_json(&text).map_err(|e| match e {
            McpError::Config { message } => McpError::Config {
                message: format!("{}: {message}", path.display()),
            },
            other => other,
        })
    }
}

fn server_of(name: &str, raw: RawServer) -> Result<McpServerConfig, McpError> {
    let bad = |message: String| McpError::Config {
        message: format!("MCP server `{name}`: {message}"),
    };
    let kind = raw.kind.as_deref().map(str::to_ascii_lowercase);
    if kind.as_deref() == Some("sse") {
        return Err(bad("the HTTP+SSE transport (`type: sse`) is deprecated and not supported; use the server's streamable HTTP endpoint (`type: http`)".to_owned()));
    }
    let mut server = match (raw.command, raw.url) {
        (Some(_), Some(_)) => {
            return Err(bad(
                "give either `command` (stdio) or `url` (HTTP), not both".to_owned(),
            ));
        }
        (None, None) => {
            return Err(bad(
                "give `command` (a program started with stdio) or `url` (a streamable HTTP endpoint)"
                    .to_owned(),
            ));
        }
        (Some(command), None) => {
            if matches!(kind.as_deref(), Some(k) if k != "stdio") {
                return Err(bad(format!(
                    "`type` is {} but the entry has a `command`",
                    kind.unwrap_or_default()
                )));
            }
            if command.trim().is_empty() {
                return Err(bad("`command` is empty".to_owned()));
            }
            McpServerConfig {
                transport: McpTransport::Stdio {
                    command,
                    args: raw.args,
                    env: raw.env,
                    cwd: raw.cwd,
                },
                timeout: DEFAULT_TIMEOUT,
                startup_timeout: DEFAULT_STARTUP_TIMEOUT,
            }
        }
        (None, Some(url)) => {
            if matches!(kind.as_deref(), Some(k) if k != "http" && k != "streamable-http" && k != "streamable_http" && k != "streamablehttp")
            {
                return Err(bad(format!(
                    "`type` is {} but the entry has a `url`",
                    kind.unwrap_or_default()
                )));
            }
            if !(url.starts_with("http://") || url.starts_with("https://")) {
                return Err(bad(format!(
                    "`url` must be http:// or https://, not `{url}`"
                )));
            }
            McpServerConfig {
                transport: McpTransport::Http {
                    url,
                    headers: raw.headers,
                },
                timeout: DEFAULT_TIMEOUT,
                startup_timeout: DEFAULT_STARTUP_TIMEOUT,
            }
        }
    };
    let seconds = |key: &str, value: f64| {
        if value.is_finite() && value > 0.0 && value <= 86_400.0 {
            Ok(Duration::from_secs_f64(value))
        } else {
            Err(bad(format!(
                "`{key}` is {value}; give seconds, more than 0 and at most 86400"
            )))
        }
    };
    if let Some(value) = raw.timeout {
        server.timeout = seconds("timeout", value)?;
    }
    if let Some(value) = raw.startup_timeout {
        server.startup_timeout = seconds("startupTimeout", value)?;
    }
    Ok(server)
}

/// A word as a shell would need it written (for messages).
fn quote_word(word: &str) -> String {
    shlex::try_quote(word).map_or_else(|_| format!("{word:?}"), |quoted| quoted.into_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn command_lines_split_like_a_shell() {
        let server = McpServerConfig::command_line(r#"python "my server.py" --name 'a b' x\ y"#);
        match server.unwrap().transport {
            McpTransport::Stdio { command, args, .. } => {
                assert_eq!(command, "python");
                assert_eq!(args, ["my server.py", "--name", "a b", "x y"]);
            }
            other => panic!("{other:?}"),
        }
        let error = McpServerConfig::command_line("python 'open").unwrap_err();
        assert!(error.to_string().contains("not closed"), "{error}");
        let server = McpServerConfig::command_line("uv run 'my server.py'").unwrap();
        assert_eq!(server.describe(), "uv run 'my server.py'");
        assert!(matches!(
            McpServerConfig::command_line(" ").unwrap_err(),
            McpError::Config { .. }
        ));
    }

    #[test]
    fn mcp_servers_json_of_other_clients() {
        let config = McpConfig::from_json(
            r#"{"mcpServers": {
                "math": {"command": "python", "args": ["math.py"], "env": {"LEVEL": "1"}},
                "web": {"type": "http", "url": "https://example.invalid/mcp", "headers": {"X-Key": "k"}},
                "off": {"command": "nope", "disabled": true}
            }}"#,
        )
        .unwrap();
        assert_eq!(config.names().collect::<Vec<_>>(), ["math", "web"]);
        let math = config.get("math").unwrap();
        assert_eq!(math.timeout, DEFAULT_TIMEOUT);
        match &math.transport {
            McpTransport::Stdio {
                command, args, env, ..
            } => {
                assert_eq!(
                    (command.as_str(), args.as_slice()),
                    ("python", &["math.py".to_owned()][..])
                );
                assert_eq!(env["LEVEL"], "1");
            }
            other => panic!("{other:?}"),
        }
        let bare = McpConfig::from_json(r#"{"a": {"url": "http://127.0.0.1:1/mcp"}}"#).unwrap();
        assert_eq!(bare.len(), 1);
    }

    #[test]
    fn bad_entries_say_which_and_why() {
        let error = |text: &str| McpConfig::from_json(text).unwrap_err().to_string();
        assert!(error("[1]").contains("must be a JSON object"));
        assert!(error("{").contains("not valid JSON"));
        assert!(error(r#"{"mcpServers": {"x": {}}}"#).contains("MCP server `x`: give `command`"));
        assert!(
            error(r#"{"mcpServers": {"x": {"command": "a", "url": "http://h"}}}"#)
                .contains("not both")
        );
        assert!(
            error(r#"{"mcpServers": {"x": {"type": "sse", "url": "http://h/sse"}}}"#)
                .contains("not supported")
        );
        assert!(error(r#"{"mcpServers": {"x": {"url": "ftp://h"}}}"#).contains("http://"));
        assert!(
            error(r#"{"mcpServers": {"x": {"command": "a", "timeout": 0}}}"#)
                .contains("`timeout` is 0")
        );
        assert!(
            error(r#"{"mcpServers": {"x": {"command": "a", "argz": []}}}"#)
                .contains("unknown field `argz`")
        );
    }
}
