//! [`McpError`]: what went wrong reaching an MCP server, naming the server and what to do.
//!
//! A tool call's failure reaches the model as a [`ToolError`](crate::ToolError) whose source
//! is one of these (a server that died says so, with its exit status and the end of its
//! stderr), so the model sees it as an error result and the program sees the whole chain.

use std::time::Duration;

/// Everything that can go wrong configuring, starting, listing or calling an MCP server.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum McpError {
    /// The configuration cannot be used.
    #[error("MCP configuration: {message}")]
    Config {
        /// What is wrong and what to do.
        message: String,
    },

    /// The server's program could not be started.
    #[error(
        "cannot start MCP server `{server}` (`{command}`): {source}; check that the program exists and is on PATH"
    )]
    Spawn {
        /// The server's name.
        server: String,
        /// The command line.
        command: String,
        /// What the OS said.
        #[source]
        source: std::io::Error,
    },

    /// The server's process exited (while starting, or during the session).
    #[error("MCP server `{server}` (`{command}`) exited with {status}{}", stderr_tail(.stderr))]
    Exited {
        /// The server's name.
        server: String,
        /// The command line.
        command: String,
        /// Its exit status (`exit status: 3`, `signal: 9 (SIGKILL)`).
        status: String,
        /// The last lines it wrote to stderr.
        stderr: String,
    },

    /// The connection to the server failed or closed (an HTTP server down, a handshake the
    /// server refused, a stdio server that closed its output).
    #[error("MCP server `{server}` ({target}): {message}{}", stderr_tail(.stderr))]
    Connection {
        /// The server's name.
        server: String,
        /// The command line or URL.
        target: String,
        /// What happened.
        message: String,
        /// The last lines a stdio server wrote to stderr (empty for HTTP).
        stderr: String,
    },

    /// The server answered a request with an error.
    #[error("MCP server `{server}` refused {request}: {message}")]
    Refused {
        /// The server's name.
        server: String,
        /// What was asked (`tools/list`, `tools/call add`).
        request: String,
        /// The server's error.
        message: String,
    },

    /// The server did not answer in time.
    #[error(
        "MCP server `{server}` did not answer {request} within {after:?}; raise its timeout if it is just slow"
    )]
    TimedOut {
        /// The server's name.
        server: String,
        /// What was asked.
        request: String,
        /// The timeout in force.
        after: Duration,
    },

    /// The tool ran and reported an error (`isError` in its result); the text is the tool's.
    #[error("{message}")]
    ToolReported {
        /// The tool's error text.
        message: String,
    },

    /// A tool's name cannot be given to a model.
    #[error("MCP server `{server}`: tool `{tool}`: {message}")]
    ToolName {
        /// The server's name.
        server: String,
        /// The tool's name on the server.
        tool: String,
        /// What is wrong.
        message: String,
    },
}

fn stderr_tail(stderr: &str) -> String {
    if stderr.trim().is_empty() {
        String::new()
    } else {
        format!("; the end of its stderr:\n{}", stderr.trim_end())
    }
}
