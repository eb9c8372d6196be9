//! A graph as LangGraph's `get_graph().to_json()`: nodes and edges, and with `xray` the
//! subgraphs drawn inside their parents (nodes `sub:inner`, edges rewired through them), as
//! Studio shows them.

use std::collections::HashSet;

use agent_core::Topology;
use serde_json::{Value, json};

const START: &str = "__start__";
const END: &str = "__end__";

/// `nodes` and `edges` of `t`, subgraphs expanded `xray` levels deep.
pub fn to_json(t: &Topology, xray: usize) -> Value {
    let mut nodes = vec![node(START)];
    let mut edges = Vec::new();
    let mut seen = HashSet::new();
    draw(t, "", xray, &mut nodes, &mut edges, &mut seen);
    nodes.push(node(END));
    json!({"nodes": nodes, "edges": edges})
}

fn node(id: &str) -> Value {
    let name = id.rsplit(':').next().unwrap_or(id);
    json!({"id": id, "type": "runnable", "data": {"name": name}})
}

/// Draws `t` with its node ids under `prefix` (`sub:` inside a subgraph): its nodes, and its
/// edges with START/END of a subgraph replaced by the parent's edges into and out of it.
fn draw(
    t: &Topology,
    prefix: &str,
    xray: usize,
    nodes: &mut Vec<Value>,
    edges: &mut Vec<Value>,
    seen: &mut HashSet<(String, String, bool)>,
) {
    let expanded = |n: &str| xray > 0 && t.subgraphs.iter().any(|(name, _)| name == n);
    for n in &t.nodes {
        if expanded(n) {
            if let Some((_, sub)) = t.subgraphs.iter().find(|(name, _)| name == n) {
                draw(sub, &format!("{prefix}{n}:"), xray - 1, nodes, edges, seen);
            }
        } else {
            nodes.push(node(&format!("{prefix}{n}")));
        }
    }
    // Where an edge into `n` lands and where an edge out of `n` leaves, once expanded.
    let entries = |n: &str| -> Vec<String> { ends(t, n, prefix, true, xray) };
    let exits = |n: &str| -> Vec<String> { ends(t, n, prefix, false, xray) };
    let plain = t.edges.iter().map(|(a, b)| (a, b, false));
    let conditional = t
        .conditional
        .iter()
        .map(|(a, _, b)| (a, b, true))
        .chain(t.commands.iter().map(|(a, b)| (a, b, true)));
    for (from, to, cond) in plain.chain(conditional) {
        for source in exits(from) {
            for target in entries(to) {
                if seen.insert((source.clone(), target.clone(), cond)) {
                    let mut e = json!({"source": source, "target": target});
                    if cond {
                        e["conditional"] = true.into();
                    }
                    edges.push(e);
                }
            }
        }
    }
}

/// The drawn ids an edge reaches for node `n` of `t` (entering: the subgraph's first nodes;
/// leaving: its last ones). START/END of a nested graph stand for the parent's edges and
/// are resolved by the parent, so they map to the prefix's own START/END here.
fn ends(t: &Topology, n: &str, prefix: &str, entering: bool, xray: usize) -> Vec<String> {
    if n == START || n == END {
        return if prefix.is_empty() {
            vec![n.to_owned()]
        } else {
            // Inside a subgraph, its START/END are the parent's edges: drawn by the parent.
            Vec::new()
        };
    }
    match t.subgraphs.iter().find(|(name, _)| name == n) {
        Some((_, sub)) if xray > 0 => {
            let inner = format!("{prefix}{n}:");
            let boundary = if entering { START } else { END };
            let mut out = Vec::new();
            let all = sub
                .edges
                .iter()
                .map(|(a, b)| (a, b))
                .chain(sub.conditional.iter().map(|(a, _, b)| (a, b)));
            for (a, b) in all {
                let (edge_end, other) = if entering { (a, b) } else { (b, a) };
                if edge_end == boundary && other != START && other != END {
                    out.extend(ends(sub, other, &inner, entering, xray - 1));
                }
            }
            out
        }
        _ => vec![format!("{prefix}{n}")],
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shape(nodes: &[&str], edges: &[(&str, &str)]) -> Topology {
        Topology {
            nodes: nodes.iter().map(|n| (*n).to_owned()).collect(),
            edges: edges
                .iter()
                .map(|(a, b)| ((*a).to_owned(), (*b).to_owned()))
                .collect(),
            ..Topology::default()
        }
    }

    #[test]
    fn xray_draws_the_subgraph_inside_its_parent() {
        let sub = shape(
            &["inner", "sub_ask"],
            &[(START, "inner"), ("inner", "sub_ask"), ("sub_ask", END)],
        );
        let mut t = shape(
            &["chat", "sub", "human"],
            &[
                (START, "chat"),
                ("chat", "sub"),
                ("sub", "human"),
                ("human", END),
            ],
        );
        t.subgraphs.push(("sub".to_owned(), sub));
        let flat = to_json(&t, 0);
        let ids: Vec<&str> = flat["nodes"]
            .as_array()
            .unwrap()
            .iter()
            .map(|n| n["id"].as_str().unwrap())
            .collect();
        assert_eq!(ids, ["__start__", "chat", "sub", "human", "__end__"]);
        let x = to_json(&t, 1);
        let ids: Vec<&str> = x["nodes"]
            .as_array()
            .unwrap()
            .iter()
            .map(|n| n["id"].as_str().unwrap())
            .collect();
        assert_eq!(
            ids,
            [
                "__start__",
                "chat",
                "sub:inner",
                "sub:sub_ask",
                "human",
                "__end__"
            ]
        );
        let edges: Vec<(String, String)> = x["edges"]
            .as_array()
            .unwrap()
            .iter()
            .map(|e| {
                (
                    e["source"].as_str().unwrap().to_owned(),
                    e["target"].as_str().unwrap().to_owned(),
                )
            })
            .collect();
        let want = [
            ("sub:inner", "sub:sub_ask"),
            ("__start__", "chat"),
            ("chat", "sub:inner"),
            ("sub:sub_ask", "human"),
            ("human", "__end__"),
        ];
        for (a, b) in want {
            assert!(
                edges.contains(&(a.to_owned(), b.to_owned())),
                "{a} -> {b} in {edges:?}"
            );
        }
        assert_eq!(edges.len(), want.len(), "{edges:?}");
    }
}
