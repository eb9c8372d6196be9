//! The official Python MCP client (`mcp` from PyPI) against `/mcp` of the reference server
//! (`examples/reference`): `tests/mcp/client.py` lists the graphs as tools and calls them.
//!
//! The client is installed from PyPI on first use (cached, by
//! `agent-tools/tests/mcp/python.sh`), so this runs under CI (`CI` set) or with
//! `AGENTGRAPH_MCP_TESTS=1`, and says it skipped otherwise.

mod common;

use std::process::Command;

/// The python with the MCP SDK, or `None` (and a note) when these tests are not wanted.
fn mcp_python() -> Option<String> {
    if std::env::var_os("CI").is_none() && std::env::var_os("AGENTGRAPH_MCP_TESTS").is_none() {
        eprintln!(
            "skipped: set AGENTGRAPH_MCP_TESTS=1 to install the Python MCP SDK and run its client (CI does)"
        );
        return None;
    }
    let script = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../agent-tools/tests/mcp/python.sh"
    );
    let out = Command::new("bash").arg(script).output().unwrap();
    assert!(
        out.status.success(),
        "installing the Python MCP SDK failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    Some(String::from_utf8(out.stdout).unwrap().trim().to_owned())
}

#[test]
fn the_python_mcp_client_lists_and_calls_the_reference_graphs() {
    let Some(python) = mcp_python() else {
        return;
    };
    let server = common::start_reference(&[]);
    let client = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/mcp/client.py");
    let status = Command::new(python)
        .args([client, &format!("{}/mcp", server.url), "reference"])
        .status()
        .unwrap();
    assert!(
        status.success(),
        "the Python MCP client's checks failed (its output is above)"
    );
}
