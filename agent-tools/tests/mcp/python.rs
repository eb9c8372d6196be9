//! The python with the official MCP SDK (from `python.sh` beside this file), for the MCP tests
//! of agent-tools, agent-server and agent-flows (each includes this file with `#[path]`).
//! Installing it needs PyPI, so it runs under CI (`CI` set) or with `AGENTGRAPH_MCP_TESTS=1`;
//! otherwise it says the test skipped and answers `None`.

/// The python's path, or `None` when these tests are not wanted.
pub fn mcp_python() -> Option<String> {
    if std::env::var_os("CI").is_none() && std::env::var_os("AGENTGRAPH_MCP_TESTS").is_none() {
        eprintln!(
            "skipped: set AGENTGRAPH_MCP_TESTS=1 to install the Python MCP SDK and run this (CI does)"
        );
        return None;
    }
    let script = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../agent-tools/tests/mcp/python.sh"
    );
    let out = std::process::Command::new("bash")
        .arg(script)
        .stderr(std::process::Stdio::inherit())
        .output()
        .expect("bash runs");
    assert!(
        out.status.success(),
        "{script} failed (its output is above)"
    );
    Some(String::from_utf8(out.stdout).unwrap().trim().to_owned())
}
