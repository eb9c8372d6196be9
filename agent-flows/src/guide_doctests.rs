//! The guide's pages (`docs/guide/src/*.md` of the workspace) as doctests: each page is the
//! doc comment of a hidden item here, so `cargo test -p agent-flows --doc` (and `cargo xtask
//! ci`) compiles and runs every ```rust block of the guide, in the crate that depends on every
//! other. Blocks that must not run (a server that listens forever) are `no_run`.
//!
//! A test checks that this list and the guide's directory name the same pages, so a new page
//! is tested from the day it is written.

/// Lists the pages: each becomes a documented item under `cfg(doctest)`, and `PAGES` names
/// them for the test.
macro_rules! guide_pages {
    ($($item:ident: $file:literal),* $(,)?) => {
        /// The pages tested here, file names under `docs/guide/src/`.
        #[cfg(test)]
        const PAGES: &[&str] = &[$($file),*];
        $(
            #[cfg(doctest)]
            #[doc = include_str!(concat!("../../docs/guide/src/", $file))]
            struct $item;
        )*
    };
}

guide_pages! {
    Introduction: "introduction.md",
    Concepts: "concepts.md",
    State: "state.md",
    NodesAndEdges: "nodes-and-edges.md",
    SendAndCommand: "send-and-command.md",
    Persistence: "persistence.md",
    HumanInTheLoop: "human-in-the-loop.md",
    Streaming: "streaming.md",
    Subgraphs: "subgraphs.md",
    Memory: "memory.md",
    Tools: "tools.md",
    Flows: "flows.md",
    Serving: "serving.md",
    RunsEnd: "runs-end.md",
    Deploying: "deploying.md",
    McpServer: "mcp-server.md",
    A2a: "a2a.md",
    WebPage: "web-page.md",
    ChatUis: "chat-uis.md",
    Observability: "observability.md",
    Differences: "differences.md",
    Migrating: "migrating.md",
    Benchmarks: "benchmarks.md",
}

#[cfg(test)]
mod tests {
    use super::PAGES;

    /// Every page of the guide is a doctest here, and every page listed exists.
    #[test]
    fn every_guide_page_is_tested() {
        let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/../docs/guide/src");
        let mut on_disk: Vec<String> = std::fs::read_dir(dir)
            .unwrap()
            .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|name| name.ends_with(".md") && name != "SUMMARY.md")
            .collect();
        on_disk.sort();
        let mut listed: Vec<String> = PAGES.iter().map(|p| (*p).to_owned()).collect();
        listed.sort();
        assert_eq!(
            listed, on_disk,
            "agent-flows/src/guide_doctests.rs must list every page of docs/guide/src (and no other)"
        );
    }
}
