//! The storage contract of flow limits (`xdb_sys_flow_limits`,
//! `xdb_sys_flow_limit_changes`): registrations write what definitions declare,
//! operators set overrides, the async service reads what is in force. Every change is
//! recorded in the same transaction as itself.

use std::collections::BTreeMap;

use async_trait::async_trait;
use xdb_protocol::{
    FlowLimits, FlowLimitsEntry, FlowLimitsHistoryRequest, FlowLimitsHistoryResponse,
    FlowLimitsSetRequest, ProcessDefinition,
};

use crate::StoreError;

/// Flow limits' rows.
#[async_trait]
pub trait FlowLimitStore: Send + Sync + 'static {
    /// Sets (or, with no override, clears) an operator's override, recording the change
    /// with `changed_by` and the request's reason; the entry as it is after.
    async fn set_flow_limit_override(
        &self,
        request: &FlowLimitsSetRequest,
        changed_by: &str,
    ) -> Result<FlowLimitsEntry, StoreError>;
    /// Every entry (of one type), by type and state, the type's own first.
    async fn list_flow_limits(
        &self,
        process_type: Option<&str>,
    ) -> Result<Vec<FlowLimitsEntry>, StoreError>;
    /// The changes, newest first, a page at a time.
    async fn flow_limit_history(
        &self,
        request: &FlowLimitsHistoryRequest,
    ) -> Result<FlowLimitsHistoryResponse, StoreError>;
}

/// The state key of a type's own entry (`state_id` is part of the primary key, so it
/// cannot be NULL).
pub(crate) const WHOLE_TYPE: &str = "";

/// What `definition` declares, by state key ([`WHOLE_TYPE`] for the type): every state
/// and the type itself, `None` where nothing is declared.
pub(crate) fn declared_by(definition: &ProcessDefinition) -> BTreeMap<String, Option<FlowLimits>> {
    let mut declared = BTreeMap::new();
    declared.insert(
        WHOLE_TYPE.to_string(),
        declared_value(&definition.flow_limits),
    );
    for state in &definition.states {
        declared.insert(state.id.clone(), declared_value(&state.flow_limits));
    }
    declared
}

/// A declaration of nothing is stored as none, so `{}` and absent are equal.
fn declared_value(limits: &Option<FlowLimits>) -> Option<FlowLimits> {
    limits.clone().filter(|limits| !limits.is_empty())
}

/// One entry's declared limits changing: `(state key, before, after)`.
pub(crate) type DeclaredChange = (String, Option<FlowLimits>, Option<FlowLimits>);

/// The changes that take the stored declarations (`stored`, by state key; entries with
/// no declaration may be missing) to `declared`: an entry whose declaration differs, and
/// a stored declaration of a state the definition no longer has, which is dropped.
pub(crate) fn declared_changes(
    stored: &BTreeMap<String, Option<FlowLimits>>,
    declared: &BTreeMap<String, Option<FlowLimits>>,
) -> Vec<DeclaredChange> {
    let mut changes = Vec::new();
    for (key, after) in declared {
        let before = stored.get(key).cloned().flatten();
        if &before != after {
            changes.push((key.clone(), before, after.clone()));
        }
    }
    for (key, before) in stored {
        if before.is_some() && !declared.contains_key(key) {
            changes.push((key.clone(), before.clone(), None));
        }
    }
    changes
}

/// The limits in force: the override while set, else the declared ones.
pub(crate) fn effective(
    declared: &Option<FlowLimits>,
    override_limits: &Option<FlowLimits>,
) -> FlowLimits {
    override_limits
        .clone()
        .or_else(|| declared.clone())
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;
    use xdb_protocol::StateDefinition;

    fn rate(r: f64) -> Option<FlowLimits> {
        Some(FlowLimits {
            max_calls_per_second: Some(r),
            ..Default::default()
        })
    }

    fn definition(
        type_limit: Option<FlowLimits>,
        states: &[(&str, Option<FlowLimits>)],
    ) -> ProcessDefinition {
        ProcessDefinition {
            process_type: "t".into(),
            states: states
                .iter()
                .map(|(id, limits)| StateDefinition {
                    id: (*id).into(),
                    has_wait_until: false,
                    config: None,
                    input_schema: None,
                    flow_limits: limits.clone(),
                })
                .collect(),
            start_states: vec![],
            local_queues: vec![],
            rpcs: vec![],
            global_attributes: None,
            local_attributes: vec![],
            versioning_policy: Default::default(),
            flow_limits: type_limit,
            schedules: Vec::new(),
        }
    }

    #[test]
    fn a_first_registration_declares_only_what_it_limits() {
        let declared = declared_by(&definition(rate(5.0), &[("a", None), ("b", rate(1.0))]));
        let changes = declared_changes(&BTreeMap::new(), &declared);
        assert_eq!(
            changes,
            vec![
                (WHOLE_TYPE.to_string(), None, rate(5.0)),
                ("b".to_string(), None, rate(1.0)),
            ]
        );
    }

    #[test]
    fn an_equal_registration_changes_nothing_and_empty_limits_equal_none() {
        let stored = declared_by(&definition(rate(5.0), &[("a", None)]));
        let again = declared_by(&definition(
            rate(5.0),
            &[("a", Some(FlowLimits::default()))],
        ));
        assert!(declared_changes(&stored, &again).is_empty());
    }

    #[test]
    fn a_changed_limit_and_a_removed_state_are_changes() {
        let stored = declared_by(&definition(None, &[("a", rate(2.0)), ("gone", rate(3.0))]));
        let declared = declared_by(&definition(None, &[("a", rate(4.0))]));
        assert_eq!(
            declared_changes(&stored, &declared),
            vec![
                ("a".to_string(), rate(2.0), rate(4.0)),
                ("gone".to_string(), rate(3.0), None),
            ]
        );
    }

    #[test]
    fn an_override_wins_over_the_declaration_even_when_it_limits_nothing() {
        assert_eq!(effective(&rate(2.0), &None), rate(2.0).unwrap());
        assert_eq!(effective(&rate(2.0), &rate(9.0)), rate(9.0).unwrap());
        assert_eq!(
            effective(&rate(2.0), &Some(FlowLimits::default())),
            FlowLimits::default()
        );
        assert_eq!(effective(&None, &None), FlowLimits::default());
    }
}
