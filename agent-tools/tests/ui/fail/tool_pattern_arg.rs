//! A destructuring pattern has no name to become a JSON field.

use agent_tools::tool;

/// Adds the two numbers of a pair.
#[tool]
async fn add((a, b): (i64, i64)) -> Result<i64, String> {
    Ok(a + b)
}

fn main() {}
