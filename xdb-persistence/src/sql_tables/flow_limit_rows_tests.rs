use xdb_protocol::{RegisterDefinitionsRequest, StateDefinition, WorkerDeployment};

use super::*;
use crate::DefinitionRegistry;

on_both_databases!(
    store => store;
    an_override_wins_until_cleared_and_each_change_is_audited,
    a_registration_declares_limits_once_and_records_what_changed,
);

fn rate(r: f64) -> Option<FlowLimits> {
    Some(FlowLimits {
        max_calls_per_second: Some(r),
        ..Default::default()
    })
}

fn set(
    process_type: &str,
    state: Option<&str>,
    limits: Option<FlowLimits>,
) -> FlowLimitsSetRequest {
    FlowLimitsSetRequest {
        process_type: process_type.into(),
        state_id: state.map(Into::into),
        override_limits: limits,
        reason: Some("downstream is slow".into()),
    }
}

async fn an_override_wins_until_cleared_and_each_change_is_audited(store: impl FlowLimitStore) {
    let entry = store
        .set_flow_limit_override(&set("payments", Some("charge"), rate(5.0)), "ops")
        .await
        .unwrap();
    assert_eq!(entry.state_id.as_deref(), Some("charge"));
    assert_eq!(entry.override_limits, rate(5.0));
    assert_eq!(entry.effective, rate(5.0).unwrap());
    // `{}`: no limit, whatever is declared.
    let entry = store
        .set_flow_limit_override(&set("payments", None, Some(FlowLimits::default())), "ops")
        .await
        .unwrap();
    assert_eq!(entry.state_id, None);
    assert_eq!(entry.override_limits, Some(FlowLimits::default()));
    let listed = store.list_flow_limits(Some("payments")).await.unwrap();
    assert_eq!(listed.len(), 2);
    assert_eq!(listed[0].state_id, None, "the type's own entry comes first");
    // Cleared: nothing is declared, so the entry is no longer listed.
    let cleared = store
        .set_flow_limit_override(&set("payments", Some("charge"), None), "ops2")
        .await
        .unwrap();
    assert_eq!(cleared.override_limits, None);
    assert_eq!(cleared.effective, FlowLimits::default());
    assert_eq!(
        store
            .list_flow_limits(Some("payments"))
            .await
            .unwrap()
            .len(),
        1
    );
    assert!(store
        .list_flow_limits(Some("other"))
        .await
        .unwrap()
        .is_empty());

    let page = store
        .flow_limit_history(&FlowLimitsHistoryRequest {
            process_type: Some("payments".into()),
            page_size: Some(2),
            next_page_token: None,
        })
        .await
        .unwrap();
    assert_eq!(page.changes.len(), 2);
    let newest = &page.changes[0];
    assert_eq!(newest.source, FlowLimitSource::Operator);
    assert_eq!(newest.changed_by, "ops2");
    assert_eq!(
        (newest.before.clone(), newest.after.clone()),
        (rate(5.0), None)
    );
    assert_eq!(newest.reason.as_deref(), Some("downstream is slow"));
    let rest = store
        .flow_limit_history(&FlowLimitsHistoryRequest {
            process_type: Some("payments".into()),
            page_size: Some(2),
            next_page_token: page.next_page_token.clone(),
        })
        .await
        .unwrap();
    assert_eq!(rest.changes.len(), 1);
    assert_eq!(rest.changes[0].after, rate(5.0));
    assert_eq!(rest.next_page_token, None);
}

fn registration(
    version: &str,
    type_limit: Option<FlowLimits>,
    state_limit: Option<FlowLimits>,
) -> RegisterDefinitionsRequest {
    RegisterDefinitionsRequest {
        deployment: WorkerDeployment {
            name: "billing".into(),
            version: version.into(),
            worker_url: "http://localhost:1".into(),
        },
        definitions: vec![ProcessDefinition {
            process_type: "invoice".into(),
            states: vec![StateDefinition {
                id: "send".into(),
                has_wait_until: false,
                config: None,
                input_schema: None,
                flow_limits: state_limit,
            }],
            start_states: vec![],
            local_queues: vec![],
            rpcs: vec![],
            global_attributes: None,
            local_attributes: vec![],
            versioning_policy: Default::default(),
            flow_limits: type_limit,
            schedules: Vec::new(),
        }],
        force: false,
    }
}

async fn a_registration_declares_limits_once_and_records_what_changed<S>(store: S)
where
    S: FlowLimitStore + DefinitionRegistry,
{
    store
        .register_definitions(&registration("1", rate(20.0), rate(2.0)), &["h1".into()])
        .await
        .unwrap();
    let listed = store.list_flow_limits(Some("invoice")).await.unwrap();
    assert_eq!(listed.len(), 2);
    assert_eq!(listed[0].declared, rate(20.0));
    assert_eq!(listed[1].declared, rate(2.0));
    assert_eq!(listed[1].effective, rate(2.0).unwrap());
    // An operator's override wins over the declaration, and outlives a registration.
    store
        .set_flow_limit_override(&set("invoice", Some("send"), rate(1.0)), "ops")
        .await
        .unwrap();
    store
        .register_definitions(&registration("2", rate(20.0), rate(3.0)), &["h2".into()])
        .await
        .unwrap();
    let listed = store.list_flow_limits(Some("invoice")).await.unwrap();
    assert_eq!(listed[1].declared, rate(3.0));
    assert_eq!(listed[1].effective, rate(1.0).unwrap());
    let history = store
        .flow_limit_history(&FlowLimitsHistoryRequest {
            process_type: Some("invoice".into()),
            ..Default::default()
        })
        .await
        .unwrap();
    let definition_changes: Vec<_> = history
        .changes
        .iter()
        .filter(|c| c.source == FlowLimitSource::Definition)
        .map(|c| {
            (
                c.state_id.clone(),
                c.before.clone(),
                c.after.clone(),
                c.changed_by.clone(),
            )
        })
        .collect();
    // Newest first: the second registration changed only the state's declaration.
    assert_eq!(
        definition_changes,
        vec![
            (
                Some("send".into()),
                rate(2.0),
                rate(3.0),
                "billing@2".into()
            ),
            (Some("send".into()), None, rate(2.0), "billing@1".into()),
            (None, None, rate(20.0), "billing@1".into()),
        ]
    );
}

#[test]
fn stored_limits_of_a_newer_release_are_read_without_the_fields_it_added() {
    let stored = r#"{"priority":2,"maxCallsPerSecond":0.5,"someFutureLimit":{"x":1}}"#;
    let read = from_text(Some(stored.into())).unwrap().unwrap();
    assert_eq!(
        read,
        FlowLimits {
            priority: Some(2),
            max_calls_per_second: Some(0.5),
            ..Default::default()
        }
    );
    assert_eq!(from_text(None).unwrap(), None);
    // A known field of the wrong type is still a corrupt row.
    assert!(from_text(Some(r#"{"priority":"high"}"#.into())).is_err());
    assert!(from_text(Some("[1]".into())).is_err());
}
