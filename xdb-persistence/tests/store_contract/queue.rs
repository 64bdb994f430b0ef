//! Local queues: FIFO delivery to a waiting state, de-duplicated by message id.

use xdb_engine::decide::DecideError;
use xdb_engine::TaskType;
use xdb_persistence::StoreError;
use xdb_protocol::*;
use xdb_test_util::Dialect;

use crate::common::*;

both!(messages_are_deduplicated_and_delivered_in_order);

fn message(dedup_id: &str, data: &str) -> LocalQueueMessage {
    LocalQueueMessage {
        queue_name: "q".into(),
        dedup_id: Some(dedup_id.into()),
        payload: Some(encoded(data)),
    }
}

async fn publish(
    store: &dyn xdb_persistence::ProcessStore,
    messages: Vec<LocalQueueMessage>,
) -> Result<(), StoreError> {
    store
        .publish_to_local_queue(&PublishToLocalQueueRequest {
            process_execution_id: None,
            request_id: None,
            process_id: "p-queue".into(),
            messages,
        })
        .await
}

async fn messages_are_deduplicated_and_delivered_in_order(dialect: Dialect) {
    let h = harness(dialect).await;
    let store = &*h.store;
    store
        .start_process(&start_request("p-queue", "A"))
        .await
        .unwrap();
    // Published before anyone waits: queued.
    publish(store, vec![message("m1", "1")]).await.unwrap();

    let (task, call) = claim_call(store, "w", TaskType::WaitUntil).await;
    let wait = AsyncStateWaitUntilResponse {
        command_request: CommandRequest {
            waiting_type: CommandWaitingType::AllOfCompletion,
            timer_commands: vec![],
            local_queue_commands: vec![LocalQueueCommand {
                queue_name: "q".into(),
                count: Some(3),
            }],
        },
        ..Default::default()
    };
    store
        .complete_wait_until(&task, "w", &call, &wait)
        .await
        .unwrap();
    assert_nothing_due(store, "w").await;

    // A duplicate id is dropped; the state still waits for a third message.
    publish(store, vec![message("m1", "1 again"), message("m2", "2")])
        .await
        .unwrap();
    assert_nothing_due(store, "w").await;
    publish(store, vec![message("m3", "3"), message("m4", "4")])
        .await
        .unwrap();

    let (_, call) = claim_call(store, "w", TaskType::Execute).await;
    let progress = call.state.command_progress.expect("queue progress");
    let received = progress.queues_received[0].clone().expect("complete");
    let payloads: Vec<String> = received
        .iter()
        .map(|m| m.payload.as_ref().unwrap().data.clone())
        .collect();
    assert_eq!(payloads, ["1", "2", "3"]);
    let ids: Vec<&str> = received
        .iter()
        .map(|m| m.dedup_id.as_deref().unwrap())
        .collect();
    assert_eq!(ids, ["m1", "m2", "m3"]);

    let history = store
        .process_history(&ProcessExecutionHistoryRequest {
            process_id: "p-queue".into(),
            process_execution_id: None,
            ..Default::default()
        })
        .await
        .unwrap();
    let duplicates: Vec<u64> = history
        .events
        .iter()
        .filter(|e| e.event_type == "LOCAL_QUEUE_MESSAGES_PUBLISHED")
        .map(|e| e.details["duplicates"].as_u64().unwrap())
        .collect();
    assert_eq!(duplicates, [0, 1, 0]);

    // Bad names are refused; a closed process takes no messages.
    let error = publish(store, vec![message("", "x")]).await.unwrap_err();
    assert!(
        matches!(error, StoreError::Decide(DecideError::Invalid(_))),
        "{error:?}"
    );
    store
        .stop_process(&ProcessExecutionStopRequest {
            process_execution_id: None,
            request_id: None,
            process_id: "p-queue".into(),
            stop_type: ProcessExecutionStopType::Terminate,
            reason: None,
        })
        .await
        .unwrap();
    let error = publish(store, vec![message("m9", "9")]).await.unwrap_err();
    assert!(
        matches!(error, StoreError::Decide(DecideError::NotRunning)),
        "{error:?}"
    );
}
