//! The node a tool runs in: [`ToolNode`](crate::ToolNode) runs each call inside its task's
//! [`NodeContext`], which a tool reads with [`current_context`] (LangGraph's `get_config()`,
//! `get_store()` inside tools) — the run's config, metadata and store, without threading
//! them through every tool's arguments.

use std::future::Future;

use agent_core::NodeContext;

tokio::task_local! {
    static CURRENT: NodeContext;
}

/// The context of the node running the current tool call, when a graph node runs it.
pub fn current_context() -> Option<NodeContext> {
    CURRENT.try_with(Clone::clone).ok()
}

/// Runs `future` with `ctx` as its [`current_context`].
pub async fn with_context<F: Future>(ctx: NodeContext, future: F) -> F::Output {
    CURRENT.scope(ctx, future).await
}
