//! `cargo xtask ci`: every check, in order, stopping at the first failure: fmt, clippy with
//! warnings denied, the docs with rustdoc warnings denied, the guide (`cargo xtask docs`: its
//! links and the mdbook build; its Rust snippets run in the test step), the workspace's tests,
//! generated files, tidy. `.ci/run` runs this after
//! starting services; contributors run it before pushing. The test step includes the web
//! page's browser tests (`agent-flows/tests/web_page.rs`: headless Chromium, screenshots in
//! `target/web-screenshots/`), which fail under `CI` when Chromium or chromedriver is missing.

use crate::{codegen, docs, shell, tidy};

/// One step: its name, what to do when it fails, and how to run it.
struct Step {
    name: &'static str,
    hint: &'static str,
    run: fn() -> Result<(), String>,
}

const STEPS: &[Step] = &[
    Step {
        name: "fmt",
        hint: "run `cargo fmt --all`",
        run: || cargo(&["fmt", "--all", "--check"]),
    },
    Step {
        name: "clippy",
        hint: "fix the lints above (warnings are errors)",
        run: || {
            cargo(&[
                "clippy",
                "--workspace",
                "--all-targets",
                "--",
                "-D",
                "warnings",
            ])
        },
    },
    Step {
        name: "doc",
        hint: "fix the rustdoc warnings above (broken links, missing docs...)",
        run: || {
            let mut cmd = shell::cargo();
            cmd.env("RUSTDOCFLAGS", "-D warnings")
                .args(["doc", "--workspace", "--no-deps"]);
            shell::run(cmd)
        },
    },
    Step {
        name: "guide",
        hint: "fix the links or pages named above (`cargo xtask docs` runs this step alone)",
        run: || docs::run(&[]),
    },
    Step {
        name: "test",
        hint: "fix the failing tests above",
        // Every failing test binary in one run, not only the first.
        run: || cargo(&["test", "--workspace", "--no-fail-fast"]),
    },
    Step {
        name: "codegen",
        hint: "run `cargo xtask codegen` and review the diff",
        run: || codegen::run(&["--check".to_owned()]),
    },
    Step {
        name: "tidy",
        hint: "fix the lines listed above",
        run: || tidy::run(&[]),
    },
];

/// Runs the command.
pub fn run(args: &[String]) -> Result<(), String> {
    if !args.is_empty() {
        return Err("usage: cargo xtask ci".to_owned());
    }
    for (number, step) in STEPS.iter().enumerate() {
        eprintln!("\n== ci {}/{}: {}", number + 1, STEPS.len(), step.name);
        if let Err(error) = (step.run)() {
            return Err(format!(
                "{error}\nci failed at step `{}`: {}",
                step.name, step.hint
            ));
        }
    }
    eprintln!("\n== ci: all {} steps passed", STEPS.len());
    Ok(())
}

fn cargo(args: &[&str]) -> Result<(), String> {
    let mut cmd = shell::cargo();
    cmd.args(args);
    shell::run(cmd)
}
