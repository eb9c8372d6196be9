//! `echo`: returns its input text unchanged — a tool without I/O for testing tool plumbing end
//! to end (seed 004's echo tool).

use std::convert::Infallible;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::tool::Tool;

/// The arguments of [`Echo`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct EchoArgs {
    /// The text to return.
    pub text: String,
}

/// The `echo` tool: returns `text` as it came.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Echo;

impl Tool for Echo {
    type Args = EchoArgs;
    type Output = String;
    type Error = Infallible;

    fn name(&self) -> &str {
        "echo"
    }

    fn description(&self) -> &str {
        "Returns the given text unchanged. Use it to repeat text back exactly."
    }

    async fn call(&self, args: EchoArgs) -> Result<String, Infallible> {
        Ok(args.text)
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::tool::DynTool;

    #[tokio::test]
    async fn echoes_text() {
        let out = DynTool::call(&Echo, json!({"text": "hola, mundo"}))
            .await
            .unwrap();
        assert_eq!(out, json!("hola, mundo"));
        let typed = Tool::call(&Echo, EchoArgs { text: "x".into() })
            .await
            .unwrap();
        assert_eq!(typed, "x");
        let spec = DynTool::spec(&Echo);
        assert_eq!(spec.parameters["required"], json!(["text"]));
        assert_eq!(
            spec.parameters["properties"]["text"]["description"],
            "The text to return."
        );
    }
}
