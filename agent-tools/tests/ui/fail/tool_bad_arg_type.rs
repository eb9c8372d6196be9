//! An argument type without `Deserialize` + `JsonSchema`: the first error says what to derive.

use agent_tools::tool;

struct Point {
    x: f64,
    y: f64,
}

/// Measures the distance to the origin.
#[tool]
async fn distance(point: Point) -> Result<f64, String> {
    Ok((point.x * point.x + point.y * point.y).sqrt())
}

fn main() {}
