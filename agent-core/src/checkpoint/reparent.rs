//! Parents kept loadable when checkpoints go from the middle of a history (a run deleted
//! with later runs after it, older checkpoints pruned): a remaining checkpoint whose parent
//! is deleted names its nearest remaining ancestor instead, or none when every ancestor
//! goes. Without it, a history shows a `parent_checkpoint` that cannot be read or forked.

use std::collections::{HashMap, HashSet};

/// The remaining checkpoints whose parent is in `doomed`, each with its new parent: the
/// nearest ancestor not in `doomed` (`None` when there is none). `parents` maps every
/// checkpoint of one namespace to its parent.
pub(crate) fn reparented(
    parents: &HashMap<String, Option<String>>,
    doomed: &HashSet<&str>,
) -> Vec<(String, Option<String>)> {
    let mut out = Vec::new();
    for (id, parent) in parents {
        let Some(parent) = parent else { continue };
        if doomed.contains(id.as_str()) || !doomed.contains(parent.as_str()) {
            continue;
        }
        let mut at = parent.as_str();
        // Each step goes to an older checkpoint; the bound guards a malformed chain.
        let mut hops = 0;
        let new = loop {
            if !doomed.contains(at) {
                break Some(at.to_owned());
            }
            match parents.get(at).and_then(|p| p.as_deref()) {
                Some(up) if hops < parents.len() => {
                    at = up;
                    hops += 1;
                }
                _ => break None,
            }
        };
        out.push((id.clone(), new));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_deleted_parent_is_replaced_by_the_nearest_remaining_ancestor() {
        let parents: HashMap<String, Option<String>> = [
            ("a", None),
            ("b", Some("a")),
            ("c", Some("b")),
            ("d", Some("c")),
            ("e", Some("d")),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_owned(), v.map(str::to_owned)))
        .collect();
        let mut out = reparented(&parents, &["b", "c"].into_iter().collect());
        out.sort();
        assert_eq!(out, [("d".to_owned(), Some("a".to_owned()))]);
        let mut out = reparented(&parents, &["a", "b", "c", "d"].into_iter().collect());
        out.sort();
        assert_eq!(out, [("e".to_owned(), None)]);
        assert!(reparented(&parents, &["e"].into_iter().collect()).is_empty());
    }
}
