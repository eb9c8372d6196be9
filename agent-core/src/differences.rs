//! # Differences from LangGraph
//!
//! What a port from LangGraph meets, each difference intentional. The text is
//! `docs/differences.md`, the same list as the workspace README's "Differences from
//! LangGraph" section (a test keeps the two identical).
//!
#![doc = include_str!("../docs/differences.md")]

#[cfg(test)]
mod tests {
    /// The README's "Differences from LangGraph" section, from its heading to the next
    /// section, without the blank lines around it.
    fn readme_section(readme: &str) -> Option<String> {
        let start = readme.find("\n### Differences from LangGraph\n")?;
        let body = &readme[start..];
        let body = &body[body.find('\n').map(|at| at + 1)?..];
        let body = body.split_once('\n').map(|(_, rest)| rest)?;
        let end = body
            .find("\n## ")
            .into_iter()
            .chain(body.find("\n### "))
            .min()
            .unwrap_or(body.len());
        Some(body[..end].trim().to_owned())
    }

    #[test]
    fn the_readme_lists_the_same_differences() {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../README.md");
        let readme = std::fs::read_to_string(path).unwrap();
        let section = readme_section(&readme)
            .expect("the README has a `### Differences from LangGraph` section");
        let doc = include_str!("../docs/differences.md").trim();
        assert!(
            section == doc,
            "README.md's \"Differences from LangGraph\" section and \
             agent-core/docs/differences.md differ: make them the same text\n\
             --- README ---\n{section}\n--- docs/differences.md ---\n{doc}"
        );
    }
}
