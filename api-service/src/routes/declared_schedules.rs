//! Schedules that definitions declare (`ProcessDefinition.schedules`): checked with the
//! registration before anything is written, then made to match once it is: created,
//! changed or deleted, each change in the schedules' audit history as the deployment's
//! (`name@version`). A registration that fails halfway is settled by the next one, since
//! matching compares what is stored with what is declared.

use std::collections::{BTreeMap, HashSet};

use xdb_engine::validation::check_id;
use xdb_persistence::{NextFiring, ScheduleChangeNote, StoredDefinition, StoredSchedule};
use xdb_protocol::{
    DefinitionRevision, ProcessDefinition, ProcessExecutionStartRequest,
    RegisterDefinitionsRequest, RegisteredDefinition, ScheduleChangeAction, ScheduleDeclaration,
    ScheduleInfo, ScheduleStartTemplate, WorkerDeployment, DEFAULT_CATCHUP_WINDOW_SECONDS,
};

use super::schedule::{compile, next_from_now};
use super::start::check_values;
use crate::definitions::{resolve_start, Compiled};
use crate::{ApiError, AppState};

/// Most schedules one definition declares.
const MAX_DECLARED: usize = 100;

/// What the request declares, checked as `schedule/create` checks a schedule: ids
/// (unique in the request), specs, start states and the size of start values.
pub(super) fn check(
    state: &AppState,
    request: &RegisterDefinitionsRequest,
) -> Result<(), ApiError> {
    let mut ids = HashSet::new();
    for (i, definition) in request.definitions.iter().enumerate() {
        if definition.schedules.len() > MAX_DECLARED {
            return Err(ApiError::invalid(format!(
                "definitions[{i}].schedules: at most {MAX_DECLARED}"
            )));
        }
        if definition.schedules.is_empty() {
            continue;
        }
        let compiled = compiled(definition, &request.deployment)
            .map_err(|e| ApiError::invalid(format!("definitions[{i}].{e}")))?;
        for (j, declaration) in definition.schedules.iter().enumerate() {
            let field = format!("definitions[{i}].schedules[{j}]");
            let prefixed = |e: ApiError| ApiError::invalid(format!("{field}.{}", e.message));
            check_id(&format!("{field}.scheduleId"), &declaration.schedule_id)
                .map_err(|e| ApiError::invalid(e.to_string()))?;
            if !ids.insert(declaration.schedule_id.as_str()) {
                return Err(ApiError::invalid(format!(
                    "{field}.scheduleId: '{}' is declared twice in this request",
                    declaration.schedule_id
                )));
            }
            compile(&declaration.spec).map_err(prefixed)?;
            let info = declared_info(&compiled, declaration)
                .map_err(|e| ApiError::invalid(format!("{field}.{e}")))?;
            check_values(&start_request(&info), &state.config.limits).map_err(prefixed)?;
        }
    }
    Ok(())
}

/// A declared schedule's id is free, or already this type's: an operator's schedule (or
/// another type's) is never taken over.
pub(super) async fn check_ids_free(
    state: &AppState,
    request: &RegisterDefinitionsRequest,
) -> Result<(), ApiError> {
    for (i, definition) in request.definitions.iter().enumerate() {
        for (j, declaration) in definition.schedules.iter().enumerate() {
            let Some(stored) = state
                .schedules
                .get_schedule(&declaration.schedule_id)
                .await?
            else {
                continue;
            };
            if stored.info.declared_by.as_deref() != Some(definition.process_type.as_str()) {
                let owner = match &stored.info.declared_by {
                    Some(other) => format!("the definition of process type {other}"),
                    None => "an operator".to_string(),
                };
                return Err(ApiError::invalid(format!(
                    "definitions[{i}].schedules[{j}].scheduleId: schedule '{}' exists, \
                     made by {owner}; choose another id, or delete that schedule first",
                    declaration.schedule_id
                )));
            }
        }
    }
    Ok(())
}

/// Makes the stored schedules of each registered type match its current definition.
pub(super) async fn reconcile(
    state: &AppState,
    registered: &[RegisteredDefinition],
) -> Result<(), ApiError> {
    let registry = state.definitions.registry();
    for done in registered {
        let revision = &done.revision;
        let Some(stored) = registry
            .definition(&revision.process_type, Some(revision.revision))
            .await?
        else {
            continue;
        };
        let deployment = &revision.deployment;
        let by = format!("{}@{}", deployment.name, deployment.version);
        let existing = state
            .schedules
            .schedules_declared_by(&revision.process_type)
            .await?;
        let mut existing: BTreeMap<String, StoredSchedule> = existing
            .into_iter()
            .map(|s| (s.info.schedule_id.clone(), s))
            .collect();
        // Compiled only to resolve declared starts: most types declare none.
        if !stored.definition.schedules.is_empty() {
            let compiled = Compiled::new(stored).map_err(ApiError::invalid)?;
            for declaration in &compiled.stored.definition.schedules {
                let desired = declared_info(&compiled, declaration).map_err(ApiError::invalid)?;
                let before = existing.remove(&declaration.schedule_id);
                match_one(state, &by, desired, before).await?;
            }
        }
        for (schedule_id, _) in existing {
            let note = note(ScheduleChangeAction::Deleted, &by);
            if state.schedules.delete_schedule(&schedule_id, &note).await? {
                tracing::info!(schedule = %schedule_id, by = %by, "declared schedule deleted");
            }
        }
    }
    Ok(())
}

/// Creates `desired`, or changes `before` into it where the declaration differs; the
/// paused flag is the operators' and stays.
async fn match_one(
    state: &AppState,
    by: &str,
    mut desired: ScheduleInfo,
    before: Option<StoredSchedule>,
) -> Result<(), ApiError> {
    let spec = compile(&desired.spec)?;
    let id = desired.schedule_id.clone();
    let Some(before) = before else {
        let next = next_from_now(state, &spec, &id);
        let note = note(ScheduleChangeAction::Created, by);
        if state
            .schedules
            .create_schedule(&desired, next, &note)
            .await?
        {
            tracing::info!(schedule = %id, by = %by, "declared schedule created");
        } else {
            // Another replica's registration created it meanwhile.
            tracing::info!(schedule = %id, "declared schedule exists already");
        }
        return Ok(());
    };
    if same_declaration(&before.info, &desired) {
        return Ok(());
    }
    desired.paused = before.info.paused;
    desired.reason = before.info.reason.clone();
    let next = if before.info.spec == desired.spec {
        NextFiring {
            nominal_ms: before.info.next_fire_timestamp_ms,
            fire_at: before.next_fire_at,
        }
    } else {
        next_from_now(state, &spec, &id)
    };
    let note = note(ScheduleChangeAction::Updated, by);
    if state
        .schedules
        .replace_schedule(&desired, next, before.version, &note)
        .await?
    {
        tracing::info!(schedule = %id, by = %by, "declared schedule changed");
    } else {
        // Changed meanwhile (a firing, a pause): the next registration settles it.
        tracing::warn!(schedule = %id, "declared schedule changed meanwhile; not updated");
    }
    Ok(())
}

fn note(action: ScheduleChangeAction, by: &str) -> ScheduleChangeNote<'_> {
    ScheduleChangeNote {
        action,
        changed_by: by,
        reason: None,
        detail: None,
    }
}

/// Whether `stored` already is what the declaration makes (ignoring what operators and
/// firings change: paused, reason, next firing, times).
fn same_declaration(stored: &ScheduleInfo, desired: &ScheduleInfo) -> bool {
    stored.spec == desired.spec
        && stored.start == desired.start
        && stored.overlap_policy == desired.overlap_policy
        && stored.catchup_window_seconds == desired.catchup_window_seconds
        && stored.note == desired.note
        && stored.declared_by == desired.declared_by
}

/// `definition` as `deployment` registers it, for resolving its declarations before and
/// after the registration alike.
fn compiled(
    definition: &ProcessDefinition,
    deployment: &WorkerDeployment,
) -> Result<Compiled, String> {
    Compiled::new(StoredDefinition {
        revision: DefinitionRevision {
            process_type: definition.process_type.clone(),
            revision: 0,
            content_hash: String::new(),
            deployment: deployment.clone(),
            registered_at_ms: 0,
        },
        definition: definition.clone(),
    })
}

/// The schedule a declaration makes, firing at the registering deployment's worker, its
/// start resolved as a start naming no options is (the start state's declared options).
fn declared_info(
    compiled: &Compiled,
    declaration: &ScheduleDeclaration,
) -> Result<ScheduleInfo, String> {
    let process_type = &compiled.stored.definition.process_type;
    let mut info = ScheduleInfo {
        schedule_id: declaration.schedule_id.clone(),
        spec: declaration.spec.clone(),
        start: ScheduleStartTemplate {
            process_type: process_type.clone(),
            worker_url: compiled.stored.revision.deployment.worker_url.clone(),
            start_state_id: declaration.start_state_id.clone(),
            start_state_input: declaration.start_state_input.clone(),
            start_state_config: declaration.start_state_config.clone(),
            process_start_config: declaration.process_start_config.clone(),
        },
        overlap_policy: declaration.overlap_policy.unwrap_or_default(),
        catchup_window_seconds: declaration
            .catchup_window_seconds
            .unwrap_or(DEFAULT_CATCHUP_WINDOW_SECONDS),
        paused: false,
        note: declaration.note.clone(),
        reason: None,
        next_fire_timestamp_ms: None,
        created_timestamp_ms: 0,
        updated_timestamp_ms: 0,
        declared_by: Some(process_type.clone()),
    };
    let mut start = start_request(&info);
    resolve_start(compiled, &mut start)?;
    info.start.start_state_config = start.start_state_config;
    info.start.process_start_config = start.process_start_config;
    Ok(info)
}

/// A firing's start request, for the checks a start gets.
fn start_request(info: &ScheduleInfo) -> ProcessExecutionStartRequest {
    ProcessExecutionStartRequest {
        request_id: None,
        process_id: xdb_protocol::firing_process_id(&info.schedule_id, 0),
        process_type: info.start.process_type.clone(),
        worker_url: info.start.worker_url.clone(),
        start_state_id: info.start.start_state_id.clone(),
        start_state_input: info.start.start_state_input.clone(),
        start_state_config: info.start.start_state_config.clone(),
        process_start_config: info.start.process_start_config.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn declaration() -> ScheduleDeclaration {
        serde_json::from_value(serde_json::json!({
            "scheduleId": "nightly",
            "spec": {"cron": {"expression": "0 3 * * *"}},
            "startStateId": "first",
        }))
        .unwrap()
    }

    fn definition(start_states: &[&str]) -> ProcessDefinition {
        serde_json::from_value(serde_json::json!({
            "processType": "Report",
            "states": [{"id": "first", "hasWaitUntil": false},
                       {"id": "second", "hasWaitUntil": true}],
            "startStates": start_states,
        }))
        .unwrap()
    }

    fn deployment() -> WorkerDeployment {
        WorkerDeployment {
            name: "reports".into(),
            version: "7".into(),
            worker_url: "http://reports:8080".into(),
        }
    }

    fn info(
        start_states: &[&str],
        declaration: &ScheduleDeclaration,
    ) -> Result<ScheduleInfo, String> {
        declared_info(
            &compiled(&definition(start_states), &deployment())?,
            declaration,
        )
    }

    #[test]
    fn a_declaration_fires_at_the_deployment_with_the_states_options() {
        let info = info(&[], &declaration()).unwrap();
        assert_eq!(info.start.worker_url, "http://reports:8080");
        assert_eq!(info.start.process_type, "Report");
        assert_eq!(info.declared_by.as_deref(), Some("Report"));
        assert_eq!(info.catchup_window_seconds, DEFAULT_CATCHUP_WINDOW_SECONDS);
        // A state without waitUntil starts without one, as a start naming no options.
        let config = info
            .start
            .start_state_config
            .clone()
            .expect("the state's options");
        assert!(config.skip_wait_until);
        assert_eq!(
            start_request(&info).process_id,
            "nightly-1970-01-01T00:00:00Z"
        );
    }

    #[test]
    fn what_operators_and_firings_change_is_not_a_change_of_declaration() {
        let desired = info(&[], &declaration()).unwrap();
        let mut stored = desired.clone();
        stored.paused = true;
        stored.reason = Some("maintenance".into());
        stored.next_fire_timestamp_ms = Some(5);
        stored.created_timestamp_ms = 9;
        assert!(same_declaration(&stored, &desired));
        stored.start.worker_url = "http://reports-v6:8080".into();
        assert!(!same_declaration(&stored, &desired), "a new deployment");
    }

    #[test]
    fn the_start_state_must_be_one_the_type_may_start_in() {
        info(&["first"], &declaration()).unwrap();
        let error = info(&["second"], &declaration()).unwrap_err();
        assert!(error.contains("startStateId"), "{error}");
        let mut unknown = declaration();
        unknown.start_state_id = Some("third".into());
        let error = info(&[], &unknown).unwrap_err();
        assert!(error.contains("startStateId"), "{error}");
    }
}
