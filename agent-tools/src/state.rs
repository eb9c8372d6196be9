//! [`MessagesState`]: what a graph state needs so [`ToolNode`](crate::ToolNode) and
//! [`tools_condition`](crate::tools_condition) work on it — read the conversation, and write
//! new messages as an update (LangGraph's `MessagesState` / `messages` key).
//!
//! Any state with a `Vec<Message>` field qualifies; [`messages_state!`](crate::messages_state)
//! writes the three-line impl. States that keep messages elsewhere can skip the trait and pass
//! closures to [`ToolNode::into_node_with`](crate::ToolNode::into_node_with).

use agent_core::GraphState;
use agent_llm::{AiMessage, Message};

/// A graph state that holds a conversation.
///
/// The field's reducer decides how the written messages merge; use
/// `#[reducer(agent_llm::add_messages)]` (ids, replacement, removal) or `#[reducer(append)]`.
#[diagnostic::on_unimplemented(
    message = "`{Self}` does not say where its messages are",
    note = "implement `agent_tools::MessagesState` for it, e.g. `agent_tools::messages_state!({Self}, messages);`, or build the node with `ToolNode::into_node_with`"
)]
pub trait MessagesState: GraphState {
    /// The conversation, oldest first.
    fn messages(&self) -> &[Message];

    /// An update that writes `messages` (through the field's reducer).
    fn messages_update(messages: Vec<Message>) -> Self::Update;
}

/// Implements [`MessagesState`] for a `#[derive(GraphState)]` struct whose `field` is a
/// `Vec<Message>`.
///
/// ```
/// use agent_core::GraphState;
/// use agent_llm::Message;
///
/// #[derive(GraphState, Clone, Default, Debug)]
/// struct Chat {
///     #[reducer(agent_llm::add_messages)]
///     messages: Vec<Message>,
///     turns: u32,
/// }
///
/// agent_tools::messages_state!(Chat, messages);
/// ```
#[macro_export]
macro_rules! messages_state {
    ($state:ty, $field:ident) => {
        impl $crate::MessagesState for $state {
            fn messages(&self) -> &[$crate::__private::Message] {
                &self.$field
            }

            fn messages_update(
                messages: ::std::vec::Vec<$crate::__private::Message>,
            ) -> <Self as $crate::__private::GraphState>::Update {
                <<Self as $crate::__private::GraphState>::Update as ::core::default::Default>::default()
                    .$field(messages)
            }
        }
    };
}

/// The most recent AI message of a conversation (LangGraph's `ToolNode` input rule).
pub fn last_ai_message(messages: &[Message]) -> Option<&AiMessage> {
    messages.iter().rev().find_map(Message::as_ai)
}
