//! `cargo xtask chaos`: the fault suite (agent-server's `chaos` example) over many seeds —
//! several instances of the reference server on one PostgreSQL of its own, and one on
//! SQLite, clients and faults drawn from each seed, then the checker's invariants. A
//! failing seed is printed with the command that replays it. `cargo test` runs a short
//! form of it (agent-server/tests/chaos.rs). `--mutants` shows that each invariant the
//! checker claims fails on a deliberately broken server (`chaos_mutants`).

use crate::shell;

const USAGE: &str = "usage: cargo xtask chaos [--seeds N] [--from SEED] [--seconds S] [--seed SEED] [--backend postgres|sqlite] | --mutants [NAME..]";

/// Runs the command.
pub fn run(args: &[String]) -> Result<(), String> {
    if args.first().is_some_and(|a| a == "--mutants") {
        return crate::chaos_mutants::run(&args[1..]);
    }
    let mut seeds = 20u64;
    let mut from = 1u64;
    let mut seconds = "30".to_owned();
    let mut backends = vec!["postgres", "sqlite"];
    let mut it = args.iter();
    while let Some(arg) = it.next() {
        let mut value = || it.next().ok_or(USAGE.to_owned());
        match arg.as_str() {
            "--seeds" => seeds = value()?.parse().map_err(|_| USAGE.to_owned())?,
            "--from" => from = value()?.parse().map_err(|_| USAGE.to_owned())?,
            "--seed" => {
                from = value()?.parse().map_err(|_| USAGE.to_owned())?;
                seeds = 1;
            }
            "--seconds" => seconds = value()?.clone(),
            "--backend" => {
                backends = match value()?.as_str() {
                    "postgres" => vec!["postgres"],
                    "sqlite" => vec!["sqlite"],
                    _ => return Err(USAGE.to_owned()),
                }
            }
            _ => return Err(format!("unknown argument `{arg}`\n{USAGE}")),
        }
    }
    let mut build = shell::cargo();
    build.args(["build", "-p", "agent-server", "--examples"]);
    shell::run(build)?;
    let mut failed = Vec::new();
    for seed in from..from + seeds {
        for backend in &backends {
            let mut chaos = shell::cargo();
            chaos.args([
                "run",
                "-q",
                "-p",
                "agent-server",
                "--example",
                "chaos",
                "--",
                "--seed",
                &seed.to_string(),
                "--seconds",
                &seconds,
                "--backend",
                backend,
            ]);
            if shell::run(chaos).is_err() {
                failed.push(format!("{seed} ({backend})"));
            }
        }
    }
    if failed.is_empty() {
        eprintln!("chaos: {seeds} seeds passed on {}", backends.join(" and "));
        Ok(())
    } else {
        Err(format!("chaos: seeds failed: {}", failed.join(", ")))
    }
}
