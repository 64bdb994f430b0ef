//! The internal API between XDB's own services.

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use crate::ProcessExecutionWaitForCompletionResponse;

/// `POST /api/v1/xdb/internal/notify`: wakes a service instance where the database
/// cannot push notifications (MySQL). Losing one only delays work until the next poll.
///
/// The API service checks the body against its document, which refuses fields it does
/// not know: a sender whose request with `closedOutcomes` is refused (a receiver from
/// before them, during a rolling upgrade) sends it again with the ids only.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct InternalNotifyRequest {
    /// New tasks were committed (for async-service instances).
    #[serde(default)]
    #[schema(default = false)]
    pub new_tasks: bool,
    /// When not empty, every task `newTasks` announces belongs to one of these
    /// executions, so a receiver may claim theirs by execution instead of searching the
    /// whole queue; at most `MAX_NOTIFY_IDS`. A receiver from before this field
    /// searches, as it always did.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schema(max_items = 10000)]
    #[schema(default = json!([]))]
    pub new_task_executions: Vec<String>,
    /// A batch was created (for async-service instances): an idle batch driver looks for
    /// it now instead of at its next poll. A receiver from before this field ignores it.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    #[schema(default = false)]
    pub new_batches: bool,
    /// These executions closed (for API-service instances with waiters); at most
    /// `MAX_NOTIFY_IDS`. Every closed execution is listed here, also those with an
    /// outcome in `closedOutcomes`, for receivers that know only this field.
    #[serde(default)]
    #[schema(max_items = 10000)]
    #[schema(default = json!([]))]
    pub closed_process_execution_ids: Vec<String>,
    /// The answers for waiters on some of those executions, as their closing
    /// transactions left them, so that waiters need not read them back; at most
    /// `MAX_NOTIFY_IDS`. Large ones are left out (their waiters read them).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schema(max_items = 10000)]
    #[schema(default = json!([]))]
    pub closed_outcomes: Vec<ProcessExecutionWaitForCompletionResponse>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ProcessStatus;

    #[test]
    fn an_ids_only_request_still_reads() {
        let old: InternalNotifyRequest =
            serde_json::from_str(r#"{"newTasks":false,"closedProcessExecutionIds":["a"]}"#)
                .unwrap();
        assert_eq!(old.closed_process_execution_ids, ["a"]);
        assert!(old.closed_outcomes.is_empty());
        let bare: InternalNotifyRequest = serde_json::from_str("{}").unwrap();
        assert_eq!(bare, InternalNotifyRequest::default());
    }

    #[test]
    fn outcomes_travel_beside_the_ids() {
        let request = InternalNotifyRequest {
            closed_process_execution_ids: vec!["a".into()],
            closed_outcomes: vec![ProcessExecutionWaitForCompletionResponse {
                process_execution_id: "a".into(),
                status: ProcessStatus::Completed,
                timed_out: false,
                result: None,
                failure: None,
            }],
            ..Default::default()
        };
        let json = serde_json::to_value(&request).unwrap();
        assert_eq!(json["closedProcessExecutionIds"], serde_json::json!(["a"]));
        assert_eq!(json["closedOutcomes"][0]["status"], "COMPLETED");
        let back: InternalNotifyRequest = serde_json::from_value(json).unwrap();
        assert_eq!(back, request);
    }

    /// What a receiver of the version before `closedOutcomes` read: it must still
    /// accept the new shape, and find every closed id in it.
    #[derive(Deserialize)]
    #[serde(rename_all = "camelCase")]
    struct IdsOnly {
        closed_process_execution_ids: Vec<String>,
    }

    #[test]
    fn a_receiver_without_outcomes_still_reads_the_new_shape() {
        let json = r#"{"newTasks":true,"closedProcessExecutionIds":["a"],
            "closedOutcomes":[{"processExecutionId":"a","status":"FAILED","timedOut":false}]}"#;
        let old: IdsOnly = serde_json::from_str(json).unwrap();
        assert_eq!(old.closed_process_execution_ids, ["a"]);
    }

    #[test]
    fn nothing_new_is_sent_without_outcomes() {
        let json = serde_json::to_value(InternalNotifyRequest::default()).unwrap();
        assert!(json.get("closedOutcomes").is_none());
        assert!(json.get("newTaskExecutions").is_none());
        assert!(json.get("newBatches").is_none());
    }

    /// What a receiver of the version before `newTaskExecutions` read: `newTasks`, so
    /// it searches the queue as before.
    #[derive(Deserialize)]
    #[serde(rename_all = "camelCase")]
    struct WakeOnly {
        new_tasks: bool,
    }

    #[test]
    fn named_new_tasks_still_wake_a_receiver_that_does_not_read_the_names() {
        let request = InternalNotifyRequest {
            new_tasks: true,
            new_task_executions: vec!["e".into()],
            ..Default::default()
        };
        let json = serde_json::to_string(&request).unwrap();
        assert!(json.contains(r#""newTaskExecutions":["e"]"#), "{json}");
        let old: WakeOnly = serde_json::from_str(&json).unwrap();
        assert!(old.new_tasks);
    }
}
