//! A tool-calling agent with `create_react_agent`, on any model.
//!
//! ```sh
//! cargo run -p agent-tools --example react_agent -- "What is 6 times 7, and the time in Tokyo?"
//! OPENAI_API_KEY=sk-... cargo run -p agent-tools --example react_agent -- --model openai:gpt-4o-mini "..."
//! OPENAI_BASE_URL=http://127.0.0.1:8080/v1 cargo run -p agent-tools --example react_agent -- --model openai:local "..."
//! ```
//!
//! Without `--model` it runs on a scripted model (no key, no server) that calls the calculator
//! and the clock, so the example always shows the loop. With `--approve`, the calculator asks
//! for a yes/no on standard input before it runs (an `interrupt()` the program resumes).

use std::io::BufRead;
use std::sync::Arc;

use agent_core::{Command, InMemorySaver, RunConfig};
use agent_llm::{ChatModel, Reply, ScriptedModel, init_chat_model};
use agent_tools::ToolRegistry;
use agent_tools::prebuilt::{AgentState, Approval, ApprovalRequest, create_react_agent};
use serde_json::json;

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args: Vec<String> = std::env::args().skip(1).collect();
    let approve = take_flag(&mut args, "--approve");
    let model: Arc<dyn ChatModel> = match take_value(&mut args, "--model") {
        Some(spec) => init_chat_model(&spec)?,
        None => Arc::new(ScriptedModel::new([
            Reply::tool_calls([
                ("calculator", json!({"expression": "6 * 7"})),
                ("datetime", json!({"timezone": "Asia/Tokyo"})),
            ]),
            Reply::from_fn(|messages| {
                let results: Vec<&str> = messages
                    .iter()
                    .filter(|m| m.kind() == "tool")
                    .map(|m| m.content())
                    .collect();
                Reply::text(format!("From the tools: {}", results.join(" | ")))
            }),
        ])),
    };
    let question = if args.is_empty() {
        "What is 6 times 7, and what time is it in Tokyo?".to_owned()
    } else {
        args.join(" ")
    };

    // The agent: a model, tools, a prompt — and, with --approve, a human before the calculator.
    let mut builder = create_react_agent(model, ToolRegistry::builtins())
        .prompt("Use the tools when they help; answer briefly.")
        .checkpointer(Arc::new(InMemorySaver::new()));
    if approve {
        builder = builder.approve_tools(["calculator"]);
    }
    let agent = builder.build()?;

    let config = RunConfig::default().thread_id("example");
    let mut out = agent
        .invoke(AgentState::user(question), config.clone())
        .await?;
    while let Some(pause) = out.interrupts.first() {
        let request: ApprovalRequest = serde_json::from_value(pause.value.clone())?;
        for call in &request.tool_calls {
            eprintln!("approve {} {}? [y/N]", call.name, call.args);
        }
        let mut line = String::new();
        std::io::stdin().lock().read_line(&mut line)?;
        let answer = if line.trim().eq_ignore_ascii_case("y") {
            Approval::approve()
        } else {
            Approval::reject("the user said no")
        };
        out = agent
            .invoke(Command::resume(answer)?, config.clone())
            .await?;
    }
    for message in &out.messages {
        eprintln!("{:>6}: {}", message.kind(), message.content());
    }
    println!("{}", out.answer().unwrap_or("(no answer)"));
    Ok(())
}

fn take_flag(args: &mut Vec<String>, flag: &str) -> bool {
    let before = args.len();
    args.retain(|a| a != flag);
    args.len() != before
}

fn take_value(args: &mut Vec<String>, flag: &str) -> Option<String> {
    let at = args.iter().position(|a| a == flag)?;
    args.remove(at);
    (at < args.len()).then(|| args.remove(at))
}
