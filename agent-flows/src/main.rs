//! `agent`: runs a reference flow from the command line.
//!
//! `agent [question]` runs the tool router (seed 000) offline and prints the answer, the
//! graph's outline, and how long the run took.

use std::process::ExitCode;

#[tokio::main]
async fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let question = if args.is_empty() {
        "What time is it in Tokyo and in London?".to_owned()
    } else {
        args.join(" ")
    };
    let graph = match agent_flows::tool_router::build() {
        Ok(graph) => graph,
        Err(error) => {
            eprintln!("error: {error}");
            return ExitCode::FAILURE;
        }
    };
    println!("flow: tool_router (seed 000)\n{}", graph.draw_ascii());
    println!("question: {question}");
    let started = std::time::Instant::now();
    match agent_flows::tool_router::ask(&question).await {
        Ok(state) => {
            println!("tools: {}", state.selected_tools.join(", "));
            println!("answer:\n{}", state.response);
            println!("took {:?}", started.elapsed());
            ExitCode::SUCCESS
        }
        Err(error) => {
            eprintln!("error: {error}");
            ExitCode::FAILURE
        }
    }
}
