//! `agent`: runs a reference flow from the command line.
//!
//! `agent [--stream] [question]` runs the tool router (seed 000) offline and prints the graph's
//! outline, the answer and how long the run took. `--stream` prints each node's update as it
//! lands. Logs go to stderr, filtered by `RUST_LOG` (e.g. `RUST_LOG=agent_core=debug` shows a
//! span per run, step and node with timings).

use std::process::ExitCode;

use agent_core::{RunConfig, StreamMode, StreamPart};
use futures::StreamExt;

#[tokio::main]
async fn main() -> ExitCode {
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn")),
        )
        .with_writer(std::io::stderr)
        .init();

    let mut args: Vec<String> = std::env::args().skip(1).collect();
    let stream = args.first().is_some_and(|a| a == "--stream");
    if stream {
        args.remove(0);
    }
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
    let input = agent_flows::tool_router::question(&question);
    let result = if stream {
        let mut parts = graph.stream(
            input,
            RunConfig::default(),
            [StreamMode::Updates, StreamMode::Values],
        );
        let mut last = None;
        while let Some(part) = parts.next().await {
            match part {
                Ok(StreamPart::Updates { node, update }) => println!("  [{node}] {update:?}"),
                Ok(StreamPart::Values(state)) => last = Some(state),
                Ok(_) => {}
                Err(error) => {
                    eprintln!("error: {error}");
                    return ExitCode::FAILURE;
                }
            }
        }
        last.map(|s| (*s).clone()).ok_or_else(|| {
            agent_core::GraphError::InvalidInput("the run produced no state".to_owned())
        })
    } else {
        graph
            .invoke(input, RunConfig::default())
            .await
            .map(agent_core::RunOutput::into_state)
    };
    match result {
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
