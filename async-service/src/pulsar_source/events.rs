//! Reading Debezium change events of `xdb_sys_tasks` (Debezium JSON, with or without the
//! `{"schema", "payload"}` envelope): which task, if any, a change may have work for.

use serde_json::Value;

/// What a change event of `xdb_sys_tasks` means for the consumer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum TaskChange {
    /// The task may need work now or later: look at its row.
    Look {
        task_id: i64,
        /// Keys XDB's own messages about the task, so they stay with the execution's.
        execution: String,
    },
    /// Nothing to do: a delete (the work is done), a lease taken or renewed, a tombstone.
    Ignore,
}

/// Classifies one change event; an error for payloads that are not Debezium JSON.
///
/// A task needs work when it is created (`c`, or `r` when read by a snapshot) and when an
/// update leaves it unleased: a retry rescheduled by a failed attempt, or a lease given
/// back on shutdown. An update that sets a lease is the claim or renewal of some
/// instance, which is already working on it (and if that instance dies, the message it
/// did not acknowledge is delivered again).
pub(crate) fn classify(payload: &[u8]) -> Result<TaskChange, String> {
    if payload.is_empty() {
        return Ok(TaskChange::Ignore);
    }
    let value: Value = serde_json::from_slice(payload).map_err(|e| format!("not JSON: {e}"))?;
    let event = match value.get("payload") {
        Some(inner) if value.get("schema").is_some() => inner,
        _ => &value,
    };
    if event.is_null() {
        return Ok(TaskChange::Ignore);
    }
    let op = event
        .get("op")
        .and_then(Value::as_str)
        .ok_or("no `op`: not a Debezium change event")?;
    let after = event.get("after").unwrap_or(&Value::Null);
    let relevant = match op {
        "c" | "r" => true,
        "u" => after.get("lease_owner").is_none_or(Value::is_null),
        _ => false,
    };
    if !relevant {
        return Ok(TaskChange::Ignore);
    }
    let id = after
        .get("id")
        .and_then(Value::as_i64)
        .ok_or("the row has no integer `id`")?;
    let execution = after
        .get("process_execution_id")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string();
    Ok(TaskChange::Look {
        task_id: id,
        execution,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn event(op: &str, after: Value) -> Vec<u8> {
        serde_json::to_vec(&serde_json::json!({
            "schema": {"type": "struct"},
            "payload": {"before": null, "after": after, "op": op, "source": {"table": "xdb_sys_tasks"}}
        }))
        .unwrap()
    }

    fn look(task_id: i64) -> Result<TaskChange, String> {
        Ok(TaskChange::Look {
            task_id,
            execution: "e1".into(),
        })
    }

    #[test]
    fn inserts_and_snapshot_reads_name_their_task() {
        let row = serde_json::json!({"id": 7, "lease_owner": null, "process_execution_id": "e1"});
        assert_eq!(classify(&event("c", row.clone())), look(7));
        assert_eq!(classify(&event("r", row)), look(7));
    }

    #[test]
    fn claims_and_renewals_are_ignored_but_reschedules_and_releases_are_not() {
        let leased =
            serde_json::json!({"id": 3, "lease_owner": "async-1", "process_execution_id": "e1"});
        assert_eq!(classify(&event("u", leased)), Ok(TaskChange::Ignore));
        let released =
            serde_json::json!({"id": 3, "lease_owner": null, "process_execution_id": "e1"});
        assert_eq!(classify(&event("u", released)), look(3));
    }

    #[test]
    fn deletes_and_tombstones_need_no_work() {
        let deleted = serde_json::to_vec(&serde_json::json!({
            "before": {"id": 3}, "after": null, "op": "d"
        }))
        .unwrap();
        assert_eq!(classify(&deleted), Ok(TaskChange::Ignore));
        assert_eq!(classify(b""), Ok(TaskChange::Ignore));
        assert_eq!(classify(b"null"), Ok(TaskChange::Ignore));
    }

    #[test]
    fn events_without_the_envelope_are_read_too() {
        let bare = serde_json::to_vec(&serde_json::json!({
            "after": {"id": 11, "lease_owner": null, "process_execution_id": "e1"}, "op": "c"
        }))
        .unwrap();
        assert_eq!(classify(&bare), look(11));
    }

    #[test]
    fn other_payloads_are_errors() {
        assert!(classify(b"{not json").is_err());
        assert!(classify(br#"{"hello": 1}"#).is_err());
        assert!(classify(&event("c", serde_json::json!({"id": "x"}))).is_err());
    }
}
