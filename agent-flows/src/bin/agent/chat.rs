//! `agent chat`: a conversation with a flow in the terminal, one turn per line, on a thread
//! that persists (so `agent chat <flow> --thread ID` picks it up again later). Line editing
//! and history come from rustyline; piped input works too, a line a turn.

use std::io::Write;
use std::sync::atomic::Ordering;

use agent_flows::Flow;
use anstyle::{AnsiColor, Style};
use rustyline::DefaultEditor;
use rustyline::error::ReadlineError;

use crate::cli::RunArgs;
use crate::output::{ItemPrinter, Spinner};
use crate::{Failure, modes, output, setup};

const PROMPT: Style = AnsiColor::Green.on_default().bold();
const DIM: Style = Style::new().dimmed();

pub async fn run(flow: &'static dyn Flow, args: &RunArgs) -> Result<(), Failure> {
    let mut env = setup::env(args)?;
    // The MCP servers stay up for the whole conversation.
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
    let saver = setup::saver(args.db.as_deref()).await?;
    let store = setup::store(args.store.as_deref(), args.db.as_deref()).await?;
    let session = flow
        .open(&env, Some(saver), Some(store))
        .map_err(Failure::runtime)?;
    let thread = args
        .thread
        .clone()
        .unwrap_or_else(|| format!("chat-{}", uuid_like()));
    let info = flow.info();
    {
        let mut err = anstream::stderr().lock();
        let _ = writeln!(
            err,
            "{DIM}{} (seed {}) on thread {thread} — /exit to leave; continue later with --thread {thread}{DIM:#}",
            info.name, info.seed
        );
    }
    let mut editor = DefaultEditor::new()
        .map_err(|e| Failure::message(format!("cannot read the terminal: {e}")))?;
    let history = setup::history_file();
    if let Some(path) = &history {
        let _ = editor.load_history(path);
    }
    loop {
        let line =
            tokio::task::block_in_place(|| editor.readline(&format!("{PROMPT}you>{PROMPT:#} ")));
        let line = match line {
            Ok(line) => line,
            Err(ReadlineError::Interrupted) => continue,
            Err(ReadlineError::Eof) => break,
            Err(error) => return Err(Failure::message(format!("cannot read a line: {error}"))),
        };
        let message = line.trim();
        if message.is_empty() {
            continue;
        }
        if matches!(message, "/exit" | "/quit") {
            break;
        }
        if message == "/thread" {
            println!("{thread}");
            continue;
        }
        let _ = editor.add_history_entry(message);
        let mut printer = ItemPrinter::new(false);
        let spinner = Spinner::start("thinking…");
        let stopper = spinner.stopper();
        let result = session
            .turn(message, Some(&thread), modes(args.stream), &mut |item| {
                stopper.store(true, Ordering::Relaxed);
                printer.print(&item);
            })
            .await;
        spinner.stop().await;
        printer.finish();
        match result {
            Ok(report) => output::report(&report, false, printer.printed_tokens),
            // A failed turn leaves the thread as it was; the conversation goes on.
            Err(error) => {
                let failure = Failure::runtime(error);
                let mut err = anstream::stderr().lock();
                let _ = writeln!(
                    err,
                    "{}error:{:#} {}",
                    output::ERROR,
                    output::ERROR,
                    failure.message_text()
                );
            }
        }
    }
    if let Some(path) = &history {
        let _ = editor.save_history(path);
    }
    Ok(())
}

/// A short random id for a new thread.
fn uuid_like() -> String {
    use std::hash::{BuildHasher, Hasher};
    let mut hasher = std::collections::hash_map::RandomState::new().build_hasher();
    hasher.write_u128(
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or_default(),
    );
    format!("{:012x}", hasher.finish() & 0xffff_ffff_ffff)
}
