//! Output not `Serialize`, error not an error type: errors point at the return type.

use agent_tools::tool;

struct Report {
    lines: Vec<String>,
}

/// Writes a report.
#[tool]
async fn report(topic: String) -> Result<Report, String> {
    Ok(Report { lines: vec![topic] })
}

/// Fails without saying why.
#[tool]
async fn mute(topic: String) -> Result<String, ()> {
    Ok(topic)
}

fn main() {}
