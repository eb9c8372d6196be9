//! # Differences from LangGraph
//!
//! What a port from LangGraph meets, each difference intentional. The text is
//! `docs/differences.md`, the same list as the guide's "Differences from LangGraph" page
//! (`docs/guide/src/differences.md` of the workspace; a test keeps the two identical).
//!
#![doc = include_str!("../docs/differences.md")]

#[cfg(test)]
mod tests {
    /// The guide page's list: what follows its `# Differences from LangGraph` heading (and
    /// the comment under it) up to the next heading, without the blank lines around it.
    fn guide_list(page: &str) -> Option<String> {
        let body = page.strip_prefix("# Differences from LangGraph\n")?;
        let body = body.trim_start();
        let body = match body.strip_prefix("<!--") {
            Some(comment) => &comment[comment.find("-->")? + 3..],
            None => body,
        };
        let end = body.find("\n#").unwrap_or(body.len());
        Some(body[..end].trim().to_owned())
    }

    #[test]
    fn the_guide_lists_the_same_differences() {
        let path = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../docs/guide/src/differences.md"
        );
        let page = std::fs::read_to_string(path).unwrap();
        let list = guide_list(&page)
            .expect("docs/guide/src/differences.md starts with `# Differences from LangGraph`");
        let doc = include_str!("../docs/differences.md").trim();
        assert!(
            list == doc,
            "docs/guide/src/differences.md and agent-core/docs/differences.md differ: make \
             them the same text\n--- guide ---\n{list}\n--- docs/differences.md ---\n{doc}"
        );
    }
}
