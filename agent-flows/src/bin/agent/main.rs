//! `agent`: runs the reference flows of agentgraph from the command line.
//!
//! `agent list`, `agent run <flow> [MESSAGE]`, `agent chat <flow>`, `agent graph <flow>`; see
//! `agent --help`. Flows run offline by default (rule-based models, no key, no server);
//! `--model` picks a provider. Exit codes: 0 success, 1 a runtime error (its message and
//! causes on stderr), 2 bad arguments or an unknown flow.

mod chat;
mod cli;
mod memory;
mod output;
mod serve;
mod setup;

use std::io::{IsTerminal, Read, Write};
use std::process::ExitCode;
use std::sync::atomic::Ordering;

use agent_core::{StreamMode, StreamModes};
use agent_flows::{FLOWS, Flow, FlowError, find};
use clap::Parser;

use cli::{Cli, Command, RunArgs, StreamArg};
use output::{ERROR, ItemPrinter, Spinner};

/// Why the program stops early: the message to print and the exit code.
pub struct Failure {
    message: String,
    code: u8,
}

impl Failure {
    /// A runtime error: its message and the chain of its causes; exit 1.
    pub fn runtime(error: FlowError) -> Self {
        let mut message = error.to_string();
        let mut source = std::error::Error::source(&error);
        while let Some(cause) = source {
            let text = cause.to_string();
            if !message.contains(&text) {
                message.push_str("\n  caused by: ");
                message.push_str(&text);
            }
            source = cause.source();
        }
        Failure { message, code: 1 }
    }

    /// A runtime error with a message of its own; exit 1.
    pub fn message(message: String) -> Self {
        Failure { message, code: 1 }
    }

    /// Bad usage; exit 2.
    pub fn usage(message: String) -> Self {
        Failure { message, code: 2 }
    }

    /// The text printed after `error:`.
    pub fn message_text(&self) -> &str {
        &self.message
    }
}

#[tokio::main]
async fn main() -> ExitCode {
    let cli = Cli::parse();
    // `agent serve` keeps its runs' spans for the web page's trace view.
    let recorder = matches!(cli.command, Command::Serve(_)).then(agent_server::SpanRecorder::new);
    let result = match setup::logging(cli.log_format, recorder.as_ref()) {
        Ok(telemetry) => {
            let result = run(cli, recorder).await;
            // The last spans are exported before the program exits.
            drop(telemetry);
            result
        }
        Err(failure) => Err(failure),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(failure) => {
            let mut err = anstream::stderr().lock();
            let _ = writeln!(err, "{ERROR}error:{ERROR:#} {}", failure.message);
            ExitCode::from(failure.code)
        }
    }
}

async fn run(cli: Cli, recorder: Option<agent_server::SpanRecorder>) -> Result<(), Failure> {
    match cli.command {
        Command::List { json } => {
            list(json);
            Ok(())
        }
        Command::Graph { flow, ascii } => {
            let flow = flow_named(&flow)?;
            let diagram = flow.diagram(ascii).map_err(Failure::runtime)?;
            print!("{diagram}");
            if !diagram.ends_with('\n') {
                println!();
            }
            Ok(())
        }
        Command::Run {
            flow,
            message,
            run,
            json,
        } => {
            let flow = flow_named(&flow)?;
            let message = match message {
                Some(message) => utf8_argument(message)?,
                None => read_stdin()?,
            };
            run_once(flow, &message, &run, json).await
        }
        Command::Chat { flow, run } => {
            let flow = flow_named(&flow)?;
            chat::run(flow, &run).await
        }
        Command::Serve(args) => serve::run(&args, recorder).await,
        Command::Memory { action, store, db } => memory::run(action, store, db).await,
    }
}

/// The flow named `name`; an unknown name is a usage error listing the known ones.
fn flow_named(name: &str) -> Result<&'static dyn Flow, Failure> {
    find(name).map_err(|e| Failure::usage(e.to_string()))
}

fn list(json: bool) {
    let mut out = anstream::stdout().lock();
    let width = FLOWS.iter().map(|f| f.info().name.len()).max().unwrap_or(0);
    for flow in FLOWS {
        let info = flow.info();
        if json {
            let _ = writeln!(out, "{}", serde_json::to_string(&info).unwrap_or_default());
            continue;
        }
        let _ = writeln!(
            out,
            "{:<width$}  seed {}  {}",
            info.name, info.seed, info.summary
        );
        for option in info.options {
            let _ = writeln!(
                out,
                "{:<width$}    --set {}=...  {} [served: {}]",
                "",
                option.key,
                option.help,
                option.access.describe()
            );
        }
    }
}

/// The message from standard input (a pipe or a file; a terminal would wait forever).
fn read_stdin() -> Result<String, Failure> {
    let mut stdin = std::io::stdin();
    if stdin.is_terminal() {
        return Err(Failure::usage(
            "give the message as an argument, or pipe it on standard input".to_owned(),
        ));
    }
    let mut bytes = Vec::new();
    stdin
        .read_to_end(&mut bytes)
        .map_err(|e| Failure::message(format!("cannot read standard input: {e}")))?;
    String::from_utf8(bytes).map_err(|e| {
        Failure::message(format!(
            "the message on standard input is not UTF-8 text (invalid byte at offset {})",
            e.utf8_error().valid_up_to()
        ))
    })
}

/// The message given as an argument, as text: a byte that is not UTF-8 is a runtime error
/// that says where it is (as on standard input), not a usage error.
fn utf8_argument(message: std::ffi::OsString) -> Result<String, Failure> {
    String::from_utf8(message.into_encoded_bytes()).map_err(|e| {
        Failure::message(format!(
            "the message is not UTF-8 text (invalid byte at offset {}); write it in UTF-8",
            e.utf8_error().valid_up_to()
        ))
    })
}

/// The stream modes `--stream` asks for.
pub fn modes(stream: Option<StreamArg>) -> StreamModes {
    match stream {
        None => StreamModes::NONE,
        Some(StreamArg::Values) => StreamMode::Values.into(),
        Some(StreamArg::Updates) => StreamMode::Updates.into(),
        Some(StreamArg::Messages) => StreamMode::Messages.into(),
        Some(StreamArg::Events) => StreamMode::Events.into(),
    }
}

/// `agent run`: one turn.
async fn run_once(
    flow: &'static dyn Flow,
    message: &str,
    args: &RunArgs,
    json: bool,
) -> Result<(), Failure> {
    let mut env = setup::env(args)?;
    let mcp = setup::mcp(args).await?;
    if let Some((_, tools)) = &mcp {
        env = env.with_tools(tools.iter().cloned());
    }
    let mcp_names: Vec<String> = mcp
        .iter()
        .flat_map(|(_, tools)| tools.iter().map(|t| t.name().to_owned()))
        .collect();
    let remote = setup::a2a(args, &mcp_names).await?;
    if !remote.is_empty() {
        env = env.with_tools(remote);
    }
    let saver = match &args.thread {
        Some(_) => Some(setup::saver(args.db.as_deref()).await?),
        None => None,
    };
    let store = match (&args.thread, &args.store) {
        (None, None) => None,
        _ => Some(setup::store(args.store.as_deref(), args.db.as_deref()).await?),
    };
    let session = flow.open(&env, saver, store).map_err(Failure::runtime)?;
    let mut printer = ItemPrinter::new(json);
    let spinner = Spinner::start("thinking…");
    let stopper = spinner.stopper();
    let result = session
        .turn(
            message,
            args.thread.as_deref(),
            modes(args.stream),
            &mut |item| {
                stopper.store(true, Ordering::Relaxed);
                printer.print(&item);
            },
        )
        .await;
    spinner.stop().await;
    printer.finish();
    drop(session);
    if let Some((servers, _)) = mcp {
        servers.close().await;
    }
    let report = result.map_err(Failure::runtime)?;
    output::report(&report, json, printer.printed_tokens);
    Ok(())
}
