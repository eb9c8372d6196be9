//! [`McpTool`]: a tool of an MCP server as a [`DynTool`], so a registry, `ToolNode` and
//! `create_react_agent` call it like any other tool.
//!
//! The call checks the arguments against the tool's input schema first (as typed tools
//! check theirs by deserializing), so a model's malformed call is answered by
//! [`ToolError::InvalidArguments`] without a round trip. The result becomes JSON as
//! [`output_of`] says.

use rmcp::model::{CallToolResult, ContentBlock, ResourceContents};
use serde_json::{Map, Value};

use super::client::McpClient;
use super::error::McpError;
use crate::error::ToolError;
use crate::registry::is_valid_tool_name;
use crate::schema;
use crate::tool::{BoxFuture, DynTool};

/// How many schema violations one error names.
const MAX_VIOLATIONS: usize = 5;

/// One tool of an MCP server.
#[derive(Clone, Debug)]
pub struct McpTool {
    name: String,
    remote: String,
    description: String,
    parameters: Value,
    client: McpClient,
}

impl McpTool {
    pub(super) fn new(client: McpClient, tool: rmcp::model::Tool) -> Result<McpTool, McpError> {
        let remote = tool.name.into_owned();
        let name = sanitize(&remote);
        if !is_valid_tool_name(&name) {
            return Err(McpError::ToolName {
                server: client.name().to_owned(),
                tool: remote,
                message:
                    "the name is empty or longer than 64 characters, which model providers refuse"
                        .to_owned(),
            });
        }
        let description = tool
            .description
            .map(|d| d.into_owned())
            .filter(|d| !d.trim().is_empty())
            .or(tool.title)
            .unwrap_or_else(|| {
                format!("The tool `{remote}` of the MCP server `{}`.", client.name())
            });
        let mut parameters = (*tool.input_schema).clone();
        parameters.remove("$schema");
        parameters
            .entry("type")
            .or_insert_with(|| Value::String("object".to_owned()));
        Ok(McpTool {
            name,
            remote,
            description,
            parameters: Value::Object(parameters),
            client,
        })
    }

    /// The name the server knows the tool by (the model's name may carry a prefix or have
    /// characters replaced).
    pub fn remote_name(&self) -> &str {
        &self.remote
    }

    /// The server's name.
    pub fn server(&self) -> &str {
        self.client.name()
    }

    /// The connection the tool calls through.
    pub fn client(&self) -> &McpClient {
        &self.client
    }

    /// This tool under another name (the server still gets its own name).
    pub fn renamed(mut self, name: impl Into<String>) -> McpTool {
        self.name = name.into();
        self
    }

    /// The arguments as an object, checked against the schema.
    fn checked(&self, args: Value) -> Result<Map<String, Value>, ToolError> {
        let args = match args {
            Value::Null => Value::Object(Map::new()),
            other => other,
        };
        let violations = schema::validate(&self.parameters, &args, MAX_VIOLATIONS);
        if let Some(first) = violations.first() {
            let mut message = first.message.clone();
            for other in &violations[1..] {
                message.push_str(&format!("; and {other}"));
            }
            return Err(ToolError::InvalidArguments {
                tool: self.name.clone(),
                path: serde_path(&first.path),
                message,
            });
        }
        match args {
            Value::Object(map) => Ok(map),
            // The schema did not ask for an object; MCP sends arguments as one.
            other => Err(ToolError::InvalidArguments {
                tool: self.name.clone(),
                path: ".".to_owned(),
                message: format!("expected an object of arguments, got {other}"),
            }),
        }
    }
}

impl DynTool for McpTool {
    fn name(&self) -> &str {
        &self.name
    }

    fn description(&self) -> &str {
        &self.description
    }

    fn parameters(&self) -> Value {
        self.parameters.clone()
    }

    fn call(&self, args: Value) -> BoxFuture<'_, Result<Value, ToolError>> {
        Box::pin(async move {
            let args = self.checked(args)?;
            let failed = |source: McpError| ToolError::Failed {
                tool: self.name.clone(),
                source: Box::new(source),
            };
            let result = match self.client.call_tool(&self.remote, args).await {
                Ok(result) => result,
                Err(McpError::TimedOut { after, .. }) => {
                    return Err(ToolError::TimedOut {
                        tool: self.name.clone(),
                        after,
                    });
                }
                Err(error) => return Err(failed(error)),
            };
            if result.is_error == Some(true) {
                let message = match output_of(result) {
                    Value::String(text) if !text.trim().is_empty() => text,
                    Value::String(_) => "the tool reported an error without a message".to_owned(),
                    other => other.to_string(),
                };
                return Err(failed(McpError::ToolReported { message }));
            }
            Ok(output_of(result))
        })
    }
}

/// A tool result as JSON: the content blocks as text, one per line — text as is, an
/// embedded text resource as its text, and for an image, audio, a binary resource or a
/// resource link a bracketed note of what it was (`[image: image/png, 68 bytes]`), since a
/// tool message carries text only. A result with no content block is its
/// `structuredContent` (JSON as the server sent it), else the empty string. A server that
/// sends both (Python's MCPServer does for typed returns) has its text read: it is what the
/// server wrote for models; [`McpClient::call_tool`] gives the whole result.
pub fn output_of(result: CallToolResult) -> Value {
    if result.content.is_empty() {
        return result
            .structured_content
            .unwrap_or_else(|| Value::String(String::new()));
    }
    let parts: Vec<String> = result.content.iter().map(block_text).collect();
    Value::String(parts.join("\n"))
}

fn block_text(block: &ContentBlock) -> String {
    // Base64: 4 characters for 3 bytes.
    let bytes = |data: &str| data.trim_end_matches('=').len() * 3 / 4;
    match block {
        ContentBlock::Text(text) => text.text.clone(),
        ContentBlock::Image(image) => {
            format!("[image: {}, {} bytes]", image.mime_type, bytes(&image.data))
        }
        ContentBlock::Audio(audio) => {
            format!("[audio: {}, {} bytes]", audio.mime_type, bytes(&audio.data))
        }
        ContentBlock::Resource(embedded) => match &embedded.resource {
            ResourceContents::TextResourceContents { text, .. } => text.clone(),
            ResourceContents::BlobResourceContents {
                uri,
                mime_type,
                blob,
                ..
            } => format!(
                "[resource {uri}: {}, {} bytes]",
                mime_type.as_deref().unwrap_or("binary"),
                bytes(blob)
            ),
            other => format!("[resource: {}]", kind_of(other)),
        },
        ContentBlock::ResourceLink(link) => {
            format!("[resource link: {} ({})]", link.uri, link.name)
        }
        // A kind of content newer than this code: its type, so the model knows something came.
        other => format!("[content: {}]", kind_of(other)),
    }
}

/// The `type` a value serializes with, for notes about content this code does not know.
fn kind_of(value: &impl serde::Serialize) -> String {
    serde_json::to_value(value)
        .ok()
        .and_then(|v| v.get("type").and_then(Value::as_str).map(str::to_owned))
        .unwrap_or_else(|| "unknown".to_owned())
}

/// A tool name with every character providers refuse (outside `A-Z a-z 0-9 _ -`) made `_`.
pub(super) fn sanitize(name: &str) -> String {
    name.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect()
}

/// A JSON pointer (`/items/0/name`) as the serde path [`ToolError::InvalidArguments`] names
/// (`items[0].name`; `.` for the root).
fn serde_path(pointer: &str) -> String {
    if pointer.is_empty() {
        return ".".to_owned();
    }
    let mut path = String::new();
    for segment in pointer.split('/').skip(1) {
        let segment = segment.replace("~1", "/").replace("~0", "~");
        if !segment.is_empty() && segment.bytes().all(|b| b.is_ascii_digit()) {
            path.push_str(&format!("[{segment}]"));
        } else {
            if !path.is_empty() {
                path.push('.');
            }
            path.push_str(&segment);
        }
    }
    path
}

#[cfg(test)]
mod tests {
    use rmcp::model::{CallToolResult, ContentBlock};
    use serde_json::json;

    use super::*;

    #[test]
    fn paths_and_names() {
        assert_eq!(serde_path(""), ".");
        assert_eq!(serde_path("/items/0/name"), "items[0].name");
        assert_eq!(serde_path("/a~1b"), "a/b");
        assert_eq!(sanitize("github.search/issues"), "github_search_issues");
        assert_eq!(sanitize("ok_name-2"), "ok_name-2");
    }

    #[test]
    fn results_become_text_or_structured_json() {
        let text = CallToolResult::success(vec![ContentBlock::text("a"), ContentBlock::text("b")]);
        assert_eq!(output_of(text), json!("a\nb"));
        let image = CallToolResult::success(vec![ContentBlock::image("iVBORw0KGgo=", "image/png")]);
        assert_eq!(output_of(image), json!("[image: image/png, 8 bytes]"));
        let structured = CallToolResult::structured(json!({"sum": 3}));
        // rmcp writes the JSON as a text block too; the text is what a model reads.
        assert_eq!(output_of(structured), json!(r#"{"sum":3}"#));
        let mut bare = CallToolResult::success(vec![]);
        bare.structured_content = Some(json!({"sum": 3}));
        assert_eq!(output_of(bare), json!({"sum": 3}));
        assert_eq!(output_of(CallToolResult::success(vec![])), json!(""));
    }
}
