//! #[tool] without a doc comment: the description is what the model reads, so it is required.

use agent_tools::tool;

#[tool]
async fn add(a: i64, b: i64) -> Result<i64, String> {
    Ok(a + b)
}

fn main() {}
