//! The seed's singleton: `get_graph()` compiles the data graph once per process and every
//! caller shares it. Many tasks on several threads take it and run questions on it at the
//! same time; they all get the same graph and the right answers. (Its own test binary: the
//! singleton is per process.)

use agent_core::{Input, RunConfig};
use agent_flows::FlowEnv;
use agent_flows::data::{DataGraph, get_graph, init_graph, question};

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn one_graph_for_many_tasks_at_once() {
    let questions = [
        (
            "What was the average unemployment rate in 2008?",
            "Unemployment rate in 2008, average: 5.80% (4 quarters).",
        ),
        (
            "Какой была инфляция в 1970-х годах?",
            "Инфляция в 1970-е гг., в среднем: 7,22 % (40 кварталов).",
        ),
        (
            "What was unemployment in the last quarter of 2008?",
            "Unemployment rate in 2008 Q4: 6.90%.",
        ),
    ];
    let tasks: Vec<_> = (0..48)
        .map(|i| {
            let (q, expected) = questions[i % questions.len()];
            tokio::spawn(async move {
                let graph: &'static DataGraph = get_graph().expect("the shared graph builds");
                let out = graph
                    .invoke(Input::Update(question(q)), RunConfig::default())
                    .await
                    .expect("the run finishes");
                assert_eq!(out.state.response, expected, "{q}");
                graph as *const DataGraph as usize
            })
        })
        .collect();
    let mut addresses = Vec::new();
    for task in tasks {
        addresses.push(task.await.expect("no task panicked"));
    }
    addresses.dedup();
    assert_eq!(addresses.len(), 1, "every task got the same graph");

    // Once compiled, it cannot be re-initialised on another model.
    let Err(error) = init_graph(&FlowEnv::offline()) else {
        panic!("a second init must fail");
    };
    assert!(error.to_string().contains("already compiled"), "{error}");
    assert!(std::ptr::eq(get_graph().unwrap(), get_graph().unwrap()));
}
