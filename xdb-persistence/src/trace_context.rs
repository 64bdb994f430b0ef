//! The trace context new task rows carry in their `info` column.
//!
//! The services set it around a store call with [`scope`] (the API request's span, the
//! span of the task being handled) and every task that call's transaction creates
//! records it, so the task's handling continues the same trace. It travels as a
//! task-local rather than through every operation's parameters because only task
//! inserts read it, and they sit deep below every operation.

use std::future::Future;

use serde::{Deserialize, Serialize};

tokio::task_local! {
    static TRACEPARENT: Option<String>;
}

/// Runs `future` with `traceparent` as the trace context of the tasks it creates.
pub async fn scope<F: Future>(traceparent: Option<String>, future: F) -> F::Output {
    TRACEPARENT.scope(traceparent, future).await
}

/// The `info` of a task row: the W3C trace context today, other per-task details later.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct TaskInfo {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub traceparent: Option<String>,
    /// The attempt a flow limit held back (its task was made due later without costing
    /// an attempt): while the task is at that attempt and unleased, it waits for the
    /// limit, which the operators' views show.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rate_limited_attempt: Option<i32>,
}

/// The `info` of tasks created now; `None` (a NULL column) outside a traced scope.
pub(crate) fn task_info() -> Option<TaskInfo> {
    TRACEPARENT
        .try_with(Clone::clone)
        .ok()
        .flatten()
        .map(|traceparent| TaskInfo {
            traceparent: Some(traceparent),
            rate_limited_attempt: None,
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn tasks_get_the_scope_trace_context_and_none_outside_it() {
        assert_eq!(task_info(), None);
        let traceparent = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01";
        let info = scope(Some(traceparent.into()), async { task_info() }).await;
        assert_eq!(
            info.and_then(|i| i.traceparent).as_deref(),
            Some(traceparent)
        );
        assert_eq!(scope(None, async { task_info() }).await, None);
    }

    #[test]
    fn task_info_round_trips_as_json_and_tolerates_other_keys() {
        let info: TaskInfo =
            serde_json::from_str(r#"{"traceparent":"00-a-b-01","other":1}"#).unwrap();
        assert_eq!(info.traceparent.as_deref(), Some("00-a-b-01"));
        assert_eq!(serde_json::to_string(&TaskInfo::default()).unwrap(), "{}");
    }
}
