//! A #[tool] fn must return `Result<T, E>`: one error for a plain type, one for no return type.

use agent_tools::tool;

/// Adds two numbers.
#[tool]
async fn add(a: i64, b: i64) -> i64 {
    a + b
}

/// Does nothing.
#[tool]
async fn nothing() {}

fn main() {}
