//! The seed's `usage` field: input and output tokens of every model call, in total, per node
//! and per model, added up by a reducer from the usage each `ChatModel` reply reports.
//!
//! A turn's input clears it (an empty ledger resets, see [`merge_usage`]), so the field holds
//! the current turn, like the run's own counters (`TurnReport::usage`).

use std::collections::BTreeMap;

use agent_llm::Usage;
use serde::{Deserialize, Serialize};

/// Tokens and calls.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct TokenCount {
    /// Prompt tokens.
    pub input_tokens: u64,
    /// Generated tokens.
    pub output_tokens: u64,
    /// Model calls (a structured call with a corrective retry counts once).
    pub calls: u64,
}

impl TokenCount {
    fn add(&mut self, other: TokenCount) {
        self.input_tokens += other.input_tokens;
        self.output_tokens += other.output_tokens;
        self.calls += other.calls;
    }
}

/// Usage of a turn: the total, per node, per model.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct UsageLedger {
    /// Every call.
    pub total: TokenCount,
    /// By node (`intent`, `parser`, `end`).
    pub by_node: BTreeMap<String, TokenCount>,
    /// By model name (`offline-data`, `gpt-4o-mini`...).
    pub by_model: BTreeMap<String, TokenCount>,
}

impl UsageLedger {
    /// The ledger of one call of `model` in `node`.
    pub fn call(node: &str, model: &str, usage: Usage) -> UsageLedger {
        let count = TokenCount {
            input_tokens: usage.input_tokens,
            output_tokens: usage.output_tokens,
            calls: 1,
        };
        UsageLedger {
            total: count,
            by_node: BTreeMap::from([(node.to_owned(), count)]),
            by_model: BTreeMap::from([(model.to_owned(), count)]),
        }
    }

    /// Whether it counts nothing (the reset value).
    pub fn is_empty(&self) -> bool {
        self.total == TokenCount::default() && self.by_node.is_empty() && self.by_model.is_empty()
    }
}

/// `usage`'s reducer: adds the update's counts, key by key; an empty ledger clears the field
/// (a new turn).
pub fn merge_usage(current: &mut UsageLedger, update: UsageLedger) {
    if update.is_empty() {
        *current = UsageLedger::default();
        return;
    }
    current.total.add(update.total);
    for (node, count) in update.by_node {
        current.by_node.entry(node).or_default().add(count);
    }
    for (model, count) in update.by_model {
        current.by_model.entry(model).or_default().add(count);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn calls_add_up_per_node_and_model_and_an_empty_update_resets() {
        let mut ledger = UsageLedger::default();
        merge_usage(
            &mut ledger,
            UsageLedger::call("intent", "small", Usage::new(10, 3)),
        );
        merge_usage(
            &mut ledger,
            UsageLedger::call("parser", "big", Usage::new(20, 7)),
        );
        merge_usage(
            &mut ledger,
            UsageLedger::call("intent", "small", Usage::new(1, 1)),
        );
        assert_eq!(
            ledger.total,
            TokenCount {
                input_tokens: 31,
                output_tokens: 11,
                calls: 3
            }
        );
        assert_eq!(ledger.by_node["intent"].input_tokens, 11);
        assert_eq!(ledger.by_model["big"].output_tokens, 7);
        assert_eq!(ledger.by_model["small"].calls, 2);
        merge_usage(&mut ledger, UsageLedger::default());
        assert!(ledger.is_empty());
    }
}
