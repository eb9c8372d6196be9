//! Seed 000, the tool router: `router` decides which tools a question needs, `tool_executor`
//! runs them in parallel (one `Send` task per call), `generator` writes the answer.
//!
//! ```text
//! START -> router -(tools)-> tool_executor -> generator -> END
//!                 \-(direct)----------------------^
//! ```
//!
//! The router here is the offline one: it reads city names from the question. Tool calls are
//! real: `datetime` gives the current time in an IANA time zone (DST included, from the
//! bundled tz database).

use std::collections::BTreeMap;

use agent_core::{CompiledGraph, END, GraphError, GraphState, START, Send, StateGraph, node};
use serde_json::{Value, json};

/// The flow's state, field for field the seed's `AgentState`.
#[derive(GraphState, Clone, Default, Debug)]
pub struct AgentState {
    /// The conversation: the question, then the answer.
    #[reducer(append)]
    pub messages: Vec<String>,
    /// Tools the router picked, one entry per call (`datetime_0`, `datetime_1`, ...).
    pub selected_tools: Vec<String>,
    /// Arguments of each call, by call name.
    pub tool_args: BTreeMap<String, Value>,
    /// Results by call name; parallel calls merge key-wise.
    #[reducer(merge)]
    pub tool_results: BTreeMap<String, Value>,
    /// The final answer.
    pub response: String,
    /// For a `tool_executor` task: the one call it runs.
    pub call: Option<String>,
}

/// Cities the offline router knows, with their IANA zones.
const CITIES: [(&str, &str); 8] = [
    ("tokyo", "Asia/Tokyo"),
    ("london", "Europe/London"),
    ("new york", "America/New_York"),
    ("madrid", "Europe/Madrid"),
    ("paris", "Europe/Paris"),
    ("sydney", "Australia/Sydney"),
    ("mexico", "America/Mexico_City"),
    ("buenos aires", "America/Argentina/Buenos_Aires"),
];

/// Which time zones a question asks about, in the order mentioned.
pub fn zones_in(question: &str) -> Vec<&'static str> {
    let q = question.to_lowercase();
    let mut found: Vec<(usize, &'static str)> = CITIES
        .iter()
        .filter_map(|(city, zone)| q.find(city).map(|at| (at, *zone)))
        .collect();
    found.sort();
    found.into_iter().map(|(_, zone)| zone).collect()
}

/// The `datetime` tool: the current local time in `zone`.
pub fn datetime(zone: &str) -> Result<Value, String> {
    let now = jiff::Timestamp::now()
        .in_tz(zone)
        .map_err(|e| format!("unknown time zone `{zone}`: {e}"))?;
    Ok(json!({
        "timezone": zone,
        "local_time": now.strftime("%Y-%m-%d %H:%M:%S").to_string(),
        "utc_offset": now.offset().to_string(),
    }))
}

/// Picks tools for the last message.
#[node]
async fn router(state: &AgentState) -> AgentStateUpdate {
    let question = state
        .messages
        .last()
        .map(String::as_str)
        .unwrap_or_default();
    let zones = zones_in(question);
    let mut selected = Vec::new();
    let mut args = BTreeMap::new();
    for (i, zone) in zones.iter().enumerate() {
        let call = format!("datetime_{i}");
        args.insert(call.clone(), json!({ "timezone": zone }));
        selected.push(call);
    }
    AgentStateUpdate::default()
        .selected_tools(selected)
        .tool_args(args)
}

/// Runs one tool call (one `Send` task per call, all in the same super-step).
#[node]
async fn tool_executor(state: &AgentState) -> Result<AgentStateUpdate, String> {
    let call = state
        .call
        .clone()
        .ok_or("tool_executor runs per call, through Send")?;
    let zone = state
        .tool_args
        .get(&call)
        .and_then(|a| a["timezone"].as_str())
        .ok_or_else(|| format!("call `{call}` has no timezone argument"))?;
    let result = datetime(zone).unwrap_or_else(|error| json!({ "error": error }));
    Ok(AgentStateUpdate::default().tool_results(BTreeMap::from([(call, result)])))
}

/// Writes the answer from the tool results.
#[node]
async fn generator(state: &AgentState) -> AgentStateUpdate {
    let response = if state.tool_results.is_empty() {
        "I can tell the time in a city: ask me about Tokyo, London, New York...".to_owned()
    } else {
        let lines: Vec<String> = state
            .tool_results
            .values()
            .map(
                |r| match (r["timezone"].as_str(), r["local_time"].as_str()) {
                    (Some(zone), Some(time)) => format!(
                        "{zone}: {time} (UTC{})",
                        r["utc_offset"].as_str().unwrap_or("")
                    ),
                    _ => format!("error: {}", r["error"]),
                },
            )
            .collect();
        lines.join("\n")
    };
    AgentStateUpdate::default()
        .messages(vec![response.clone()])
        .response(response)
}

/// One `Send` per selected tool call, or straight to the generator.
fn route(state: &AgentState) -> agent_core::Route<AgentState> {
    if state.selected_tools.is_empty() {
        return agent_core::Route::to("direct");
    }
    let sends = state.selected_tools.iter().map(|call| {
        Send::new(
            "tool_executor",
            AgentState {
                call: Some(call.clone()),
                tool_args: state.tool_args.clone(),
                ..AgentState::default()
            },
        )
    });
    agent_core::Route {
        goto: sends.map(agent_core::Goto::Send).collect(),
    }
}

/// The compiled flow.
pub fn build() -> Result<CompiledGraph<AgentState>, GraphError> {
    StateGraph::new()
        .add_named(router)
        .add_named(tool_executor)
        .add_named(generator)
        .add_edge(START, "router")
        .add_conditional_edges(
            "router",
            route,
            [("tools", "tool_executor"), ("direct", "generator")],
        )
        .add_edge("tool_executor", "generator")
        .add_edge("generator", END)
        .compile()
}

/// The input for one question.
pub fn question(text: &str) -> AgentStateUpdate {
    AgentStateUpdate::default().messages(vec![text.to_owned()])
}

/// Runs the flow on one question.
pub async fn ask(text: &str) -> Result<AgentState, GraphError> {
    let graph = build()?;
    graph
        .invoke(question(text), agent_core::RunConfig::default())
        .await
        .map(agent_core::RunOutput::into_state)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn zones_in_order_of_mention() {
        assert_eq!(
            zones_in("What time is it in London and in Tokyo?"),
            ["Europe/London", "Asia/Tokyo"]
        );
        assert!(zones_in("hello").is_empty());
    }

    #[test]
    fn datetime_knows_dst() {
        let v = datetime("Europe/London").unwrap();
        let offset = v["utc_offset"].as_str().unwrap();
        assert!(
            offset == "+00"
                || offset == "+01"
                || offset.starts_with("+00")
                || offset.starts_with("+01"),
            "{offset}"
        );
        assert!(datetime("Mars/Olympus").is_err());
    }

    #[tokio::test]
    async fn two_cities_run_two_parallel_calls() {
        let out = ask("time in Tokyo and London?").await.unwrap();
        assert_eq!(out.selected_tools, ["datetime_0", "datetime_1"]);
        assert_eq!(out.tool_results.len(), 2);
        assert!(out.response.contains("Asia/Tokyo"));
        assert!(out.response.contains("Europe/London"));
        assert_eq!(out.messages.len(), 2);
    }

    #[tokio::test]
    async fn no_city_goes_direct() {
        let out = ask("hi there").await.unwrap();
        assert!(out.tool_results.is_empty());
        assert!(out.response.starts_with("I can tell the time"));
    }
}
