//! Borrowed arguments (`&str`, `&[T]`, `Cow<'_, str>`): each error suggests the owned type.

use std::borrow::Cow;

use agent_tools::tool;

/// Counts words.
#[tool]
async fn count(text: &str, weights: &[f64], label: Cow<'_, str>) -> Result<usize, String> {
    Ok(text.split_whitespace().count() + weights.len() + label.len())
}

fn main() {}
