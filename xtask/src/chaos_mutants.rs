//! `cargo xtask chaos --mutants`: the fault suite shown to catch what it claims. Each patch in
//! `agent-server/examples/chaos/mutants/` breaks the server (not the checker) so that one of
//! the checker's invariants fails; for each, a build of HEAD with the patch applied runs the
//! chaos example on the seed, backend and duration its header names, and must fail with the
//! checker naming that invariant (the header's `caught by:` phrase). A mutant that passes,
//! or fails for another reason, survives: the suite does not catch what it claims.
//!
//! A patch is a `git diff` after three header lines, which `git apply` skips:
//!
//! ```text
//! Invariant N (what it says): the breakage, in a sentence.
//! chaos: --backend sqlite --seed 1 --seconds 20
//! caught by: a phrase of the checker's report for invariant N
//! ```
//!
//! The builds happen in a scratch worktree of HEAD, removed at the end: the working tree is
//! never touched (the patches are read from it; the server they break is HEAD's). Their
//! target directory is their own, `<target dir>/mutants`, shared by every mutant so that only
//! agent-server compiles again, and the broken binaries never land in the usual one.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use crate::{bench, shell};

/// Where the patches are, from the workspace root.
const DIR: &str = "agent-server/examples/chaos/mutants";

/// One deliberately broken build.
#[derive(Debug)]
struct Mutant {
    name: String,
    patch: PathBuf,
    /// Which invariant it breaks, and how (the header's first line).
    breaks: String,
    /// The chaos example's arguments.
    args: Vec<String>,
    /// What the checker's report must say.
    phrase: String,
}

/// The patches, in name order, their headers read.
fn mutants(root: &Path) -> Result<Vec<Mutant>, String> {
    let dir = root.join(DIR);
    let mut paths: Vec<PathBuf> = std::fs::read_dir(&dir)
        .map_err(|e| format!("{}: {e}", dir.display()))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "patch"))
        .collect();
    paths.sort();
    paths.into_iter().map(|p| parse(&p)).collect()
}

fn parse(patch: &Path) -> Result<Mutant, String> {
    let text = std::fs::read_to_string(patch).map_err(|e| format!("{}: {e}", patch.display()))?;
    let header = text.split("diff --git").next().unwrap_or_default();
    let field = |key: &str| {
        header
            .lines()
            .find_map(|l| l.strip_prefix(key))
            .map(|v| v.trim().to_owned())
            .ok_or_else(|| format!("{}: no `{key}` line in its header", patch.display()))
    };
    let breaks = header.lines().next().unwrap_or_default().trim().to_owned();
    if !breaks.starts_with("Invariant ") {
        return Err(format!(
            "{}: its first line must say `Invariant N (...)`",
            patch.display()
        ));
    }
    Ok(Mutant {
        name: patch
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_default(),
        patch: patch.to_owned(),
        breaks,
        args: field("chaos:")?
            .split_whitespace()
            .map(str::to_owned)
            .collect(),
        phrase: field("caught by:")?,
    })
}

/// `git args` in `dir`, its error output kept for the message.
fn git(dir: &Path, args: &[&str]) -> Result<(), String> {
    let out = Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(args)
        .output()
        .map_err(|e| format!("git: {e}"))?;
    if !out.status.success() {
        return Err(format!(
            "git {}: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr).trim()
        ));
    }
    Ok(())
}

/// Runs every mutant (or those whose names contain one of `names`); an error when one
/// survives.
pub fn run(names: &[String]) -> Result<(), String> {
    let root = xtask::sourcegen::project_root();
    let mut list = mutants(&root)?;
    list.retain(|m| names.is_empty() || names.iter().any(|n| m.name.contains(n.as_str())));
    if list.is_empty() {
        return Err(format!("no mutant in {DIR} is named like {names:?}"));
    }
    let dir = bench::target_dir(&root).join("mutants");
    let tree = dir.join("tree");
    let tree_arg = tree.display().to_string();
    // One left by an interrupted run goes first.
    let _ = git(&root, &["worktree", "remove", "--force", &tree_arg]);
    let _ = std::fs::remove_dir_all(&tree);
    git(&root, &["worktree", "add", "--detach", &tree_arg, "HEAD"])?;
    let rows = each(&list, &tree, &dir.join("target"));
    let _ = git(&root, &["worktree", "remove", "--force", &tree_arg]);
    let rows = rows?;
    eprintln!("\nchaos mutants (a build of HEAD with the patch applied):");
    for Row {
        mutant: m,
        caught,
        secs,
    } in &rows
    {
        let verdict = match caught {
            Some(line) => format!("caught: {line}"),
            None => "NOT CAUGHT".to_owned(),
        };
        eprintln!(
            "  {:<34} {:<44} {secs:>4} s  {verdict}",
            m.name,
            m.args.join(" ")
        );
    }
    let survived: Vec<&str> = rows
        .iter()
        .filter(|r| r.caught.is_none())
        .map(|r| r.mutant.name.as_str())
        .collect();
    if survived.is_empty() {
        eprintln!("chaos: all {} mutants caught", rows.len());
        Ok(())
    } else {
        Err(format!(
            "chaos: mutants not caught: {}",
            survived.join(", ")
        ))
    }
}

/// One mutant's run: the checker's line that caught it, if any, and how long it took.
struct Row<'a> {
    mutant: &'a Mutant,
    caught: Option<String>,
    secs: u64,
}

/// Each mutant built and run in `tree`.
fn each<'a>(list: &'a [Mutant], tree: &Path, target: &Path) -> Result<Vec<Row<'a>>, String> {
    let mut rows = Vec::new();
    for m in list {
        eprintln!("\nchaos: mutant {}: {}", m.name, m.breaks);
        git(tree, &["reset", "--quiet", "--hard"])?;
        git(tree, &["apply", &m.patch.display().to_string()])?;
        let mut build = shell::cargo();
        build
            .current_dir(tree)
            .env("CARGO_TARGET_DIR", target)
            .args(["build", "-p", "agent-server", "--examples"]);
        shell::run(build)?;
        let started = Instant::now();
        // A failing run keeps its work (database, servers' logs) in its temporary directory:
        // one of its own (a short path: PostgreSQL's socket goes in it), removed after it.
        let tmp = std::env::temp_dir().join(format!("agm-{}", std::process::id()));
        std::fs::create_dir_all(&tmp).map_err(|e| format!("{}: {e}", tmp.display()))?;
        let mut chaos = Command::new(target.join("debug/examples/chaos"));
        chaos.args(&m.args).env("TMPDIR", &tmp);
        eprintln!("$ chaos {}", m.args.join(" "));
        let out = chaos.output().map_err(|e| format!("chaos: {e}"));
        let _ = std::fs::remove_dir_all(&tmp);
        let out = out?;
        let said = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        let caught = match out.status.success() {
            true => None,
            false => said.lines().find(|l| l.contains(&m.phrase)).map(|l| {
                let l = l.trim();
                match l.char_indices().nth(100) {
                    Some((at, _)) => format!("{}…", &l[..at]),
                    None => l.to_owned(),
                }
            }),
        };
        if caught.is_none() {
            eprintln!("{said}chaos: the run ended {}", out.status);
        }
        rows.push(Row {
            mutant: m,
            caught,
            secs: started.elapsed().as_secs(),
        });
    }
    Ok(rows)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every patch still applies to the tree (so none rots unseen), and each invariant has one.
    #[test]
    fn mutants_apply_and_cover_every_invariant() {
        let root = xtask::sourcegen::project_root();
        let list = mutants(&root).unwrap();
        let mut covered: Vec<String> = Vec::new();
        for m in &list {
            let out = Command::new("git")
                .arg("-C")
                .arg(&root)
                .args(["apply", "--check"])
                .arg(&m.patch)
                .output()
                .unwrap();
            assert!(
                out.status.success(),
                "{} no longer applies; make it again against the tree: {}",
                m.patch.display(),
                String::from_utf8_lossy(&out.stderr)
            );
            assert!(!m.phrase.is_empty() && !m.args.is_empty(), "{m:?}");
            covered.extend(m.breaks.split_whitespace().nth(1).map(str::to_owned));
        }
        for n in 1..=6 {
            assert!(
                covered.contains(&n.to_string()),
                "no mutant breaks invariant {n}: {covered:?}"
            );
        }
    }
}
