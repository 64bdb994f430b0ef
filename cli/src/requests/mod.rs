//! The request each subcommand sends, built from its arguments (pure, unit-tested).

use xdb_protocol::*;

use crate::args::*;
use crate::operate::Control;
use crate::payload::{
    encode_payload, parse_assignment, parse_json, parse_local_attribute, split_list,
};

mod selection;

pub use selection::{count_request, list_request, Selection};

fn lock_type(lock: Lock) -> LockType {
    match lock {
        Lock::None => LockType::NoLock,
        Lock::Shared => LockType::SharedLock,
        Lock::Exclusive => LockType::ExclusiveLock,
    }
}

fn global_loading(columns: &[String], lock: LockType) -> Option<GlobalAttributeLoading> {
    let columns = split_list(columns);
    (!columns.is_empty()).then_some(GlobalAttributeLoading {
        columns,
        lock_type: lock,
    })
}

fn local_loading(keys: &[String], lock: LockType) -> Option<LocalAttributeLoading> {
    let keys = split_list(keys);
    (!keys.is_empty()).then_some(LocalAttributeLoading {
        keys,
        lock_type: lock,
    })
}

/// The start request the arguments describe.
pub fn start_request(a: &StartArgs) -> Result<ProcessExecutionStartRequest, String> {
    let mut state_config: Option<AsyncStateConfig> = match &a.state_config {
        Some(text) => Some(
            serde_json::from_value(parse_json("--state-config", text)?)
                .map_err(|e| format!("--state-config is not an AsyncStateConfig: {e}"))?,
        ),
        None => None,
    };
    if a.skip_wait_until || !a.load_global.is_empty() || !a.load_local.is_empty() {
        let config = state_config.get_or_insert_with(Default::default);
        config.skip_wait_until |= a.skip_wait_until;
        if let Some(loading) = global_loading(&a.load_global, LockType::NoLock) {
            config.global_attribute_loading = Some(loading);
        }
        if let Some(loading) = local_loading(&a.load_local, LockType::NoLock) {
            config.local_attribute_loading = Some(loading);
        }
    }
    let global_attribute_config = match (&a.table, &a.key) {
        (Some(table), Some(key)) => {
            let (column, value) = parse_assignment(key)?;
            let initial_write = a
                .attrs
                .iter()
                .map(|attr| {
                    parse_assignment(attr)
                        .map(|(column, value)| GlobalAttributeValue { column, value })
                })
                .collect::<Result<_, _>>()?;
            Some(GlobalAttributeConfig {
                table_name: table.clone(),
                primary_key: GlobalAttributeValue { column, value },
                initial_write,
            })
        }
        _ => None,
    };
    let local_attribute_initial_write = a
        .locals
        .iter()
        .map(|l| parse_local_attribute(l).map(|(key, value)| LocalAttributeValue { key, value }))
        .collect::<Result<_, _>>()?;
    let timeout_seconds = a
        .timeout
        .map(|t| u32::try_from(t.as_secs().max(1)).map_err(|_| "--timeout is too long".to_string()))
        .transpose()?;
    Ok(ProcessExecutionStartRequest {
        request_id: a.request_id.request_id.clone(),
        process_id: a.process_id.clone(),
        process_type: a.process_type.clone(),
        worker_url: a.worker_url.clone(),
        start_state_id: a.state.clone(),
        start_state_input: encode_payload("--input", a.input.as_deref())?,
        start_state_config: state_config,
        process_start_config: Some(ProcessStartConfig {
            timeout_seconds,
            id_reuse_policy: a.id_reuse.map(|p| match p {
                IdReuse::AllowIfNoRunning => ProcessIdReusePolicy::AllowIfNoRunning,
                IdReuse::AllowIfPreviousExitAbnormally => {
                    ProcessIdReusePolicy::AllowIfPreviousExitAbnormally
                }
                IdReuse::DisallowReuse => ProcessIdReusePolicy::DisallowReuse,
                IdReuse::TerminateIfRunning => ProcessIdReusePolicy::TerminateIfRunning,
            }),
            global_attribute_config,
            local_attribute_initial_write,
            concurrency_key: a.concurrency_key.clone(),
            priority: a.priority,
            fairness_key: a.fairness_key.clone(),
            fairness_weight: a.fairness_weight,
        }),
    })
}

/// The stop the arguments describe.
pub fn stop_request(a: &StopArgs) -> ProcessExecutionStopRequest {
    ProcessExecutionStopRequest {
        request_id: a.request_id.request_id.clone(),
        process_id: a.process_id.clone(),
        process_execution_id: a.execution.clone(),
        stop_type: if a.fail {
            ProcessExecutionStopType::Fail
        } else {
            ProcessExecutionStopType::Terminate
        },
        reason: a.reason.clone(),
    }
}

pub fn history_request(a: &HistoryArgs) -> ProcessExecutionHistoryRequest {
    ProcessExecutionHistoryRequest {
        process_id: a.process_id.clone(),
        process_execution_id: a.execution.clone(),
        after_event_id: a.after,
        page_size: a.page_size,
        event_types: a.event_types.clone(),
    }
}

pub fn publish_request(a: &PublishArgs) -> Result<PublishToLocalQueueRequest, String> {
    if a.dedup_id.is_some() && a.payloads.len() > 1 {
        return Err("--dedup-id goes with a single --payload".to_string());
    }
    let payloads = if a.payloads.is_empty() {
        vec![None]
    } else {
        a.payloads
            .iter()
            .map(|p| encode_payload("--payload", Some(p)))
            .collect::<Result<_, _>>()?
    };
    Ok(PublishToLocalQueueRequest {
        process_execution_id: a.execution.clone(),
        request_id: a.request_id.request_id.clone(),
        process_id: a.process_id.clone(),
        messages: payloads
            .into_iter()
            .map(|payload| LocalQueueMessage {
                queue_name: a.queue.clone(),
                dedup_id: a.dedup_id.clone(),
                payload,
            })
            .collect(),
    })
}

pub fn rpc_request(a: &RpcArgs) -> Result<ProcessExecutionRpcRequest, String> {
    Ok(ProcessExecutionRpcRequest {
        process_id: a.process_id.clone(),
        rpc_name: a.rpc_name.clone(),
        input: encode_payload("--input", a.input.as_deref())?,
        timeout_seconds: a.timeout,
        global_attribute_loading: global_loading(&a.load_global, lock_type(a.lock)),
        local_attribute_loading: local_loading(&a.load_local, lock_type(a.lock)),
    })
}

pub fn states_request(a: &StatesArgs) -> ProcessExecutionStatesRequest {
    ProcessExecutionStatesRequest {
        process_id: a.process_id.clone(),
        process_execution_id: a.execution.clone(),
    }
}

/// `control` of `process_id` (of one state execution with `state`), with its reason and
/// identity.
pub fn control_request(
    control: &Control,
    process_id: &str,
    state: Option<&str>,
    c: &ControlOpts,
) -> ProcessExecutionControlRequest {
    ProcessExecutionControlRequest {
        request_id: c.request_id.request_id.clone(),
        process_id: process_id.to_string(),
        process_execution_id: c.execution.clone(),
        state_execution_id: state.map(str::to_string),
        reason: c.reason.clone(),
        identity: Some(c.identity.clone()).filter(|i| !i.trim().is_empty()),
        reprioritize: control.reprioritization().cloned(),
    }
}

/// The change the reprioritize flags name; an error when they name none.
pub fn reprioritization(o: &ReprioritizeOpts) -> Result<Reprioritization, String> {
    if o.first_given().is_none() {
        return Err(
            "reprioritize needs --priority, --fairness-key, --no-fairness-key or \
             --fairness-weight"
                .to_string(),
        );
    }
    Ok(Reprioritization {
        priority: o.priority,
        // The API removes a key on the empty one.
        fairness_key: if o.no_fairness_key {
            Some(String::new())
        } else {
            o.fairness_key.clone()
        },
        fairness_weight: o.fairness_weight,
    })
}

pub fn reset_request(a: &ResetArgs) -> Result<ProcessExecutionResetRequest, String> {
    let state_config = match &a.state_config {
        Some(text) => Some(
            serde_json::from_value(parse_json("--state-config", text)?)
                .map_err(|e| format!("--state-config is not an AsyncStateConfig: {e}"))?,
        ),
        None => None,
    };
    Ok(ProcessExecutionResetRequest {
        request_id: a.control.request_id.request_id.clone(),
        process_id: a.process_id.clone(),
        process_execution_id: a.control.execution.clone(),
        state_id: a.state.clone(),
        state_input: encode_payload("--input", a.input.as_deref())?,
        state_config,
        reason: a.control.reason.clone(),
        identity: Some(a.control.identity.clone()).filter(|i| !i.trim().is_empty()),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;
    use serde_json::json;

    pub(super) fn command(args: &[&str]) -> Command {
        Cli::try_parse_from(std::iter::once("xdb").chain(args.iter().copied()))
            .unwrap()
            .command
    }

    #[test]
    fn start_request_follows_the_contract() {
        let Command::Start(a) = command(&[
            "start",
            "p1",
            "-t",
            "T",
            "--worker-url",
            "http://w",
            "--state",
            "S",
            "--input",
            r#"{"email": "a@b.c"}"#,
            "--load-global",
            "form,status",
            "--table",
            "user",
            "--key",
            "user_id=ann",
            "--attr",
            r#"form={"x":1}"#,
            "--local",
            "k=[1]",
            "--timeout",
            "1h",
            "--id-reuse",
            "disallow-reuse",
        ]) else {
            panic!()
        };
        let request = serde_json::to_value(start_request(&a).unwrap()).unwrap();
        assert_eq!(
            request["startStateInput"],
            json!({"encoding": "json", "data": "{\"email\":\"a@b.c\"}"})
        );
        assert_eq!(
            request["startStateConfig"]["globalAttributeLoading"]["columns"],
            json!(["form", "status"])
        );
        let config = &request["processStartConfig"];
        assert_eq!(config["timeoutSeconds"], json!(3600));
        assert_eq!(config["idReusePolicy"], json!("DISALLOW_REUSE"));
        assert_eq!(
            config["globalAttributeConfig"]["primaryKey"],
            json!({"column": "user_id", "value": "ann"})
        );
        assert_eq!(
            config["globalAttributeConfig"]["initialWrite"][0],
            json!({"column": "form", "value": {"x": 1}})
        );
        assert_eq!(
            config["localAttributeInitialWrite"][0]["value"]["data"],
            json!("[1]")
        );
    }

    #[test]
    fn a_start_names_its_fairness_key_and_weight() {
        let Command::Start(a) = command(&[
            "start",
            "p1",
            "-t",
            "T",
            "--fairness-key",
            "tenant-a",
            "--fairness-weight",
            "1000",
        ]) else {
            panic!()
        };
        let request = serde_json::to_value(start_request(&a).unwrap()).unwrap();
        let config = &request["processStartConfig"];
        assert_eq!(config["fairnessKey"], json!("tenant-a"));
        assert_eq!(config["fairnessWeight"], json!(1000));
        // A key alone: the service's weight, 1.
        let Command::Start(a) = command(&["start", "p1", "-t", "T", "--fairness-key", "k"]) else {
            panic!()
        };
        let request = serde_json::to_value(start_request(&a).unwrap()).unwrap();
        assert_eq!(request["processStartConfig"]["fairnessKey"], json!("k"));
        assert!(request["processStartConfig"]
            .get("fairnessWeight")
            .is_none());
    }

    #[test]
    fn a_fairness_weight_out_of_bounds_or_without_a_key_is_refused() {
        let parse = |extra: &[&str]| {
            let args = ["xdb", "start", "p1", "-t", "T"].into_iter();
            Cli::try_parse_from(args.chain(extra.iter().copied()))
        };
        for weight in ["0", "1001", "-1", "x"] {
            let weight = format!("--fairness-weight={weight}");
            let err = parse(&["--fairness-key", "k", &weight]).unwrap_err();
            assert!(err.to_string().contains("--fairness-weight"), "{err}");
        }
        let err = parse(&["--fairness-weight", "2"]).unwrap_err();
        assert!(err.to_string().contains("--fairness-key"), "{err}");
        let long = "k".repeat(256);
        for key in ["", long.as_str(), "a\tb"] {
            let err = parse(&["--fairness-key", key]).unwrap_err();
            assert!(err.to_string().contains("--fairness-key"), "{err}");
        }
        assert!(parse(&["--fairness-key", &"k".repeat(255)]).is_ok());
        assert!(parse(&["--fairness-key", "ténant ß"]).is_ok());
    }

    #[test]
    fn bad_json_is_a_usage_error() {
        let Command::Start(a) = command(&[
            "start",
            "p1",
            "-t",
            "T",
            "--worker-url",
            "w",
            "--state",
            "S",
            "--input",
            "{nope",
        ]) else {
            panic!()
        };
        assert!(start_request(&a)
            .unwrap_err()
            .contains("--input is not valid JSON"));
        let Command::Rpc(a) = command(&["rpc", "p1", "r", "--input", "'x'"]) else {
            panic!()
        };
        assert!(rpc_request(&a).is_err());
    }

    #[test]
    fn publish_sends_one_message_per_payload() {
        let Command::Publish(a) =
            command(&["publish", "p1", "q", "--payload", "1", "--payload", "null"])
        else {
            panic!()
        };
        let r = publish_request(&a).unwrap();
        assert_eq!(r.messages.len(), 2);
        assert_eq!(r.messages[0].payload.as_ref().unwrap().data, "1");
        assert_eq!(r.messages[1].payload, None);
        let Command::Publish(a) = command(&["publish", "p1", "q"]) else {
            panic!()
        };
        assert_eq!(publish_request(&a).unwrap().messages[0].payload, None);
        let Command::Publish(a) = command(&[
            "publish",
            "p1",
            "q",
            "--payload",
            "1",
            "--payload",
            "2",
            "--dedup-id",
            "d",
        ]) else {
            panic!()
        };
        assert!(publish_request(&a).is_err());
    }

    #[test]
    fn rpc_request_loads_with_the_lock() {
        let Command::Rpc(a) = command(&[
            "rpc",
            "p1",
            "verify",
            "--input",
            "\"x\"",
            "--load-global",
            "a",
            "--lock",
            "exclusive",
        ]) else {
            panic!()
        };
        let r = rpc_request(&a).unwrap();
        assert_eq!(r.input.unwrap().data, "\"x\"");
        let loading = r.global_attribute_loading.unwrap();
        assert_eq!(
            (loading.columns, loading.lock_type),
            (vec!["a".to_string()], LockType::ExclusiveLock)
        );
        assert_eq!(r.local_attribute_loading, None);
    }

    #[test]
    fn writes_carry_the_request_id_and_execution_given() {
        let Command::Stop(a) = command(&[
            "stop",
            "p1",
            "--fail",
            "--execution",
            "e1",
            "--request-id",
            "ops-7",
        ]) else {
            panic!()
        };
        let r = stop_request(&a);
        assert_eq!(r.request_id.as_deref(), Some("ops-7"));
        assert_eq!(r.process_execution_id.as_deref(), Some("e1"));
        assert_eq!(r.stop_type, ProcessExecutionStopType::Fail);
        let Command::Stop(a) = command(&["stop", "p1"]) else {
            panic!()
        };
        // Absent: the SDK sets a fresh one on each call.
        assert_eq!(stop_request(&a).request_id, None);
        let Command::Publish(a) = command(&["publish", "p1", "q", "--request-id", "r:1"]) else {
            panic!()
        };
        assert_eq!(
            publish_request(&a).unwrap().request_id.as_deref(),
            Some("r:1")
        );
        let Command::Pause(a) = command(&["pause", "p1", "--request-id", "r.2"]) else {
            panic!()
        };
        assert_eq!(
            control_request(&Control::Pause, &a.process_id, None, &a.control)
                .request_id
                .as_deref(),
            Some("r.2")
        );
        let Command::Reset(a) = command(&["reset", "p1", "--state", "S", "--request-id", "r3"])
        else {
            panic!()
        };
        assert_eq!(reset_request(&a).unwrap().request_id.as_deref(), Some("r3"));
        let Command::Start(a) = command(&["start", "p1", "-t", "T", "--request-id", "r4"]) else {
            panic!()
        };
        assert_eq!(start_request(&a).unwrap().request_id.as_deref(), Some("r4"));
        let bad = Cli::try_parse_from(["xdb", "stop", "p1", "--request-id", "no spaces"]);
        assert_eq!(bad.unwrap_err().exit_code(), 2);
    }

    #[test]
    fn control_requests_carry_state_reason_and_identity() {
        let Command::Retry(a) = command(&[
            "retry",
            "p1",
            "--state",
            "Verify-1",
            "--reason",
            "worker fixed",
            "--identity",
            "ann",
        ]) else {
            panic!()
        };
        let r = control_request(
            &Control::RetryNow,
            &a.process_id,
            a.state.as_deref(),
            &a.control,
        );
        assert_eq!(
            serde_json::to_value(&r).unwrap(),
            json!({"processId": "p1", "processExecutionId": null,
                "stateExecutionId": "Verify-1", "reason": "worker fixed", "identity": "ann"})
        );
        let Command::Pause(a) = command(&["pause", "p1", "--execution", "e1"]) else {
            panic!()
        };
        let r = control_request(&Control::Pause, &a.process_id, None, &a.control);
        assert_eq!(r.process_execution_id.as_deref(), Some("e1"));
        assert_eq!(r.state_execution_id, None);
        // --identity, else XDB_IDENTITY, else "xdb-cli" (the variable is unset in tests).
        if std::env::var_os("XDB_IDENTITY").is_none() {
            assert_eq!(r.identity.as_deref(), Some("xdb-cli"));
        }
        let Command::States(a) = command(&["states", "p1"]) else {
            panic!()
        };
        assert_eq!(states_request(&a).process_execution_id, None);
    }

    #[test]
    fn a_reprioritize_request_carries_only_the_change_named() {
        let request = |args: &[&str]| {
            let Command::Reprioritize(a) = command(args) else {
                panic!()
            };
            let control = Control::Reprioritize(reprioritization(&a.change).unwrap());
            serde_json::to_value(control_request(&control, &a.process_id, None, &a.control))
                .unwrap()
        };
        let r = request(&[
            "reprioritize",
            "p1",
            "--priority",
            "1",
            "--fairness-key",
            "acme",
            "--fairness-weight",
            "2",
            "--reason",
            "escalated",
            "--identity",
            "ann",
            "--request-id",
            "re-1",
        ]);
        assert_eq!(
            r,
            json!({"requestId": "re-1", "processId": "p1", "processExecutionId": null,
                "stateExecutionId": null, "reason": "escalated", "identity": "ann",
                "reprioritize": {"priority": 1, "fairnessKey": "acme", "fairnessWeight": 2}})
        );
        let r = request(&["reprioritize", "p1", "--priority", "4"]);
        assert_eq!(r["reprioritize"], json!({"priority": 4}));
        // Removing the key is the empty key on the wire.
        let r = request(&["reprioritize", "p1", "--no-fairness-key"]);
        assert_eq!(r["reprioritize"], json!({"fairnessKey": ""}));
        let r = request(&["reprioritize", "p1", "--fairness-weight", "7"]);
        assert_eq!(r["reprioritize"], json!({"fairnessWeight": 7}));
        let none = ReprioritizeOpts {
            priority: None,
            fairness_key: None,
            no_fairness_key: false,
            fairness_weight: None,
        };
        assert!(reprioritization(&none).unwrap_err().contains("--priority"));
    }
}
