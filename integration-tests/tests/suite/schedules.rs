//! Schedules on real services and databases: each firing starts one execution, with the
//! process id derived from its nominal time and never before it; the overlap policies,
//! trigger and backfill; describe's next fire times; and bad input refused with a 400
//! naming the field, creating nothing.
//!
//! The executions started here have no state (no worker call), so they stay RUNNING until
//! the test stops them: that is what makes firings overlap.

use std::time::Duration;

use serde_json::{json, Value};
use xdb_integration_tests::{eventually, Database, EnvOptions, XdbTestEnv};
use xdb_protocol::{firing_process_id, paths};

use crate::common::*;
use crate::query::{order_env, PROCESS_TYPE};

both_databases!(
    an_interval_fires_each_time_once_and_never_early,
    after_downtime_only_the_catch_up_window_runs,
    skip_and_buffer_one_wait_for_the_running_firing,
    terminate_previous_stops_the_running_firing,
    trigger_and_backfill_start_their_firings_once,
    describe_lists_the_next_ten_fire_times_in_the_zone,
    bad_input_is_a_400_naming_the_field_and_creates_nothing,
    the_rust_client_manages_a_schedule,
    every_change_is_in_the_history_with_who_made_it,
);

/// How long firings may take to show in these tests (they fire every second).
const DEADLINE: Duration = Duration::from_secs(30);

async fn ok(env: &XdbTestEnv, path: &str, body: Value) -> Value {
    let (status, answer) = call(env, path, body).await;
    assert_eq!(status, 200, "{path}: {answer}");
    answer
}

fn every_second(id: &str, worker: &str, policy: &str) -> Value {
    json!({
        "scheduleId": id,
        "spec": {"interval": {"everySeconds": 1}},
        "start": {"processType": PROCESS_TYPE, "workerUrl": worker},
        "overlapPolicy": policy,
    })
}

async fn describe(env: &XdbTestEnv, id: &str) -> Value {
    ok(env, paths::SCHEDULE_DESCRIBE, json!({ "scheduleId": id })).await
}

/// The schedule's recent firings with `outcome`.
async fn firings(env: &XdbTestEnv, id: &str, outcome: &str) -> Vec<Value> {
    let described = describe(env, id).await;
    described["recentFirings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["outcome"] == outcome)
        .cloned()
        .collect()
}

async fn wait_for(env: &XdbTestEnv, id: &str, outcome: &str, count: usize) -> Vec<Value> {
    eventually(
        &format!("{count} {outcome} firings of {id}"),
        DEADLINE,
        || async { firings(env, id, outcome).await.len() >= count },
    )
    .await;
    firings(env, id, outcome).await
}

async fn process_status(env: &XdbTestEnv, process_id: &str) -> Value {
    ok(env, paths::DESCRIBE, json!({ "processId": process_id })).await
}

async fn an_interval_fires_each_time_once_and_never_early(db: Database) {
    let (env, worker, _service) = order_env(db, EnvOptions::default()).await;
    let created = ok(
        &env,
        paths::SCHEDULE_CREATE,
        every_second("tick", &worker, "ALLOW_ALL"),
    )
    .await;
    assert_eq!(
        created["schedule"]["overlapPolicy"], "ALLOW_ALL",
        "{created}"
    );
    assert_eq!(created["schedule"]["catchupWindowSeconds"], 60, "{created}");

    let started = wait_for(&env, "tick", "STARTED", 3).await;
    let mut seen = std::collections::BTreeSet::new();
    for firing in &started {
        let nominal = firing["nominalTimestampMs"].as_i64().unwrap();
        assert_eq!(nominal % 1000, 0, "on the second: {firing}");
        let process_id = firing["processId"].as_str().unwrap();
        assert_eq!(process_id, firing_process_id("tick", nominal));
        assert!(
            seen.insert(process_id.to_string()),
            "started twice: {process_id}"
        );
        let process = process_status(&env, process_id).await;
        assert_eq!(process["processExecutionId"], firing["processExecutionId"]);
        let start = process["startTimestampMs"].as_i64().unwrap();
        assert!(
            start >= nominal,
            "started {start}, before its time {nominal}"
        );
        assert_eq!(firing["trigger"], "SPEC");
    }

    let paused = ok(
        &env,
        paths::SCHEDULE_PAUSE,
        json!({"scheduleId": "tick", "reason": "test"}),
    )
    .await;
    assert_eq!(paused["schedule"]["paused"], true, "{paused}");
    assert_eq!(paused["schedule"]["reason"], "test", "{paused}");
    assert!(
        paused["schedule"]["nextFireTimestampMs"].is_null(),
        "{paused}"
    );
    let listed = ok(&env, paths::SCHEDULE_LIST, json!({})).await;
    assert_eq!(listed["schedules"].as_array().unwrap().len(), 1, "{listed}");

    ok(&env, paths::SCHEDULE_DELETE, json!({"scheduleId": "tick"})).await;
    let (status, body) = call(
        &env,
        paths::SCHEDULE_DESCRIBE,
        json!({"scheduleId": "tick"}),
    )
    .await;
    assert_eq!(
        (status, &body["subType"]),
        (404, &json!("SCHEDULE_NOT_FOUND"))
    );
    // Its executions run on.
    let first = started[0]["processId"].as_str().unwrap();
    assert_eq!(process_status(&env, first).await["status"], "RUNNING");
}

/// The spec's next fire time as describe computes it, on the database's clock.
async fn next_fire_time(env: &XdbTestEnv, id: &str) -> i64 {
    describe(env, id).await["nextFireTimestampsMs"][0]
        .as_i64()
        .unwrap()
}

/// Nominal times of the schedule's recorded firings, oldest first.
async fn nominal_times(env: &XdbTestEnv, id: &str) -> Vec<i64> {
    let described = describe(env, id).await;
    let mut times: Vec<i64> = described["recentFirings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["nominalTimestampMs"].as_i64().unwrap())
        .collect();
    times.sort();
    times
}

/// The async service is down for about 6 s; with a 3 s window, the firings missed more
/// than 3 s before it came back are dropped and the others run late, none early.
async fn after_downtime_only_the_catch_up_window_runs(db: Database) {
    let (mut env, worker, _service) = order_env(db, EnvOptions::default()).await;
    let mut request = every_second("catchup", &worker, "ALLOW_ALL");
    request["catchupWindowSeconds"] = json!(3);
    ok(&env, paths::SCHEDULE_CREATE, request).await;
    wait_for(&env, "catchup", "STARTED", 2).await;
    env.stop_async_instances().await;
    let before = nominal_times(&env, "catchup").await;
    let last_before = *before.last().unwrap();
    let down_until = next_fire_time(&env, "catchup").await + 6_000;
    eventually("six seconds of downtime", DEADLINE, || async {
        next_fire_time(&env, "catchup").await >= down_until
    })
    .await;
    let back_at = next_fire_time(&env, "catchup").await - 1_000;
    env.add_async_instance().await;
    eventually("firings after the restart", DEADLINE, || async {
        nominal_times(&env, "catchup").await.len() >= before.len() + 3
    })
    .await;
    let after: Vec<i64> = nominal_times(&env, "catchup")
        .await
        .into_iter()
        .filter(|t| *t > last_before)
        .collect();
    let first_after = after[0];
    assert!(
        first_after >= last_before + 2_000,
        "the oldest missed firings are dropped: {last_before} then {after:?}"
    );
    assert!(
        first_after < back_at,
        "missed firings within the window run late: back at {back_at}, {after:?}"
    );
    assert!(
        first_after >= back_at - 4_000,
        "none older than the window: back at {back_at}, {after:?}"
    );
    let started = wait_for(&env, "catchup", "STARTED", before.len() + 3).await;
    for firing in &started {
        let process = process_status(&env, firing["processId"].as_str().unwrap()).await;
        let start = process["startTimestampMs"].as_i64().unwrap();
        assert!(
            start >= firing["nominalTimestampMs"].as_i64().unwrap(),
            "{firing}"
        );
    }
}

/// With two async instances racing for the firings: one instance at a time decides a
/// schedule's overlaps.
async fn skip_and_buffer_one_wait_for_the_running_firing(db: Database) {
    let (mut env, worker, _service) = order_env(db, EnvOptions::default()).await;
    env.add_async_instance().await;
    ok(
        &env,
        paths::SCHEDULE_CREATE,
        every_second("skip", &worker, "SKIP"),
    )
    .await;
    ok(
        &env,
        paths::SCHEDULE_CREATE,
        every_second("buffer", &worker, "BUFFER_ONE"),
    )
    .await;

    // SKIP: one runs, the next ones are skipped while it does.
    wait_for(&env, "skip", "SKIPPED", 3).await;
    let running = firings(&env, "skip", "STARTED").await;
    assert_eq!(running.len(), 1, "{running:?}");
    let skipped = firings(&env, "skip", "SKIPPED").await;
    assert!(skipped[0]["reason"]
        .as_str()
        .unwrap()
        .contains("still running"));

    // BUFFER_ONE: one runs, one waits, the others are skipped.
    wait_for(&env, "buffer", "SKIPPED", 1).await;
    assert_eq!(firings(&env, "buffer", "STARTED").await.len(), 1);
    assert_eq!(firings(&env, "buffer", "BUFFERED").await.len(), 1);
    let buffered = firings(&env, "buffer", "BUFFERED").await[0].clone();
    let first = firings(&env, "buffer", "STARTED").await[0]["processId"]
        .as_str()
        .unwrap()
        .to_string();
    ok(&env, paths::STOP, json!({ "processId": first })).await;
    // The buffered firing starts once the first closed.
    eventually("the buffered firing to start", DEADLINE, || async {
        firings(&env, "buffer", "STARTED")
            .await
            .iter()
            .any(|f| f["nominalTimestampMs"] == buffered["nominalTimestampMs"])
    })
    .await;
}

async fn terminate_previous_stops_the_running_firing(db: Database) {
    let (env, worker, _service) = order_env(db, EnvOptions::default()).await;
    ok(
        &env,
        paths::SCHEDULE_CREATE,
        every_second("replace", &worker, "TERMINATE_PREVIOUS"),
    )
    .await;
    let started = wait_for(&env, "replace", "STARTED", 2).await;
    // Newest first: the older one was terminated by the newer.
    let older = started[1]["processId"].as_str().unwrap();
    assert_eq!(process_status(&env, older).await["status"], "TERMINATED");
}

async fn trigger_and_backfill_start_their_firings_once(db: Database) {
    let (env, worker, _service) = order_env(db, EnvOptions::default()).await;
    let nightly = json!({
        "scheduleId": "nightly",
        "spec": {"cron": {"expression": "0 3 * * *"}},
        "start": {"processType": PROCESS_TYPE, "workerUrl": worker},
        "overlapPolicy": "ALLOW_ALL",
        "paused": true,
    });
    ok(&env, paths::SCHEDULE_CREATE, nightly).await;

    let triggered = ok(
        &env,
        paths::SCHEDULE_TRIGGER,
        json!({"scheduleId": "nightly"}),
    )
    .await;
    let process_id = triggered["processId"].as_str().unwrap().to_string();
    let nominal = triggered["nominalTimestampMs"].as_i64().unwrap();
    assert_eq!(process_id, firing_process_id("nightly", nominal));
    eventually("the triggered firing to start", DEADLINE, || async {
        call(&env, paths::DESCRIBE, json!({ "processId": process_id }))
            .await
            .0
            == 200
    })
    .await;

    // The three past nights: 03:00 UTC of each of the three days before today's.
    let day = 86_400_000;
    let today = nominal - nominal % day;
    let range = json!({
        "scheduleId": "nightly",
        "startTimestampMs": today - 3 * day,
        "endTimestampMs": today,
    });
    let backfilled = ok(&env, paths::SCHEDULE_BACKFILL, range.clone()).await;
    assert_eq!(backfilled["firings"], 3, "{backfilled}");
    let again = ok(&env, paths::SCHEDULE_BACKFILL, range).await;
    assert_eq!(again["firings"], 0, "recorded once: {again}");
    let started = wait_for(&env, "nightly", "STARTED", 4).await;
    let backfill: Vec<&Value> = started
        .iter()
        .filter(|f| f["trigger"] == "BACKFILL")
        .collect();
    assert_eq!(backfill.len(), 3, "{started:?}");
    for (firing, days_ago) in backfill.iter().zip(1..) {
        let expected = today - days_ago * day + 3 * 3_600_000;
        assert_eq!(firing["nominalTimestampMs"], expected, "{firing}");
    }

    let (status, body) = call(
        &env,
        paths::SCHEDULE_BACKFILL,
        json!({"scheduleId": "nightly", "startTimestampMs": today,
               "endTimestampMs": nominal + day}),
    )
    .await;
    assert_eq!(status, 400, "{body}");
    assert!(body["message"].as_str().unwrap().contains("endTimestampMs"));
}

async fn describe_lists_the_next_ten_fire_times_in_the_zone(db: Database) {
    let (env, worker, _service) = order_env(db, EnvOptions::default()).await;
    let created = ok(
        &env,
        paths::SCHEDULE_CREATE,
        json!({
            "scheduleId": "paris",
            "spec": {"cron": {"expression": "0 3 * * *", "timeZone": "Europe/Paris"}},
            "start": {"processType": PROCESS_TYPE, "workerUrl": worker},
            "catchupWindowSeconds": 0,
            "note": "nightly",
        }),
    )
    .await;
    let times: Vec<i64> = created["nextFireTimestampsMs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t.as_i64().unwrap())
        .collect();
    assert_eq!(times.len(), 10, "{created}");
    assert!(times.windows(2).all(|w| w[0] < w[1]), "{times:?}");
    for time in &times {
        // 03:00 in Paris is 02:00 or 01:00 UTC.
        let of_day = time % 86_400_000;
        assert!(of_day == 2 * 3_600_000 || of_day == 3_600_000, "{time}");
    }
    assert_eq!(created["schedule"]["nextFireTimestampMs"], times[0]);
    assert_eq!(created["schedule"]["note"], "nightly");
    assert_eq!(created["schedule"]["catchupWindowSeconds"], 0);
}

async fn bad_input_is_a_400_naming_the_field_and_creates_nothing(db: Database) {
    let (env, worker, _service) = order_env(db, EnvOptions::default()).await;
    let with = |spec: Value, policy: Value| {
        json!({
            "scheduleId": "bad",
            "spec": spec,
            "start": {"processType": PROCESS_TYPE, "workerUrl": worker},
            "overlapPolicy": policy,
        })
    };
    let cases = [
        (
            with(json!({"cron": {"expression": "every day"}}), json!("SKIP")),
            "spec.cron.expression",
        ),
        (
            with(json!({"cron": {"expression": "61 * * * *"}}), json!("SKIP")),
            "spec.cron.expression",
        ),
        (
            with(
                json!({"cron": {"expression": "0 3 * * *", "timeZone": "Mars/Olympus"}}),
                json!("SKIP"),
            ),
            "spec.cron.timeZone",
        ),
        (
            with(json!({"interval": {"everySeconds": 0}}), json!("SKIP")),
            "spec.interval.everySeconds",
        ),
        (with(json!({}), json!("SKIP")), "spec"),
        (
            with(
                json!({"interval": {"everySeconds": 60}}),
                json!("SOMETIMES"),
            ),
            "overlapPolicy",
        ),
        (
            json!({"scheduleId": "bad", "spec": {"interval": {"everySeconds": 60}},
                   "start": {"processType": PROCESS_TYPE}}),
            "workerUrl",
        ),
        (
            json!({"scheduleId": "bad", "spec": {"interval": {"everySeconds": 60}},
                   "start": {"processType": PROCESS_TYPE, "workerUrl": worker,
                             "processStartConfig": {"priority": 9}}}),
            "start.processStartConfig.priority",
        ),
    ];
    for (request, field) in cases {
        let (status, body) = call(&env, paths::SCHEDULE_CREATE, request.clone()).await;
        assert_eq!(status, 400, "{request}: {body}");
        assert_eq!(body["subType"], "INVALID_REQUEST", "{body}");
        let message = body["message"].as_str().unwrap();
        assert!(message.contains(field), "{field} not named in: {message}");
    }
    let listed = ok(&env, paths::SCHEDULE_LIST, json!({})).await;
    assert_eq!(listed["schedules"], json!([]), "nothing created: {listed}");

    let good = with(json!({"interval": {"everySeconds": 3600}}), json!("SKIP"));
    ok(&env, paths::SCHEDULE_CREATE, good.clone()).await;
    let (status, body) = call(&env, paths::SCHEDULE_CREATE, good).await;
    assert_eq!(
        (status, &body["subType"]),
        (409, &json!("SCHEDULE_ALREADY_EXISTS"))
    );
    let (status, body) = call(&env, paths::SCHEDULE_TRIGGER, json!({"scheduleId": "nope"})).await;
    assert_eq!(
        (status, &body["subType"]),
        (404, &json!("SCHEDULE_NOT_FOUND"))
    );
}

/// The Rust SDK's client over the same paths, typed.
async fn the_rust_client_manages_a_schedule(db: Database) {
    use xdb_protocol::*;
    let (env, worker, _service) = order_env(db, EnvOptions::default()).await;
    let client = &env.client;
    let create = ScheduleCreateRequest {
        schedule_id: "sdk".into(),
        spec: ScheduleSpec {
            cron: Some(CronSpec {
                expression: "0 9 * * MON-FRI".into(),
                time_zone: Some("America/New_York".into()),
            }),
            interval: None,
        },
        start: ScheduleStartTemplate {
            process_type: PROCESS_TYPE.into(),
            worker_url: worker.clone(),
            start_state_id: None,
            start_state_input: None,
            start_state_config: None,
            process_start_config: None,
        },
        overlap_policy: Some(ScheduleOverlapPolicy::BufferOne),
        catchup_window_seconds: None,
        paused: false,
        note: None,
    };
    let created = client.schedule_create(&create).await.unwrap();
    assert_eq!(
        created.next_fire_timestamps_ms.len(),
        SCHEDULE_NEXT_FIRE_TIMES
    );
    assert_eq!(
        created.schedule.overlap_policy,
        ScheduleOverlapPolicy::BufferOne
    );
    let control = ScheduleControlRequest {
        schedule_id: "sdk".into(),
        reason: Some("holiday".into()),
    };
    let paused = client.schedule_pause(&control).await.unwrap();
    assert!(paused.schedule.paused);
    let resumed = client.schedule_resume(&control).await.unwrap();
    assert!(!resumed.schedule.paused);
    let update = ScheduleUpdateRequest {
        schedule_id: "sdk".into(),
        spec: ScheduleSpec {
            cron: None,
            interval: Some(IntervalSpec {
                every_seconds: 3600,
                jitter_seconds: Some(60),
            }),
        },
        start: create.start.clone(),
        overlap_policy: None,
        catchup_window_seconds: Some(0),
        note: Some("hourly".into()),
    };
    let updated = client.schedule_update(&update).await.unwrap();
    assert_eq!(updated.schedule.spec, update.spec);
    assert_eq!(updated.schedule.catchup_window_seconds, 0);
    let listed = client
        .schedule_list(&ScheduleListRequest::default())
        .await
        .unwrap();
    assert_eq!(listed.schedules.len(), 1);
    let triggered = client
        .schedule_trigger(&ScheduleTriggerRequest {
            schedule_id: "sdk".into(),
            overlap_policy: None,
        })
        .await
        .unwrap();
    assert!(triggered.process_id.starts_with("sdk-"));
    client.schedule_delete(&control).await.unwrap();
    let gone = client
        .schedule_describe(&ScheduleDescribeRequest {
            schedule_id: "sdk".into(),
        })
        .await
        .unwrap_err();
    assert!(
        matches!(&gone, xdb_sdk::ClientError::Api { error, .. }
            if error.sub_type == ErrorSubType::ScheduleNotFound),
        "{gone}"
    );

    // The deleted schedule's history stays, newest first, in pages.
    let history = |page_size, next_page_token| async move {
        let request = ScheduleHistoryRequest {
            schedule_id: Some("sdk".into()),
            page_size,
            next_page_token,
        };
        client.schedule_history(&request).await
    };
    let whole = history(None, None).await.unwrap();
    let actions: Vec<&str> = whole.changes.iter().map(|c| c.action.as_str()).collect();
    assert_eq!(
        actions,
        [
            "DELETED",
            "TRIGGERED",
            "UPDATED",
            "RESUMED",
            "PAUSED",
            "CREATED"
        ],
        "{whole:?}"
    );
    assert_eq!(whole.next_page_token, None);
    for change in &whole.changes {
        assert_eq!(change.changed_by, "anonymous", "{change:?}");
        assert_eq!(change.schedule_id, "sdk", "{change:?}");
    }
    let [deleted, trigger, updated, _resumed, paused, _created] = &whole.changes[..] else {
        unreachable!()
    };
    assert_eq!(paused.reason.as_deref(), Some("holiday"));
    assert_eq!(deleted.reason.as_deref(), Some("holiday"));
    assert!(
        trigger
            .detail
            .as_deref()
            .is_some_and(|d| d.contains(&triggered.process_id)),
        "{trigger:?}"
    );
    assert_eq!(updated.after.as_ref().map(|a| &a.spec), Some(&update.spec));
    let first = history(Some(4), None).await.unwrap();
    assert_eq!(first.changes, whole.changes[..4]);
    let rest = history(Some(4), first.next_page_token).await.unwrap();
    assert_eq!(rest.changes, whole.changes[4..]);
    assert_eq!(rest.next_page_token, None);
}

/// Every operator's change is kept, newest first, with the accepted token's name, the
/// schedule before and after, and why; the history outlives the schedule.
async fn every_change_is_in_the_history_with_who_made_it(db: Database) {
    let options = EnvOptions {
        api_tokens: vec![HISTORY_TOKEN.into()],
        ..EnvOptions::default()
    };
    let (env, worker, _service) = order_env(db, options).await;
    let mut nightly = json!({
        "scheduleId": "audited",
        "spec": {"cron": {"expression": "0 3 * * *"}},
        "start": {"processType": PROCESS_TYPE, "workerUrl": worker},
        "paused": true,
    });
    authorized(&env, paths::SCHEDULE_CREATE, nightly.clone()).await;
    nightly.as_object_mut().unwrap().remove("paused");
    nightly["spec"] = json!({"cron": {"expression": "0 4 * * *"}});
    authorized(&env, paths::SCHEDULE_UPDATE, nightly).await;
    let control = json!({"scheduleId": "audited", "reason": "night shift"});
    authorized(&env, paths::SCHEDULE_RESUME, control.clone()).await;
    authorized(&env, paths::SCHEDULE_PAUSE, control.clone()).await;
    // Paused already: a second pause changes nothing, neither the reason nor the history.
    let again = authorized(
        &env,
        paths::SCHEDULE_PAUSE,
        json!({"scheduleId": "audited", "reason": "another"}),
    )
    .await;
    assert_eq!(again["schedule"]["reason"], "night shift", "{again}");
    let triggered = authorized(
        &env,
        paths::SCHEDULE_TRIGGER,
        json!({"scheduleId": "audited"}),
    )
    .await;
    authorized(&env, paths::SCHEDULE_DELETE, control).await;

    let history = authorized(
        &env,
        paths::SCHEDULE_HISTORY,
        json!({"scheduleId": "audited"}),
    )
    .await;
    let changes = history["changes"].as_array().unwrap();
    let actions: Vec<&str> = changes
        .iter()
        .map(|c| c["action"].as_str().unwrap())
        .collect();
    assert_eq!(
        actions,
        [
            "DELETED",
            "TRIGGERED",
            "PAUSED",
            "RESUMED",
            "UPDATED",
            "CREATED"
        ],
        "{history}"
    );
    for change in changes {
        assert_eq!(change["changedBy"], "api_tokens", "{change}");
    }
    let [deleted, trigger, paused, _resumed, updated, created] = &changes[..] else {
        unreachable!()
    };
    assert_eq!(created["after"]["paused"], true, "{created}");
    assert!(created.get("before").is_none(), "{created}");
    assert_eq!(
        updated["before"]["spec"]["cron"]["expression"], "0 3 * * *",
        "{updated}"
    );
    assert_eq!(
        updated["after"]["spec"]["cron"]["expression"], "0 4 * * *",
        "{updated}"
    );
    assert_eq!(paused["reason"], "night shift", "{paused}");
    assert_eq!(paused["after"]["paused"], true, "{paused}");
    let detail = trigger["detail"].as_str().unwrap();
    assert!(
        detail.contains(triggered["processId"].as_str().unwrap()),
        "{trigger}"
    );
    assert_eq!(deleted["before"]["scheduleId"], "audited", "{deleted}");
    assert!(deleted.get("after").is_none(), "{deleted}");

    let (status, body) = unchecked(
        &env,
        paths::SCHEDULE_HISTORY,
        json!({"nextPageToken": "'; DROP TABLE x"}),
    )
    .await;
    assert_eq!(status, 400, "{body}");
    assert!(body["message"].as_str().unwrap().contains("nextPageToken"));
    let (status, body) = unchecked(&env, paths::SCHEDULE_HISTORY, json!({"pageSize": 0})).await;
    assert_eq!(status, 400, "{body}");
    assert!(body["message"].as_str().unwrap().contains("pageSize"));
}

const HISTORY_TOKEN: &str = "history-test-token";

/// `path` called with [`HISTORY_TOKEN`]: its status and body.
async fn unchecked(env: &XdbTestEnv, path: &str, body: Value) -> (u16, Value) {
    let response = reqwest::Client::new()
        .post(format!("{}{path}", env.api_url()))
        .bearer_auth(HISTORY_TOKEN)
        .json(&body)
        .send()
        .await
        .expect("the API service answers");
    let status = response.status().as_u16();
    (status, response.json().await.expect("a JSON body"))
}

/// `path` called with [`HISTORY_TOKEN`], asserted 200.
async fn authorized(env: &XdbTestEnv, path: &str, body: Value) -> Value {
    let (status, answer) = unchecked(env, path, body).await;
    assert_eq!(status, 200, "{path}: {answer}");
    answer
}
