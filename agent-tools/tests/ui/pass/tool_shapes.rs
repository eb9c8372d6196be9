//! The shapes `#[tool]` accepts: no arguments, optional and raw-named arguments, a `mut`
//! parameter, `Result` aliases, options, public tools, use through `dyn DynTool`.

use agent_tools::{DynTool, ToolRegistry, tool};

/// Says hello.
#[tool]
async fn hello() -> Result<String, String> {
    Ok("hello".to_owned())
}

/// Repeats a word.
///
/// # Arguments
///
/// * `type` - The word.
/// * `times` - How often; once when omitted.
#[tool(name = "repeat_word")]
pub async fn repeat(r#type: String, mut times: Option<u32>) -> std::io::Result<String> {
    let n = times.take().unwrap_or(1) as usize;
    Ok(r#type.repeat(n))
}

/// Not what the model sees.
#[tool(description = "Adds two numbers.")]
async fn add(a: f64, b: f64) -> Result<f64, Box<dyn std::error::Error + Send + Sync>> {
    Ok(a + b)
}

fn main() {
    let registry = ToolRegistry::new()
        .with_tool(hello)
        .and_then(|r| r.with_tool(repeat))
        .and_then(|r| r.with_tool(add))
        .expect("valid tools");
    let tool: &dyn DynTool = registry.get("repeat_word").expect("registered").as_ref();
    assert_eq!(tool.parameters()["required"], serde_json::json!(["type"]));
    assert_eq!(repeat::NAME, "repeat_word");
    assert_eq!(add.description(), "Adds two numbers.");
}
