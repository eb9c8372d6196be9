//! The python with the official A2A SDK (from `python.sh` beside this file), for the A2A
//! tests of agent-server (its client against `/a2a`) and agent-flows (its server as the
//! remote agent of `agent run react --a2a`); each includes this file with `#[path]`.
//! Installing it needs PyPI, so it runs under CI (`CI` set) or with `AGENTGRAPH_A2A_TESTS=1`
//! (or `AGENTGRAPH_SDK_CHECKS=1`, which turns on every SDK check); otherwise it says the test
//! skipped and answers `None`.

/// The python's path, or `None` when these tests are not wanted.
pub fn a2a_python() -> Option<String> {
    let wanted = ["CI", "AGENTGRAPH_A2A_TESTS", "AGENTGRAPH_SDK_CHECKS"]
        .iter()
        .any(|v| std::env::var_os(v).is_some());
    if !wanted {
        eprintln!(
            "skipped: set AGENTGRAPH_A2A_TESTS=1 to install the Python A2A SDK and run this (CI does)"
        );
        return None;
    }
    let script = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../agent-server/tests/a2a/python.sh"
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
