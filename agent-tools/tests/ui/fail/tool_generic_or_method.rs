//! Generic fns and methods cannot be tools: one schema per tool, free fns only.

use agent_tools::tool;

/// Echoes anything.
#[tool]
async fn echo<T: serde::Serialize>(value: T) -> Result<T, String> {
    Ok(value)
}

struct Calculator;

impl Calculator {
    /// Adds two numbers.
    #[tool]
    async fn add(&self, a: i64, b: i64) -> Result<i64, String> {
        Ok(a + b)
    }
}

fn main() {}
