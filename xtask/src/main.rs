//! `cargo xtask`: the project's automation (codegen, tidy, ci), in Rust, with no dependencies
//! so it builds in seconds. It calls the `cargo` that runs it (`$CARGO`).
//!
//! A command is a module with a `run(&[String]) -> Result<(), String>` plus one line in
//! [`COMMANDS`].

mod bench;
mod bench_python;
mod bench_server;
mod bench_store;
mod chaos;
mod chaos_mutants;
mod ci;
mod codegen;
mod docs;
mod llm_server;
mod shell;
mod tidy;
mod wheel;

use std::process::ExitCode;

/// One `cargo xtask` command.
struct Command {
    name: &'static str,
    /// Arguments, for the usage line.
    args: &'static str,
    about: &'static str,
    run: fn(&[String]) -> Result<(), String>,
}

/// Every command, in the order the usage lists them.
const COMMANDS: &[Command] = &[
    Command {
        name: "codegen",
        args: "[--check]",
        about: "write the generated files (macro expansion snapshots, docs/graphs diagrams); --check verifies them without writing",
        run: codegen::run,
    },
    Command {
        name: "tidy",
        args: "",
        about: "check conventions: `//!` on every .rs file, no unwrap()/expect( outside tests, no todo!()",
        run: tidy::run,
    },
    Command {
        name: "bench",
        args: "[--vs-langgraph] [--quick] | server [--no-vs-langgraph] [--quick] [--scale] | store [--quick] [--items N]",
        about: "LangGraph's benchmark shapes on agentgraph (release) with every saver and a hand-written floor; --vs-langgraph runs them on langgraph==1.2.22 too and prints the ratios. `bench server`: our server against langgraph-api (langgraph dev) under load; `--scale`: thread searches and counts with 10,000 and 200,000 threads. `bench store`: our stores against LangGraph's InMemoryStore and PostgresStore (put, get, filtered and semantic search). `bench --python`: the shapes as Python programs on langgraph==1.2.22 and on agentgraph's Python package (compat.install()), into <target dir>/bench/python.md",
        run: bench::run,
    },
    Command {
        name: "chaos",
        args: "[--seeds N] [--from SEED] [--seconds S] [--seed SEED] [--backend postgres|sqlite] | --mutants [NAME..]",
        about: "the fault suite: instances of the reference server on a PostgreSQL of its own (and on SQLite), clients and faults (SIGKILL, SIGSTOP past the lease, PostgreSQL restarted) drawn from each seed (default 20 seeds of 30 s), then the checker's invariants; a failing seed prints how to replay it. `--mutants`: each patch in agent-server/examples/chaos/mutants (a deliberately broken server) (or those whose names contain a NAME) applied to a scratch worktree of HEAD, built, and run: the checker must name the invariant it breaks",
        run: chaos::run,
    },
    Command {
        name: "docs",
        args: "",
        about: "check the links of the README, docs/benchmarks.md and the guide, then build the guide (docs/guide, mdbook, installed once into ~/.cache/agentgraph) into <target dir>/guide",
        run: docs::run,
    },
    Command {
        name: "llm-server",
        args: "",
        about: "build once (cached) and start llama-server with SmolLM2-135M and aimock for agent-llm's end-to-end tests; prints their URLs",
        run: llm_server::run,
    },
    Command {
        name: "wheel",
        args: "",
        about: "the `agentgraph` Python package (agent-py) as an abi3 wheel, built in release by maturin (from a cached venv) into <target dir>/wheels",
        run: wheel::run,
    },
    Command {
        name: "ci",
        args: "",
        about: "fmt --check, clippy -D warnings, doc -D warnings, the guide (`docs`), tests, codegen --check, tidy (what .ci/run runs)",
        run: ci::run,
    },
];

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let Some(name) = args.first() else {
        eprint!("{}", usage());
        return ExitCode::FAILURE;
    };
    if matches!(name.as_str(), "help" | "--help" | "-h") {
        print!("{}", usage());
        return ExitCode::SUCCESS;
    }
    let Some(command) = COMMANDS.iter().find(|c| c.name == name) else {
        eprint!("error: unknown command `{name}`\n\n{}", usage());
        return ExitCode::FAILURE;
    };
    match (command.run)(&args[1..]) {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("\nerror: {message}");
            ExitCode::FAILURE
        }
    }
}

fn usage() -> String {
    let mut out = String::from("usage: cargo xtask <command>\n\ncommands:\n");
    let width = COMMANDS
        .iter()
        .map(|c| c.name.len() + c.args.len() + 1)
        .max()
        .unwrap_or(0);
    for c in COMMANDS {
        let synopsis = format!("{} {}", c.name, c.args);
        out.push_str(&format!("  {synopsis:<width$}  {}\n", c.about));
    }
    out.push_str(&format!("  {:<width$}  print this message\n", "help"));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn usage_lists_every_command() {
        let text = usage();
        for command in COMMANDS {
            assert!(text.contains(command.name), "{text}");
        }
    }
}
