//! The audit history of schedules: who created, changed, paused, resumed, triggered,
//! backfilled or deleted which schedule, when, and why. Each change is written in the
//! transaction that makes it, and outlives the schedule it names.

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use crate::ScheduleInfo;

/// What an operator did to a schedule.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum ScheduleChangeAction {
    Created,
    Updated,
    Paused,
    Resumed,
    /// One firing now (`detail` names its process id).
    Triggered,
    /// Past firings (`detail` says how many, over which range).
    Backfilled,
    Deleted,
}

impl ScheduleChangeAction {
    pub const ALL: [ScheduleChangeAction; 7] = [
        ScheduleChangeAction::Created,
        ScheduleChangeAction::Updated,
        ScheduleChangeAction::Paused,
        ScheduleChangeAction::Resumed,
        ScheduleChangeAction::Triggered,
        ScheduleChangeAction::Backfilled,
        ScheduleChangeAction::Deleted,
    ];

    /// The name stored and sent.
    pub fn as_str(self) -> &'static str {
        match self {
            ScheduleChangeAction::Created => "CREATED",
            ScheduleChangeAction::Updated => "UPDATED",
            ScheduleChangeAction::Paused => "PAUSED",
            ScheduleChangeAction::Resumed => "RESUMED",
            ScheduleChangeAction::Triggered => "TRIGGERED",
            ScheduleChangeAction::Backfilled => "BACKFILLED",
            ScheduleChangeAction::Deleted => "DELETED",
        }
    }

    /// The action a stored name names.
    pub fn parse(text: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|action| action.as_str() == text)
    }
}

/// `POST .../schedule/history`: changes of schedules, newest first.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ScheduleHistoryRequest {
    /// Only this schedule's changes (it need not exist any more).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub schedule_id: Option<String>,
    /// 1 to 1000; absent: 50.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub page_size: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next_page_token: Option<String>,
}

/// One change of one schedule.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ScheduleChange {
    pub change_id: i64,
    pub schedule_id: String,
    pub action: ScheduleChangeAction,
    /// The schedule before the change (absent for `CREATED`, `TRIGGERED`, `BACKFILLED`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub before: Option<ScheduleInfo>,
    /// After it (absent for `DELETED`, `TRIGGERED`, `BACKFILLED`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub after: Option<ScheduleInfo>,
    /// What a trigger or a backfill started.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
    /// The operator's token name (or `anonymous` without tokens).
    pub changed_by: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    pub changed_timestamp_ms: i64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ScheduleHistoryResponse {
    pub changes: Vec<ScheduleChange>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next_page_token: Option<String>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn action_names_read_back() {
        for action in ScheduleChangeAction::ALL {
            assert_eq!(serde_json::to_value(action).unwrap(), action.as_str());
            assert_eq!(ScheduleChangeAction::parse(action.as_str()), Some(action));
        }
        assert_eq!(ScheduleChangeAction::parse("RENAMED"), None);
    }
}
