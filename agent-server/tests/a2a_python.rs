//! The official Python A2A client (`a2a-sdk` 0.3 from PyPI) against `/a2a` of the reference
//! server (`examples/reference`): `tests/a2a/client.py` discovers the card, sends, streams
//! (the answer's text in pieces), holds a conversation of several turns on one context with
//! a question back, and cancels a running task.
//!
//! The client is installed from PyPI on first use (cached, by `tests/a2a/python.sh`), so this
//! runs under CI (`CI` set) or with `AGENTGRAPH_A2A_TESTS=1`, and says it skipped otherwise.

#[path = "a2a/python.rs"]
mod a2a_python_sdk;
mod common;

use std::process::Command;

#[test]
fn the_python_a2a_client_talks_to_the_reference_graphs() {
    let Some(python) = a2a_python_sdk::a2a_python() else {
        return;
    };
    let server = common::start_reference(&[]);
    let client = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/a2a/client.py");
    let status = Command::new(python)
        .args([client, &server.url, "agent"])
        .status()
        .unwrap();
    assert!(
        status.success(),
        "the Python A2A client's checks failed (its output is above)"
    );
}
