//! `xdb schedule` as an operator runs it: create, describe, pause, trigger, list, update,
//! delete and the history of those changes, with a bad cron expression and a bad page
//! size refused (exit 1, the field named) and an unknown schedule exiting 5. A schedule a
//! definition declares (registered with `xdb definitions register`) is listed and
//! described with the type declaring it; updating or deleting it is refused (exit 1),
//! pausing it is not, and its history names the registering deployment.

use serde_json::json;
use xdb_integration_tests::{Database, EnvOptions, XdbTestEnv};

use crate::cli::{xdb_with, Run};
use crate::query::{order_env, PROCESS_TYPE};

both_databases!(
    an_operator_manages_a_schedule,
    a_declared_schedule_names_its_owner
);

async fn an_operator_manages_a_schedule(db: Database) {
    let (env, worker, _service) = order_env(db, EnvOptions::default()).await;
    let xdb = |args: Vec<&str>| {
        let url = env.api_url().to_string();
        let args: Vec<String> = args.into_iter().map(str::to_string).collect();
        async move {
            let args: Vec<&str> = args.iter().map(String::as_str).collect();
            xdb_with(&url, None, &args).await
        }
    };
    let create = |cron: &'static str| {
        vec![
            "-o",
            "json",
            "schedule",
            "create",
            "nightly",
            "-t",
            PROCESS_TYPE,
            "--worker-url",
            &worker,
            "--cron",
            cron,
            "--tz",
            "Europe/Paris",
            "--overlap",
            "buffer-one",
        ]
    };
    let refused: Run = xdb(create("0 25 * * *")).await.expect(1);
    assert!(
        refused.stderr.contains("spec.cron.expression"),
        "{}",
        refused.stderr
    );

    let created = xdb(create("0 3 * * *")).await.expect(0).json();
    assert_eq!(
        created["schedule"]["overlapPolicy"], "BUFFER_ONE",
        "{created}"
    );
    assert_eq!(
        created["nextFireTimestampsMs"].as_array().unwrap().len(),
        10
    );

    let described = xdb(vec!["schedule", "describe", "nightly"]).await.expect(0);
    assert!(
        described.stdout.contains("cron 0 3 * * * Europe/Paris"),
        "{}",
        described.stdout
    );
    assert!(
        described.stdout.contains("next fire times:"),
        "{}",
        described.stdout
    );

    let paused = xdb(vec![
        "-o", "json", "schedule", "pause", "nightly", "--reason", "test",
    ])
    .await
    .expect(0)
    .json();
    assert_eq!(paused["schedule"]["paused"], true, "{paused}");
    let fired = xdb(vec!["-o", "json", "schedule", "trigger", "nightly"])
        .await
        .expect(0)
        .json();
    assert!(
        fired["processId"].as_str().unwrap().starts_with("nightly-"),
        "{fired}"
    );

    let listed = xdb(vec!["schedule", "list"]).await.expect(0);
    assert!(listed.stdout.contains("nightly"), "{}", listed.stdout);
    // An operator's schedule: no type declares it.
    assert!(
        listed
            .stdout
            .lines()
            .next()
            .unwrap()
            .ends_with("DECLARED BY"),
        "{}",
        listed.stdout
    );
    let row = listed.stdout.lines().find(|l| l.starts_with("nightly"));
    assert!(row.unwrap().ends_with(" -"), "{}", listed.stdout);
    xdb(vec![
        "schedule",
        "update",
        "nightly",
        "-t",
        PROCESS_TYPE,
        "--worker-url",
        &worker,
        "--cron",
        "0 4 * * *",
        "--tz",
        "Europe/Paris",
    ])
    .await
    .expect(0);
    xdb(vec!["schedule", "delete", "nightly"]).await.expect(0);
    xdb(vec!["schedule", "describe", "nightly"]).await.expect(5);

    // The deleted schedule's changes stay; the refused create is not one of them.
    let history = xdb(vec!["schedule", "history", "nightly"]).await.expect(0);
    let rows: Vec<&str> = history.stdout.lines().skip(1).collect();
    // A row starts with the time (a date and a time of day), then the action.
    let actions: Vec<&str> = rows
        .iter()
        .map(|row| row.split_whitespace().nth(2).unwrap_or_default())
        .collect();
    assert_eq!(
        actions,
        ["DELETED", "UPDATED", "TRIGGERED", "PAUSED", "CREATED"],
        "{}",
        history.stdout
    );
    for row in &rows {
        let words: Vec<&str> = row.split_whitespace().collect();
        assert_eq!(words[3..5], ["nightly", "anonymous"], "{}", history.stdout);
    }
    assert!(rows[1].contains("changed spec"), "{}", history.stdout);
    let process_id = fired["processId"].as_str().unwrap();
    assert!(rows[2].contains(process_id), "{}", history.stdout);
    assert!(rows[3].ends_with(" test"), "{}", history.stdout);

    let refused = xdb(vec!["schedule", "history", "nightly", "--page-size", "0"])
        .await
        .expect(1);
    assert!(refused.stderr.contains("pageSize"), "{}", refused.stderr);
}

async fn a_declared_schedule_names_its_owner(db: Database) {
    const TYPE: &str = "CliDeclared";
    let env = XdbTestEnv::start(db).await;
    let url = env.api_url();
    // Registered as a worker would, declaring one schedule (firing once a year, so not
    // while the test runs).
    let registration = json!({
        "deployment": {"name": "cli-worker", "version": "1.2.0", "workerUrl": "http://127.0.0.1:9"},
        "definitions": [{
            "processType": TYPE,
            "states": [{"id": "Only", "hasWaitUntil": false}],
            "startStates": ["Only"],
            "schedules": [{
                "scheduleId": "yearly",
                "spec": {"cron": {"expression": "0 3 1 1 *"}},
                "startStateId": "Only",
            }],
        }],
    });
    let file = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(file.path(), registration.to_string()).unwrap();
    let path = file.path().to_str().unwrap();
    xdb_with(url, None, &["definitions", "register", "-f", path])
        .await
        .expect(0);

    let listed = xdb_with(url, None, &["schedule", "list"]).await.expect(0);
    let row = listed.stdout.lines().find(|l| l.starts_with("yearly"));
    assert!(
        row.unwrap().ends_with(&format!(" {TYPE}")),
        "{}",
        listed.stdout
    );
    let described = xdb_with(url, None, &["schedule", "describe", "yearly"])
        .await
        .expect(0);
    let line = described
        .stdout
        .lines()
        .find(|l| l.starts_with("declared by"));
    assert!(
        line.unwrap().ends_with(&format!(
            "  {TYPE} (its code owns it: registering its definition changes it)"
        )),
        "{}",
        described.stdout
    );

    // Its code owns it: the service refuses to update or delete it, saying why.
    let update = [
        "schedule",
        "update",
        "yearly",
        "-t",
        TYPE,
        "--cron",
        "0 4 1 1 *",
    ];
    let refused = xdb_with(url, None, &update).await.expect(1);
    assert!(
        refused.stderr.contains(&format!(
            "declared by the definition of process type {TYPE}"
        )),
        "{}",
        refused.stderr
    );
    let refused = xdb_with(url, None, &["schedule", "delete", "yearly"])
        .await
        .expect(1);
    assert!(refused.stderr.contains("declared by"), "{}", refused.stderr);
    xdb_with(url, None, &["schedule", "pause", "yearly"])
        .await
        .expect(0);
    let paused = xdb_with(url, None, &["-o", "json", "schedule", "describe", "yearly"])
        .await
        .expect(0)
        .json();
    assert_eq!(paused["schedule"]["paused"], true, "{paused}");
    assert_eq!(paused["schedule"]["declaredBy"], TYPE, "{paused}");

    // Newest first: the operator's pause, then the registration's creation.
    let history = xdb_with(url, None, &["schedule", "history", "yearly"])
        .await
        .expect(0);
    let rows: Vec<Vec<&str>> = history
        .stdout
        .lines()
        .skip(1)
        .map(|row| row.split_whitespace().collect())
        .collect();
    let who: Vec<(&str, &str)> = rows.iter().map(|w| (w[2], w[4])).collect();
    assert_eq!(
        who,
        [("PAUSED", "anonymous"), ("CREATED", "cli-worker@1.2.0")],
        "{}",
        history.stdout
    );
}
