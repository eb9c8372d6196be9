//! A misspelled option gets a did-you-mean; a name providers reject is refused.

use agent_tools::tool;

/// Adds two numbers.
#[tool(nmae = "sum")]
async fn add(a: i64, b: i64) -> Result<i64, String> {
    Ok(a + b)
}

/// Subtracts two numbers.
#[tool(name = "minus sign")]
async fn sub(a: i64, b: i64) -> Result<i64, String> {
    Ok(a - b)
}

fn main() {}
