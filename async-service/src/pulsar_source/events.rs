//! Reading Debezium change events of `xdb_sys_tasks`: which task, if any, a change may
//! have work for.
//!
//! Pulsar IO's Debezium sources (`json-with-envelope: true`) publish each change as a
//! `KeyValue<bytes, bytes>` with INLINE encoding: the payload is the key's length (4
//! bytes, big-endian; -1 for none), the key, the value's length and the value, where key
//! and value are Debezium JSON with the `{"schema", "payload"}` envelope. Payloads that
//! are the value alone (other converters, SEPARATED encoding, or a relay of one's own)
//! are read too, with or without the envelope.

use serde_json::Value;

use super::permits::PlaceRequest;

/// What a change event of `xdb_sys_tasks` means for the consumer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum TaskChange {
    /// The task may need work now or later: look at its row.
    Look {
        task_id: i64,
        /// Keys XDB's own messages about the task, so they stay with the execution's.
        execution: String,
        /// The row's priority and fairness key (the defaults for rows of a schema
        /// before them).
        place: PlaceRequest,
    },
    /// Nothing to do: a delete (the work is done), a lease taken or renewed, a task
    /// created leased (a continuation), a tombstone.
    Ignore,
}

/// Classifies one change event; an error for payloads that are not Debezium JSON.
///
/// A task needs work when it is created unleased (`c`) or read by a snapshot (`r`), and
/// when an update leaves it unleased: a retry rescheduled by a failed attempt, or a lease
/// given back on shutdown or by a takeover. An update that sets a lease is the claim or
/// renewal of some instance, which is already working on it (and if that instance dies,
/// the message it did not acknowledge is delivered again). A task created leased is a
/// continuation, which the instance that created it runs at once (and if that instance
/// dies, the takeover's release or the sweep brings it back).
pub(crate) fn classify(payload: &[u8]) -> Result<TaskChange, String> {
    let Some(value) = change_value(payload)? else {
        return Ok(TaskChange::Ignore);
    };
    let value: Value = serde_json::from_slice(value).map_err(|e| format!("not JSON: {e}"))?;
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
    let unleased = after.get("lease_owner").is_none_or(Value::is_null);
    let relevant = match op {
        "r" => true,
        "c" | "u" => unleased,
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
    let priority = super::permits::priority_or_default(
        after
            .get("priority")
            .and_then(Value::as_i64)
            .unwrap_or_default(),
    );
    let fairness_key = after
        .get("fairness_key")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string();
    let fairness_weight = after
        .get("fairness_weight")
        .and_then(Value::as_u64)
        .and_then(|weight| u32::try_from(weight).ok())
        .unwrap_or(xdb_protocol::fairness::DEFAULT_WEIGHT);
    Ok(TaskChange::Look {
        task_id: id,
        execution,
        place: PlaceRequest {
            priority,
            fairness_key,
            fairness_weight,
        },
    })
}

/// The value of a change: the payload itself, or the value of an INLINE key/value pair.
/// `None` for no value (a tombstone).
fn change_value(payload: &[u8]) -> Result<Option<&[u8]>, String> {
    // JSON starts with `{` (or white space, or `null`); an INLINE pair with a 4-byte
    // big-endian length, whose first byte is 0x00 for any key under 16 MiB and 0xff for
    // no key.
    match payload.first() {
        None => Ok(None),
        Some(0x00 | 0xff) => {
            let (_key, rest) = length_prefixed(payload).ok_or("a truncated key/value key")?;
            let (value, rest) = length_prefixed(rest).ok_or("a truncated key/value value")?;
            if !rest.is_empty() {
                return Err(format!("{} bytes after the key/value value", rest.len()));
            }
            Ok(value)
        }
        Some(_) => Ok(Some(payload)),
    }
}

/// One length-prefixed field (`-1`: absent) and what follows it.
fn length_prefixed(bytes: &[u8]) -> Option<(Option<&[u8]>, &[u8])> {
    let (length, rest) = bytes.split_first_chunk::<4>()?;
    let length = i32::from_be_bytes(*length);
    if length < 0 {
        return Some((None, rest));
    }
    let length = usize::try_from(length).ok()?;
    (rest.len() >= length).then(|| (Some(&rest[..length]), &rest[length..]))
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
            place: PlaceRequest::keyless(xdb_protocol::priority::DEFAULT),
        })
    }

    #[test]
    fn the_row_s_priority_and_fairness_key_come_along() {
        let row = serde_json::json!({"id": 7, "lease_owner": null, "process_execution_id": "e1",
            "priority": 1, "fairness_key": "tenant-a", "fairness_weight": 4});
        assert_eq!(
            classify(&event("c", row)),
            Ok(TaskChange::Look {
                task_id: 7,
                execution: "e1".into(),
                place: PlaceRequest {
                    priority: 1,
                    fairness_key: "tenant-a".into(),
                    fairness_weight: 4
                }
            })
        );
        // Out of bounds (never written) or absent: the default.
        let row = serde_json::json!({"id": 7, "process_execution_id": "e1", "priority": 40});
        assert_eq!(classify(&event("c", row)), look(7));
    }

    #[test]
    fn inserts_and_snapshot_reads_name_their_task() {
        let row = serde_json::json!({"id": 7, "lease_owner": null, "process_execution_id": "e1"});
        assert_eq!(classify(&event("c", row.clone())), look(7));
        assert_eq!(classify(&event("r", row)), look(7));
    }

    #[test]
    fn continuations_created_leased_are_left_to_their_instance() {
        let leased =
            serde_json::json!({"id": 8, "lease_owner": "async-1", "process_execution_id": "e1"});
        assert_eq!(
            classify(&event("c", leased.clone())),
            Ok(TaskChange::Ignore)
        );
        // A snapshot cannot tell whether the lease's holder lives: the row decides.
        assert_eq!(classify(&event("r", leased)), look(8));
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

    /// A message as Pulsar IO 4.0.8's `debezium-postgres` source (Debezium 1.9.7)
    /// published it, a row read by the initial snapshot (`op` `r`): recorded from the
    /// real connector with the admin API's examine-message call.
    const PULSAR_IO_POSTGRES_MESSAGE: &[u8] =
        include_bytes!("testdata/pulsar-io-debezium-postgres-snapshot.bin");
    /// The same from `debezium-mysql` on MariaDB 10.11 (its `fire_at` is a number).
    const PULSAR_IO_MYSQL_MESSAGE: &[u8] =
        include_bytes!("testdata/pulsar-io-debezium-mysql-snapshot.bin");

    #[test]
    fn pulsar_io_key_value_messages_are_read() {
        assert_eq!(
            classify(PULSAR_IO_POSTGRES_MESSAGE),
            Ok(TaskChange::Look {
                task_id: 1,
                execution: "5a3d0698-7c33-4f3e-b4a6-ed5ecddf3e8e".into(),
                place: PlaceRequest::keyless(xdb_protocol::priority::DEFAULT),
            })
        );
        assert_eq!(
            classify(PULSAR_IO_MYSQL_MESSAGE),
            Ok(TaskChange::Look {
                task_id: 1,
                execution: "81034179-e8b0-11f1-b4d1-02fc00000001".into(),
                place: PlaceRequest::keyless(xdb_protocol::priority::DEFAULT),
            })
        );
    }

    fn inline(key: Option<&[u8]>, value: Option<&[u8]>) -> Vec<u8> {
        let mut out = Vec::new();
        for field in [key, value] {
            match field {
                Some(bytes) => {
                    out.extend((bytes.len() as i32).to_be_bytes());
                    out.extend(bytes);
                }
                None => out.extend((-1i32).to_be_bytes()),
            }
        }
        out
    }

    #[test]
    fn key_value_pairs_without_key_or_value_and_truncated_ones() {
        let row = serde_json::json!({"id": 5, "lease_owner": null, "process_execution_id": "e1"});
        assert_eq!(classify(&inline(None, Some(&event("c", row)))), look(5));
        assert_eq!(classify(&inline(Some(b"{}"), None)), Ok(TaskChange::Ignore));
        let whole = inline(Some(b"{}"), Some(b"{}"));
        assert!(classify(&whole[..whole.len() - 1]).is_err());
        assert!(classify(&[0, 0]).is_err());
    }

    #[test]
    fn other_payloads_are_errors() {
        assert!(classify(b"{not json").is_err());
        assert!(classify(br#"{"hello": 1}"#).is_err());
        assert!(classify(&event("c", serde_json::json!({"id": "x"}))).is_err());
    }
}
