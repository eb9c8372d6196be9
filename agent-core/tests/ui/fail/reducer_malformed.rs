use agent_core::GraphState;

#[derive(GraphState, Clone, Default)]
struct State {
    #[reducer]
    a: Vec<String>,
    #[reducer = "append"]
    b: Vec<String>,
    #[reducer(append, merge)]
    c: Vec<String>,
    #[reducer("append")]
    d: Vec<String>,
}

fn main() {}
