//! Subgraphs: a compiled graph over the parent's state run as one task of the parent. It
//! starts from the parent's snapshot, streams its nodes' custom / messages / events items to
//! the parent's caller under its namespace, rolls its usage up, and returns the updates it
//! applied, in order, as the parent task's writes (so appends land once).

use std::sync::Arc;

use crate::compiled::Graph;
use crate::config::{RunConfig, new_run_id};
use crate::context::{NodeContext, RunInfo};
use crate::error::GraphError;
use crate::node::NodeOutput;
use crate::runtime::AnyContext;
use crate::state::GraphState;

use super::Run;
use super::algo::{self, Frontier};

impl<'g, S: GraphState> Run<'g, S> {
    /// Runs `graph` as the node of `ctx`'s task, on the parent's `state`.
    pub(crate) async fn run_subgraph(
        graph: &'g Graph<S>,
        context: Option<AnyContext>,
        state: Arc<S>,
        ctx: NodeContext,
    ) -> Result<NodeOutput<S>, GraphError> {
        // The subgraph's own context, else its parent's.
        let context = context.or_else(|| ctx.context_any());
        let parent = ctx.config();
        let config = RunConfig {
            recursion_limit: parent.recursion_limit,
            tags: parent.tags.clone(),
            metadata: parent.metadata.clone(),
            max_concurrency: parent.max_concurrency,
            ..RunConfig::default()
        };
        let mut run = Run::open(graph, context.clone(), config, new_run_id(), None).await?;
        let mut ns = ctx.ns().to_vec();
        ns.push(ctx.node().to_owned());
        let sink = ctx.sink();
        run.info = Arc::new(RunInfo {
            run_id: run.info.run_id.clone(),
            config: run.info.config.clone(),
            can_pause: false,
            sink: sink.clone(),
            usage: std::sync::Mutex::new(std::collections::BTreeMap::new()),
            ns,
            context,
        });
        run.frontier = Frontier::new(graph, sink.is_some());
        run.state = state;
        run.recorded = Some(Vec::new());
        let routes = algo::route(graph, &graph.start, &run.state);
        run.frontier
            .fire(graph, &graph.start, None, Vec::new(), routes)?;
        run.step = 0;
        run.run_steps().await?;
        if let Ok(usage) = run.info.usage.lock() {
            for (key, amount) in usage.iter() {
                ctx.add_usage(key, *amount);
            }
        }
        Ok(NodeOutput::Batch(run.recorded.take().unwrap_or_default()))
    }
}
