//! What the program prints: streamed items and turn results, human-readable or as JSON
//! lines, and a spinner on stderr while a model thinks. Colour goes through `anstream`, which
//! drops it when the output is not a terminal or `NO_COLOR` is set.

use std::io::{IsTerminal, Write};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use agent_flows::{StreamItem, TurnReport};
use anstyle::{AnsiColor, Style};

const NODE: Style = AnsiColor::Cyan.on_default().bold();
const DIM: Style = Style::new().dimmed();
pub const ERROR: Style = AnsiColor::Red.on_default().bold();

/// Prints streamed items as they arrive.
pub struct ItemPrinter {
    json: bool,
    /// Whether model tokens were printed (then the answer is not printed again).
    pub printed_tokens: bool,
    /// Whether the last token ended a line.
    line_open: bool,
    /// The node whose tokens were printed last.
    token_node: Option<String>,
}

impl ItemPrinter {
    pub fn new(json: bool) -> Self {
        ItemPrinter {
            json,
            printed_tokens: false,
            line_open: false,
            token_node: None,
        }
    }

    pub fn print(&mut self, item: &StreamItem) {
        let mut out = anstream::stdout().lock();
        if self.json {
            let _ = writeln!(out, "{}", serde_json::to_string(item).unwrap_or_default());
            return;
        }
        match item {
            StreamItem::Messages { text, node, .. } => {
                if !text.is_empty() {
                    // Each node's tokens under its name: a router's JSON decision is not
                    // mistaken for the answer.
                    if self.token_node.as_deref() != Some(node.as_str()) {
                        if self.line_open {
                            let _ = writeln!(out);
                        }
                        let _ = write!(out, "{NODE}{node}{NODE:#} {DIM}›{DIM:#} ");
                        self.token_node = Some(node.clone());
                    }
                    let _ = write!(out, "{text}");
                    let _ = out.flush();
                    self.printed_tokens = true;
                    self.line_open = !text.ends_with('\n');
                }
                return;
            }
            _ if self.line_open => {
                let _ = writeln!(out);
                self.line_open = false;
            }
            _ => {}
        }
        let _ = match item {
            StreamItem::Values { state } => writeln!(out, "{DIM}values{DIM:#} {}", compact(state)),
            StreamItem::Updates { node, update } => {
                writeln!(out, "{NODE}{node}{NODE:#} {}", compact(update))
            }
            StreamItem::Custom { node, value } => {
                writeln!(
                    out,
                    "{DIM}custom{DIM:#} {NODE}{node}{NODE:#} {}",
                    compact(value)
                )
            }
            StreamItem::Events { event } => {
                let node = event.metadata["langgraph_node"].as_str().unwrap_or("");
                let data = match event.event.as_str() {
                    "on_chat_model_stream" => compact(&event.data["chunk"]),
                    "on_tool_start" => compact(&event.data["input"]),
                    "on_tool_end" => compact(&event.data["output"]),
                    "on_custom_event" => compact(&event.data),
                    _ => String::new(),
                };
                writeln!(
                    out,
                    "{DIM}{}{DIM:#} {} {NODE}{node}{NODE:#} {data}",
                    event.event, event.name
                )
            }
            StreamItem::Messages { .. } => Ok(()),
        };
    }

    /// Ends a line of tokens.
    pub fn finish(&mut self) {
        if self.line_open {
            println!();
            self.line_open = false;
        }
    }
}

/// A value on one line, long ones cut.
fn compact(value: &serde_json::Value) -> String {
    let text = value.to_string();
    if text.chars().count() > 400 {
        let cut: String = text.chars().take(400).collect();
        format!("{cut}…")
    } else {
        text
    }
}

/// Prints a turn's result: the answer, or the whole report as JSON.
pub fn report(report: &TurnReport, json: bool, answer_printed: bool) {
    let mut out = anstream::stdout().lock();
    if json {
        let _ = writeln!(out, "{}", serde_json::to_string(report).unwrap_or_default());
        return;
    }
    if !answer_printed {
        let _ = writeln!(out, "{}", report.response);
    }
    for interrupt in &report.interrupts {
        let _ = writeln!(out, "{DIM}paused:{DIM:#} {interrupt}");
    }
}

/// A spinner on stderr while waiting, only when stderr is a terminal.
pub struct Spinner {
    stop: Arc<AtomicBool>,
    task: Option<tokio::task::JoinHandle<()>>,
}

impl Spinner {
    pub fn start(label: &'static str) -> Self {
        let stop = Arc::new(AtomicBool::new(false));
        let task = std::io::stderr().is_terminal().then(|| {
            let stop = stop.clone();
            tokio::spawn(async move {
                const FRAMES: [&str; 10] = ["⠋", "⠙", "⠹", "⠸", "⠼", "⠴", "⠦", "⠧", "⠇", "⠏"];
                let mut frame = 0;
                while !stop.load(Ordering::Relaxed) {
                    eprint!("\r{} {label}", FRAMES[frame % FRAMES.len()]);
                    frame += 1;
                    tokio::time::sleep(Duration::from_millis(90)).await;
                }
                eprint!("\r{}\r", " ".repeat(label.len() + 2));
            })
        });
        Spinner { stop, task }
    }

    /// A handle that stops the spinner (from a stream callback).
    pub fn stopper(&self) -> Arc<AtomicBool> {
        self.stop.clone()
    }

    pub async fn stop(mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(task) = self.task.take() {
            let _ = task.await;
        }
    }
}
