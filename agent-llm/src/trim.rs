//! [`trim_messages`]: fit a conversation into a context window, LangChain's `trim_messages`
//! in Rust.
//!
//! A long conversation does not fit a model's context (or costs too much per call); trimming
//! keeps what matters within a token budget: usually the system message and the latest turns.
//! The options are LangChain's:
//!
//! - **strategy**: [`TrimStrategy::Last`] keeps the newest messages (the usual choice for
//!   chat), [`TrimStrategy::First`] the oldest.
//! - **include_system**: with `Last`, a leading system message is always kept and its tokens
//!   come off the budget first.
//! - **start_on** / **end_on**: the kept window starts (after the system message) / ends with
//!   a message of one of these kinds (`"human"`, `"ai"`, `"tool"`, `"system"`); messages
//!   outside are dropped. `start_on: ["human"]` keeps a window that a provider accepts: it
//!   never opens with a tool result whose call was cut off.
//! - **allow_partial**: when the next message does not fit whole, keep the lines of it that
//!   do (its last lines with `Last`, its first with `First`).
//! - **token_counter**: how tokens are counted, over a list of messages:
//!   [`count_tokens_approximately`] by default (LangChain's approximation: about four
//!   characters a token plus three a message), [`TrimMessages::count_messages`] to budget in
//!   messages, or any function (a real tokenizer).
//!
//! What it deliberately does not do: summarize what it drops (keep a summary in state and
//! pass it as a system message; agent-flows' orchestrator does), or call a model.
//!
//! ```
//! use agent_llm::{trim_messages, Message, TrimMessages};
//!
//! let conversation = vec![
//!     Message::system("You are terse."),
//!     Message::human("first question, long ago"),
//!     Message::ai("first answer"),
//!     Message::human("second question"),
//!     Message::ai("second answer"),
//! ];
//! // Budget in messages: the system message plus the last turn.
//! let kept = TrimMessages::last(3)
//!     .count_messages()
//!     .include_system(true)
//!     .start_on(["human"])
//!     .trim(&conversation);
//! let texts: Vec<&str> = kept.iter().map(Message::content).collect();
//! assert_eq!(texts, ["You are terse.", "second question", "second answer"]);
//!
//! // The same with LangChain's default approximate token counter.
//! let kept = trim_messages(&conversation, &TrimMessages::last(25).include_system(true).start_on(["human"]));
//! let texts: Vec<&str> = kept.iter().map(Message::content).collect();
//! assert_eq!(texts, ["You are terse.", "second question", "second answer"]);
//! ```

use std::fmt;
use std::sync::Arc;

use crate::message::{AiMessage, HumanMessage, Message, SystemMessage, ToolMessage};

/// Which end of the conversation [`trim_messages`] keeps.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum TrimStrategy {
    /// The oldest messages.
    First,
    /// The newest messages (the default).
    #[default]
    Last,
}

/// Counts the tokens of a list of messages.
pub type TokenCounter = Arc<dyn Fn(&[Message]) -> usize + Send + Sync>;

/// What [`trim_messages`] keeps; see the module docs.
#[derive(Clone)]
pub struct TrimMessages {
    max_tokens: usize,
    strategy: TrimStrategy,
    include_system: bool,
    start_on: Vec<String>,
    end_on: Vec<String>,
    allow_partial: bool,
    counter: TokenCounter,
}

impl fmt::Debug for TrimMessages {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TrimMessages")
            .field("max_tokens", &self.max_tokens)
            .field("strategy", &self.strategy)
            .field("include_system", &self.include_system)
            .field("start_on", &self.start_on)
            .field("end_on", &self.end_on)
            .field("allow_partial", &self.allow_partial)
            .finish_non_exhaustive()
    }
}

impl TrimMessages {
    /// Keep at most `max_tokens` with `strategy`, counting approximately, nothing else set.
    pub fn new(max_tokens: usize, strategy: TrimStrategy) -> Self {
        TrimMessages {
            max_tokens,
            strategy,
            include_system: false,
            start_on: Vec::new(),
            end_on: Vec::new(),
            allow_partial: false,
            counter: Arc::new(count_tokens_approximately),
        }
    }

    /// Keep the newest messages that fit in `max_tokens`.
    pub fn last(max_tokens: usize) -> Self {
        TrimMessages::new(max_tokens, TrimStrategy::Last)
    }

    /// Keep the oldest messages that fit in `max_tokens`.
    pub fn first(max_tokens: usize) -> Self {
        TrimMessages::new(max_tokens, TrimStrategy::First)
    }

    /// Always keep a leading system message (with [`TrimStrategy::Last`]; with `First` it is
    /// kept anyway when it fits).
    pub fn include_system(mut self, include: bool) -> Self {
        self.include_system = include;
        self
    }

    /// The kept window starts with a message of one of these kinds (after the system
    /// message, when kept).
    pub fn start_on<'a>(mut self, kinds: impl IntoIterator<Item = &'a str>) -> Self {
        self.start_on = kinds.into_iter().map(str::to_owned).collect();
        self
    }

    /// The kept window ends with a message of one of these kinds.
    pub fn end_on<'a>(mut self, kinds: impl IntoIterator<Item = &'a str>) -> Self {
        self.end_on = kinds.into_iter().map(str::to_owned).collect();
        self
    }

    /// Keeps part of a message (whole lines) when it does not fit whole.
    pub fn allow_partial(mut self, allow: bool) -> Self {
        self.allow_partial = allow;
        self
    }

    /// Counts tokens with `counter` (called on candidate windows; it need not be additive).
    pub fn token_counter(
        mut self,
        counter: impl Fn(&[Message]) -> usize + Send + Sync + 'static,
    ) -> Self {
        self.counter = Arc::new(counter);
        self
    }

    /// Budgets in messages instead of tokens (LangChain's `token_counter=len`).
    pub fn count_messages(self) -> Self {
        self.token_counter(<[Message]>::len)
    }

    /// The budget.
    pub fn max_tokens(&self) -> usize {
        self.max_tokens
    }

    /// Tokens of `messages` per this trimmer's counter.
    pub fn count(&self, messages: &[Message]) -> usize {
        (self.counter)(messages)
    }

    /// `messages` trimmed (see [`trim_messages`]).
    pub fn trim(&self, messages: &[Message]) -> Vec<Message> {
        trim_messages(messages, self)
    }
}

/// LangChain's `count_tokens_approximately`: per message, the characters of its text, role,
/// name and tool calls divided by four (rounded up), plus three.
pub fn count_tokens_approximately(messages: &[Message]) -> usize {
    messages
        .iter()
        .map(|m| {
            let mut chars = m.content().chars().count() + m.kind().len();
            match m {
                Message::Ai(ai) => {
                    for call in &ai.tool_calls {
                        chars += call.name.len() + call.id.len() + call.args.to_string().len();
                    }
                }
                Message::Tool(tool) => {
                    chars += tool.tool_call_id.len() + tool.name.as_deref().map_or(0, str::len);
                }
                Message::Human(human) => chars += human.name.as_deref().map_or(0, str::len),
                Message::System(_) | Message::Remove(_) => {}
            }
            chars.div_ceil(4) + 3
        })
        .sum()
}

/// `messages` trimmed to `options.max_tokens` per `options` (LangChain's `trim_messages`;
/// see the module docs). The messages kept are clones, in their original order; a message
/// kept partially keeps its id.
pub fn trim_messages(messages: &[Message], options: &TrimMessages) -> Vec<Message> {
    let messages: Vec<&Message> = messages
        .iter()
        .filter(|m| !matches!(m, Message::Remove(_)))
        .collect();
    match options.strategy {
        TrimStrategy::First => {
            let kept = first_max_tokens(&messages, options.max_tokens, options, Side::Front);
            let kept = drop_until(kept, &options.start_on, Side::Front);
            drop_until(kept, &options.end_on, Side::Back)
        }
        TrimStrategy::Last => {
            let mut rest: &[&Message] = &messages;
            // Trailing messages that cannot end the window go first (LangChain does this
            // before counting).
            if !options.end_on.is_empty() {
                let end = rest
                    .iter()
                    .rposition(|m| is_kind(m, &options.end_on))
                    .map_or(0, |i| i + 1);
                rest = &rest[..end];
            }
            let mut budget = options.max_tokens;
            let mut system = None;
            if options.include_system
                && let Some((first, tail)) = rest.split_first()
                && first.kind() == "system"
            {
                let cost = options.count(&[(*first).clone()]);
                if cost > budget {
                    return Vec::new();
                }
                budget -= cost;
                system = Some((*first).clone());
                rest = tail;
            }
            let reversed: Vec<&Message> = rest.iter().rev().copied().collect();
            let mut kept = first_max_tokens(&reversed, budget, options, Side::Back);
            kept.reverse();
            let kept = drop_until(kept, &options.start_on, Side::Front);
            system.into_iter().chain(kept).collect()
        }
    }
}

/// Which end of a message survives a partial cut, and which end a `drop_until` trims.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Side {
    Front,
    Back,
}

fn is_kind(message: &Message, kinds: &[String]) -> bool {
    kinds.iter().any(|k| k == message.kind())
}

/// Drops messages from `side` until one of `kinds` is at that end (nothing when `kinds` is
/// empty; everything when none matches).
fn drop_until(mut messages: Vec<Message>, kinds: &[String], side: Side) -> Vec<Message> {
    if kinds.is_empty() {
        return messages;
    }
    match side {
        Side::Front => {
            let start = messages
                .iter()
                .position(|m| is_kind(m, kinds))
                .unwrap_or(messages.len());
            messages.drain(..start);
        }
        Side::Back => {
            let end = messages
                .iter()
                .rposition(|m| is_kind(m, kinds))
                .map_or(0, |i| i + 1);
            messages.truncate(end);
        }
    }
    messages
}

/// The longest prefix of `messages` within `budget` (they are in the order of preference:
/// reversed for `Last`), plus part of the next message when allowed. `keep` says which end
/// of a partially kept message survives.
fn first_max_tokens(
    messages: &[&Message],
    budget: usize,
    options: &TrimMessages,
    keep: Side,
) -> Vec<Message> {
    let owned: Vec<Message> = messages.iter().map(|m| (*m).clone()).collect();
    // The counter may not be additive, so it is asked about whole prefixes; prefix costs
    // only grow, so a binary search finds the longest one that fits.
    let fits = |n: usize| -> bool {
        let window = window_in_order(&owned[..n], keep);
        options.count(&window) <= budget
    };
    let (mut low, mut high) = (0, owned.len());
    while low < high {
        let mid = (low + high).div_ceil(2);
        if fits(mid) {
            low = mid;
        } else {
            high = mid - 1;
        }
    }
    let mut kept: Vec<Message> = owned[..low].to_vec();
    if options.allow_partial
        && let Some(next) = owned.get(low)
        && let Some(part) = partial(next, &kept, budget, options, keep)
    {
        kept.push(part);
    }
    kept
}

/// `prefix` in conversation order (it is reversed for `Last`).
fn window_in_order(prefix: &[Message], side: Side) -> Vec<Message> {
    let mut window = prefix.to_vec();
    if side == Side::Back {
        window.reverse();
    }
    window
}

/// The most whole lines of `message` that fit next to `kept`: its first lines (`Front`) or
/// its last ones (`Back`). `None` when not even one line fits or the message has no text.
fn partial(
    message: &Message,
    kept: &[Message],
    budget: usize,
    options: &TrimMessages,
    keep: Side,
) -> Option<Message> {
    let lines: Vec<&str> = message.content().split_inclusive('\n').collect();
    if lines.len() < 2 && message.content().is_empty() {
        return None;
    }
    let mut best = None;
    for n in 1..lines.len() {
        let text: String = match keep {
            Side::Front => lines[..n].concat(),
            Side::Back => lines[lines.len() - n..].concat(),
        };
        let candidate = with_content(message, text);
        let mut window = kept.to_vec();
        window.push(candidate.clone());
        if options.count(&window_in_order(&window, keep)) > budget {
            break;
        }
        best = Some(candidate);
    }
    best
}

/// `message` with its text replaced (an AI message keeps its tool calls only when whole).
fn with_content(message: &Message, content: String) -> Message {
    match message {
        Message::System(m) => Message::System(SystemMessage {
            content,
            ..m.clone()
        }),
        // Blocks that no longer match the text are dropped with what was cut.
        Message::Human(m) => Message::Human(HumanMessage {
            content,
            content_blocks: None,
            ..m.clone()
        }),
        Message::Ai(m) => Message::Ai(AiMessage {
            content,
            tool_calls: Vec::new(),
            ..m.clone()
        }),
        Message::Tool(m) => Message::Tool(ToolMessage {
            content,
            ..m.clone()
        }),
        Message::Remove(m) => Message::Remove(m.clone()),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::message::ToolCall;

    fn chat() -> Vec<Message> {
        vec![
            Message::system("system prompt").with_id("s"),
            Message::human("q1").with_id("h1"),
            Message::ai_tool_calls([ToolCall::new("c1", "search", json!({"q": "x"}))])
                .with_id("a1"),
            Message::tool("c1", "result one").with_id("t1"),
            Message::ai("answer one").with_id("a2"),
            Message::human("q2").with_id("h2"),
            Message::ai("answer two").with_id("a3"),
        ]
    }

    fn ids(messages: &[Message]) -> Vec<&str> {
        messages.iter().filter_map(Message::id).collect()
    }

    #[test]
    fn last_keeps_the_newest_that_fit() {
        let kept = TrimMessages::last(3).count_messages().trim(&chat());
        assert_eq!(ids(&kept), ["a2", "h2", "a3"]);
        let kept = TrimMessages::last(3)
            .count_messages()
            .start_on(["human"])
            .trim(&chat());
        assert_eq!(ids(&kept), ["h2", "a3"]);
        let kept = TrimMessages::last(3)
            .count_messages()
            .include_system(true)
            .start_on(["human"])
            .trim(&chat());
        assert_eq!(ids(&kept), ["s", "h2", "a3"]);
    }

    #[test]
    fn start_on_human_never_opens_on_an_orphaned_tool_result() {
        // Four messages fit beside the system message: t1, a2, h2, a3; a1 is cut, so t1
        // would open the window as an orphaned tool result.
        let kept = TrimMessages::last(5)
            .count_messages()
            .include_system(true)
            .start_on(["human"])
            .trim(&chat());
        assert_eq!(ids(&kept), ["s", "h2", "a3"]);
        let kept = TrimMessages::last(7)
            .count_messages()
            .include_system(true)
            .start_on(["human"])
            .trim(&chat());
        assert_eq!(ids(&kept), ["s", "h1", "a1", "t1", "a2", "h2", "a3"]);
    }

    #[test]
    fn end_on_drops_trailing_messages_first() {
        let kept = TrimMessages::last(10)
            .count_messages()
            .end_on(["human"])
            .trim(&chat());
        assert_eq!(ids(&kept), ["s", "h1", "a1", "t1", "a2", "h2"]);
        let kept = TrimMessages::first(4)
            .count_messages()
            .end_on(["ai"])
            .trim(&chat());
        assert_eq!(ids(&kept), ["s", "h1", "a1"]);
    }

    #[test]
    fn first_keeps_the_oldest() {
        let kept = TrimMessages::first(2).count_messages().trim(&chat());
        assert_eq!(ids(&kept), ["s", "h1"]);
        let kept = TrimMessages::first(3)
            .count_messages()
            .start_on(["human"])
            .trim(&chat());
        assert_eq!(ids(&kept), ["h1", "a1"]);
    }

    #[test]
    fn approximate_counts_follow_langchain() {
        // "hello" (5) + "human" (5) = 10 chars -> 3 tokens, + 3 per message.
        assert_eq!(count_tokens_approximately(&[Message::human("hello")]), 6);
        assert_eq!(count_tokens_approximately(&[]), 0);
        let call = Message::ai_tool_calls([ToolCall::new("id", "f", json!({}))]);
        // "ai" 2 + "f" 1 + "id" 2 + "{}" 2 = 7 -> 2, + 3.
        assert_eq!(count_tokens_approximately(&[call]), 5);
        let budget = count_tokens_approximately(&chat()[5..]);
        let kept = TrimMessages::last(budget).trim(&chat());
        assert_eq!(ids(&kept), ["h2", "a3"]);
        let kept = TrimMessages::last(budget - 1).trim(&chat());
        assert_eq!(ids(&kept), ["a3"]);
    }

    #[test]
    fn a_system_message_bigger_than_the_budget_leaves_nothing() {
        let kept = TrimMessages::last(2).include_system(true).trim(&[
            Message::system("a long system prompt"),
            Message::human("hi"),
        ]);
        assert!(kept.is_empty());
        assert!(TrimMessages::last(0).trim(&chat()).is_empty());
        assert!(TrimMessages::first(5).trim(&[]).is_empty());
    }

    #[test]
    fn partial_messages_keep_whole_lines_from_the_right_end() {
        let long = Message::human("line one\nline two\nline three\nline four").with_id("l");
        let messages = vec![long, Message::ai("ok").with_id("ok")];
        // A counter in lines makes the arithmetic obvious.
        let lines =
            |ms: &[Message]| -> usize { ms.iter().map(|m| m.content().lines().count()).sum() };
        let kept = TrimMessages::last(3)
            .token_counter(lines)
            .allow_partial(true)
            .trim(&messages);
        assert_eq!(ids(&kept), ["l", "ok"]);
        assert_eq!(kept[0].content(), "line three\nline four");
        let kept = TrimMessages::first(2)
            .token_counter(lines)
            .allow_partial(true)
            .trim(&messages);
        assert_eq!(kept.len(), 1);
        assert_eq!(kept[0].content(), "line one\nline two\n");
        let whole = TrimMessages::last(3).token_counter(lines).trim(&messages);
        assert_eq!(ids(&whole), ["ok"]);
    }

    #[test]
    fn remove_instructions_are_not_messages() {
        let messages = vec![Message::human("a").with_id("a"), Message::remove("a")];
        assert_eq!(
            ids(&TrimMessages::last(9).count_messages().trim(&messages)),
            ["a"]
        );
    }
}
