//! `cargo xtask`: the project's automation (codegen checks, tidy, ci), in Rust, with no
//! dependencies so it builds in seconds.

use std::process::{Command, ExitCode};

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.first().map(String::as_str) {
        Some("ci") => ci(),
        _ => {
            eprintln!("usage: cargo xtask ci");
            ExitCode::FAILURE
        }
    }
}

fn cargo() -> Command {
    Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned()))
}

fn run(mut cmd: Command) -> bool {
    eprintln!("$ {cmd:?}");
    cmd.status().map(|s| s.success()).unwrap_or(false)
}

fn ci() -> ExitCode {
    let steps: Vec<Vec<&str>> = vec![
        vec!["fmt", "--all", "--check"],
        vec![
            "clippy",
            "--workspace",
            "--all-targets",
            "--",
            "-D",
            "warnings",
        ],
        vec!["test", "--workspace"],
    ];
    for step in steps {
        let mut cmd = cargo();
        cmd.args(&step);
        if !run(cmd) {
            return ExitCode::FAILURE;
        }
    }
    ExitCode::SUCCESS
}
