//! Type erasure, default loading policies and decision encoding, without HTTP.

mod common;

use common::*;
use xdb_sdk::protocol::{FailureRecoveryPolicy, ThreadCloseType};
use xdb_sdk::*;

#[test]
fn definition_reads_names_and_starting_state() {
    let def = ProcessDefinition::new(CounterProcess);
    assert_eq!(def.process_type(), "CounterProcess");
    assert_eq!(def.starting_state_id(), Some("StartState"));
    assert_eq!(def.state_ids(), ["StartState", "WaitState"]);
    assert!(def.has_rpc("bump"));
    assert!(!def.has_rpc("verify"));
}

#[test]
fn state_config_defaults_to_all_declared_attributes_without_lock() {
    let def = ProcessDefinition::new(CounterProcess);
    let config = def.state_config("StartState").unwrap();
    assert!(config.skip_wait_until, "StartState has no waitUntil");
    let global = config.global_attribute_loading.unwrap();
    assert_eq!(global.columns, ["status", "owner"]);
    assert_eq!(global.lock_type, LockType::NoLock);
    let local = config.local_attribute_loading.unwrap();
    assert_eq!(local.keys, ["count"]);
    assert_eq!(local.lock_type, LockType::NoLock);
}

#[test]
fn state_options_override_defaults_but_not_the_wait_until_flag() {
    let def = ProcessDefinition::new(CounterProcess);
    let config = def.state_config("WaitState").unwrap();
    assert!(!config.skip_wait_until);
    assert_eq!(config.execute_api_timeout_seconds, Some(30));
    let global = config.global_attribute_loading.unwrap();
    assert_eq!(global.columns, ["status"]);
    assert_eq!(global.lock_type, LockType::ExclusiveLock);
    // Not overridden, so still the default.
    assert_eq!(config.local_attribute_loading.unwrap().keys, ["count"]);
}

#[test]
fn processes_without_attributes_send_no_loading_policy() {
    struct Bare;
    impl Process for Bare {
        fn state_schema(&self) -> StateSchema {
            StateSchema::with_starting_state(StartState)
        }
    }
    let config = ProcessDefinition::new(Bare)
        .state_config("StartState")
        .unwrap();
    assert_eq!(config.global_attribute_loading, None);
    assert_eq!(config.local_attribute_loading, None);
}

#[test]
fn decisions_encode_inputs_and_configs() {
    let def = ProcessDefinition::new(CounterProcess);
    let decision = StateDecision::single_next_state::<StartState>(Ticket { n: 7 });
    assert_eq!(decision.next_states()[0].state_id(), "StartState");
    let wire = def.state_decision(&decision).unwrap();
    assert_eq!(wire.next_states.len(), 1);
    assert_eq!(
        wire.next_states[0].state_input.as_ref().unwrap().data,
        r#"{"n":7}"#
    );
    assert!(
        wire.next_states[0]
            .state_config
            .as_ref()
            .unwrap()
            .skip_wait_until
    );
    assert!(wire.thread_close_decision.is_none());

    let parallel = StateDecision::multiple_next_states(vec![
        NextState::of::<WaitState>(()),
        NextState::of::<StartState>(Ticket { n: 1 }),
    ]);
    let wire = def.state_decision(&parallel).unwrap();
    let ids: Vec<&str> = wire
        .next_states
        .iter()
        .map(|s| s.state_id.as_str())
        .collect();
    assert_eq!(ids, ["WaitState", "StartState"]);
    assert_eq!(
        wire.next_states[0].state_input, None,
        "unit input is sent as absent"
    );
}

#[test]
fn close_decisions_carry_type_and_output() {
    let def = ProcessDefinition::new(CounterProcess);
    let cases = [
        (
            StateDecision::graceful_complete_process("done"),
            ThreadCloseType::GracefulCompleteProcess,
            Some("\"done\""),
        ),
        (
            StateDecision::force_complete_process(3),
            ThreadCloseType::ForceCompleteProcess,
            Some("3"),
        ),
        (
            StateDecision::force_fail_process("boom"),
            ThreadCloseType::ForceFailProcess,
            Some("\"boom\""),
        ),
        (StateDecision::dead_end(), ThreadCloseType::DeadEnd, None),
    ];
    for (decision, close_type, output) in cases {
        assert_eq!(decision.close_type(), Some(close_type));
        assert!(decision.next_states().is_empty());
        let wire = def.state_decision(&decision).unwrap();
        let close = wire.thread_close_decision.unwrap();
        assert_eq!(close.close_type, close_type);
        assert_eq!(close.output.as_ref().map(|o| o.data.as_str()), output);
    }
}

#[test]
fn moving_to_an_unregistered_state_is_an_error() {
    let def = ProcessDefinition::new(CounterProcess);
    let decision = StateDecision::multiple_next_states(vec![NextState::by_id("Nope", 1)]);
    let err = def.state_decision(&decision).unwrap_err();
    assert!(matches!(err, XdbError::UnknownState { ref state_id, .. } if state_id == "Nope"));
}

#[test]
fn failure_recovery_state_gets_its_config_filled_in() {
    struct Recovering;
    #[async_trait]
    impl AsyncState for Recovering {
        type Input = ();
        fn options(&self) -> AsyncStateConfig {
            AsyncStateConfig {
                state_failure_recovery_options: Some(StateFailureRecoveryOptions {
                    policy: FailureRecoveryPolicy::ProceedToConfiguredState,
                    state_failure_proceed_state_id: Some("WaitState".into()),
                    state_failure_proceed_state_config: None,
                }),
                ..Default::default()
            }
        }
        async fn execute(
            &self,
            _: &Context,
            _: (),
            _: &CommandResults,
            _: &mut Persistence,
            _: &mut Communication,
        ) -> Result<StateDecision> {
            Ok(StateDecision::dead_end())
        }
    }
    struct P;
    impl Process for P {
        fn state_schema(&self) -> StateSchema {
            StateSchema::with_starting_state(Recovering).state(WaitState)
        }
    }
    let config = ProcessDefinition::new(P)
        .state_config("Recovering")
        .unwrap();
    let nested = config
        .state_failure_recovery_options
        .unwrap()
        .state_failure_proceed_state_config
        .unwrap();
    assert!(!nested.skip_wait_until);
    assert_eq!(nested.execute_api_timeout_seconds, Some(30));
}

#[test]
#[should_panic(expected = "registered twice")]
fn duplicate_state_ids_are_rejected() {
    struct Dup;
    impl Process for Dup {
        fn state_schema(&self) -> StateSchema {
            StateSchema::with_starting_state(StartState).state(StartState)
        }
    }
    ProcessDefinition::new(Dup);
}

#[test]
fn start_request_is_filled_from_the_definition() {
    use std::time::Duration;
    use xdb_sdk::start_options::build_start_request;
    let def = ProcessDefinition::new(CounterProcess);
    let options = ProcessStartOptions::new()
        .global_attribute_pk_value("c-1")
        .initial_global_attribute("owner", "ann")
        .initial_local_attribute("count", 5)
        .timeout(Duration::from_millis(2500))
        .id_reuse_policy(ProcessIdReusePolicy::DisallowReuse);
    let input = encoding::encode_optional("in", &Ticket { n: 2 }).unwrap();
    let req = build_start_request(&def, "p-1", "http://w", input, options).unwrap();
    assert_eq!(req.process_type, "CounterProcess");
    // No request id of the caller's: the client sets a fresh one on each call.
    assert_eq!(req.request_id, None);
    assert_eq!(req.start_state_id.as_deref(), Some("StartState"));
    assert_eq!(req.start_state_input.unwrap().data, r#"{"n":2}"#);
    assert!(req.start_state_config.unwrap().skip_wait_until);
    let config = req.process_start_config.unwrap();
    assert_eq!(config.timeout_seconds, Some(3));
    assert_eq!(
        config.id_reuse_policy,
        Some(ProcessIdReusePolicy::DisallowReuse)
    );
    let ga = config.global_attribute_config.unwrap();
    assert_eq!(ga.table_name, "counter");
    assert_eq!(ga.primary_key.column, "id");
    assert_eq!(ga.primary_key.value, serde_json::json!("c-1"));
    assert_eq!(ga.initial_write[0].column, "owner");
    assert_eq!(config.local_attribute_initial_write[0].value.data, "5");
}

#[test]
fn a_start_carries_the_callers_request_id() {
    use xdb_sdk::start_options::build_start_request;
    let def = ProcessDefinition::new(CounterProcess);
    let options = ProcessStartOptions::new()
        .global_attribute_pk_value("c-1")
        .request_id("signup-c-1");
    let req = build_start_request(&def, "p-1", "http://w", None, options).unwrap();
    assert_eq!(req.request_id.as_deref(), Some("signup-c-1"));
}

#[test]
fn a_start_carries_its_priority_and_fairness_key_and_weight() {
    use xdb_sdk::start_options::build_start_request;
    let def = ProcessDefinition::new(CounterProcess);
    let options = ProcessStartOptions::new()
        .global_attribute_pk_value("c-1")
        .priority(2)
        .fairness_key("tenant-a")
        .fairness_weight(5);
    let req = build_start_request(&def, "p-1", "http://w", None, options).unwrap();
    let config = req.process_start_config.unwrap();
    assert_eq!(config.priority, Some(2));
    assert_eq!(config.fairness_key.as_deref(), Some("tenant-a"));
    assert_eq!(config.fairness_weight, Some(5));
    let json = serde_json::to_value(&config).unwrap();
    assert_eq!(json["fairnessKey"], "tenant-a");
    assert_eq!(json["fairnessWeight"], 5);

    // Unset: neither is sent, and the service applies the shared key and weight 1.
    let options = ProcessStartOptions::new().global_attribute_pk_value("c-1");
    let req = build_start_request(&def, "p-1", "http://w", None, options).unwrap();
    let json = serde_json::to_value(req.process_start_config.unwrap()).unwrap();
    assert!(json.get("fairnessKey").is_none(), "{json}");
    assert!(json.get("fairnessWeight").is_none(), "{json}");
}

#[test]
fn start_request_checks_options_against_the_schema() {
    use xdb_sdk::start_options::build_start_request;
    let def = ProcessDefinition::new(CounterProcess);
    let missing_pk = build_start_request(&def, "p", "w", None, ProcessStartOptions::new());
    assert!(matches!(missing_pk, Err(XdbError::NotAllowed(_))));
    let typo = ProcessStartOptions::new()
        .global_attribute_pk_value(1)
        .initial_global_attribute("ownr", "x");
    assert!(matches!(
        build_start_request(&def, "p", "w", None, typo),
        Err(XdbError::Undeclared { .. })
    ));
}
