//! The five flows through the thread-streaming protocol (v2), driven by the real python SDK
//! (`langgraph-sdk`'s `client.threads.stream`) against `agent serve` (issue 58):
//! `agent-server/tests/sdk/python/flows_check.py`, two turns on one thread per flow — the
//! answer streamed (token by token where a model writes it) as the AI message the thread
//! keeps, tool use as AI `tool_calls` each answered by a kept tool message, no internal
//! model's output streamed.
//!
//! The SDK is installed from PyPI on first use (cached, by `agent-server/tests/sdk/run.sh`),
//! so this runs under CI (`CI` set) or with `AGENTGRAPH_SDK_CHECKS=1`, and says it skipped
//! otherwise.

mod common;

use std::process::Command;

use common::Scratch;
use common::serve::serve;

#[test]
fn every_flow_streams_as_a_chat_through_the_thread_protocol() {
    if std::env::var_os("CI").is_none() && std::env::var_os("AGENTGRAPH_SDK_CHECKS").is_none() {
        eprintln!("skipped: set AGENTGRAPH_SDK_CHECKS=1 to install the SDK and run it (CI does)");
        return;
    }
    let s = Scratch::new("flows-stream");
    let served = serve(&s, &[]);
    let script = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../agent-server/tests/sdk/run.sh"
    );
    let status = Command::new("bash")
        .args([script, &served.url, "--timeout", "120"])
        .env("SDK_CHECK_LANGS", "py")
        .env("SDK_CHECK_SCRIPT", "flows_check")
        .status()
        .unwrap();
    assert!(
        status.success(),
        "the python SDK's thread streams failed on a flow (its output is above)"
    );
    drop(served);
}
