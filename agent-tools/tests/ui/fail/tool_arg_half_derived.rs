//! An argument type with one of the two derives, and one that is not `Send`: one error
//! each, at the argument, saying what is missing.

use std::rc::Rc;

use agent_tools::tool;

#[derive(serde::Deserialize)]
struct Point {
    x: f64,
    y: f64,
}

/// Measures the distance to the origin, with a label.
#[tool]
async fn distance(point: Point, label: Rc<String>) -> Result<String, String> {
    Ok(format!("{label}: {}", (point.x * point.x + point.y * point.y).sqrt()))
}

fn main() {}
