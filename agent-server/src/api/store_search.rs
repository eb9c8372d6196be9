//! A store search as langgraph-api answers it: on a store without an index (no semantic
//! search configured), a `query` is ignored and the filtered items come back unranked
//! (newest first, no score), where agent-core's stores refuse a query they cannot rank
//! (`StoreError::NoIndex`: a library caller should learn its store has no index). With an
//! index the query ranks as usual.

use agent_core::store::{SearchItem, SearchOp, Store, StoreError};

/// The items `op` finds, its query dropped when the store has no index to rank by.
pub(super) async fn search(store: &dyn Store, op: SearchOp) -> Result<Vec<SearchItem>, StoreError> {
    if op.query.is_none() {
        return store.search(op).await;
    }
    // The refusal comes from checking the op, before the store reads anything, so asking
    // again costs one more check.
    let unranked = SearchOp {
        query: None,
        ..op.clone()
    };
    match store.search(op).await {
        Err(StoreError::NoIndex { .. }) => store.search(unranked).await,
        other => other,
    }
}
