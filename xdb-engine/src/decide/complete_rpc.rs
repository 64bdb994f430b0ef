//! An RPC answered: its new threads and its history entry.

use chrono::{DateTime, Utc};
use serde_json::json;
use xdb_protocol::ProcessRpcWorkerResponse;

use super::{check_running, start_states, DecideError};
use crate::model::*;
use crate::plan::*;

/// Most states one RPC may start.
pub const MAX_RPC_NEXT_STATES: usize = 100;

/// The plan for `response` to RPC `rpc_name`; the caller adds local-queue deliveries.
pub fn complete_rpc(
    process: &ProcessExecution,
    rpc_name: &str,
    response: &ProcessRpcWorkerResponse,
    now: DateTime<Utc>,
) -> Result<TransitionPlan, DecideError> {
    check_running(process)?;
    if response.append_next_states.len() > MAX_RPC_NEXT_STATES {
        return Err(DecideError::InvalidWorkerResponse(format!(
            "the RPC starts more than {MAX_RPC_NEXT_STATES} states"
        )));
    }
    let mut plan = TransitionPlan {
        attribute_writes: response.writes.clone(),
        ..Default::default()
    };
    if !response.append_next_states.is_empty() {
        let mut sequences = process.state_execution_sequences.clone();
        start_states(&mut sequences, &response.append_next_states, now, &mut plan)
            .map_err(|e| DecideError::InvalidWorkerResponse(e.to_string()))?;
        let update = plan.process.get_or_insert_with(ProcessUpdate::default);
        update.state_execution_sequences = Some(sequences);
        update.running_state_executions =
            Some(process.running_state_executions + response.append_next_states.len() as i32);
    }
    plan.history.push(HistoryEntry::new(
        events::RPC_COMPLETED,
        json!({
            "rpcName": rpc_name,
            "appendedStates": response.append_next_states.iter().map(|s| &s.state_id).collect::<Vec<_>>(),
            "published": response.publish_to_local_queue.len(),
        }),
    ));
    Ok(plan)
}

#[cfg(test)]
mod tests {
    use xdb_protocol::{ProcessStatus, StateMovement};

    use super::*;
    use crate::decide::fixtures::process;

    #[test]
    fn appended_states_become_new_threads() {
        let response = ProcessRpcWorkerResponse {
            append_next_states: vec![StateMovement {
                state_id: "A".into(),
                state_input: None,
                state_config: None,
            }],
            ..Default::default()
        };
        let plan = complete_rpc(&process(0), "go", &response, Utc::now()).unwrap();
        assert_eq!(plan.new_states[0].id.to_string(), "A-2");
        assert_eq!(plan.process.unwrap().running_state_executions, Some(1));
    }

    #[test]
    fn a_closed_process_refuses_the_rpc() {
        let mut closed = process(0);
        closed.status = ProcessStatus::Completed;
        let err = complete_rpc(
            &closed,
            "go",
            &ProcessRpcWorkerResponse::default(),
            Utc::now(),
        );
        assert_eq!(err, Err(DecideError::NotRunning));
    }
}
