//! The `# Arguments` section names an argument the fn does not have.

use agent_tools::tool;

/// Adds two numbers.
///
/// # Arguments
///
/// * `a` - The first number.
/// * `c` - The second number.
#[tool]
async fn add(a: i64, b: i64) -> Result<i64, String> {
    Ok(a + b)
}

fn main() {}
