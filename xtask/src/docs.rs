//! `cargo xtask docs`: builds the guide (`docs/guide`, an mdBook) into `<target dir>/guide`.
//!
//! First it checks the links of the Markdown users read — `README.md`, `docs/benchmarks.md`
//! and every page of `docs/guide/src` — without a network: every relative link and image
//! points at a file of the repository (from the guide, at a file of the book, since the HTML
//! book holds nothing else), every `#anchor` at a heading of its page, every
//! `{{#include ..}}` at a file, and every page of the guide is in its `SUMMARY.md`. Links to
//! `http(s)://` are not followed. Then it runs `mdbook build`, and any error or warning mdbook
//! prints (it exits 0 on a missing include) fails the command.
//!
//! mdbook comes from crates.io, pinned, installed once per machine with `cargo install
//! --locked` into `${AGENTGRAPH_CACHE:-~/.cache/agentgraph}/mdbook-<version>` (a few minutes
//! on 2 cores, then cached), as the project's other tools are. `cargo xtask ci` runs this as
//! its `guide` step. The guide's Rust snippets are not run here: they are doctests of
//! agent-flows (`agent-flows/src/guide_doctests.rs`), run by the `test` step.

use std::collections::BTreeMap;
use std::fmt;
use std::path::{Component, Path, PathBuf};
use std::process::{Command, Stdio};

use xtask::sourcegen::{display_path, project_root};

use crate::{bench, shell};

/// The mdbook release the guide is built with.
pub const MDBOOK_VERSION: &str = "0.5.4";

/// The guide, relative to the workspace root.
const GUIDE: &str = "docs/guide";

/// Files outside the guide whose links are checked too.
const OTHER_PAGES: &[&str] = &["README.md", "docs/benchmarks.md"];

/// Runs the command.
pub fn run(args: &[String]) -> Result<(), String> {
    if !args.is_empty() {
        return Err("usage: cargo xtask docs".to_owned());
    }
    let root = project_root();
    check_links(&root)?;
    let mdbook = mdbook()?;
    let dest = bench::target_dir(&root).join("guide");
    let mut cmd = Command::new(&mdbook);
    cmd.current_dir(&root)
        .arg("build")
        .arg(GUIDE)
        .arg("--dest-dir")
        .arg(&dest)
        .env("NO_COLOR", "1");
    build_book(cmd)?;
    eprintln!(
        "docs: the guide is in {}",
        display_path(&dest.join("index.html"))
    );
    Ok(())
}

/// Checks every page's links, printing each problem.
fn check_links(root: &Path) -> Result<(), String> {
    let pages = Pages::read(root)?;
    let problems = pages.problems();
    for problem in &problems {
        println!("{problem}");
    }
    if problems.is_empty() {
        eprintln!(
            "docs: links of {} pages checked, no problems",
            pages.files.len()
        );
        Ok(())
    } else {
        Err(format!("{} broken links or pages", problems.len()))
    }
}

/// Runs `mdbook build`, showing its log, and fails on any `ERROR` or `WARN` line.
fn build_book(mut cmd: Command) -> Result<(), String> {
    eprintln!("$ mdbook build {GUIDE}");
    cmd.stdout(Stdio::inherit()).stderr(Stdio::piped());
    let output = cmd
        .output()
        .map_err(|e| format!("cannot run mdbook: {e}"))?;
    let log = String::from_utf8_lossy(&output.stderr);
    eprint!("{log}");
    if !output.status.success() {
        return Err(format!("`mdbook build {GUIDE}` failed ({})", output.status));
    }
    let complaints = log.lines().filter(|line| is_complaint(line)).count();
    if complaints > 0 {
        return Err(format!(
            "`mdbook build {GUIDE}` printed {complaints} errors or warnings (above)"
        ));
    }
    Ok(())
}

/// Whether a line of mdbook's log is an error or a warning (`ERROR ..`, ` WARN ..`).
fn is_complaint(line: &str) -> bool {
    matches!(
        line.split_whitespace().next(),
        Some("ERROR" | "WARN" | "[ERROR]" | "[WARN]")
    )
}

/// `mdbook`, installed into the cache the first time.
fn mdbook() -> Result<PathBuf, String> {
    let dir = shell::cache_dir()?.join(format!("mdbook-{MDBOOK_VERSION}"));
    let bin = dir.join("bin/mdbook");
    if bin.exists() {
        return Ok(bin);
    }
    eprintln!(
        "docs: installing mdbook {MDBOOK_VERSION} from crates.io into {} (once per machine)",
        dir.display()
    );
    let mut cmd = shell::cargo();
    // Built in a temporary directory of cargo's, not in the workspace's target dir.
    cmd.env_remove("CARGO_TARGET_DIR").args([
        "install",
        "mdbook",
        "--locked",
        "--version",
        MDBOOK_VERSION,
        "--no-default-features",
        "--features",
        "search",
        "--root",
    ]);
    cmd.arg(&dir);
    shell::run(cmd)?;
    if bin.exists() {
        Ok(bin)
    } else {
        Err(format!("cargo install left no {}", bin.display()))
    }
}

/// One broken link or page.
#[derive(Debug, PartialEq, Eq)]
pub struct Problem {
    /// The page, relative to the workspace root.
    pub path: String,
    /// 1-based.
    pub line: usize,
    pub message: String,
}

impl fmt::Display for Problem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}: {}", self.path, self.line, self.message)
    }
}

/// The pages checked, by path relative to the workspace root (`/` separators).
struct Pages {
    files: BTreeMap<String, String>,
    /// Files of the repository links may point at (relative paths), besides the pages.
    exists: Box<dyn Fn(&str) -> bool>,
}

impl Pages {
    /// The README, `docs/benchmarks.md` and every Markdown file under `docs/guide/src`.
    fn read(root: &Path) -> Result<Pages, String> {
        let mut files = BTreeMap::new();
        let mut names: Vec<String> = OTHER_PAGES.iter().map(|p| (*p).to_owned()).collect();
        let src = root.join(GUIDE).join("src");
        let entries = std::fs::read_dir(&src)
            .map_err(|e| format!("cannot read {}: {e}", display_path(&src)))?;
        for entry in entries {
            let entry = entry.map_err(|e| format!("cannot read {}: {e}", display_path(&src)))?;
            let name = entry.file_name().to_string_lossy().into_owned();
            if name.ends_with(".md") {
                names.push(format!("{GUIDE}/src/{name}"));
            }
        }
        for name in names {
            let path = root.join(&name);
            let text = std::fs::read_to_string(&path)
                .map_err(|e| format!("cannot read {}: {e}", display_path(&path)))?;
            files.insert(name, text);
        }
        let root = root.to_path_buf();
        Ok(Pages {
            files,
            exists: Box::new(move |rel| root.join(rel).exists()),
        })
    }

    /// Every problem of every page, in path and line order.
    fn problems(&self) -> Vec<Problem> {
        let mut problems = Vec::new();
        for (path, text) in &self.files {
            problems.extend(self.check_page(path, text));
        }
        problems.extend(self.check_summary());
        problems
    }

    fn check_page(&self, path: &str, text: &str) -> Vec<Problem> {
        let mut problems = Vec::new();
        let dir = path.rsplit_once('/').map_or("", |(dir, _)| dir);
        let in_guide = path.starts_with(&format!("{GUIDE}/src/"));
        for (number, link) in links(text) {
            let problem = |message: String| Problem {
                path: path.to_owned(),
                line: number,
                message,
            };
            match link {
                Link::Include(target) => {
                    let file = target.split(':').next().unwrap_or(&target);
                    match resolve(dir, file) {
                        Some(rel) if (self.exists)(&rel) => {}
                        _ => problems.push(problem(format!(
                            "`{{{{#include {target}}}}}`: no such file"
                        ))),
                    }
                }
                Link::Target(target) => {
                    if target.contains("://") || target.starts_with("mailto:") {
                        continue;
                    }
                    let (file, anchor) = match target.split_once('#') {
                        Some((file, anchor)) => (file, Some(anchor)),
                        None => (target.as_str(), None),
                    };
                    let rel = if file.is_empty() {
                        path.to_owned()
                    } else {
                        match resolve(dir, file) {
                            Some(rel) => rel,
                            None => {
                                problems.push(problem(format!(
                                    "`{target}` points outside the repository"
                                )));
                                continue;
                            }
                        }
                    };
                    if in_guide && !rel.starts_with(&format!("{GUIDE}/src/")) {
                        problems.push(problem(format!(
                            "`{target}` points outside the book ({GUIDE}/src): the HTML guide \
                             does not have it; name the file in `code` instead"
                        )));
                        continue;
                    }
                    if !self.files.contains_key(&rel) && !(self.exists)(&rel) {
                        problems.push(problem(format!("`{target}`: no such file")));
                        continue;
                    }
                    if let Some(anchor) = anchor {
                        // Anchors are checked in the pages only (other files: not read).
                        let Some(page) = self.files.get(&rel) else {
                            continue;
                        };
                        if !anchors(page).iter().any(|a| a == anchor) {
                            problems.push(problem(format!(
                                "`{target}`: {rel} has no heading with the anchor `#{anchor}`"
                            )));
                        }
                    }
                }
            }
        }
        problems
    }

    /// Every page of the guide is in `SUMMARY.md` (mdbook leaves the others out silently).
    fn check_summary(&self) -> Vec<Problem> {
        let summary_path = format!("{GUIDE}/src/SUMMARY.md");
        let Some(summary) = self.files.get(&summary_path) else {
            return vec![Problem {
                path: summary_path,
                line: 1,
                message: "the guide has no SUMMARY.md".to_owned(),
            }];
        };
        let listed: Vec<String> = links(summary)
            .into_iter()
            .filter_map(|(_, link)| match link {
                Link::Target(target) => resolve(&format!("{GUIDE}/src"), &target),
                Link::Include(_) => None,
            })
            .collect();
        self.files
            .keys()
            .filter(|path| path.starts_with(&format!("{GUIDE}/src/")) && **path != summary_path)
            .filter(|path| !listed.contains(path))
            .map(|path| Problem {
                path: path.clone(),
                line: 1,
                message: format!("not in {summary_path}: the book leaves it out"),
            })
            .collect()
    }
}

/// What a page points at.
#[derive(Debug, PartialEq, Eq)]
enum Link {
    /// `[text](target)` or `![alt](target)`.
    Target(String),
    /// `{{#include path}}` (mdbook), the path maybe followed by `:anchor` or a line range.
    Include(String),
}

/// The links of a Markdown text with their line numbers, outside code blocks and code spans.
fn links(text: &str) -> Vec<(usize, Link)> {
    let mut out = Vec::new();
    let mut fence: Option<&str> = None;
    for (index, line) in text.lines().enumerate() {
        let number = index + 1;
        let trimmed = line.trim_start();
        if let Some(open) = fence {
            if trimmed.starts_with(open) {
                fence = None;
            }
            continue;
        }
        if trimmed.starts_with("```") {
            fence = Some("```");
            continue;
        }
        if trimmed.starts_with("~~~") {
            fence = Some("~~~");
            continue;
        }
        let prose = without_code_spans(line);
        let mut rest = prose.as_str();
        while let Some(at) = rest.find("{{#include ") {
            let after = &rest[at + "{{#include ".len()..];
            let Some(end) = after.find("}}") else { break };
            out.push((number, Link::Include(after[..end].trim().to_owned())));
            rest = &after[end..];
        }
        let mut rest = prose.as_str();
        while let Some(at) = rest.find("](") {
            let after = &rest[at + 2..];
            let Some(end) = after.find(')') else { break };
            let target = after[..end].split_whitespace().next().unwrap_or("");
            if !target.is_empty() {
                out.push((number, Link::Target(target.to_owned())));
            }
            rest = &after[end..];
        }
    }
    out
}

/// The line with its code spans (`` `...` ``, any number of backticks) blanked out.
fn without_code_spans(line: &str) -> String {
    let mut out = String::with_capacity(line.len());
    let mut rest = line;
    while let Some(at) = rest.find('`') {
        out.push_str(&rest[..at]);
        let ticks = rest[at..].chars().take_while(|c| *c == '`').count();
        let after = &rest[at + ticks..];
        let closing = "`".repeat(ticks);
        match after.find(&closing) {
            Some(end) => rest = &after[end + ticks..],
            None => {
                out.push_str(&rest[at..]);
                rest = "";
            }
        }
    }
    out.push_str(rest);
    out
}

/// The anchors of a page's headings, as GitHub and mdbook make them (lowercase; letters,
/// digits, `-` and `_` kept, spaces made `-`, the rest dropped; `-1`, `-2`.. on repeats).
fn anchors(text: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let mut fence: Option<&str> = None;
    for line in text.lines() {
        let trimmed = line.trim_start();
        if let Some(open) = fence {
            if trimmed.starts_with(open) {
                fence = None;
            }
            continue;
        }
        if trimmed.starts_with("```") {
            fence = Some("```");
            continue;
        }
        if trimmed.starts_with("~~~") {
            fence = Some("~~~");
            continue;
        }
        let hashes = line.chars().take_while(|c| *c == '#').count();
        if !(1..=6).contains(&hashes) || !line[hashes..].starts_with(' ') {
            continue;
        }
        let slug = slug(line[hashes..].trim());
        let repeats = out
            .iter()
            .filter(|a| {
                **a == slug
                    || a.strip_prefix(&format!("{slug}-"))
                        .is_some_and(|n| n.parse::<u32>().is_ok())
            })
            .count();
        if repeats == 0 {
            out.push(slug);
        } else {
            out.push(format!("{slug}-{repeats}"));
        }
    }
    out
}

/// A heading's anchor.
fn slug(heading: &str) -> String {
    heading
        .chars()
        .filter_map(|c| {
            if c.is_alphanumeric() || c == '-' || c == '_' {
                Some(c.to_lowercase().next().unwrap_or(c))
            } else if c.is_whitespace() {
                Some('-')
            } else {
                None
            }
        })
        .collect()
}

/// `target` relative to the directory `dir` (both relative to the workspace root), with `.`
/// and `..` resolved; `None` when it leaves the workspace.
fn resolve(dir: &str, target: &str) -> Option<String> {
    let mut parts: Vec<&str> = if target.starts_with('/') {
        Vec::new()
    } else {
        dir.split('/').filter(|p| !p.is_empty()).collect()
    };
    for component in Path::new(target).components() {
        match component {
            Component::Normal(part) => parts.push(part.to_str()?),
            Component::ParentDir => {
                parts.pop()?;
            }
            Component::CurDir | Component::RootDir | Component::Prefix(_) => {}
        }
    }
    Some(parts.join("/"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pages(files: &[(&str, &str)], others: &'static [&'static str]) -> Pages {
        Pages {
            files: files
                .iter()
                .map(|(p, t)| ((*p).to_owned(), (*t).to_owned()))
                .collect(),
            exists: Box::new(move |rel| others.contains(&rel)),
        }
    }

    fn messages(pages: &Pages) -> Vec<String> {
        pages.problems().iter().map(ToString::to_string).collect()
    }

    #[test]
    fn links_skip_code_blocks_and_spans() {
        let text = "see [a](a.md) and `[b](b.md)`\n```rust\n[c](c.md)\n```\n![img](i.png) {{#include ../x.md}}\n";
        assert_eq!(
            links(text),
            [
                (1, Link::Target("a.md".to_owned())),
                (5, Link::Include("../x.md".to_owned())),
                (5, Link::Target("i.png".to_owned())),
            ]
        );
    }

    #[test]
    fn anchors_follow_github_and_mdbook() {
        let text = "# The `agent` program\n## Serve: the LangGraph server API\n```sh\n# not a heading\n```\n## Notes\n## Notes\n### Runtime context: models, tools and the clock\n";
        assert_eq!(
            anchors(text),
            [
                "the-agent-program",
                "serve-the-langgraph-server-api",
                "notes",
                "notes-1",
                "runtime-context-models-tools-and-the-clock",
            ]
        );
    }

    #[test]
    fn resolve_stays_in_the_workspace() {
        assert_eq!(
            resolve("docs/guide/src", "../../benchmarks.md").as_deref(),
            Some("docs/benchmarks.md")
        );
        assert_eq!(
            resolve("", "docs/guide/src/state.md").as_deref(),
            Some("docs/guide/src/state.md")
        );
        assert_eq!(resolve("", "../shared/design.md"), None);
    }

    #[test]
    fn good_pages_pass() {
        let p = pages(
            &[
                (
                    "README.md",
                    "[state](docs/guide/src/state.md#shared-values) [bench](docs/benchmarks.md)",
                ),
                (
                    "docs/benchmarks.md",
                    "# Benchmarks\n[below](#notes)\n## Notes\n",
                ),
                (
                    "docs/guide/src/SUMMARY.md",
                    "# Summary\n- [State](state.md)\n- [Bench](benchmarks.md)\n",
                ),
                (
                    "docs/guide/src/state.md",
                    "# State\n## Shared values\n![x](images/x.png)\n",
                ),
                (
                    "docs/guide/src/benchmarks.md",
                    "{{#include ../../benchmarks.md}}\n",
                ),
            ],
            &["docs/guide/src/images/x.png", "docs/benchmarks.md"],
        );
        assert_eq!(messages(&p), Vec::<String>::new());
    }

    #[test]
    fn broken_links_are_named() {
        let p = pages(
            &[
                (
                    "README.md",
                    "[a](docs/guide/src/nope.md)\n[b](docs/guide/src/state.md#nope)\n[c](../shared/x.md)\n[d](https://example.com)",
                ),
                (
                    "docs/guide/src/SUMMARY.md",
                    "# Summary\n- [State](state.md)\n",
                ),
                (
                    "docs/guide/src/state.md",
                    "# State\n[e](../../../agent-core/src/lib.rs)\n{{#include ../missing.md}}\n",
                ),
                ("docs/guide/src/orphan.md", "# Orphan\n"),
            ],
            &["agent-core/src/lib.rs"],
        );
        assert_eq!(
            messages(&p),
            [
                "README.md:1: `docs/guide/src/nope.md`: no such file",
                "README.md:2: `docs/guide/src/state.md#nope`: docs/guide/src/state.md has no heading with the anchor `#nope`",
                "README.md:3: `../shared/x.md` points outside the repository",
                "docs/guide/src/state.md:2: `../../../agent-core/src/lib.rs` points outside the book (docs/guide/src): the HTML guide does not have it; name the file in `code` instead",
                "docs/guide/src/state.md:3: `{{#include ../missing.md}}`: no such file",
                "docs/guide/src/orphan.md:1: not in docs/guide/src/SUMMARY.md: the book leaves it out",
            ]
        );
    }

    #[test]
    fn mdbook_complaints_are_seen() {
        assert!(is_complaint("ERROR Error updating \"{{#include x}}\""));
        assert!(is_complaint(" WARN Caused By: No such file"));
        assert!(!is_complaint(" INFO Book building has started"));
    }
}
