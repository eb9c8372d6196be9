//! #[tool] on a plain `fn`: the error points at `fn` and asks for `async fn`.

use agent_tools::tool;

/// Adds two numbers.
#[tool]
fn add(a: i64, b: i64) -> Result<i64, String> {
    Ok(a + b)
}

fn main() {}
