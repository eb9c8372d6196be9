//! The orchestrator's long-term memory, in the run's store (`ctx.store()`): per user, under
//! `["users", <user id>]`, the profile `ingress` loaded (`profile`) and the latest
//! conversation summary (`summary`). A new thread of a user starts from the summary their
//! last thread left, so a follow-up ("and in 2009?") or "what did I ask before?" reaches
//! across threads; another user's threads never see it. Without a store the flow keeps its
//! summary per thread, as before.

use agent_core::BoxError;
use agent_core::store::Store;
use serde_json::json;

use super::UserContext;

/// The namespace of `user_id`'s memories (a `.` or `%` in the id is escaped: labels cannot
/// hold a `.`).
pub fn namespace(user_id: &str) -> Vec<String> {
    let label = user_id.replace('%', "%25").replace('.', "%2E");
    vec!["users".to_owned(), label]
}

/// Stores the profile when the store's copy differs.
pub async fn keep_profile(
    store: &dyn Store,
    user_id: &str,
    profile: &UserContext,
) -> Result<(), BoxError> {
    let space = namespace(user_id);
    let value = serde_json::to_value(profile)?;
    let stored = store.get(&space, "profile").await?;
    if stored.is_none_or(|item| serde_json::Value::Object(item.value) != value) {
        store.put(&space, "profile", value).await?;
    }
    Ok(())
}

/// The summary the user's latest thread left, if any.
pub async fn summary(store: &dyn Store, user_id: &str) -> Result<Option<String>, BoxError> {
    let item = store.get(&namespace(user_id), "summary").await?;
    Ok(item.and_then(|i| {
        i.value
            .get("summary")
            .and_then(|s| s.as_str())
            .map(str::to_owned)
    }))
}

/// Keeps `summary` as the user's latest, with the thread and turn that wrote it.
pub async fn keep_summary(
    store: &dyn Store,
    user_id: &str,
    summary: &str,
    session_id: &str,
    turn: u32,
) -> Result<(), BoxError> {
    let value = json!({"summary": summary, "session_id": session_id, "turn": turn});
    store.put(&namespace(user_id), "summary", value).await?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn user_ids_make_valid_labels() {
        assert_eq!(namespace("john.doe"), ["users", "john%2Edoe"]);
        assert!(agent_core::store::validate_namespace(&namespace("a.b%c")).is_ok());
    }
}
