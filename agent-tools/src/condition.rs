//! [`tools_condition`]: LangGraph's router after a model node — to `"tools"` when the last
//! message is an AI message with tool calls, to `END` otherwise.
//!
//! ```text
//! agent --tools_condition--> tools --> agent
//!       \------------------> END
//! ```

use agent_core::END;
use agent_llm::Message;

use crate::state::MessagesState;

/// The node name [`tools_condition`] routes to (LangGraph's).
pub const TOOLS: &str = "tools";

/// Routes to [`TOOLS`] when the last message asks for tool calls, else to `END`.
///
/// Use it with a path map naming both: `.add_conditional_edges("agent", tools_condition,
/// [TOOLS, END])`, or map `"tools"` to your node's name with `[("tools", "my_tools"), (END, END)]`.
pub fn tools_condition<S: MessagesState>(state: &S) -> &'static str {
    route_tools(state.messages())
}

/// [`tools_condition`] on a plain list of messages.
pub fn route_tools(messages: &[Message]) -> &'static str {
    match messages.last() {
        Some(Message::Ai(ai)) if ai.has_tool_calls() => TOOLS,
        _ => END,
    }
}

/// [`tools_condition`] for a state without [`MessagesState`]: `messages` finds the
/// conversation.
///
/// ```
/// # use agent_core::GraphState;
/// # use agent_llm::Message;
/// # #[derive(GraphState, Clone, Default)]
/// # struct Chat { #[reducer(append)] history: Vec<Message> }
/// let route = agent_tools::tools_condition_by(|s: &Chat| &s.history);
/// assert_eq!(route(&Chat::default()), agent_core::END);
/// ```
pub fn tools_condition_by<S, F>(messages: F) -> impl Fn(&S) -> &'static str + Send + Sync + 'static
where
    F: Fn(&S) -> &[Message] + Send + Sync + 'static,
{
    move |state: &S| route_tools(messages(state))
}

#[cfg(test)]
mod tests {
    use agent_llm::ToolCall;
    use serde_json::json;

    use super::*;

    #[test]
    fn routes_on_the_last_message_only() {
        let call = ToolCall::new("c1", "echo", json!({"text": "x"}));
        assert_eq!(route_tools(&[]), END);
        assert_eq!(route_tools(&[Message::human("hi")]), END);
        assert_eq!(route_tools(&[Message::ai("hello")]), END);
        assert_eq!(
            route_tools(&[Message::ai_tool_calls([call.clone()])]),
            TOOLS
        );
        // Answered calls: the last message is the tool result, so the run ends here.
        assert_eq!(
            route_tools(&[Message::ai_tool_calls([call]), Message::tool("c1", "x")]),
            END
        );
    }
}
