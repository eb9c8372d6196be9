//! A tool's future must be `Send` (tools run on a multi-threaded runtime).

use std::rc::Rc;

use agent_tools::tool;

/// Holds an `Rc` across an await.
#[tool]
async fn sticky(text: String) -> Result<String, String> {
    let shared = Rc::new(text);
    tokio::task::yield_now().await;
    Ok(shared.to_string())
}

fn main() {}
