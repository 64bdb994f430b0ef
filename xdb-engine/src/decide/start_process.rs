//! Start: the id-reuse policy, the first state and the process timeout.

use chrono::{DateTime, Duration, Utc};
use serde_json::json;
use uuid::Uuid;
use xdb_protocol::{
    ProcessExecutionStartRequest, ProcessIdReusePolicy, ProcessStatus, StateMovement,
};

use super::{start_states, DecideError};
use crate::model::*;
use crate::plan::*;
use crate::validation::{check_id, check_identifier, check_worker_url, split_table_name};

/// The latest execution of the process id, if any.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PreviousExecution {
    pub id: Uuid,
    pub status: ProcessStatus,
}

/// What a start writes.
#[derive(Debug, Clone, PartialEq)]
pub struct StartPlan {
    /// A running execution the policy terminates first.
    pub terminate_previous: Option<Uuid>,
    pub execution: ProcessExecution,
    pub plan: TransitionPlan,
}

/// Decides whether `request` may start a new execution `new_id` and what it writes.
pub fn start_process(
    request: &ProcessExecutionStartRequest,
    previous: Option<PreviousExecution>,
    new_id: Uuid,
    now: DateTime<Utc>,
) -> Result<StartPlan, DecideError> {
    validate_start_request(request)?;
    let config = request.process_start_config.clone().unwrap_or_default();
    let policy = config.id_reuse_policy.unwrap_or_default();
    let mut terminate_previous = None;
    if let Some(previous) = previous {
        let allowed = match policy {
            ProcessIdReusePolicy::AllowIfNoRunning => previous.status.is_closed(),
            ProcessIdReusePolicy::AllowIfPreviousExitAbnormally => matches!(
                previous.status,
                ProcessStatus::Failed | ProcessStatus::Timeout | ProcessStatus::Terminated
            ),
            ProcessIdReusePolicy::DisallowReuse => false,
            ProcessIdReusePolicy::TerminateIfRunning => {
                if previous.status == ProcessStatus::Running {
                    terminate_previous = Some(previous.id);
                }
                true
            }
        };
        if !allowed {
            return Err(DecideError::AlreadyStarted(request.process_id.clone()));
        }
    }

    let mut execution = ProcessExecution {
        id: new_id,
        process_id: request.process_id.clone(),
        process_type: request.process_type.clone(),
        worker_url: request.worker_url.clone(),
        status: ProcessStatus::Running,
        start_time: now,
        close_time: None,
        timeout_seconds: config.timeout_seconds.unwrap_or(0) as i32,
        running_state_executions: 0,
        graceful_completion: None,
        state_execution_sequences: Default::default(),
        global_attribute_config: config.global_attribute_config.clone(),
        result: None,
        failure: None,
        paused: None,
        priority: config.priority.unwrap_or(xdb_protocol::priority::DEFAULT),
        fairness: config.fairness_key.clone().map(|key| Fairness {
            key,
            weight: config
                .fairness_weight
                .unwrap_or(xdb_protocol::fairness::DEFAULT_WEIGHT),
        }),
    };
    let mut plan = TransitionPlan::default();
    if let Some(state_id) = &request.start_state_id {
        let movement = StateMovement {
            state_id: state_id.clone(),
            state_input: request.start_state_input.clone(),
            state_config: request.start_state_config.clone(),
        };
        let mut sequences = Default::default();
        start_states(&mut sequences, &[movement], now, &mut plan)?;
        execution.state_execution_sequences = sequences;
        execution.running_state_executions = 1;
    }
    if execution.timeout_seconds > 0 {
        plan.new_tasks.push(NewTask {
            task_type: TaskType::ProcessTimeout,
            fire_at: now + Duration::seconds(i64::from(execution.timeout_seconds)),
            state: None,
            timer_index: None,
        });
    }
    plan.attribute_writes.local_attributes = config.local_attribute_initial_write.clone();
    plan.history.push(HistoryEntry::new(
        events::PROCESS_STARTED,
        json!({
            "processType": request.process_type,
            "startStateId": request.start_state_id,
            "terminatedPrevious": terminate_previous.map(|id| id.to_string()),
        }),
    ));
    Ok(StartPlan {
        terminate_previous,
        execution,
        plan,
    })
}

/// Checks a start request's ids, URL and table mapping without deciding anything.
pub fn validate_start_request(request: &ProcessExecutionStartRequest) -> Result<(), DecideError> {
    check_id("processId", &request.process_id)?;
    check_id("processType", &request.process_type)?;
    check_worker_url(&request.worker_url)?;
    if let Some(state_id) = &request.start_state_id {
        check_id("startStateId", state_id)?;
    }
    let config = request.process_start_config.clone().unwrap_or_default();
    if let Some(globals) = &config.global_attribute_config {
        split_table_name("globalAttributeConfig.tableName", &globals.table_name)?;
        check_identifier(
            "globalAttributeConfig.primaryKey.column",
            &globals.primary_key.column,
        )?;
        if globals.primary_key.value.is_null() {
            return Err(crate::validation::ValidationError::new(
                "globalAttributeConfig.primaryKey.value",
                "must not be null",
            )
            .into());
        }
        for write in &globals.initial_write {
            check_identifier("globalAttributeConfig.initialWrite.column", &write.column)?;
        }
    }
    for attribute in &config.local_attribute_initial_write {
        check_id("localAttributeInitialWrite.key", &attribute.key)?;
    }
    if let Some(key) = &config.concurrency_key {
        check_id("processStartConfig.concurrencyKey", key)?;
    }
    if let Some(priority) = config.priority {
        crate::validation::check_priority("processStartConfig.priority", priority)?;
    }
    check_fairness(&config)?;
    Ok(())
}

/// A fairness key is an id; a weight is 1 to the maximum, and only beside a key.
fn check_fairness(
    config: &xdb_protocol::ProcessStartConfig,
) -> Result<(), crate::validation::ValidationError> {
    use crate::validation::ValidationError;
    if let Some(key) = &config.fairness_key {
        check_id("processStartConfig.fairnessKey", key)?;
    }
    if let Some(weight) = config.fairness_weight {
        crate::validation::check_fairness_weight("processStartConfig.fairnessWeight", weight)?;
        if config.fairness_key.is_none() {
            return Err(ValidationError::new(
                "processStartConfig.fairnessWeight",
                "weighs a fairness key: name processStartConfig.fairnessKey too",
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use xdb_protocol::{AsyncStateConfig, ProcessStartConfig};

    use super::*;

    fn request(policy: ProcessIdReusePolicy) -> ProcessExecutionStartRequest {
        ProcessExecutionStartRequest {
            request_id: None,
            process_id: "p1".into(),
            process_type: "Signup".into(),
            worker_url: "http://127.0.0.1:1".into(),
            start_state_id: Some("Submit".into()),
            start_state_input: None,
            start_state_config: Some(AsyncStateConfig {
                skip_wait_until: true,
                ..Default::default()
            }),
            process_start_config: Some(ProcessStartConfig {
                timeout_seconds: Some(60),
                id_reuse_policy: Some(policy),
                ..Default::default()
            }),
        }
    }

    fn previous(status: ProcessStatus) -> Option<PreviousExecution> {
        Some(PreviousExecution {
            id: Uuid::from_u128(7),
            status,
        })
    }

    #[test]
    fn first_start_creates_the_start_state_and_the_timeout() {
        let now = Utc::now();
        let start = start_process(
            &request(ProcessIdReusePolicy::AllowIfNoRunning),
            None,
            Uuid::from_u128(1),
            now,
        )
        .unwrap();
        assert_eq!(start.execution.running_state_executions, 1);
        assert_eq!(start.plan.new_states.len(), 1);
        assert_eq!(
            start.plan.new_states[0].status,
            StateExecutionStatus::ExecuteRunning
        );
        let types: Vec<TaskType> = start.plan.new_tasks.iter().map(|t| t.task_type).collect();
        assert_eq!(types, vec![TaskType::Execute, TaskType::ProcessTimeout]);
        assert_eq!(start.plan.new_tasks[1].fire_at, now + Duration::seconds(60));
    }

    #[test]
    fn id_reuse_policies() {
        use ProcessIdReusePolicy::*;
        use ProcessStatus::*;
        let cases = [
            (AllowIfNoRunning, Running, false),
            (AllowIfNoRunning, Completed, true),
            (AllowIfPreviousExitAbnormally, Completed, false),
            (AllowIfPreviousExitAbnormally, Failed, true),
            (AllowIfPreviousExitAbnormally, Timeout, true),
            (AllowIfPreviousExitAbnormally, Running, false),
            (DisallowReuse, Failed, false),
            (TerminateIfRunning, Running, true),
            (TerminateIfRunning, Completed, true),
        ];
        for (policy, status, allowed) in cases {
            let result = start_process(
                &request(policy),
                previous(status),
                Uuid::from_u128(1),
                Utc::now(),
            );
            assert_eq!(result.is_ok(), allowed, "{policy:?} after {status:?}");
        }
        let terminated = start_process(
            &request(TerminateIfRunning),
            previous(Running),
            Uuid::from_u128(1),
            Utc::now(),
        )
        .unwrap();
        assert_eq!(terminated.terminate_previous, Some(Uuid::from_u128(7)));
    }

    #[test]
    fn bad_table_names_are_refused() {
        let mut req = request(ProcessIdReusePolicy::AllowIfNoRunning);
        req.process_start_config = Some(ProcessStartConfig {
            global_attribute_config: Some(xdb_protocol::GlobalAttributeConfig {
                table_name: "user; drop table x".into(),
                primary_key: xdb_protocol::GlobalAttributeValue {
                    column: "id".into(),
                    value: "1".into(),
                },
                initial_write: vec![],
            }),
            ..Default::default()
        });
        let err = start_process(&req, None, Uuid::nil(), Utc::now()).unwrap_err();
        assert!(err.to_string().contains("tableName"), "{err}");
    }

    #[test]
    fn a_priority_is_kept_within_its_bounds() {
        let mut req = request(ProcessIdReusePolicy::AllowIfNoRunning);
        let start = start_process(&req, None, Uuid::nil(), Utc::now()).unwrap();
        assert_eq!(start.execution.priority, xdb_protocol::priority::DEFAULT);
        for priority in [1, 5] {
            req.process_start_config = Some(ProcessStartConfig {
                priority: Some(priority),
                ..Default::default()
            });
            validate_start_request(&req).unwrap();
            let start = start_process(&req, None, Uuid::nil(), Utc::now()).unwrap();
            assert_eq!(start.execution.priority, priority);
        }
        for priority in [0, 6, 9] {
            req.process_start_config = Some(ProcessStartConfig {
                priority: Some(priority),
                ..Default::default()
            });
            let err = validate_start_request(&req).unwrap_err();
            assert!(
                err.to_string().contains("processStartConfig.priority"),
                "{err}"
            );
        }
    }
}
