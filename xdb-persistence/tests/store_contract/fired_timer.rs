//! A due timer whose firing starts its state's execute: the firing and the execute's
//! answer commit as one transition, or not at all when the rows moved meanwhile.

use xdb_engine::{StateExecutionStatus, TaskType};
use xdb_persistence::StoreError;
use xdb_protocol::*;
use xdb_test_util::Dialect;

use crate::common::*;

both!(
    a_fired_timer_and_its_execute_commit_as_one_transition,
    a_fired_timer_whose_rows_moved_writes_nothing,
);

async fn a_fired_timer_and_its_execute_commit_as_one_transition(dialect: Dialect) {
    let h = harness(dialect).await;
    let store = &*h.store;
    start_waiting_on_a_timer(store, "p-fired", 1).await;
    let timer = claim(store, "w", TaskType::Timer).await;

    let fired = store
        .fired_timer_call(&timer)
        .await
        .unwrap()
        .expect("an ANY_OF timer settles the state");
    assert_eq!(fired.timer_index, 0);
    assert_eq!(
        fired.before.state.status,
        StateExecutionStatus::WaitingCommands
    );
    assert_eq!(
        fired.call.state.status,
        StateExecutionStatus::ExecuteRunning
    );
    let progress = fired.call.state.command_progress.clone().unwrap();
    assert_eq!(progress.timers_fired, vec![true], "execute sees the firing");
    assert!(
        history_types(store, "p-fired")
            .await
            .iter()
            .all(|event| event != "TIMER_FIRED"),
        "reading the call writes nothing"
    );

    store
        .complete_fired_execute(&timer, "w", &fired, &execute_then(&["B"]))
        .await
        .unwrap();
    let history = history_types(store, "p-fired").await;
    let tail: Vec<&str> = history
        .iter()
        .rev()
        .take(2)
        .rev()
        .map(|e| e.as_str())
        .collect();
    assert_eq!(tail, ["TIMER_FIRED", "EXECUTE_COMPLETED"], "{history:?}");
    let described = describe(store, "p-fired").await;
    assert_eq!(described.status, ProcessStatus::Running);
    // B is due (skipping waitUntil); A left no execute task behind.
    let next = claim(store, "w", TaskType::Execute).await;
    assert_eq!(next.state.unwrap().state_id, "B");
    assert_nothing_due(store, "w").await;

    // The timer task is gone: firing it again is stale, and changes nothing.
    assert!(matches!(
        store
            .complete_fired_execute(&timer, "w", &fired, &execute_then(&["B"]))
            .await,
        Err(StoreError::Stale(_))
    ));
    assert_eq!(history_types(store, "p-fired").await, history);
}

async fn a_fired_timer_whose_rows_moved_writes_nothing(dialect: Dialect) {
    let h = harness(dialect).await;
    let store = &*h.store;
    start_waiting_on_a_timer(store, "p-moved-timer", 1).await;
    let timer = claim(store, "w", TaskType::Timer).await;
    let fired = store.fired_timer_call(&timer).await.unwrap().unwrap();
    // The process is stopped while the worker runs the execute.
    store
        .stop_process(&ProcessExecutionStopRequest {
            process_execution_id: None,
            request_id: None,
            process_id: "p-moved-timer".into(),
            stop_type: ProcessExecutionStopType::Terminate,
            reason: None,
        })
        .await
        .unwrap();
    let before = history_types(store, "p-moved-timer").await;

    let result = store
        .complete_fired_execute(&timer, "w", &fired, &execute_then(&["B"]))
        .await;
    assert!(matches!(result, Err(StoreError::Stale(_))), "{result:?}");
    assert_eq!(history_types(store, "p-moved-timer").await, before);
    assert_eq!(
        describe(store, "p-moved-timer").await.status,
        ProcessStatus::Terminated
    );
    // Stopping deleted the timer task; a closed process's timer has no call either.
    assert_eq!(store.fired_timer_call(&timer).await.unwrap(), None);
}
