//! Checks a tool call's arguments against the tool's JSON schema, before the call runs: the
//! validator lives in agent-tools ([`agent_tools::schema`]), which checks MCP tools' arguments
//! with it too; it is re-exported here where the orchestrator's docs point.

pub use agent_tools::schema::{Violation, validate};
