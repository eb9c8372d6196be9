//! Seed 003, the data question agent (`data`): questions in Russian or English about a real
//! data set — US macroeconomic quarterly series, 1959 Q1 – 2009 Q3 (statsmodels' `macrodata`,
//! public domain; [`crate::dataset`]) — answered with numbers that come from SQL over the data,
//! never from a model.
//!
//! ```text
//! START -> intent -(data)------> parser -> planner -> executor -> END
//!                 \-(chitchat)-> end -> END
//!                 \-(concept)--> end
//! ```
//!
//! - `intent` ([`nodes::classify_intent`]): one structured call ([`IntentDecision`]): intent
//!   `data` / `chitchat` / `concept`, language `ru` / `en`, and `internal_query`, the question
//!   in English with follow-ups resolved.
//! - `parser` ([`nodes::parse_question`]): one structured call ([`ParsedQuery`]): steps made
//!   of atoms (metric, filters, time range, grouping, aggregation, order, limit) and the
//!   model's thoughts.
//! - `planner` ([`nodes::plan_execution`], no model): the steps become typed
//!   [`DataRequest`]s checked against the data set's schema
//!   ([`plan`]); what cannot be planned becomes a `plan_errors` entry in the user's language.
//! - `executor` ([`nodes::execute_query`], no model): each request runs as one parameterised,
//!   read-only SELECT over allow-listed columns, within row and time limits ([`sql`]); the
//!   rows go to `data`, and the answer — a sentence per request in the user's language and a
//!   plain-text table — is written from them ([`answer`]).
//! - `end` ([`nodes::handle_end`]): the reply to small talk, or to a concept question from the
//!   data set's bilingual glossary ([`glossary`]), streamed by the model.
//! - `usage`: tokens per node and per model, added up by a reducer from every call's reported
//!   usage ([`usage`]).
//!
//! Offline ([`offline`]), the three model decisions are rules over a grammar of the
//! questions ([`reading`]): periods (years, quarters, months, decades, ranges, `last 5
//! years`), comparisons, measures and what the data set lacks, limits, computations,
//! grouping, order, definitions and follow-ups, in both languages.
//!
//! # Singleton
//!
//! The seed compiles the graph once per process and shares it: [`get_graph`] returns that
//! graph (thread-safe, compiled on first use), built on the offline model. A program that wants
//! the shared graph on another model calls [`init_graph`] with its [`FlowEnv`] once, before any
//! [`get_graph`]; a second initialisation is an error rather than a silent no-op. The shared
//! graph has no checkpointer (the seed invokes it with the messages each time); threads go
//! through the registry (`agent run data --thread`) or [`build_with`].
//!
//! # Where the seed is silent, decided here
//!
//! - **The data.** `macrodata` as shipped (203 quarters, 12 measures); the answer covers the
//!   United States only, 1959 Q1 – 2009 Q3. A period partly outside is cut to the data (the
//!   answer says so); one wholly outside, a country other than the US, a quantity the data set
//!   lacks (gold, oil, wages...) or an unknown column is a plan error.
//! - **A `DataRequest`** is one measure, one period, filters, and one operation: a series of
//!   quarters, an aggregate (avg, sum, count), grouped rows (per year or decade), a ranking
//!   (the quarters with the highest or lowest values — a `max` / `min` answers *when* too), a
//!   change from the first to the last quarter, or the first / last value. A step naming
//!   several measures, periods or computations becomes one request per combination (at most
//!   [`plan::MAX_REQUESTS`]).
//! - **Defaults a user expects:** a period with nothing else asked is averaged ("inflation in
//!   the 1970s" is one number), a single quarter is shown as is, no period at all means the
//!   latest value, "top N" / "N highest" ranks, "N years with the highest X" ranks yearly
//!   averages, `min` / `max` come with the quarter they happened in, a change of a rate is in
//!   percentage points.
//! - **What the user sees after the executor:** `response`, written by the executor from the
//!   rows (the seed only lists `response` for `end`); it is also the AI message added to the
//!   conversation. Model wording never carries a number.
//! - **The chat** ([`crate::chat`]): `messages` holds the user's message as sent and the
//!   answer (the executor's, or `end`'s under the id its tokens streamed with). The seed
//!   frames the data requests as a plan the executor runs, not as tools a model calls, so
//!   they stay in `execution_plan` and `data`, not in the chat. The intent and parser calls
//!   are tagged `nostream`: their JSON never streams as a chat message.
//! - **Languages:** Russian and English (the seed's); a message in any other language is
//!   answered in English.
//! - **Per-turn fields:** a turn's input resets `intent`, `internal_query`, `parsed_query`,
//!   `parser_thoughts`, `execution_plan`, `plan_errors`, `data`, `usage` and `response`;
//!   `messages` carries the conversation, so "and in 1990?" continues the previous question.
//! - **`usage`** holds the current turn, like the run's counters; both count the same calls.
//! - **Hostile input:** the question reaches SQL only through typed, allow-listed requests and
//!   bound parameters; limits are capped at [`plan::MAX_LIMIT`] rows, questions at
//!   [`MAX_QUESTION_CHARS`] characters.

pub mod answer;
pub mod glossary;
pub mod nodes;
pub mod offline;
pub mod period;
pub mod plan;
pub mod query;
pub mod reading;
pub mod sql;
pub mod tokens;
pub mod usage;

use std::sync::{Arc, OnceLock};
use std::time::Duration;

use agent_core::{Checkpointer, CompiledGraph, END, GraphState, START, StateGraph};
use agent_llm::{ChatModel, ChatModelExt, HumanMessage, Message, StructuredModel};
use schemars::JsonSchema;
use serde::de::DeserializeOwned;

pub use query::{
    Aggregation, Atom, Comparison, Direction, FilterValue, Grouping, Intent, IntentDecision,
    ParsedQuery, Step,
};

use crate::dataset::{Dataset, Limits};
use crate::env::FlowEnv;
use crate::error::FlowError;
use crate::lang::Lang;
use crate::registry::{Demo, FlowSpec};
use plan::DataRequest;
use sql::DataResult;
use usage::UsageLedger;

/// The longest question the flow takes, in characters.
pub const MAX_QUESTION_CHARS: usize = 2000;

// The nodes stay in their module: `#[node]` makes each fn a unit struct of the same name.

/// The flow's state, field for field the seed's `AgentState` (plus `response`).
#[derive(GraphState, Clone, Default, Debug)]
pub struct DataState {
    /// The conversation.
    #[reducer(agent_llm::add_messages)]
    pub messages: Vec<Message>,
    /// data, chitchat or concept (none before `intent` runs).
    pub intent: Option<Intent>,
    /// The user's language.
    pub lang: Lang,
    /// The question in English.
    pub internal_query: String,
    /// Steps made of atoms.
    pub parsed_query: Vec<Step>,
    /// How the parser read the question.
    pub parser_thoughts: String,
    /// The typed requests.
    pub execution_plan: Vec<DataRequest>,
    /// What could not be planned, in the user's language.
    pub plan_errors: Vec<String>,
    /// One result per request.
    pub data: Vec<DataResult>,
    /// Tokens per node and per model.
    #[reducer(usage::merge_usage)]
    pub usage: UsageLedger,
    /// What the user sees.
    pub response: String,
}

/// A model asked for a `T`, with the name usage is booked under.
pub struct Decider<T> {
    /// The structured model.
    pub model: StructuredModel<Arc<dyn ChatModel>, T>,
    /// Its model name.
    pub name: String,
}

impl<T: JsonSchema + DeserializeOwned> Decider<T> {
    fn new(model: Arc<dyn ChatModel>, schema: serde_json::Value) -> Self {
        let name = model.model_name().to_owned();
        Decider {
            model: model.with_structured_output::<T>().with_schema(schema),
            name,
        }
    }
}

/// What the nodes read beside the state.
pub struct DataContext {
    /// Decides the intent.
    pub intent: Decider<IntentDecision>,
    /// Parses the question.
    pub parser: Decider<ParsedQuery>,
    /// Writes `end`'s replies.
    pub end: Arc<dyn ChatModel>,
    /// The data set.
    pub dataset: &'static Dataset,
    /// Row and time limits of each query.
    pub limits: Limits,
}

impl DataContext {
    /// Every decision on `model`.
    pub fn new(model: Arc<dyn ChatModel>) -> Result<Self, FlowError> {
        DataContext::with_models(model.clone(), model.clone(), model)
    }

    /// One model per node (usage is then reported per model too).
    pub fn with_models(
        intent: Arc<dyn ChatModel>,
        parser: Arc<dyn ChatModel>,
        end: Arc<dyn ChatModel>,
    ) -> Result<Self, FlowError> {
        let dataset = Dataset::shared().map_err(|e| FlowError::Setup {
            flow: Data::NAME,
            message: format!("the macrodata set did not load: {e}"),
        })?;
        Ok(DataContext {
            intent: Decider::new(intent, query::intent_schema()),
            parser: Decider::new(parser, query::parsed_query_schema()),
            end,
            dataset,
            limits: Limits {
                max_rows: plan::MAX_LIMIT as usize,
                timeout: Duration::from_secs(2),
                ..Limits::default()
            },
        })
    }

    /// The offline model everywhere.
    pub fn offline() -> Result<Self, FlowError> {
        DataContext::new(offline::model())
    }
}

/// The graph, as the seed builds it.
pub fn graph() -> StateGraph<DataState, DataContext> {
    StateGraph::with_context_type()
        .add_named(nodes::classify_intent)
        .add_named(nodes::parse_question)
        .add_named(nodes::plan_execution)
        .add_named(nodes::execute_query)
        .add_named(nodes::handle_end)
        .add_edge(START, "intent")
        .add_conditional_edges(
            "intent",
            nodes::route_after_intent,
            [("data", "parser"), ("chitchat", "end"), ("concept", "end")],
        )
        .add_edge("parser", "planner")
        .add_edge("planner", "executor")
        .add_edge("executor", END)
        .add_edge("end", END)
}

/// The compiled graph.
pub type DataGraph = CompiledGraph<DataState, DataContext>;

/// The compiled flow with `context` (no checkpointer).
pub fn build(context: DataContext) -> Result<DataGraph, FlowError> {
    Ok(graph().compile()?.with_context(context))
}

/// The compiled flow with `context`, persisting threads in `saver`.
pub fn build_with(
    context: DataContext,
    saver: Arc<dyn Checkpointer>,
) -> Result<DataGraph, FlowError> {
    Ok(graph().compile_with(saver)?.with_context(context))
}

static SHARED: OnceLock<Result<DataGraph, String>> = OnceLock::new();

fn shared(
    make: impl FnOnce() -> Result<DataContext, FlowError>,
) -> (bool, &'static Result<DataGraph, String>) {
    let mut fresh = false;
    let graph = SHARED.get_or_init(|| {
        fresh = true;
        make().and_then(build).map_err(|e| e.to_string())
    });
    (fresh, graph)
}

fn shared_error(message: &str) -> FlowError {
    FlowError::Setup {
        flow: Data::NAME,
        message: format!("the shared data graph could not be built: {message}"),
    }
}

/// The process-wide graph (the seed's `get_graph()`): compiled once, on first use, on the
/// offline model unless [`init_graph`] ran first; thread-safe, shared by every caller.
///
/// ```
/// use agent_core::{Input, RunConfig};
/// use agent_flows::data::{get_graph, question};
///
/// # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let graph = get_graph()?;
/// let out = graph
///     .invoke(Input::Update(question("What was the average unemployment rate in 2008?")), RunConfig::default())
///     .await?;
/// assert_eq!(out.state.response, "Unemployment rate in 2008, average: 5.80% (4 quarters).");
/// assert!(std::ptr::eq(graph, get_graph()?));
/// # Ok(()) }
/// ```
pub fn get_graph() -> Result<&'static DataGraph, FlowError> {
    shared(DataContext::offline)
        .1
        .as_ref()
        .map_err(|e| shared_error(e))
}

/// Compiles the process-wide graph for `env` (its model, or the offline one). Call it once,
/// before any [`get_graph`]; if the graph already exists this is an error that says so.
pub fn init_graph(env: &FlowEnv) -> Result<&'static DataGraph, FlowError> {
    let (fresh, graph) = shared(|| Data::context(env));
    if !fresh {
        return Err(FlowError::Setup {
            flow: Data::NAME,
            message: "the shared data graph is already compiled (get_graph or init_graph ran \
                      before); call init_graph once, before the first get_graph"
                .to_owned(),
        });
    }
    graph.as_ref().map_err(|e| shared_error(e))
}

/// The input of one turn: the question, and the per-turn fields reset.
pub fn question(message: impl Into<HumanMessage>) -> DataStateUpdate {
    DataStateUpdate::default()
        .messages(vec![Message::Human(message.into())])
        .intent(None)
        .internal_query(String::new())
        .parsed_query(Vec::new())
        .parser_thoughts(String::new())
        .execution_plan(Vec::new())
        .plan_errors(Vec::new())
        .data(Vec::new())
        .usage(UsageLedger::default())
        .response(String::new())
}

/// The registry entry.
pub struct Data;

impl FlowSpec for Data {
    type State = DataState;
    type Context = DataContext;

    const NAME: &'static str = "data";
    const SEED: &'static str = "003";
    const SUMMARY: &'static str = "questions about US macro data 1959-2009 (ru/en): intent -> parser -> planner -> SQL executor, or a reply";
    const DESCRIPTION: &'static str = "Seed 003: `intent` classifies the message (`data`, \
        `chitchat`, `concept`), detects Russian or English and writes the question in English; \
        a data question goes to `parser` (steps of atoms: metric, filters, period, grouping, \
        aggregation, order, limit), `planner` (typed requests checked against the data set's \
        schema; what cannot be answered becomes a plan error) and `executor` (parameterised, \
        read-only SQL over the shipped US macroeconomic series, 1959 Q1 - 2009 Q3; the answer \
        and its table are written from the rows). Small talk and concept questions go to `end`, \
        which replies in the user's language, explaining terms from the data set's glossary. \
        Token usage is kept per node and per model.";

    fn demos() -> &'static [Demo] {
        const fn demo(name: &'static str, turns: &'static [&'static str]) -> Demo {
            Demo {
                name,
                turns,
                options: &[],
            }
        }
        const DEMOS: &[Demo] = &[
            demo(
                "average_en",
                &["What was the average unemployment rate in 2008?"],
            ),
            demo("decade_ru", &["Какой была инфляция в 1970-х годах?"]),
            demo("when_highest_ru", &["Когда безработица была максимальной?"]),
            demo(
                "top_quarters_en",
                &["Top 5 quarters with the highest inflation"],
            ),
            demo(
                "lowest_years_en",
                &["Which 3 years had the lowest unemployment rate?"],
            ),
            demo(
                "count_filter_ru",
                &["Сколько кварталов безработица была выше 8%?"],
            ),
            demo(
                "series_range_en",
                &["Show the 3-month treasury bill rate from 2007 Q1 to 2008 Q4"],
            ),
            demo("change_ru", &["Как изменился ВВП с 2000 по 2008 год?"]),
            demo(
                "by_year_en",
                &["Average inflation by year from 2000 to 2005"],
            ),
            demo("compare_ru", &["Сравни безработицу в 1982 и 2000 годах"]),
            demo("two_measures_en", &["Real GDP and population in Q3 2009"]),
            demo("latest_ru", &["Какой сейчас уровень безработицы?"]),
            demo(
                "filtered_average_en",
                &["Average real GDP in quarters when unemployment was above 9%"],
            ),
            demo(
                "follow_up_en",
                &["What was inflation in 1980?", "And in 1990?"],
            ),
            demo(
                "follow_up_ru",
                &[
                    "Какая была средняя ставка по казначейским векселям в 1981 году?",
                    "А реальная ставка?",
                ],
            ),
            demo("chitchat_ru", &["Привет! Что ты умеешь?"]),
            demo("chitchat_en", &["Thanks, that's all. Bye!"]),
            demo("concept_ru", &["Что такое ИПЦ?"]),
            demo("concept_en", &["What does real interest rate mean?"]),
            demo(
                "missing_measure_en",
                &["What was the price of gold in 2000?"],
            ),
            demo("outside_data_ru", &["Какой был ВВП в 2015 году?"]),
            demo("other_country_en", &["What was Germany's GDP in 1990?"]),
            demo("injection_en", &["GDP in 2008'; DROP TABLE macrodata; --"]),
            demo(
                "absurd_limit_en",
                &["Top 1000000 quarters by unemployment in 2008"],
            ),
        ];
        DEMOS
    }

    fn graph() -> StateGraph<DataState, DataContext> {
        graph()
    }

    fn context(env: &FlowEnv) -> Result<DataContext, FlowError> {
        env.no_tools(Self::NAME)?;
        DataContext::new(env.model_or(offline::model))
    }

    fn input(message: HumanMessage, _env: &FlowEnv) -> Result<DataStateUpdate, FlowError> {
        let length = message.content.chars().count();
        if length > MAX_QUESTION_CHARS {
            return Err(FlowError::Input(format!(
                "the question is {length} characters long; the data flow takes at most {MAX_QUESTION_CHARS}, so shorten it"
            )));
        }
        Ok(question(message))
    }

    fn response(state: &DataState) -> String {
        state.response.clone()
    }
}
