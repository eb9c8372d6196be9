//! Every demo conversation of every flow in the registry, offline, on a fixed clock and a
//! thread: each turn's node path, answer, usage and final state, pinned as insta snapshots
//! (`agent-flows/tests/snapshots/demos__<flow>__<demo>.snap`). A change in routing, in an
//! offline rule or in a state field shows up in review.

use std::sync::Arc;

use agent_core::{InMemorySaver, ManualClock, StreamModes};
use agent_flows::{FLOWS, FlowEnv};
use serde_json::{Value, json};

/// 2026-07-15 12:00:00 UTC: summer in the north, so daylight saving time shows.
pub const FIXED_TIME: i64 = 1_784_116_800;

/// Whether `s` is a uuid (`8-4-4-4-12` hex digits).
fn is_uuid(s: &str) -> bool {
    s.len() == 36
        && s.char_indices().all(|(i, c)| match i {
            8 | 13 | 18 | 23 => c == '-',
            _ => c.is_ascii_hexdigit(),
        })
}

/// Message ids and the chat's tool call ids are uuid v7 (time-ordered, random): replaced
/// wherever they show (`id`, `tool_call_id`, a call record's `call_id`) so snapshots are
/// stable.
fn redact_ids(value: &mut Value) {
    match value {
        Value::String(s) if is_uuid(s) => *value = Value::from("[uuid]"),
        Value::Object(map) => map.values_mut().for_each(redact_ids),
        Value::Array(items) => items.iter_mut().for_each(redact_ids),
        _ => {}
    }
}

#[tokio::test]
async fn every_demo_of_every_flow() {
    let mut names = Vec::new();
    for flow in FLOWS {
        let info = flow.info();
        assert!(!info.demos.is_empty(), "flow {} has no demo", info.name);
        for demo in info.demos {
            let mut env =
                FlowEnv::offline().with_clock(Arc::new(ManualClock::at_unix_seconds(FIXED_TIME)));
            for (key, value) in demo.options {
                env = env.with_option(*key, *value);
            }
            let session = flow
                .open(&env, Some(Arc::new(InMemorySaver::new())), None)
                .unwrap_or_else(|e| panic!("{} opens: {e}", info.name));
            let mut turns = Vec::new();
            for message in demo.turns {
                let report = session
                    .turn(message, Some("demo"), StreamModes::NONE, &mut |_| {})
                    .await
                    .unwrap_or_else(|e| panic!("{} / {}: {message}: {e}", info.name, demo.name));
                turns.push(json!({
                    "user": message,
                    "path": report.path,
                    "response": report.response,
                    "usage": report.usage,
                    "state": report.state,
                }));
            }
            let mut snapshot = json!({ "flow": info.name, "demo": demo.name, "turns": turns });
            redact_ids(&mut snapshot);
            let name = format!("{}__{}", info.name, demo.name);
            insta::assert_yaml_snapshot!(name.clone(), snapshot);
            names.push(name);
        }
    }
    names.sort();
    let before = names.len();
    names.dedup();
    assert_eq!(before, names.len(), "two demos share a name");
}
