//! The official Python MCP client (`mcp` from PyPI) against `/mcp` of the reference server
//! (`examples/reference`): `tests/mcp/client.py` lists the graphs as tools and calls them.
//!
//! The client is installed from PyPI on first use (cached, by
//! `agent-tools/tests/mcp/python.sh`), so this runs under CI (`CI` set) or with
//! `AGENTGRAPH_MCP_TESTS=1`, and says it skipped otherwise.

mod common;
#[path = "../../agent-tools/tests/mcp/python.rs"]
mod mcp_python_sdk;

use mcp_python_sdk::mcp_python;

use std::process::Command;

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
