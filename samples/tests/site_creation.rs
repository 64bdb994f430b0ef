//! The site-creation process driven through the SDK worker as XDB would drive it: a
//! stand-in for the service keeps the `site` row and the execution's threads, retries a
//! failed call with the same idempotency key and a higher attempt, applies the writes
//! and messages of each call, and closes the process the way the decisions say.

use std::collections::{HashMap, VecDeque};
use std::time::Duration;

use serde_json::{json, Value};
use xdb_samples::site_creation::*;
use xdb_samples::site_services::{ExternalServices, Operation, SiteResources};
use xdb_samples::{sample_worker_with, SampleWorkerConfig};
use xdb_sdk::protocol::*;
use xdb_sdk::WorkerService;

const PROCESS_TYPE: &str = "SiteCreationProcess";
const SITE: &str = "s1";
/// Far more than any seed below needs; a loop past it is a bug.
const MAX_ATTEMPTS: u32 = 200;

/// A state execution waiting to run, as XDB's state table would hold it.
#[derive(Debug, Clone)]
struct Pending {
    state_id: String,
    input: Option<EncodedObject>,
    config: AsyncStateConfig,
    key: String,
}

/// How the execution ended.
#[derive(Debug, Clone, PartialEq)]
enum Closed {
    Completed(Value),
    Failed(Value),
}

struct FakeXdb {
    worker: WorkerService,
    row: HashMap<String, Value>,
    threads: VecDeque<Pending>,
    fs_ready: Vec<LocalQueueMessage>,
    graceful_output: Option<Value>,
    closed: Option<Closed>,
    executions: u32,
    /// Every worker call that failed and was retried.
    retries: u32,
    /// State ids in the order their execute succeeded.
    executed: Vec<String>,
    timers: Vec<u32>,
}

fn decode(output: &Option<EncodedObject>) -> Value {
    output
        .as_ref()
        .map(|o| serde_json::from_str(&o.data).unwrap())
        .unwrap_or(Value::Null)
}

impl FakeXdb {
    /// A started execution: the start transaction wrote the row; `SaveMetadata` is due.
    fn start(services: ExternalServices) -> Self {
        let options = SiteCreationOptions {
            deletion_grace: Duration::from_secs(3),
            ..Default::default()
        };
        let config = SampleWorkerConfig {
            site_services: services,
            site_options: options,
            ..SampleWorkerConfig::new(Default::default(), Duration::from_secs(60))
        };
        let mut row: HashMap<String, Value> = COLUMNS
            .iter()
            .map(|c| (c.to_string(), Value::Null))
            .collect();
        row.insert(COL_SITE_ID.into(), json!(SITE));
        row.insert(COL_STATUS.into(), json!(STATUS_CREATING));
        let mut xdb = Self {
            worker: sample_worker_with(&config),
            row,
            threads: VecDeque::new(),
            fs_ready: Vec::new(),
            graceful_output: None,
            closed: None,
            executions: 0,
            retries: 0,
            executed: Vec::new(),
            timers: Vec::new(),
        };
        let metadata = EncodedObject::json(&SiteMetadata {
            name: "My blog".into(),
        })
        .unwrap();
        xdb.push("SaveMetadata".into(), Some(metadata), None);
        xdb
    }

    fn push(
        &mut self,
        state_id: String,
        input: Option<EncodedObject>,
        config: Option<AsyncStateConfig>,
    ) {
        self.executions += 1;
        let config = config.unwrap_or_else(|| {
            let def = self.worker.definition(PROCESS_TYPE).unwrap();
            def.state_config(&state_id).unwrap()
        });
        self.threads.push_back(Pending {
            key: format!("exec-1/{state_id}-{}", self.executions),
            state_id,
            input,
            config,
        });
    }

    fn context(&self, pending: &Pending, api: &str, attempt: u32) -> Context {
        Context {
            process_id: process_id(SITE),
            process_execution_id: "exec-1".into(),
            process_type: PROCESS_TYPE.into(),
            state_execution_id: Some(pending.key.clone()),
            attempt,
            first_attempt_timestamp_ms: 0,
            process_started_timestamp_ms: 0,
            idempotency_key: format!("{}/{api}", pending.key),
        }
    }

    fn load(&self, loading: Option<&GlobalAttributeLoading>) -> LoadedAttributes {
        LoadedAttributes {
            global_attributes: loading
                .map(|l| l.columns.clone())
                .unwrap_or_default()
                .into_iter()
                .map(|c| GlobalAttributeValue {
                    value: self.row.get(&c).cloned().unwrap_or(Value::Null),
                    column: c,
                })
                .collect(),
            local_attributes: vec![],
        }
    }

    fn apply(&mut self, writes: &AttributeWrites, messages: &[LocalQueueMessage]) {
        assert!(
            self.closed.is_none(),
            "XDB rejects writes of a closed execution"
        );
        for w in &writes.global_attributes {
            self.row.insert(w.column.clone(), w.value.clone());
        }
        for m in messages {
            assert_eq!(m.queue_name, QUEUE_FS_READY);
            self.fs_ready.push(m.clone());
        }
    }

    /// Runs the pending execution of `state_id` (the oldest one when `None`): waitUntil if
    /// any, then execute, each retried until it succeeds. Returns `false`, leaving it
    /// pending, when it waits for a message that is not there yet.
    async fn step(&mut self, state_id: Option<&str>) -> bool {
        let index = match state_id {
            None => 0,
            Some(id) => self
                .threads
                .iter()
                .position(|p| p.state_id == id)
                .unwrap_or_else(|| panic!("{id} is not pending: {:?}", self.threads)),
        };
        let pending = self.threads.remove(index).unwrap();
        let mut results = CommandResults::default();
        if !pending.config.skip_wait_until {
            let request = self.wait_until(&pending).await;
            for timer in &request.timer_commands {
                // No clock here: a durable timer simply fires.
                self.timers.push(timer.delay_in_seconds);
                results.timer_results.push(TimerResult {
                    status: TimerStatus::Fired,
                });
            }
            for command in &request.local_queue_commands {
                assert_eq!(command.queue_name, QUEUE_FS_READY);
                if self.fs_ready.is_empty() {
                    self.threads.insert(index, pending);
                    return false;
                }
                results.local_queue_results.push(LocalQueueResult {
                    queue_name: command.queue_name.clone(),
                    status: LocalQueueCommandStatus::Received,
                    messages: vec![self.fs_ready.remove(0)],
                });
            }
        }
        let response = self.execute(&pending, results).await;
        self.executed.push(pending.state_id.clone());
        self.apply(&response.writes, &response.publish_to_local_queue);
        let decision = response.state_decision;
        for next in decision.next_states {
            self.push(next.state_id, next.state_input, next.state_config);
        }
        match decision.thread_close_decision {
            None => {}
            Some(close) => match close.close_type {
                ThreadCloseType::DeadEnd => {}
                ThreadCloseType::GracefulCompleteProcess => {
                    self.graceful_output = Some(decode(&close.output))
                }
                ThreadCloseType::ForceCompleteProcess => {
                    self.threads.clear();
                    self.closed = Some(Closed::Completed(decode(&close.output)));
                }
                ThreadCloseType::ForceFailProcess => {
                    self.threads.clear();
                    self.closed = Some(Closed::Failed(decode(&close.output)));
                }
            },
        }
        if self.closed.is_none() && self.threads.is_empty() {
            if let Some(output) = self.graceful_output.take() {
                self.closed = Some(Closed::Completed(output));
            }
        }
        true
    }

    /// Steps the oldest runnable execution until the process closes or nothing can run.
    async fn run(&mut self) {
        while self.closed.is_none() {
            let runnable = self.threads.iter().position(|p| {
                p.config.skip_wait_until || p.state_id != "MarkCreated" || !self.fs_ready.is_empty()
            });
            let Some(index) = runnable else { return };
            let id = self.threads[index].state_id.clone();
            assert!(self.step(Some(&id)).await);
        }
    }

    async fn wait_until(&mut self, pending: &Pending) -> CommandRequest {
        for attempt in 1..=MAX_ATTEMPTS {
            let req = AsyncStateWaitUntilRequest {
                context: self.context(pending, "wait-until", attempt),
                process_type: PROCESS_TYPE.into(),
                state_id: pending.state_id.clone(),
                state_input: pending.input.clone(),
                attributes: self.load(pending.config.global_attribute_loading.as_ref()),
            };
            match self.worker.wait_until(req).await {
                Ok(resp) => {
                    self.apply(&resp.writes, &resp.publish_to_local_queue);
                    return resp.command_request;
                }
                Err(_) => self.retries += 1,
            }
        }
        panic!("waitUntil of {} never succeeded", pending.state_id)
    }

    async fn execute(
        &mut self,
        pending: &Pending,
        results: CommandResults,
    ) -> AsyncStateExecuteResponse {
        for attempt in 1..=MAX_ATTEMPTS {
            let req = AsyncStateExecuteRequest {
                context: self.context(pending, "execute", attempt),
                process_type: PROCESS_TYPE.into(),
                state_id: pending.state_id.clone(),
                state_input: pending.input.clone(),
                command_results: results.clone(),
                // Reloaded per attempt, so a retry sees a deletion that happened meanwhile.
                attributes: self.load(pending.config.global_attribute_loading.as_ref()),
            };
            match self.worker.execute(req).await {
                Ok(resp) => return resp,
                Err(err) => {
                    assert_eq!(err.status.as_u16(), 500, "{:?}", err.body);
                    self.retries += 1;
                }
            }
        }
        panic!("execute of {} never succeeded", pending.state_id)
    }

    async fn delete(&mut self) -> DeleteOutcome {
        let def = self.worker.definition(PROCESS_TYPE).unwrap();
        let loading = def
            .rpc_options(RPC_DELETE)
            .unwrap()
            .global_attribute_loading
            .clone();
        let req = ProcessRpcWorkerRequest {
            context: Context {
                process_id: process_id(SITE),
                process_execution_id: "exec-1".into(),
                process_type: PROCESS_TYPE.into(),
                state_execution_id: None,
                attempt: 1,
                first_attempt_timestamp_ms: 0,
                process_started_timestamp_ms: 0,
                idempotency_key: "exec-1/rpc-delete".into(),
            },
            process_type: PROCESS_TYPE.into(),
            rpc_name: RPC_DELETE.into(),
            input: None,
            attributes: self.load(loading.as_ref()),
        };
        let resp = self.worker.rpc(req).await.unwrap();
        self.apply(&resp.writes, &resp.publish_to_local_queue);
        for next in resp.append_next_states {
            self.push(next.state_id, next.state_input, next.state_config);
        }
        serde_json::from_value(decode(&resp.output)).unwrap()
    }

    fn col(&self, column: &str) -> &Value {
        &self.row[column]
    }
}

#[tokio::test]
async fn creates_a_site_through_random_failures_with_each_effect_once() {
    let mut total_retries = 0;
    for seed in 1..=8 {
        let services = ExternalServices::faulty(0.4, seed);
        let mut xdb = FakeXdb::start(services.clone());
        xdb.run().await;

        assert_eq!(
            xdb.closed,
            Some(Closed::Completed(json!(STATUS_CREATED))),
            "seed {seed}"
        );
        assert_eq!(xdb.col(COL_STATUS), &json!(STATUS_CREATED));
        assert_eq!(xdb.col(COL_NAME), &json!("My blog"));
        for column in STEP_COLUMNS {
            assert_eq!(xdb.col(column), &json!(STEP_DONE), "{column}, seed {seed}");
        }
        for op in [
            Operation::CreateFileSystem,
            Operation::CreateDatabase,
            Operation::Bootstrap,
        ] {
            assert_eq!(services.count(SITE, op), 1, "{op:?}, seed {seed}");
        }
        assert_eq!(services.count(SITE, Operation::DropDatabase), 0);
        assert_eq!(
            services.resources(SITE),
            SiteResources {
                file_system: true,
                database: true,
                bootstrapped: true
            }
        );
        assert_eq!(xdb.executed.len(), 5, "{:?}", xdb.executed);
        assert_eq!(xdb.executed[0], "SaveMetadata");
        assert_eq!(xdb.executed[4], "MarkCreated");
        assert!(xdb.fs_ready.is_empty(), "the join consumed the message");
        total_retries += xdb.retries;
    }
    assert!(total_retries > 0, "the seeds should inject failures");
}

#[tokio::test]
async fn save_metadata_forks_the_two_branches() {
    let mut xdb = FakeXdb::start(ExternalServices::reliable());
    assert!(xdb.step(None).await);
    let ids: Vec<&str> = xdb.threads.iter().map(|p| p.state_id.as_str()).collect();
    assert_eq!(ids, ["CreateFs", "CreateDb"]);
    assert_eq!(xdb.col(COL_METADATA_STATUS), &json!(STEP_DONE));
    assert_eq!(
        xdb.col(COL_STATUS),
        &json!(STATUS_CREATING),
        "not rewritten"
    );
    for pending in &xdb.threads {
        let policy = pending.config.execute_api_retry_policy.as_ref().unwrap();
        assert_eq!(policy, &default_retry_policy());
    }
}

#[tokio::test]
async fn the_join_waits_for_the_file_system_branch() {
    let services = ExternalServices::reliable();
    let mut xdb = FakeXdb::start(services.clone());
    xdb.step(Some("SaveMetadata")).await;
    xdb.step(Some("CreateDb")).await;
    xdb.step(Some("Bootstrap")).await;
    assert!(!xdb.step(Some("MarkCreated")).await, "no fs-ready yet");
    assert_eq!(xdb.col(COL_STATUS), &json!(STATUS_CREATING));
    assert!(xdb.graceful_output.is_none() && xdb.closed.is_none());

    xdb.step(Some("CreateFs")).await;
    assert_eq!(xdb.fs_ready.len(), 1);
    assert!(xdb.closed.is_none(), "MarkCreated still runs");
    assert!(xdb.step(Some("MarkCreated")).await);
    assert_eq!(xdb.closed, Some(Closed::Completed(json!(STATUS_CREATED))));
    assert_eq!(xdb.col(COL_STATUS), &json!(STATUS_CREATED));
}

#[tokio::test]
async fn a_deletion_aborts_the_creation_in_flight() {
    let services = ExternalServices::faulty(0.3, 11);
    let mut xdb = FakeXdb::start(services.clone());
    xdb.step(Some("SaveMetadata")).await;
    xdb.step(Some("CreateFs")).await;
    xdb.step(Some("CreateDb")).await;
    assert!(services.resources(SITE).file_system && services.resources(SITE).database);

    assert_eq!(xdb.delete().await, DeleteOutcome::Deleting);
    assert_eq!(xdb.col(COL_STATUS), &json!(STATUS_DELETING));
    assert_eq!(xdb.delete().await, DeleteOutcome::AlreadyDeleting);
    let pending: Vec<&str> = xdb.threads.iter().map(|p| p.state_id.as_str()).collect();
    assert_eq!(pending, ["Bootstrap", "DeleteSite"], "one DeleteSite only");

    xdb.run().await;
    assert_eq!(xdb.closed, Some(Closed::Completed(json!(STATUS_DELETED))));
    assert_eq!(xdb.col(COL_STATUS), &json!(STATUS_DELETED));
    assert_eq!(xdb.timers, [3], "DeleteSite waits the grace period");
    assert_eq!(
        services.count(SITE, Operation::Bootstrap),
        0,
        "Bootstrap saw the deletion and stopped"
    );
    assert!(xdb.col(COL_BOOTSTRAP_STATUS).is_null());
    assert!(!xdb.executed.contains(&"MarkCreated".to_string()));
    assert_eq!(services.resources(SITE), SiteResources::default());
    assert_eq!(services.count(SITE, Operation::DeleteFileSystem), 1);
    assert_eq!(services.count(SITE, Operation::DropDatabase), 1);
}

#[tokio::test]
async fn a_deletion_before_any_step_creates_nothing() {
    let services = ExternalServices::reliable();
    let mut xdb = FakeXdb::start(services.clone());
    assert_eq!(xdb.delete().await, DeleteOutcome::Deleting);
    xdb.run().await;
    assert_eq!(xdb.executed, ["SaveMetadata", "DeleteSite"]);
    assert!(xdb.col(COL_NAME).is_null() && xdb.col(COL_METADATA_STATUS).is_null());
    assert_eq!(xdb.col(COL_STATUS), &json!(STATUS_DELETED));
    assert_eq!(services.count(SITE, Operation::CreateFileSystem), 0);
    assert_eq!(xdb.closed, Some(Closed::Completed(json!(STATUS_DELETED))));
}

#[tokio::test]
async fn a_deletion_stops_a_state_between_its_retries() {
    // Every call fails until the deletion; the retry after it reloads the row and stops.
    let services = ExternalServices::faulty(1.0, 3);
    let mut xdb = FakeXdb::start(services.clone());
    xdb.step(Some("SaveMetadata")).await;
    let pending = xdb.threads[0].clone();
    assert_eq!(pending.state_id, "CreateFs");
    let req = AsyncStateExecuteRequest {
        context: xdb.context(&pending, "execute", 1),
        process_type: PROCESS_TYPE.into(),
        state_id: pending.state_id.clone(),
        state_input: None,
        command_results: CommandResults::default(),
        attributes: xdb.load(pending.config.global_attribute_loading.as_ref()),
    };
    let err = xdb.worker.execute(req.clone()).await.unwrap_err();
    assert_eq!(err.status.as_u16(), 500);
    assert!(err.body.detail.contains("injected"), "{}", err.body.detail);

    xdb.delete().await;
    let mut retry = req;
    retry.context.attempt = 2;
    retry.attributes = xdb.load(pending.config.global_attribute_loading.as_ref());
    let resp = xdb.worker.execute(retry).await.unwrap();
    assert_eq!(
        resp.state_decision
            .thread_close_decision
            .unwrap()
            .close_type,
        ThreadCloseType::DeadEnd
    );
    assert!(resp.writes.global_attributes.is_empty());
    assert!(resp.publish_to_local_queue.is_empty());
}

#[tokio::test]
async fn an_unexpected_status_fails_the_process() {
    let mut xdb = FakeXdb::start(ExternalServices::reliable());
    xdb.row.insert(COL_STATUS.into(), json!("archived"));
    xdb.step(None).await;
    let Some(Closed::Failed(details)) = &xdb.closed else {
        panic!("{:?}", xdb.closed)
    };
    assert!(details.as_str().unwrap().contains("archived"), "{details}");
    assert!(xdb.col(COL_NAME).is_null());
}

#[tokio::test]
async fn the_delete_rpc_locks_the_row() {
    let xdb = FakeXdb::start(ExternalServices::reliable());
    let def = xdb.worker.definition(PROCESS_TYPE).unwrap();
    let loading = def
        .rpc_options(RPC_DELETE)
        .unwrap()
        .global_attribute_loading
        .clone()
        .unwrap();
    assert_eq!(loading.lock_type, LockType::ExclusiveLock);
    assert_eq!(loading.columns, [COL_SITE_ID, COL_STATUS]);
    let delete_site = def.state_config("DeleteSite").unwrap();
    assert!(!delete_site.skip_wait_until);
}
