//! The batch a `batch start` asks for, and the count that previews it.

use xdb_protocol::{
    BatchReset, BatchStartRequest, LocalQueueMessage, ProcessExecutionCountRequest,
};

use super::{BatchStartArgs, Operation};
use crate::payload::{encode_payload, parse_json};
use crate::requests::{reprioritization, Selection};

/// A `QUEUE=JSON` message (`QUEUE` alone: a message without a value).
fn parse_message(text: &str) -> Result<LocalQueueMessage, String> {
    let (queue, value) = match text.split_once('=') {
        Some((queue, value)) => (queue.trim(), Some(value)),
        None => (text.trim(), None),
    };
    if queue.is_empty() {
        return Err(format!("--message {text:?} names no queue (QUEUE=JSON)"));
    }
    Ok(LocalQueueMessage {
        queue_name: queue.to_string(),
        dedup_id: None,
        payload: encode_payload(&format!("--message {queue}"), value)?,
    })
}

/// The batch the arguments describe. The arguments of another operation than the one
/// named are refused rather than ignored.
pub fn batch_start_request(a: &BatchStartArgs) -> Result<BatchStartRequest, String> {
    let operation = a.operation.wire();
    let only = |given: bool, flag: &str, op: Operation, name: &str| {
        if given && a.operation != op {
            Err(format!("{flag} goes with `batch start {name}` only"))
        } else {
            Ok(())
        }
    };
    only(
        !a.messages.is_empty(),
        "--message",
        Operation::Publish,
        "publish",
    )?;
    only(a.state.is_some(), "--state", Operation::Reset, "reset")?;
    only(a.to.is_some(), "--to", Operation::Move, "move")?;
    if let Some(flag) = a.reprioritize.first_given() {
        only(true, flag, Operation::Reprioritize, "reprioritize")?;
    }
    let messages = a
        .messages
        .iter()
        .map(|m| parse_message(m))
        .collect::<Result<Vec<_>, _>>()?;
    let selection = Selection::of(&a.selection);
    match a.operation {
        Operation::Publish if messages.is_empty() => {
            return Err("publish needs at least one --message QUEUE=JSON".to_string())
        }
        Operation::Publish if messages.len() > 1000 => {
            return Err("publish takes at most 1000 --message".to_string())
        }
        Operation::Reset if a.state.is_none() => {
            return Err("reset needs --state STATE_ID".to_string())
        }
        Operation::Move if a.to.is_none() => return Err("move needs --to NAME@VERSION".to_string()),
        Operation::Move if selection.process_type.is_none() => {
            return Err("move needs --type: a batch moves executions of one type".to_string())
        }
        _ => {}
    }
    let reprioritize = match a.operation {
        Operation::Reprioritize => Some(reprioritization(&a.reprioritize)?),
        _ => None,
    };
    let reset = match &a.state {
        Some(state_id) => Some(BatchReset {
            state_id: state_id.clone(),
            state_input: encode_payload("--input", a.input.as_deref())?,
            state_config: match &a.state_config {
                Some(text) => Some(
                    serde_json::from_value(parse_json("--state-config", text)?)
                        .map_err(|e| format!("--state-config is not an AsyncStateConfig: {e}"))?,
                ),
                None => None,
            },
        }),
        None => None,
    };
    Ok(BatchStartRequest {
        request_id: a.request_id.request_id.clone(),
        operation,
        process_type: selection.process_type.clone(),
        where_: selection.where_tree(),
        business_table: selection.business_table.clone(),
        rate_per_second: a.rate,
        reason: a.reason.clone(),
        identity: Some(a.identity.clone()).filter(|i| !i.trim().is_empty()),
        messages,
        reset,
        move_to: a.to.clone(),
        reprioritize,
    })
}

/// The count that previews a batch: the very selection it sends.
pub fn preview_request(batch: &BatchStartRequest) -> ProcessExecutionCountRequest {
    ProcessExecutionCountRequest {
        process_type: batch.process_type.clone(),
        where_: batch.where_.clone(),
        business_table: batch.business_table.clone(),
        group_by: None,
        explain: false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::args::{Cli, Command};
    use crate::batch::args::tests::{parse, start_args};
    use clap::Parser;
    use serde_json::json;

    #[test]
    fn a_terminate_batch_sends_the_selection_of_count() {
        let a = start_args(&[
            "terminate",
            "-t",
            "Order",
            "--where",
            "amount < 10",
            "--status",
            "RUNNING",
            "--table",
            "orders",
            "--key",
            "id",
            "--rate",
            "20",
            "--reason",
            "test orders",
            "--identity",
            "ann",
            "--yes",
            "--request-id",
            "cleanup-1",
        ]);
        assert!(a.yes && !a.no_wait);
        let request = batch_start_request(&a).unwrap();
        assert_eq!(
            serde_json::to_value(&request).unwrap(),
            json!({
                "requestId": "cleanup-1",
                "operation": "TERMINATE",
                "processType": "Order",
                "where": {"and": [
                    {"field": "status", "op": "=", "value": "RUNNING"},
                    {"column": "amount", "op": "<", "value": 10}
                ]},
                "businessTable": {"tableName": "orders", "primaryKeyColumn": "id"},
                "ratePerSecond": 20,
                "reason": "test orders",
                "identity": "ann",
                "messages": [],
                "reset": null,
                "moveTo": null
            })
        );
        // The preview counts exactly what the batch selects, and `xdb count` with the
        // same flags sends the same.
        let preview = preview_request(&request);
        assert_eq!(preview.where_, request.where_);
        assert_eq!(preview.business_table, request.business_table);
        assert_eq!(preview.group_by, None);
        let Command::Count(count) = Cli::try_parse_from([
            "xdb",
            "count",
            "-t",
            "Order",
            "--where",
            "amount < 10",
            "--status",
            "RUNNING",
            "--table",
            "orders",
            "--key",
            "id",
        ])
        .unwrap()
        .command
        else {
            panic!()
        };
        assert_eq!(crate::requests::count_request(&count), preview);
    }
    #[test]
    fn each_operation_takes_its_own_arguments() {
        let a = start_args(&["publish", "--message", r#"go={"n":1}"#, "--message", "stop"]);
        let r = batch_start_request(&a).unwrap();
        assert_eq!(r.messages.len(), 2);
        assert_eq!(r.messages[0].queue_name, "go");
        assert_eq!(r.messages[0].payload.as_ref().unwrap().data, r#"{"n":1}"#);
        assert_eq!(
            (r.messages[1].queue_name.as_str(), &r.messages[1].payload),
            ("stop", &None)
        );
        assert!(batch_start_request(&start_args(&["publish"]))
            .unwrap_err()
            .contains("--message"));
        assert!(
            batch_start_request(&start_args(&["publish", "--message", "q={bad"]))
                .unwrap_err()
                .contains("not valid JSON")
        );

        let a = start_args(&["reset", "--state", "Charge", "--input", r#"{"a":1}"#]);
        let reset = batch_start_request(&a).unwrap().reset.unwrap();
        assert_eq!(reset.state_id, "Charge");
        assert_eq!(reset.state_input.unwrap().data, r#"{"a":1}"#);
        assert!(batch_start_request(&start_args(&["reset"]))
            .unwrap_err()
            .contains("--state"));

        let a = start_args(&["move", "-t", "Order", "--to", "orders@1.5.0"]);
        let to = batch_start_request(&a).unwrap().move_to.unwrap();
        assert_eq!((to.name.as_str(), to.version.as_str()), ("orders", "1.5.0"));
        let a = start_args(&["move", "-t", "Order", "--to", "orders:1.5.0"]);
        assert_eq!(batch_start_request(&a).unwrap().move_to, Some(to));
        assert!(batch_start_request(&start_args(&["move", "--to", "o@1"]))
            .unwrap_err()
            .contains("--type"));

        // Another operation's arguments are refused, not ignored.
        for args in [
            &["terminate", "--message", "q=1"][..],
            &["pause", "--state", "S"],
            &["resume", "--to", "o@1"],
            &["pause", "--priority", "1"],
            &["retry-now", "--no-fairness-key"],
        ] {
            assert!(batch_start_request(&start_args(args)).is_err(), "{args:?}");
        }
        assert!(parse(&["batch", "start", "reset", "--input", "1"]).is_err());
    }
    #[test]
    fn a_reprioritize_batch_sends_the_change() {
        let a = start_args(&[
            "reprioritize",
            "-t",
            "Order",
            "--priority",
            "1",
            "--fairness-key",
            "gold",
            "--fairness-weight",
            "3",
        ]);
        let r = serde_json::to_value(batch_start_request(&a).unwrap()).unwrap();
        assert_eq!(r["operation"], json!("REPRIORITIZE"));
        assert_eq!(
            r["reprioritize"],
            json!({"priority": 1, "fairnessKey": "gold", "fairnessWeight": 3})
        );
        let a = start_args(&["reprioritize", "--no-fairness-key"]);
        let r = batch_start_request(&a).unwrap();
        assert_eq!(r.reprioritize.unwrap().fairness_key.as_deref(), Some(""));
        assert!(batch_start_request(&start_args(&["reprioritize"]))
            .unwrap_err()
            .contains("--priority"));
        let refused = batch_start_request(&start_args(&["pause", "--fairness-weight", "2"]));
        assert_eq!(
            refused.unwrap_err(),
            "--fairness-weight goes with `batch start reprioritize` only"
        );
        for bad in [
            &["--priority", "6"][..],
            &["--fairness-weight", "1001"],
            &["--no-fairness-key", "--fairness-key", "k"],
        ] {
            let args = [&["batch", "start", "reprioritize"][..], bad].concat();
            assert!(parse(&args).is_err(), "{bad:?}");
        }
    }
}
