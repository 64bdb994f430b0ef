//! The sign-up process driven through the SDK worker as XDB would drive it: a stand-in
//! for the service keeps the `user` row, loads attributes per each call's loading policy
//! and applies the writes the worker returns.

use std::collections::HashMap;
use std::time::Duration;

use serde_json::{json, Value};
use xdb_samples::email::{EmailKind, EmailOutbox};
use xdb_samples::sample_worker;
use xdb_samples::user_signup::*;
use xdb_sdk::protocol::*;
use xdb_sdk::WorkerService;

const EMAIL: &str = "ann@example.com";

struct FakeXdb {
    worker: WorkerService,
    row: HashMap<String, Value>,
    calls: u32,
}

impl FakeXdb {
    fn new(outbox: &EmailOutbox) -> Self {
        let mut row = HashMap::new();
        row.insert(COL_USER_ID.to_string(), json!("ann"));
        row.insert(COL_FORM.to_string(), json!({"email": EMAIL, "name": "Ann"}));
        row.insert(COL_STATUS.to_string(), json!(STATUS_WAITING));
        row.insert(COL_SOURCE.to_string(), Value::Null);
        Self {
            worker: sample_worker(outbox.clone(), Duration::from_secs(1)),
            row,
            calls: 0,
        }
    }

    fn context(&mut self, state: Option<&str>) -> xdb_sdk::Context {
        self.calls += 1;
        Context {
            process_id: process_id("ann"),
            process_execution_id: "exec-1".into(),
            process_type: "UserSignupProcess".into(),
            state_execution_id: state.map(|s| format!("{s}-{}", self.calls)),
            attempt: 1,
            first_attempt_timestamp_ms: 0,
            process_started_timestamp_ms: 0,
            idempotency_key: format!("exec-1/call-{}", self.calls),
        }
    }

    fn load(&self, loading: Option<&GlobalAttributeLoading>) -> LoadedAttributes {
        let columns = loading.map(|l| l.columns.clone()).unwrap_or_default();
        LoadedAttributes {
            global_attributes: columns
                .into_iter()
                .map(|c| GlobalAttributeValue {
                    value: self.row.get(&c).cloned().unwrap_or(Value::Null),
                    column: c,
                })
                .collect(),
            local_attributes: vec![],
        }
    }

    fn apply(&mut self, writes: &AttributeWrites) {
        for w in &writes.global_attributes {
            self.row.insert(w.column.clone(), w.value.clone());
        }
    }

    fn config(&self, state: &str) -> AsyncStateConfig {
        let def = self.worker.definition("UserSignupProcess").unwrap();
        def.state_config(state).unwrap()
    }

    async fn execute(&mut self, state: &str, results: CommandResults) -> AsyncStateExecuteResponse {
        let req = AsyncStateExecuteRequest {
            context: self.context(Some(state)),
            process_type: "UserSignupProcess".into(),
            state_id: state.into(),
            state_input: None,
            command_results: results,
            attributes: self.load(self.config(state).global_attribute_loading.as_ref()),
        };
        let resp = self.worker.execute(req).await.unwrap();
        self.apply(&resp.writes);
        resp
    }

    async fn wait_until(&mut self, state: &str) -> AsyncStateWaitUntilResponse {
        let req = AsyncStateWaitUntilRequest {
            context: self.context(Some(state)),
            process_type: "UserSignupProcess".into(),
            state_id: state.into(),
            state_input: None,
            attributes: self.load(self.config(state).global_attribute_loading.as_ref()),
        };
        let resp = self.worker.wait_until(req).await.unwrap();
        self.apply(&resp.writes);
        resp
    }

    async fn verify_rpc(&mut self, source: &str) -> (String, ProcessRpcWorkerResponse) {
        let def = self.worker.definition("UserSignupProcess").unwrap();
        let loading = def
            .rpc_options(RPC_VERIFY)
            .unwrap()
            .global_attribute_loading
            .clone();
        assert_eq!(loading.as_ref().unwrap().lock_type, LockType::ExclusiveLock);
        let req = ProcessRpcWorkerRequest {
            context: self.context(None),
            process_type: "UserSignupProcess".into(),
            rpc_name: RPC_VERIFY.into(),
            input: Some(EncodedObject::json(&source).unwrap()),
            attributes: self.load(loading.as_ref()),
        };
        let resp = self.worker.rpc(req).await.unwrap();
        self.apply(&resp.writes);
        let output: String = serde_json::from_str(&resp.output.as_ref().unwrap().data).unwrap();
        (output, resp)
    }
}

fn timer_fired() -> CommandResults {
    CommandResults {
        timer_results: vec![TimerResult {
            status: TimerStatus::Fired,
        }],
        local_queue_results: vec![LocalQueueResult {
            queue_name: QUEUE_VERIFY.into(),
            status: LocalQueueCommandStatus::Skipped,
            messages: vec![],
        }],
    }
}

fn verify_received(messages: Vec<LocalQueueMessage>) -> CommandResults {
    CommandResults {
        timer_results: vec![TimerResult {
            status: TimerStatus::Skipped,
        }],
        local_queue_results: vec![LocalQueueResult {
            queue_name: QUEUE_VERIFY.into(),
            status: LocalQueueCommandStatus::Received,
            messages,
        }],
    }
}

/// Runs submit, one wait and one reminder; the user is then waiting in `VerifyState`.
async fn submit_and_remind_once(xdb: &mut FakeXdb, outbox: &EmailOutbox) {
    let resp = xdb.execute("SubmitState", CommandResults::default()).await;
    assert_eq!(resp.state_decision.next_states[0].state_id, "VerifyState");
    assert_eq!(outbox.kinds_sent_to(EMAIL), vec![EmailKind::Verification]);

    let wait = xdb.wait_until("VerifyState").await;
    assert_eq!(
        wait.command_request.waiting_type,
        CommandWaitingType::AnyOfCompletion
    );
    assert_eq!(wait.command_request.timer_commands[0].delay_in_seconds, 1);
    assert_eq!(
        wait.command_request.local_queue_commands[0].queue_name,
        QUEUE_VERIFY
    );

    let resp = xdb.execute("VerifyState", timer_fired()).await;
    assert_eq!(resp.state_decision.next_states[0].state_id, "VerifyState");
    assert!(resp.state_decision.thread_close_decision.is_none());
    assert_eq!(
        outbox.kinds_sent_to(EMAIL),
        vec![EmailKind::Verification, EmailKind::Reminder]
    );
}

#[tokio::test]
async fn rpc_verification_welcomes_and_completes() {
    let outbox = EmailOutbox::new();
    let mut xdb = FakeXdb::new(&outbox);
    submit_and_remind_once(&mut xdb, &outbox).await;

    let (output, resp) = xdb.verify_rpc("email").await;
    assert_eq!(output, "done");
    assert_eq!(xdb.row[COL_STATUS], json!(STATUS_VERIFIED));
    assert_eq!(xdb.row[COL_SOURCE], json!("email"));
    let published = &resp.publish_to_local_queue;
    assert_eq!(published.len(), 1);
    assert_eq!(published[0].queue_name, QUEUE_VERIFY);

    let (again, resp) = xdb.verify_rpc("sms").await;
    assert_eq!(again, "already verified");
    assert!(resp.writes.global_attributes.is_empty());
    assert!(resp.publish_to_local_queue.is_empty());
    assert_eq!(xdb.row[COL_SOURCE], json!("email"));

    let resp = xdb
        .execute("VerifyState", verify_received(published.clone()))
        .await;
    let close = resp.state_decision.thread_close_decision.unwrap();
    assert_eq!(close.close_type, ThreadCloseType::GracefulCompleteProcess);
    assert_eq!(close.output.unwrap().data, "\"done\"");
    assert!(
        resp.writes.global_attributes.is_empty(),
        "the RPC already recorded it"
    );
    assert_eq!(
        outbox.kinds_sent_to(EMAIL),
        vec![
            EmailKind::Verification,
            EmailKind::Reminder,
            EmailKind::Welcome
        ]
    );
}

#[tokio::test]
async fn queue_verification_records_the_source_itself() {
    let outbox = EmailOutbox::new();
    let mut xdb = FakeXdb::new(&outbox);
    submit_and_remind_once(&mut xdb, &outbox).await;

    let message = LocalQueueMessage {
        queue_name: QUEUE_VERIFY.into(),
        dedup_id: None,
        payload: Some(
            EncodedObject::json(&VerifyMessage {
                source: Some("link".into()),
            })
            .unwrap(),
        ),
    };
    let resp = xdb
        .execute("VerifyState", verify_received(vec![message]))
        .await;
    assert_eq!(
        resp.state_decision
            .thread_close_decision
            .unwrap()
            .close_type,
        ThreadCloseType::GracefulCompleteProcess
    );
    assert_eq!(xdb.row[COL_STATUS], json!(STATUS_VERIFIED));
    assert_eq!(xdb.row[COL_SOURCE], json!("link"));
    assert_eq!(outbox.count(EMAIL, EmailKind::Welcome), 1);
}

#[tokio::test]
async fn queue_message_without_payload_still_verifies() {
    let outbox = EmailOutbox::new();
    let mut xdb = FakeXdb::new(&outbox);
    xdb.execute("SubmitState", CommandResults::default()).await;
    let message = LocalQueueMessage {
        queue_name: QUEUE_VERIFY.into(),
        dedup_id: None,
        payload: None,
    };
    xdb.execute("VerifyState", verify_received(vec![message]))
        .await;
    assert_eq!(xdb.row[COL_SOURCE], json!(SOURCE_LOCAL_QUEUE));
    assert_eq!(
        outbox.kinds_sent_to(EMAIL),
        vec![EmailKind::Verification, EmailKind::Welcome]
    );
}

#[tokio::test]
async fn a_retried_call_does_not_email_twice() {
    let outbox = EmailOutbox::new();
    let mut xdb = FakeXdb::new(&outbox);
    let req = AsyncStateExecuteRequest {
        context: xdb.context(Some("SubmitState")),
        process_type: "UserSignupProcess".into(),
        state_id: "SubmitState".into(),
        state_input: None,
        command_results: CommandResults::default(),
        attributes: xdb.load(xdb.config("SubmitState").global_attribute_loading.as_ref()),
    };
    let mut retry = req.clone();
    retry.context.attempt = 2;
    xdb.worker.execute(req).await.unwrap();
    xdb.worker.execute(retry).await.unwrap();
    assert_eq!(outbox.count(EMAIL, EmailKind::Verification), 1);
}

#[tokio::test]
async fn states_load_every_declared_column_by_default() {
    let outbox = EmailOutbox::new();
    let xdb = FakeXdb::new(&outbox);
    let submit = xdb.config("SubmitState");
    assert!(submit.skip_wait_until);
    let loading = submit.global_attribute_loading.unwrap();
    assert_eq!(loading.columns, vec![COL_FORM, COL_STATUS, COL_SOURCE]);
    assert_eq!(loading.lock_type, LockType::NoLock);
    assert!(!xdb.config("VerifyState").skip_wait_until);
}

#[tokio::test]
async fn a_row_without_form_fails_the_call_with_a_reason() {
    let outbox = EmailOutbox::new();
    let mut xdb = FakeXdb::new(&outbox);
    xdb.row.insert(COL_FORM.into(), Value::Null);
    let req = AsyncStateExecuteRequest {
        context: xdb.context(Some("SubmitState")),
        process_type: "UserSignupProcess".into(),
        state_id: "SubmitState".into(),
        state_input: None,
        command_results: CommandResults::default(),
        attributes: xdb.load(xdb.config("SubmitState").global_attribute_loading.as_ref()),
    };
    let err = xdb.worker.execute(req).await.unwrap_err();
    assert_eq!(err.status.as_u16(), 500);
    assert!(
        err.body.detail.contains("no sign-up form"),
        "{}",
        err.body.detail
    );
    assert!(outbox.sent().is_empty());
}
