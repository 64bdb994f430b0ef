//! The site-creation sample (seed 004) on the real services: parallel threads joined by
//! local queue `fs-ready`, external calls retried until they succeed, and a deletion
//! that aborts a creation in flight.

use std::collections::BTreeMap;
use std::time::Duration;

use serde_json::{json, Value};
use xdb_integration_tests::rows::HistoryRow;
use xdb_integration_tests::worker_faults::{CallMatch, StateApiKind, WorkerFaults};
use xdb_integration_tests::{eventually, Database, XdbTestEnv};
use xdb_samples::site_creation::{
    delete_site, process_id, start_site_creation, DeleteOutcome, SiteCreationOptions,
    SiteCreationProcess, STATUS_CREATED, STATUS_DELETED, STEP_DONE,
};
use xdb_samples::site_services::{ExternalServices, Operation, SiteResources};
use xdb_sdk::protocol::{ErrorSubType, ProcessStatus};
use xdb_sdk::{ClientError, WorkerService};

use crate::common::*;

/// The state executions a creation runs, each once.
const CREATION_STATES: [&str; 5] = [
    "SaveMetadata-1",
    "CreateFs-1",
    "CreateDb-1",
    "Bootstrap-1",
    "MarkCreated-1",
];

/// A worker hosting the site-creation sample over `services`, behind `faults`.
async fn serve_sites(
    env: &mut XdbTestEnv,
    services: &ExternalServices,
    options: SiteCreationOptions,
    faults: &WorkerFaults,
) -> String {
    let router = WorkerService::new()
        .register(SiteCreationProcess::new(services.clone(), options))
        .router();
    env.start_worker(faults.wrap(router)).await
}

/// The position of the first history event of `event_type` about state execution `state`.
fn position(history: &[HistoryRow], event_type: &str, state: &str) -> usize {
    history
        .iter()
        .position(|e| e.event_type == event_type && e.details["stateExecutionId"] == state)
        .unwrap_or_else(|| panic!("no {event_type} of {state} in {history:#?}"))
}

/// `EXECUTE_COMPLETED` events per state execution id.
fn executes_completed(history: &[HistoryRow]) -> BTreeMap<String, usize> {
    let mut counts = BTreeMap::new();
    for event in history
        .iter()
        .filter(|e| e.event_type == "EXECUTE_COMPLETED")
    {
        let id = event.details["stateExecutionId"]
            .as_str()
            .unwrap_or_else(|| panic!("EXECUTE_COMPLETED without a state: {event:?}"))
            .to_string();
        *counts.entry(id).or_default() += 1;
    }
    counts
}

fn once_each(ids: &[&str]) -> BTreeMap<String, usize> {
    ids.iter().map(|id| (id.to_string(), 1)).collect()
}

async fn site_creation_end_to_end_forks_joins_and_records_every_step(db: Database) {
    let mut env = XdbTestEnv::start(db).await;
    let services = ExternalServices::reliable();
    let faults = WorkerFaults::new();
    let worker = serve_sites(&mut env, &services, SiteCreationOptions::default(), &faults).await;

    let exec = start_site_creation(&env.client, Some(&worker), "s1", "My blog")
        .await
        .expect("start");
    let done = env
        .client
        .wait_for_process_completion(&process_id("s1"), Duration::from_secs(20))
        .await
        .unwrap();
    assert_eq!(done.status, ProcessStatus::Completed, "{done:?}");
    assert_eq!(decode(&done.result), json!(STATUS_CREATED));

    let site = env.site_row("s1").await.expect("site row");
    assert_eq!(site.status, STATUS_CREATED);
    assert_eq!(site.name.as_deref(), Some("My blog"));
    for (column, value) in [
        ("metadata_status", &site.metadata_status),
        ("fs_status", &site.fs_status),
        ("db_status", &site.db_status),
        ("bootstrap_status", &site.bootstrap_status),
    ] {
        assert_eq!(value.as_deref(), Some(STEP_DONE), "{column}: {site:?}");
    }
    let resources = services.resources("s1");
    assert_eq!(
        resources,
        SiteResources {
            file_system: true,
            database: true,
            bootstrapped: true
        }
    );
    for operation in [
        Operation::CreateFileSystem,
        Operation::CreateDatabase,
        Operation::Bootstrap,
    ] {
        assert_eq!(services.count("s1", operation), 1, "{operation:?}");
    }

    // Five state executions, each completed once; the two branches were created by
    // SaveMetadata's decision, in its transaction.
    let states = env.state_rows(&exec).await;
    let mut ids: Vec<String> = states.iter().map(|s| s.execution_id()).collect();
    ids.sort();
    let mut expected: Vec<String> = CREATION_STATES.iter().map(|s| s.to_string()).collect();
    expected.sort();
    assert_eq!(ids, expected, "{states:#?}");
    assert!(
        states.iter().all(|s| s.status == "COMPLETED"),
        "{states:#?}"
    );
    let state = |id: &str| {
        states
            .iter()
            .find(|s| s.execution_id() == id)
            .unwrap()
            .clone()
    };
    // Both threads start in SaveMetadata's transaction (its decision forks them, see the
    // history below). Dialect difference: PostgreSQL stamps `created_at` with the
    // transaction's time, so the two are equal; MySQL with UTC_TIMESTAMP(6) of each
    // INSERT statement, so CreateDb-1 is stamped a little after CreateFs-1 (inserted in
    // decision order), still before anything CreateDb-1 led to.
    let (fs, db_) = (
        state("CreateFs-1").created_at,
        state("CreateDb-1").created_at,
    );
    match db {
        Database::Postgres => assert_eq!(fs, db_, "both threads start in one transaction"),
        Database::MySql => assert!(
            fs <= db_ && db_ - fs < chrono::Duration::milliseconds(500),
            "both threads start in one transaction: {fs:?} vs {db_:?}"
        ),
    }
    assert!(state("SaveMetadata-1").created_at < state("CreateFs-1").created_at);
    assert!(state("CreateDb-1").created_at < state("Bootstrap-1").created_at);
    assert!(state("Bootstrap-1").created_at < state("MarkCreated-1").created_at);

    let history = env.history(&exec).await;
    let types: Vec<&str> = history.iter().map(|e| e.event_type.as_str()).collect();
    assert_eq!(types.first(), Some(&"PROCESS_STARTED"), "{types:?}");
    assert_eq!(types.last(), Some(&"PROCESS_CLOSED"), "{types:?}");
    assert_eq!(executes_completed(&history), once_each(&CREATION_STATES));
    assert!(!types.contains(&"STATE_API_FAILED"), "{types:?}");
    let save = &history[position(&history, "EXECUTE_COMPLETED", "SaveMetadata-1")];
    let forked: Vec<&Value> = save.details["decision"]["nextStates"]
        .as_array()
        .unwrap_or_else(|| panic!("SaveMetadata forks: {save:?}"))
        .iter()
        .map(|m| &m["stateId"])
        .collect();
    assert_eq!(forked, [&json!("CreateFs"), &json!("CreateDb")]);
    let at = |event: &str, state: &str| position(&history, event, state);
    let save_done = at("EXECUTE_COMPLETED", "SaveMetadata-1");
    assert!(save_done < at("EXECUTE_COMPLETED", "CreateFs-1"));
    assert!(save_done < at("EXECUTE_COMPLETED", "CreateDb-1"));
    assert!(at("EXECUTE_COMPLETED", "CreateDb-1") < at("EXECUTE_COMPLETED", "Bootstrap-1"));
    assert!(at("EXECUTE_COMPLETED", "Bootstrap-1") < at("WAIT_UNTIL_COMPLETED", "MarkCreated-1"));
    // MarkCreated runs only after the file-system branch published `fs-ready`.
    assert!(at("EXECUTE_COMPLETED", "CreateFs-1") < at("EXECUTE_COMPLETED", "MarkCreated-1"));
    assert_eq!(
        at("EXECUTE_COMPLETED", "MarkCreated-1"),
        history.len() - 2,
        "the join's execute closes the process: {types:?}"
    );
    let messages = env.messages(&exec).await;
    assert_eq!(messages.len(), 1, "{messages:?}");
    assert_eq!(messages[0].queue_name, "fs-ready");
    assert_eq!(messages[0].consumed_by.as_deref(), Some("MarkCreated-1"));
    assert!(env.tasks(&exec).await.is_empty());
    env.shutdown().await;
}

async fn random_failures_are_retried_until_every_site_is_created_once(db: Database) {
    const SITES: usize = 20;
    let mut env = XdbTestEnv::start(db).await;
    let services = ExternalServices::faulty(0.3, 4);
    let faults = WorkerFaults::new();
    let worker = serve_sites(&mut env, &services, SiteCreationOptions::default(), &faults).await;
    let site = |i: usize| format!("site-{i:02}");

    let mut execs = Vec::new();
    for i in 0..SITES {
        let exec = start_site_creation(&env.client, Some(&worker), &site(i), &format!("Blog {i}"))
            .await
            .expect("start");
        execs.push(exec);
    }
    for (i, exec) in execs.iter().enumerate() {
        let done = env
            .client
            .wait_for_process_completion(&process_id(&site(i)), Duration::from_secs(30))
            .await
            .unwrap();
        if done.status != ProcessStatus::Completed {
            panic!(
                "{} did not complete: {done:?}\n{}",
                site(i),
                dump_execution(&env, exec).await
            );
        }
        assert_eq!(decode(&done.result), json!(STATUS_CREATED));
    }

    let injected = services.injected_failures();
    assert!(injected > 0, "the services failed at least once");
    let mut api_failures = 0;
    for (i, exec) in execs.iter().enumerate() {
        let site_id = site(i);
        let row = env.site_row(&site_id).await.expect("site row");
        assert_eq!(row.status, STATUS_CREATED, "{row:?}");
        assert_eq!(
            [
                &row.metadata_status,
                &row.fs_status,
                &row.db_status,
                &row.bootstrap_status
            ]
            .map(|c| c.as_deref()),
            [Some(STEP_DONE); 4],
            "{site_id}: {row:?}"
        );
        // Every external effect took place once, whatever the retries.
        let report = services
            .report(&site_id)
            .expect("the services know the site");
        assert_eq!(
            report.effects,
            BTreeMap::from([
                (Operation::CreateFileSystem, 1),
                (Operation::CreateDatabase, 1),
                (Operation::Bootstrap, 1),
            ]),
            "{site_id}"
        );
        assert_eq!(
            report.resources,
            SiteResources {
                file_system: true,
                database: true,
                bootstrapped: true
            }
        );
        let history = env.history(exec).await;
        assert_eq!(
            executes_completed(&history),
            once_each(&CREATION_STATES),
            "{site_id}: each state completed once"
        );
        let failed: Vec<&HistoryRow> = history
            .iter()
            .filter(|e| e.event_type == "STATE_API_FAILED")
            .collect();
        for failure in &failed {
            let state = failure.details["stateExecutionId"].as_str().unwrap_or("");
            assert!(
                ["CreateFs-1", "CreateDb-1", "Bootstrap-1"].contains(&state),
                "only the states calling services fail: {failure:?}"
            );
        }
        api_failures += failed.len();
        let states = env.state_rows(exec).await;
        assert_eq!(states.len(), CREATION_STATES.len(), "{states:#?}");
        assert!(
            states.iter().all(|s| s.status == "COMPLETED"),
            "{states:#?}"
        );
    }
    // Each injected failure failed one execute attempt, which XDB recorded and retried.
    assert_eq!(
        api_failures as u64, injected,
        "STATE_API_FAILED events vs injected failures"
    );
    assert_eq!(
        env.count("SELECT count(*) FROM xdb_sys_tasks", &[]).await,
        0
    );
    env.shutdown().await;
}

/// How many times state execution `state` of `exec` has failed so far.
async fn api_failures(env: &XdbTestEnv, exec: &str, state: &str) -> usize {
    env.history(exec)
        .await
        .iter()
        .filter(|e| e.event_type == "STATE_API_FAILED" && e.details["stateExecutionId"] == state)
        .count()
}

async fn delete_aborts_a_creation_in_flight_and_cleans_up(db: Database) {
    let mut env = XdbTestEnv::start(db).await;
    let services = ExternalServices::reliable();
    let faults = WorkerFaults::new();
    let options = SiteCreationOptions {
        deletion_grace: Duration::ZERO,
        ..Default::default()
    };
    let worker = serve_sites(&mut env, &services, options, &faults).await;
    // Site "early": CreateDb keeps failing, so its database is never made.
    // Site "late": Bootstrap fails for a while, then bootstraps but its answer is still
    // on the way back when the deletion runs.
    let (early, late) = (process_id("early"), process_id("late"));
    faults.fail(CallMatch::state("CreateDb", StateApiKind::Execute).in_process(&early));
    faults.fail(CallMatch::state("Bootstrap", StateApiKind::Execute).in_process(&late));
    faults.hold(CallMatch::state("Bootstrap", StateApiKind::Execute).in_process(&late));
    let early_exec = start_site_creation(&env.client, Some(&worker), "early", "Early")
        .await
        .unwrap();
    let late_exec = start_site_creation(&env.client, Some(&worker), "late", "Late")
        .await
        .unwrap();
    eventually(
        "CreateDb of early and Bootstrap of late to be retrying",
        SOON,
        || async {
            api_failures(&env, &early_exec, "CreateDb-1").await >= 2
                && api_failures(&env, &late_exec, "Bootstrap-1").await >= 2
        },
    )
    .await;
    wait_state(&env, &early_exec, "CreateFs", 1, "COMPLETED").await;

    // 1. Delete "early" while CreateDb retries, twice at once: the RPC locks the row, so
    //    exactly one call starts the deletion. With no grace the deletion may finish
    //    before the other call reaches the service or while it runs, which the service
    //    answers with a 409: the process runs no more, or closed during the call.
    let (first, second) = tokio::join!(
        delete_site(&env.client, "early"),
        delete_site(&env.client, "early")
    );
    let other = match (first, second) {
        (Ok(DeleteOutcome::Deleting), other) | (other, Ok(DeleteOutcome::Deleting)) => other,
        (first, second) => panic!("no call started the deletion: {first:?}, {second:?}"),
    };
    match other {
        Ok(outcome) => assert_eq!(outcome, DeleteOutcome::AlreadyDeleting),
        Err(ClientError::Api { status: 409, error })
            if matches!(
                error.sub_type,
                ErrorSubType::ProcessNotRunning | ErrorSubType::ProcessClosedDuringRpc
            ) => {}
        other => panic!("the other deletion call: {other:?}"),
    }
    let done = env
        .client
        .wait_for_process_completion(&early, Duration::from_secs(20))
        .await
        .unwrap();
    assert_eq!(done.status, ProcessStatus::Completed, "{done:?}");
    assert_eq!(decode(&done.result), json!(STATUS_DELETED));
    let row = env.site_row("early").await.unwrap();
    assert_eq!(row.status, STATUS_DELETED, "{row:?}");
    assert_eq!(row.fs_status.as_deref(), Some(STEP_DONE), "{row:?}");
    assert_eq!((row.db_status, row.bootstrap_status), (None, None));
    assert_eq!(services.resources("early"), SiteResources::default());
    assert_eq!(services.count("early", Operation::CreateFileSystem), 1);
    assert_eq!(services.count("early", Operation::CreateDatabase), 0);
    assert_eq!(services.count("early", Operation::DeleteFileSystem), 1);
    // The retrying state was aborted with its retry task: nothing can call it again.
    let early_db = env.state_row(&early_exec, "CreateDb", 1).await.unwrap();
    assert_eq!(early_db.status, "ABORTED", "{early_db:?}");
    assert!(env.tasks(&early_exec).await.is_empty());
    assert_eq!(
        executes_completed(&env.history(&early_exec).await),
        once_each(&["SaveMetadata-1", "CreateFs-1", "DeleteSite-1"])
    );
    assert!(env.state_row(&early_exec, "Bootstrap", 1).await.is_none());
    assert!(env.state_row(&early_exec, "DeleteSite", 2).await.is_none());

    // 2. "late": let Bootstrap through; its answer (bootstrap_status = done, next
    //    MarkCreated) is held while the deletion runs.
    faults.stop_failing();
    eventually("late's bootstrap answer to be held", SOON, || async {
        faults.held() == 1
    })
    .await;
    assert!(services.resources("late").bootstrapped);
    assert_eq!(
        delete_site(&env.client, "late").await.unwrap(),
        DeleteOutcome::Deleting
    );
    let done = env
        .client
        .wait_for_process_completion(&late, Duration::from_secs(20))
        .await
        .unwrap();
    assert_eq!(done.status, ProcessStatus::Completed, "{done:?}");
    assert_eq!(decode(&done.result), json!(STATUS_DELETED));
    // A second deletion finds the process closed.
    assert!(delete_site(&env.client, "late").await.is_err());
    // The stale answer arrives now; stopping the async instance waits for it to be
    // handled, so whatever it would write is written before the checks below.
    faults.release();
    eventually("the held answer to be delivered", SOON, || async {
        faults.delivered_after_hold() == 1
    })
    .await;
    env.stop_async_instances().await;

    let row = env.site_row("late").await.unwrap();
    assert_eq!(row.status, STATUS_DELETED, "{row:?}");
    assert_eq!(row.db_status.as_deref(), Some(STEP_DONE), "{row:?}");
    assert_eq!(
        row.bootstrap_status, None,
        "the bootstrap's write came after the deletion and must be refused: {row:?}"
    );
    assert_eq!(services.resources("late"), SiteResources::default());
    for operation in [
        Operation::CreateFileSystem,
        Operation::CreateDatabase,
        Operation::Bootstrap,
        Operation::DeleteFileSystem,
        Operation::DropDatabase,
    ] {
        assert_eq!(services.count("late", operation), 1, "{operation:?}");
    }
    let states = env.state_rows(&late_exec).await;
    let status_of = |id: &str| {
        states
            .iter()
            .find(|s| s.execution_id() == id)
            .map(|s| s.status.clone())
    };
    assert_eq!(
        status_of("Bootstrap-1").as_deref(),
        Some("ABORTED"),
        "{states:#?}"
    );
    assert_eq!(status_of("MarkCreated-1"), None, "{states:#?}");
    assert_eq!(status_of("DeleteSite-1").as_deref(), Some("COMPLETED"));
    let history = env.history(&late_exec).await;
    assert_eq!(
        executes_completed(&history),
        once_each(&["SaveMetadata-1", "CreateFs-1", "CreateDb-1", "DeleteSite-1"])
    );
    assert_eq!(history.last().unwrap().event_type, "PROCESS_CLOSED");
    assert_eq!(
        env.count("SELECT count(*) FROM xdb_sys_tasks", &[]).await,
        0
    );
    let process = env.process_row(&late_exec).await.unwrap();
    assert_eq!(
        (process.status.as_str(), process.running_state_executions),
        ("COMPLETED", 0)
    );
    env.shutdown().await;
}

async fn a_step_retried_after_the_delete_sees_deleting_and_ends_its_thread(db: Database) {
    let mut env = XdbTestEnv::start(db).await;
    let services = ExternalServices::reliable();
    let faults = WorkerFaults::new();
    // The default grace (3 s, a durable timer) leaves time for retries to see the status.
    let options = SiteCreationOptions::default();
    let grace = options.deletion_grace;
    let worker = serve_sites(&mut env, &services, options, &faults).await;
    faults.fail(CallMatch::state("CreateDb", StateApiKind::Execute));
    let exec = start_site_creation(&env.client, Some(&worker), "g", "Graced")
        .await
        .unwrap();
    eventually("CreateDb to be retrying", SOON, || async {
        api_failures(&env, &exec, "CreateDb-1").await >= 2
    })
    .await;
    wait_state(&env, &exec, "CreateFs", 1, "COMPLETED").await;

    assert_eq!(
        delete_site(&env.client, "g").await.unwrap(),
        DeleteOutcome::Deleting
    );
    assert_eq!(env.site_row("g").await.unwrap().status, "deleting");
    // The service is back, but the next attempt reads `deleting`: it does nothing and
    // ends its thread.
    faults.stop_failing();
    wait_state(&env, &exec, "CreateDb", 1, "COMPLETED").await;
    let history = env.history(&exec).await;
    let create_db = &history[position(&history, "EXECUTE_COMPLETED", "CreateDb-1")];
    assert_eq!(
        create_db.details["decision"]["threadCloseDecision"]["closeType"], "DEAD_END",
        "{create_db:?}"
    );
    assert_eq!(services.count("g", Operation::CreateDatabase), 0);

    let done = env
        .client
        .wait_for_process_completion(&process_id("g"), Duration::from_secs(20))
        .await
        .unwrap();
    assert_eq!(done.status, ProcessStatus::Completed, "{done:?}");
    assert_eq!(decode(&done.result), json!(STATUS_DELETED));
    let row = env.site_row("g").await.unwrap();
    assert_eq!(row.status, STATUS_DELETED, "{row:?}");
    assert_eq!(row.fs_status.as_deref(), Some(STEP_DONE));
    assert_eq!(
        (row.db_status, row.bootstrap_status),
        (None, None),
        "no step wrote after the delete"
    );
    assert_eq!(services.resources("g"), SiteResources::default());
    assert!(env.state_row(&exec, "Bootstrap", 1).await.is_none());
    // The grace timer fired, and not early.
    let delete = env.state_row(&exec, "DeleteSite", 1).await.unwrap();
    let closed = env.process_row(&exec).await.unwrap().close_time.unwrap();
    assert!(
        closed >= delete.created_at + chrono::Duration::from_std(grace).unwrap(),
        "cleanup after the grace: {closed:?} vs {:?}",
        delete.created_at
    );
    assert!(env
        .history_types(&exec)
        .await
        .contains(&"TIMER_FIRED".to_string()));
    assert!(env.tasks(&exec).await.is_empty());
    env.shutdown().await;
}

both_databases!(
    site_creation_end_to_end_forks_joins_and_records_every_step,
    random_failures_are_retried_until_every_site_is_created_once,
    delete_aborts_a_creation_in_flight_and_cleans_up,
    a_step_retried_after_the_delete_sees_deleting_and_ends_its_thread,
);

pulsar_mode_too!(
    site_creation_end_to_end_forks_joins_and_records_every_step,
    random_failures_are_retried_until_every_site_is_created_once,
);
