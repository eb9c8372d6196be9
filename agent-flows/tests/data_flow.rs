//! The `data` flow offline, through the registry as a program uses it: questions in Russian and
//! English whose numbers are checked against the shipped CSV itself (parsed here, computed
//! here, independently of SQLite and of the flow), the English `internal_query` read back to
//! the same steps, hostile input (SQL in the question, absurd limits, empty and huge messages,
//! a model that returns nonsense), and usage per node and per model.

use std::sync::Arc;

use agent_core::{InMemorySaver, Input, RunConfig, StreamModes};
use agent_flows::data::{self, DataContext, question};
use agent_flows::dataset::{Dataset, Limits, MACRODATA_CSV};
use agent_flows::{FlowEnv, FlowError, TurnReport, find};
use agent_llm::{ChatModel, Reply, ScriptedModel};
use serde_json::{Value, json};

/// One quarter of the CSV.
struct Row {
    year: i64,
    quarter: i64,
    values: Vec<(String, f64)>,
}

impl Row {
    fn get(&self, column: &str) -> f64 {
        self.values
            .iter()
            .find(|(c, _)| c == column)
            .map(|(_, v)| *v)
            .unwrap_or_else(|| panic!("no column {column}"))
    }
}

/// The CSV as shipped, parsed by hand.
fn csv() -> Vec<Row> {
    let mut lines = MACRODATA_CSV.lines();
    let header: Vec<String> = lines
        .next()
        .unwrap()
        .split(',')
        .map(|h| h.trim_matches('"').to_owned())
        .collect();
    lines
        .map(|line| {
            let fields: Vec<&str> = line.split(',').collect();
            Row {
                year: fields[0].parse().unwrap(),
                quarter: fields[1].parse().unwrap(),
                values: header
                    .iter()
                    .zip(&fields)
                    .skip(2)
                    .map(|(h, f)| (h.clone(), f.parse().unwrap()))
                    .collect(),
            }
        })
        .collect()
}

fn mean(values: impl IntoIterator<Item = f64>) -> f64 {
    let values: Vec<f64> = values.into_iter().collect();
    assert!(!values.is_empty(), "mean of nothing");
    values.iter().sum::<f64>() / values.len() as f64
}

/// `x` as answers write it.
fn en(x: f64) -> String {
    format!("{x:.2}")
}

fn ru(x: f64) -> String {
    format!("{x:.2}").replace('.', ",")
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() < 1e-9 * b.abs().max(1.0)
}

async fn ask(message: &str) -> TurnReport {
    let session = find("data")
        .unwrap()
        .open(&FlowEnv::offline(), None, None)
        .unwrap();
    session
        .turn(message, None, StreamModes::NONE, &mut |_| {})
        .await
        .unwrap_or_else(|e| panic!("{message}: {e}"))
}

fn rows(report: &TurnReport, request: usize) -> Vec<Vec<Value>> {
    serde_json::from_value(report.state["data"][request]["rows"].clone()).unwrap()
}

fn f(value: &Value) -> f64 {
    value.as_f64().unwrap()
}

fn assert_data_path(report: &TurnReport) {
    assert_eq!(
        report.path,
        [["intent"], ["parser"], ["planner"], ["executor"]],
        "{}",
        report.response
    );
    assert_eq!(report.state["intent"], "data");
    assert_eq!(
        report.state["plan_errors"],
        json!([]),
        "{}",
        report.response
    );
}

#[tokio::test]
async fn averages_in_both_languages_match_the_csv() {
    let data = csv();
    let r = ask("What was the average unemployment rate in 2008?").await;
    assert_data_path(&r);
    assert_eq!(r.state["lang"], "en");
    let expected = mean(
        data.iter()
            .filter(|d| d.year == 2008)
            .map(|d| d.get("unemp")),
    );
    assert!(close(f(&rows(&r, 0)[0][0]), expected));
    assert_eq!(rows(&r, 0)[0][1], json!(4));
    assert_eq!(
        r.response,
        format!(
            "Unemployment rate in 2008, average: {}% (4 quarters).",
            en(expected)
        )
    );

    let r = ask("Какой была инфляция в 1970-х годах?").await;
    assert_data_path(&r);
    assert_eq!(r.state["lang"], "ru");
    assert_eq!(
        r.state["internal_query"],
        "Average inflation rate in the 1970s."
    );
    let expected = mean(
        data.iter()
            .filter(|d| (1970..=1979).contains(&d.year))
            .map(|d| d.get("infl")),
    );
    assert!(close(f(&rows(&r, 0)[0][0]), expected));
    assert_eq!(
        r.response,
        format!(
            "Инфляция в 1970-е гг., в среднем: {} % (40 кварталов).",
            ru(expected)
        )
    );
}

#[tokio::test]
async fn extremes_say_when_and_top_n_ranks() {
    let data = csv();
    let r = ask("Когда безработица была максимальной?").await;
    assert_data_path(&r);
    let top = data
        .iter()
        .max_by(|a, b| a.get("unemp").total_cmp(&b.get("unemp")))
        .unwrap();
    let row = &rows(&r, 0)[0];
    assert_eq!(
        (row[0].as_i64(), row[1].as_i64()),
        (Some(top.year), Some(top.quarter))
    );
    assert!(r.response.contains(&format!(
        "максимум {} % — {} кв. {}",
        ru(top.get("unemp")),
        top.quarter,
        top.year
    )));

    let r = ask("Top 5 quarters with the highest inflation").await;
    assert_data_path(&r);
    let mut sorted: Vec<&Row> = data.iter().collect();
    sorted.sort_by(|a, b| {
        b.get("infl")
            .total_cmp(&a.get("infl"))
            .then((a.year, a.quarter).cmp(&(b.year, b.quarter)))
    });
    let got = rows(&r, 0);
    assert_eq!(got.len(), 5);
    for (row, expected) in got.iter().zip(&sorted) {
        assert_eq!(row[0].as_i64(), Some(expected.year));
        assert_eq!(row[1].as_i64(), Some(expected.quarter));
        assert!(close(f(&row[2]), expected.get("infl")));
        assert!(r.response.contains(&en(expected.get("infl"))));
    }

    let r = ask("Which 3 years had the lowest unemployment rate?").await;
    assert_data_path(&r);
    let mut years: Vec<(i64, f64)> = (1959..=2009)
        .map(|y| {
            (
                y,
                mean(data.iter().filter(|d| d.year == y).map(|d| d.get("unemp"))),
            )
        })
        .collect();
    years.sort_by(|a, b| a.1.total_cmp(&b.1).then(a.0.cmp(&b.0)));
    let got = rows(&r, 0);
    assert_eq!(got.len(), 3);
    for (row, (year, avg)) in got.iter().zip(&years) {
        assert_eq!(row[0].as_i64(), Some(*year));
        assert!(close(f(&row[1]), *avg));
    }

    let r = ask("In which decade was inflation highest?").await;
    assert_data_path(&r);
    let decade = |d: i64| {
        mean(
            data.iter()
                .filter(|r| r.year / 10 * 10 == d)
                .map(|r| r.get("infl")),
        )
    };
    let best = [1950, 1960, 1970, 1980, 1990, 2000]
        .into_iter()
        .max_by(|a, b| decade(*a).total_cmp(&decade(*b)))
        .unwrap();
    assert_eq!(rows(&r, 0)[0][0].as_i64(), Some(best));
    assert!(
        r.response
            .contains(&format!("the {best}s ({}%)", en(decade(best))))
    );
}

#[tokio::test]
async fn filters_counts_changes_series_and_points_match_the_csv() {
    let data = csv();
    let r = ask("Сколько кварталов безработица была выше 8%?").await;
    assert_data_path(&r);
    let above: Vec<&Row> = data.iter().filter(|d| d.get("unemp") > 8.0).collect();
    let mut years: Vec<i64> = above.iter().map(|d| d.year).collect();
    years.dedup();
    assert_eq!(rows(&r, 0)[0], [json!(above.len()), json!(years.len())]);
    assert!(r.response.contains(&format!(
        ": {} (в {} разных годах)",
        above.len(),
        years.len()
    )));

    let r = ask("Average real GDP in quarters when unemployment was above 9%").await;
    assert_data_path(&r);
    let expected = mean(
        data.iter()
            .filter(|d| d.get("unemp") > 9.0)
            .map(|d| d.get("realgdp")),
    );
    assert!(close(f(&rows(&r, 0)[0][0]), expected));
    assert!(r.response.contains(&en(expected)), "{}", r.response);

    let r = ask("Как изменился ВВП с 2000 по 2008 год?").await;
    assert_data_path(&r);
    let first = data
        .iter()
        .find(|d| (d.year, d.quarter) == (2000, 1))
        .unwrap();
    let last = data
        .iter()
        .find(|d| (d.year, d.quarter) == (2008, 4))
        .unwrap();
    let (a, b) = (first.get("realgdp"), last.get("realgdp"));
    assert!(close(f(&rows(&r, 0)[0][2]), a) && close(f(&rows(&r, 0)[1][2]), b));
    assert!(
        r.response.contains(&format!(
            "изменение +{} млрд долл. 2005 г. (+{} %)",
            ru(b - a),
            ru((b - a) / a * 100.0)
        )),
        "{}",
        r.response
    );

    let r = ask("Show the 3-month treasury bill rate from 2007 Q1 to 2008 Q4").await;
    assert_data_path(&r);
    let expected: Vec<Vec<Value>> = data
        .iter()
        .filter(|d| (2007..=2008).contains(&d.year))
        .map(|d| vec![json!(d.year), json!(d.quarter), json!(d.get("tbilrate"))])
        .collect();
    assert_eq!(rows(&r, 0), expected);
    // The CLI's table: a header and one line per quarter.
    assert_eq!(r.response.lines().count(), 1 + 1 + 8, "{}", r.response);

    let r = ask("Population at the end of 1990").await;
    assert_data_path(&r);
    let q4 = data
        .iter()
        .find(|d| (d.year, d.quarter) == (1990, 4))
        .unwrap();
    assert!(close(f(&rows(&r, 0)[0][2]), q4.get("pop")));

    let r = ask("Какой сейчас уровень безработицы?").await;
    assert_data_path(&r);
    let latest = data.last().unwrap();
    assert!(r.response.contains(&format!(
        "{} % ({} кв. {}",
        ru(latest.get("unemp")),
        latest.quarter,
        latest.year
    )));

    let r = ask("Total real investment in 2007").await;
    assert_data_path(&r);
    let total: f64 = data
        .iter()
        .filter(|d| d.year == 2007)
        .map(|d| d.get("realinv"))
        .sum();
    assert!(close(f(&rows(&r, 0)[0][0]), total));

    let r = ask("Инфляция за последние 5 лет").await;
    assert_data_path(&r);
    let expected = mean(
        data.iter()
            .filter(|d| d.year >= 2005)
            .map(|d| d.get("infl")),
    );
    assert!(r.response.contains(&ru(expected)), "{}", r.response);

    let r = ask("average unemployment from March 2001 to June 2003").await;
    assert_data_path(&r);
    let expected = mean(
        data.iter()
            .filter(|d| (d.year, d.quarter) >= (2001, 1) && (d.year, d.quarter) <= (2003, 2))
            .map(|d| d.get("unemp")),
    );
    assert!(close(f(&rows(&r, 0)[0][0]), expected));
}

#[tokio::test]
async fn several_steps_and_follow_ups() {
    let data = csv();
    let r = ask("Сравни безработицу в 1982 и 2000 годах").await;
    assert_data_path(&r);
    assert_eq!(r.state["parsed_query"].as_array().unwrap().len(), 2);
    for (i, year) in [1982, 2000].into_iter().enumerate() {
        let expected = mean(
            data.iter()
                .filter(|d| d.year == year)
                .map(|d| d.get("unemp")),
        );
        assert!(close(f(&rows(&r, i)[0][0]), expected));
        assert!(r.response.contains(&ru(expected)));
    }

    let r = ask("Real GDP and population in Q3 2009").await;
    assert_data_path(&r);
    let q = data.last().unwrap();
    assert!(r.response.contains(&en(q.get("realgdp"))));
    assert!(r.response.contains(&en(q.get("pop"))));

    // A thread: the second question leans on the first.
    let session = find("data")
        .unwrap()
        .open(
            &FlowEnv::offline(),
            Some(Arc::new(InMemorySaver::new())),
            None,
        )
        .unwrap();
    let run = async |message: &str| {
        session
            .turn(message, Some("t"), StreamModes::NONE, &mut |_| {})
            .await
            .unwrap()
    };
    run("What was inflation in 1980?").await;
    let r = run("And in 1990?").await;
    assert_data_path(&r);
    assert_eq!(r.state["internal_query"], "Average inflation rate in 1990.");
    let expected = mean(
        data.iter()
            .filter(|d| d.year == 1990)
            .map(|d| d.get("infl")),
    );
    assert!(close(f(&rows(&r, 0)[0][0]), expected));
    let r = run("А безработица?").await;
    assert_eq!(r.state["lang"], "ru");
    let expected = mean(
        data.iter()
            .filter(|d| d.year == 1990)
            .map(|d| d.get("unemp")),
    );
    assert!(r.response.contains(&ru(expected)), "{}", r.response);
    assert_eq!(r.state["messages"].as_array().unwrap().len(), 6);
}

#[tokio::test]
async fn chitchat_and_concepts_go_to_end_in_the_users_language() {
    let r = ask("Привет! Что ты умеешь?").await;
    assert_eq!(r.path, [["intent"], ["end"]]);
    assert_eq!(r.state["intent"], "chitchat");
    assert!(
        r.response.starts_with("Здравствуйте! Я отвечаю"),
        "{}",
        r.response
    );
    assert_eq!(r.state["data"], json!([]));

    let r = ask("What does real interest rate mean?").await;
    assert_eq!(r.path, [["intent"], ["end"]]);
    assert_eq!(r.state["intent"], "concept");
    assert!(
        r.response
            .starts_with("Real interest rate: the 3-month treasury bill rate minus inflation")
    );

    let r = ask("Что такое ВВП?").await;
    assert_eq!(r.state["intent"], "concept");
    assert!(
        r.response
            .starts_with("Реальный валовой внутренний продукт (ВВП):"),
        "{}",
        r.response
    );
    assert!(r.response.contains("столбец `realgdp`"));
}

#[tokio::test]
async fn what_the_data_cannot_answer_is_a_plan_error() {
    for (question, error) in [
        (
            "What was the price of gold in 2000?",
            "the data set has no gold price",
        ),
        ("Какой был ВВП в 2015 году?", "период 2015 вне данных"),
        (
            "What was Germany's GDP in 1990?",
            "covers the United States only",
        ),
        (
            "Какая была цена нефти в 1990 году?",
            "нет показателя «цена нефти»",
        ),
        ("What happened in 1990?", "no measure named"),
        ("Top 0 quarters by unemployment", "at least 1, not 0"),
    ] {
        let r = ask(question).await;
        assert_eq!(r.path.last().unwrap(), &["executor"], "{question}");
        let errors = r.state["plan_errors"].to_string();
        assert!(errors.contains(error), "{question}: {errors}");
        assert!(r.response.contains(error), "{question}: {}", r.response);
        assert_eq!(r.state["data"], json!([]), "{question}");
    }
}

#[tokio::test]
async fn the_internal_query_reads_back_to_the_same_steps() {
    for q in [
        "What was the average unemployment rate in 2008?",
        "Какой была инфляция в 1970-х годах?",
        "Когда безработица была максимальной?",
        "Top 5 quarters with the highest inflation",
        "Which 3 years had the lowest unemployment rate?",
        "Сколько кварталов безработица была выше 8%?",
        "Show the 3-month treasury bill rate from 2007 Q1 to 2008 Q4",
        "Как изменился ВВП с 2000 по 2008 год?",
        "Average inflation by year from 2000 to 2005",
        "Сравни безработицу в 1982 и 2000 годах",
        "Real GDP and population in Q3 2009",
        "Какой сейчас уровень безработицы?",
        "Average real GDP in quarters when unemployment was above 9%",
        "In which decade was inflation highest?",
        "Сколько раз реальная ставка была отрицательной?",
        "Инфляция за последние 5 лет",
        "Безработица в третьем квартале 2008 года",
        "Средняя инфляция с 1990 по 1995 год по годам",
        "Какой был максимальный ВВП в 1990-х и в каком квартале?",
        "What was the price of gold in 2000?",
        "What was Germany's GDP in 1990?",
        "Покажи динамику денежной массы M1 в 2008 году",
        "Top 1000000 quarters by unemployment in 2008",
    ] {
        let reading = data::reading::resolve(&[], q);
        let english = data::reading::english(&reading, q);
        let again = data::reading::resolve(&[], &english);
        assert_eq!(reading.steps(), again.steps(), "{q} -> {english}");
    }
}

#[tokio::test]
async fn sql_in_the_question_is_only_text() {
    let data = csv();
    let gdp2008 = mean(
        data.iter()
            .filter(|d| d.year == 2008)
            .map(|d| d.get("realgdp")),
    );
    for q in [
        "GDP in 2008'; DROP TABLE macrodata; --",
        "GDP in 2008\" OR 1=1; DELETE FROM macrodata",
        "ВВП в 2008 году'); INSERT INTO macrodata VALUES (1); --",
        "GDP in 2008 UNION SELECT * FROM sqlite_master",
    ] {
        let r = ask(q).await;
        assert_data_path(&r);
        assert!(close(f(&rows(&r, 0)[0][0]), gdp2008), "{q}: {}", r.response);
        let sql = r.state["data"][0]["sql"].as_str().unwrap();
        assert!(
            !sql.to_lowercase().contains("drop") && !sql.contains('\''),
            "{sql}"
        );
    }
    // The data set is intact.
    let t = Dataset::shared()
        .unwrap()
        .select("SELECT count(*) FROM macrodata", &[], Limits::default())
        .unwrap();
    assert_eq!(t.rows[0][0], json!(203));
}

#[tokio::test]
async fn absurd_limits_are_capped_and_said() {
    let r = ask("Top 1000000 quarters by unemployment in 2008").await;
    assert_data_path(&r);
    assert_eq!(r.state["execution_plan"][0]["limit"], 250);
    assert_eq!(rows(&r, 0).len(), 4);
    assert!(
        r.response
            .contains("the limit of 1000000 was lowered to 250 rows")
    );
    let r = ask("top 99999999999999999999999 quarters by inflation").await;
    assert_eq!(r.state["execution_plan"][0]["limit"], 250);
    assert_eq!(rows(&r, 0).len(), 203);
    assert!(r.response.contains("… and 163 more rows"), "{}", r.response);
}

#[tokio::test]
async fn empty_and_huge_messages_are_refused_clearly() {
    let session = find("data")
        .unwrap()
        .open(&FlowEnv::offline(), None, None)
        .unwrap();
    for message in ["", "   \n\t"] {
        let error = session
            .turn(message, None, StreamModes::NONE, &mut |_| {})
            .await
            .unwrap_err();
        assert!(
            error.to_string().contains("the message is empty"),
            "{error}"
        );
    }
    let huge = "What was GDP in 2008? ".repeat(10_000);
    let error = session
        .turn(&huge, None, StreamModes::NONE, &mut |_| {})
        .await
        .unwrap_err();
    assert!(matches!(error, FlowError::Input(_)));
    assert!(error.to_string().contains("at most 2000"), "{error}");

    // Straight into the graph: the node refuses, the run fails with the reason; an empty
    // question is small talk.
    let graph = data::build(DataContext::offline().unwrap()).unwrap();
    let error = graph
        .invoke(Input::Update(question(&huge)), RunConfig::default())
        .await
        .unwrap_err();
    assert!(error.to_string().contains("at most 2000"), "{error}");
    let out = graph
        .invoke(Input::Update(question("")), RunConfig::default())
        .await
        .unwrap();
    assert_eq!(out.path.to_vec(), [["intent"], ["end"]]);
    assert!(out.state.response.starts_with("I answer questions"));
}

fn scripted(name: &str, reply: Value, input: u64, output: u64) -> Arc<dyn ChatModel> {
    Arc::new(
        ScriptedModel::from_fn(move |_| Reply::json(reply.clone()).with_usage(input, output))
            .with_name(name),
    )
}

#[tokio::test]
async fn a_model_that_asks_for_nonsense_gets_plan_errors_not_queries() {
    let intent = scripted(
        "tiny",
        json!({"intent": "data", "lang": "en", "internal_query": "GDP"}),
        11,
        3,
    );
    let parser = scripted(
        "big",
        json!({"thoughts": "x", "steps": [
            {"atoms": [{"atom": "metric", "name": "realgdp; DROP TABLE macrodata"}]},
            {"atoms": [{"atom": "metric", "name": "unemp"}, {"atom": "filter", "column": "country", "op": "eq", "value": "Mars"}]},
            {"atoms": [{"atom": "metric", "name": "infl"}, {"atom": "time_range", "from": "2008Q5", "to": "2009"}]},
            {"atoms": [{"atom": "metric", "name": "pop"}, {"atom": "limit", "count": -3}]},
            {"atoms": [{"atom": "metric", "name": "cpi"}, {"atom": "filter", "column": "cpi\" OR 1=1", "op": "gt", "value": 1}]},
            {"atoms": [{"atom": "metric", "name": "m1"}, {"atom": "time_range", "from": "1990", "to": "1991"}, {"atom": "aggregate", "function": "change"}]},
        ]}),
        20,
        7,
    );
    let context =
        DataContext::with_models(intent, parser, agent_flows::data::offline::model()).unwrap();
    let graph = data::build(context).unwrap();
    let out = graph
        .invoke(Input::Update(question("anything")), RunConfig::default())
        .await
        .unwrap();
    let state = out.state;
    let errors = state.plan_errors.join("\n");
    assert_eq!(state.plan_errors.len(), 5, "{errors}");
    assert!(errors.contains("unknown measure “realgdp; DROP TABLE macrodata”"));
    assert!(errors.contains("covers the United States only; there is nothing on Mars"));
    assert!(errors.contains("a year has quarters 1 to 4"));
    assert!(errors.contains("at least 1, not -3"));
    assert!(errors.contains("unknown column “cpi\" OR 1=1”"));
    // The one good step ran.
    assert_eq!(state.execution_plan.len(), 1);
    assert_eq!(state.data.len(), 1);
    assert!(
        state
            .response
            .starts_with("M1 money stock from 1990 to 1991: from ")
    );

    // Usage per node and per model, the same as the run's counters.
    assert_eq!(state.usage.by_model["tiny"].input_tokens, 11);
    assert_eq!(state.usage.by_model["big"].output_tokens, 7);
    assert_eq!(state.usage.by_node["intent"].calls, 1);
    assert_eq!(state.usage.by_node["parser"].input_tokens, 20);
    assert_eq!(state.usage.total.input_tokens, out.usage["input_tokens"]);
    assert_eq!(state.usage.total.output_tokens, out.usage["output_tokens"]);
}

#[tokio::test]
async fn usage_is_reported_per_node_and_model_and_reset_per_turn() {
    let session = find("data")
        .unwrap()
        .open(
            &FlowEnv::offline(),
            Some(Arc::new(InMemorySaver::new())),
            None,
        )
        .unwrap();
    let r = session
        .turn(
            "Average inflation in 1975",
            Some("u"),
            StreamModes::NONE,
            &mut |_| {},
        )
        .await
        .unwrap();
    let usage = &r.state["usage"];
    assert_eq!(usage["by_node"].as_object().unwrap().len(), 2);
    assert!(usage["by_node"]["intent"]["input_tokens"].as_u64().unwrap() > 0);
    assert!(
        usage["by_node"]["parser"]["output_tokens"]
            .as_u64()
            .unwrap()
            > 0
    );
    assert_eq!(usage["by_model"]["offline-data"]["calls"], 2);
    assert_eq!(usage["total"]["input_tokens"], r.usage["input_tokens"]);
    let r = session
        .turn("thanks", Some("u"), StreamModes::NONE, &mut |_| {})
        .await
        .unwrap();
    let nodes: Vec<&String> = r.state["usage"]["by_node"]
        .as_object()
        .unwrap()
        .keys()
        .collect();
    assert_eq!(nodes, ["end", "intent"]);
    assert_eq!(
        r.state["usage"]["total"]["output_tokens"],
        r.usage["output_tokens"]
    );
}

#[tokio::test]
async fn a_parse_that_never_fits_is_a_plan_error() {
    let intent = scripted(
        "tiny",
        json!({"intent": "data", "lang": "ru", "internal_query": "GDP in 2008"}),
        5,
        5,
    );
    let parser: Arc<dyn ChatModel> = Arc::new(
        ScriptedModel::from_fn(|_| Reply::text("{\"steps\": [{\"atoms\": [").with_usage(9, 9))
            .with_name("broken"),
    );
    let context =
        DataContext::with_models(intent, parser, agent_flows::data::offline::model()).unwrap();
    let out = data::build(context)
        .unwrap()
        .invoke(Input::Update(question("ВВП в 2008")), RunConfig::default())
        .await
        .unwrap();
    assert_eq!(
        out.path.to_vec(),
        [["intent"], ["parser"], ["planner"], ["executor"]]
    );
    assert!(
        out.state
            .parser_thoughts
            .starts_with("the model's reply could not be read as steps after 2 attempts"),
        "{}",
        out.state.parser_thoughts
    );
    assert!(
        out.state
            .response
            .starts_with("Не удалось ответить:\n- Вопрос не удалось превратить в запрос"),
        "{}",
        out.state.response
    );
    // Both attempts spent tokens: booked to the parser.
    assert_eq!(out.state.usage.by_node["parser"].input_tokens, 18);
    assert_eq!(out.state.usage.by_model["broken"].output_tokens, 18);
    assert_eq!(
        out.state.usage.total.input_tokens,
        out.usage["input_tokens"]
    );
}
