//! The `xdb` command-line tool run as a process against real services: the sign-up
//! sample started, inspected and driven to its end by `xdb` alone, its JSON output
//! parsed and its exit codes checked.

use std::time::Duration;

use serde_json::{json, Value};
use xdb_integration_tests::{eventually, Database, EnvOptions, XdbTestEnv};
use xdb_samples::email::EmailOutbox;
use xdb_samples::sample_router;
use xdb_samples::user_signup::UserSignupProcess;
use xdb_sdk::ProcessDefinition;

use crate::common::SOON;

const XDB_BIN: &str = env!("CARGO_BIN_EXE_xdb-test-cli");
const TOKEN: &str = "cli-test-token";

/// What one `xdb` run printed and how it exited.
pub(crate) struct Run {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
}

impl Run {
    pub fn json(&self) -> Value {
        serde_json::from_str(&self.stdout)
            .unwrap_or_else(|e| panic!("stdout is not JSON ({e}): {}{}", self.stdout, self.stderr))
    }

    #[track_caller]
    pub fn expect(self, code: i32) -> Self {
        assert_eq!(
            self.code, code,
            "exit code; stdout:\n{}\nstderr:\n{}",
            self.stdout, self.stderr
        );
        self
    }
}

/// Runs `xdb args…` against `url` with `XDB_TOKEN` set to `token` (if any).
pub(crate) async fn xdb_with(url: &str, token: Option<&str>, args: &[&str]) -> Run {
    let mut command = tokio::process::Command::new(XDB_BIN);
    command
        .args(args)
        .env("XDB_URL", url)
        .env_remove("XDB_TOKEN");
    if let Some(token) = token {
        command.env("XDB_TOKEN", token);
    }
    let output = tokio::time::timeout(Duration::from_secs(120), command.output())
        .await
        .expect("xdb finishes")
        .expect("run xdb");
    Run {
        code: output.status.code().expect("xdb exited, not killed"),
        stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
    }
}

async fn xdb(env: &XdbTestEnv, args: &[&str]) -> Run {
    xdb_with(env.api_url(), Some(TOKEN), args).await
}

/// `xdb start` of a sign-up for `user`, with the sample's own first-state options.
async fn start_signup(env: &XdbTestEnv, worker: &str, user: &str) -> Run {
    let definition = ProcessDefinition::new(UserSignupProcess::default());
    let state = definition.starting_state_id().expect("a starting state");
    let config = serde_json::to_string(&definition.state_config(state).unwrap()).unwrap();
    let form = json!({"email": format!("{user}@example.com")}).to_string();
    let (pid, key, form, tenant) = (
        format!("user-signup-{user}"),
        format!("user_id={user}"),
        format!("form={form}"),
        format!("tenant-{user}"),
    );
    xdb(
        env,
        &[
            "start",
            &pid,
            "--type",
            definition.process_type(),
            "--worker-url",
            worker,
            "--state",
            state,
            "--state-config",
            &config,
            "--table",
            "user",
            "--key",
            &key,
            "--attr",
            &form,
            "--attr",
            "status=waiting",
            "--priority",
            "2",
            "--fairness-key",
            &tenant,
            "--fairness-weight",
            "4",
            "--output",
            "json",
        ],
    )
    .await
}

/// The event types of the current execution's history, through `xdb history`.
async fn event_types(env: &XdbTestEnv, pid: &str) -> Vec<String> {
    let history = xdb(env, &["history", pid, "-o", "json", "--all"])
        .await
        .expect(0)
        .json();
    history["events"]
        .as_array()
        .expect("events")
        .iter()
        .map(|e| e["eventType"].as_str().unwrap().to_string())
        .collect()
}

async fn cli_drives_signups_to_their_end(db: Database) {
    let mut env = XdbTestEnv::start_with(
        db,
        EnvOptions {
            api_tokens: vec![TOKEN.to_string()],
            ..Default::default()
        },
    )
    .await;
    // A day's reminder: no timer fires during the test.
    let worker = env
        .start_worker(sample_router(
            EmailOutbox::new(),
            Duration::from_secs(86_400),
        ))
        .await;

    // start: the execution id comes back; the same id again is refused (exit 1) with
    // the API's error body on stdout and its sub-type on stderr.
    let ann = start_signup(&env, &worker, "ann").await.expect(0).json();
    let ann_exec = ann["processExecutionId"].as_str().unwrap().to_string();
    let again = start_signup(&env, &worker, "ann").await.expect(1);
    assert_eq!(again.json()["subType"], "PROCESS_ALREADY_STARTED");
    assert!(
        again.stderr.contains("PROCESS_ALREADY_STARTED"),
        "{}",
        again.stderr
    );

    // describe, as JSON and as a table.
    let described = xdb(&env, &["describe", "user-signup-ann", "-o", "json"])
        .await
        .expect(0)
        .json();
    assert_eq!(described["processExecutionId"], ann_exec.as_str());
    assert_eq!(described["status"], "RUNNING");
    assert_eq!(described["processType"], "UserSignupProcess");
    assert_eq!(
        described["globalAttributeConfig"]["primaryKey"]["value"],
        "ann"
    );
    let table = xdb(&env, &["describe", "user-signup-ann"])
        .await
        .expect(0)
        .stdout;
    assert!(
        table.contains(&format!("Execution id    {ann_exec}")),
        "{table}"
    );
    assert!(table.contains("Status          RUNNING"), "{table}");
    assert_eq!(described["priority"], 2, "{described}");
    assert!(table.contains("Priority        2"), "{table}");
    // A priority out of bounds never leaves the CLI.
    let refused = xdb(&env, &["start", "p-bad", "--type", "T", "--priority", "9"])
        .await
        .expect(2);
    assert!(refused.stderr.contains("--priority"), "{}", refused.stderr);
    // The fairness key and weight it started with.
    assert_eq!(described["fairnessKey"], "tenant-ann", "{described}");
    assert_eq!(described["fairnessWeight"], 4, "{described}");
    assert!(
        table.contains("Fairness key    tenant-ann (weight 4)\n"),
        "{table}"
    );
    // A weight out of bounds, or without a key, never leaves the CLI either.
    for weight in ["0", "1001"] {
        let refused = xdb(
            &env,
            &[
                "start",
                "p-bad",
                "--type",
                "T",
                "--fairness-key",
                "k",
                "--fairness-weight",
                weight,
            ],
        )
        .await
        .expect(2);
        assert!(
            refused.stderr.contains("--fairness-weight"),
            "{}",
            refused.stderr
        );
    }
    let refused = xdb(
        &env,
        &["start", "p-bad", "--type", "T", "--fairness-weight", "2"],
    )
    .await
    .expect(2);
    assert!(
        refused.stderr.contains("--fairness-key"),
        "{}",
        refused.stderr
    );

    // The first state moved on to the one that waits for the verification queue.
    eventually("ann waits for verification", SOON, || async {
        event_types(&env, "user-signup-ann")
            .await
            .contains(&"WAIT_UNTIL_COMPLETED".to_string())
    })
    .await;

    // publish to the local queue completes the sign-up; wait reports it (exit 0).
    let published = xdb(
        &env,
        &[
            "publish",
            "user-signup-ann",
            "verify",
            "--payload",
            r#"{"source":"cli"}"#,
        ],
    )
    .await
    .expect(0);
    assert_eq!(
        published.stdout,
        "published 1 message to verify of user-signup-ann\n"
    );
    let waited = xdb(
        &env,
        &["wait", "user-signup-ann", "--timeout", "60s", "-o", "json"],
    )
    .await
    .expect(0)
    .json();
    assert_eq!(waited["status"], "COMPLETED");
    assert_eq!(waited["timedOut"], false);
    assert_eq!(
        waited["result"],
        json!({"encoding": "json", "data": "\"done\""})
    );
    let user = env.user_row("ann").await.expect("ann's row");
    assert_eq!(
        (user.status.as_deref(), user.source.as_deref()),
        (Some("verified"), Some("cli"))
    );
    let events = event_types(&env, "user-signup-ann").await;
    assert_eq!(events.first().map(String::as_str), Some("PROCESS_STARTED"));
    assert_eq!(events.last().map(String::as_str), Some("PROCESS_CLOSED"));
    assert!(
        events.contains(&"LOCAL_QUEUE_MESSAGES_PUBLISHED".to_string()),
        "{events:?}"
    );
    let history = xdb(&env, &["history", "user-signup-ann"])
        .await
        .expect(0)
        .stdout;
    assert!(
        history.starts_with(&format!("Execution {ann_exec}\n#")),
        "{history}"
    );
    assert!(history.contains("PROCESS_CLOSED"), "{history}");
    assert!(
        history.contains("VerifyState-1  graceful complete process"),
        "one-line summaries with the state: {history}"
    );
    // Following a closed execution prints it and ends at its close.
    let followed = xdb(&env, &["history", "user-signup-ann", "--follow"])
        .await
        .expect(0)
        .stdout;
    assert!(
        followed.starts_with(&format!("Execution {ann_exec}\n#")),
        "{followed}"
    );
    assert!(followed.trim_end().ends_with("COMPLETED"), "{followed}");

    // rpc verifies bob under the row lock; its output is the RPC's answer.
    start_signup(&env, &worker, "bob").await.expect(0);
    let rpc_args = [
        "rpc",
        "user-signup-bob",
        "verify",
        "--input",
        "\"support\"",
        "--load-global",
        "form,status,source",
        "--lock",
        "exclusive",
    ];
    let answer = xdb(&env, &[&rpc_args[..], &["-o", "json"]].concat())
        .await
        .expect(0)
        .json();
    assert_eq!(
        answer["output"],
        json!({"encoding": "json", "data": "\"done\""})
    );
    // The RPC's message completes bob; afterwards the RPC is refused.
    let waited = xdb(&env, &["wait", "user-signup-bob", "--timeout", "60s"])
        .await
        .expect(0)
        .stdout;
    assert!(waited.contains("Status        COMPLETED"), "{waited}");
    let late = xdb(&env, &[&rpc_args[..], &["-o", "json"]].concat())
        .await
        .expect(1);
    assert_eq!(late.json()["subType"], "PROCESS_NOT_RUNNING");

    // wait on a running execution times out (exit 4), showing progress with --progress;
    // stop terminates it, and wait then exits 6 (closed without completing).
    start_signup(&env, &worker, "cy").await.expect(0);
    let timed_out = xdb(
        &env,
        &[
            "wait",
            "user-signup-cy",
            "--timeout",
            "1s",
            "--progress",
            "-o",
            "json",
        ],
    )
    .await
    .expect(4);
    assert_eq!(timed_out.json()["timedOut"], true);
    assert!(
        timed_out
            .stderr
            .contains("waiting for user-signup-cy: RUNNING"),
        "{}",
        timed_out.stderr
    );
    // The operator's commands: pause shows in describe, list and states; a second pause
    // does not apply (exit 7); resume clears it, and a second resume does not apply.
    let paused = xdb(
        &env,
        &[
            "pause",
            "user-signup-cy",
            "--reason",
            "looking into it",
            "--identity",
            "ops@cli-test",
        ],
    )
    .await
    .expect(0);
    assert!(
        paused.stdout.starts_with("paused user-signup-cy"),
        "{}",
        paused.stdout
    );
    let described = xdb(&env, &["describe", "user-signup-cy", "-o", "json"])
        .await
        .expect(0)
        .json();
    assert_eq!(described["paused"]["reason"], "looking into it");
    assert_eq!(described["paused"]["identity"], "ops@cli-test");
    let table = xdb(&env, &["describe", "user-signup-cy"])
        .await
        .expect(0)
        .stdout;
    assert!(table.contains("Paused          since "), "{table}");
    assert!(
        table.contains(" by ops@cli-test: looking into it\n"),
        "{table}"
    );
    let listed = xdb(&env, &["list", "--process-id", "user-signup-cy"])
        .await
        .expect(0)
        .stdout;
    assert!(listed.contains(" RUNNING (paused) "), "{listed}");
    let states = xdb(&env, &["states", "user-signup-cy", "-o", "json"])
        .await
        .expect(0)
        .json();
    assert_eq!(states["status"], "RUNNING");
    assert_eq!(states["paused"]["reason"], "looking into it");
    assert!(!states["states"].as_array().expect("states").is_empty());
    let table = xdb(&env, &["states", "user-signup-cy"])
        .await
        .expect(0)
        .stdout;
    assert!(table.contains("\nPaused since "), "{table}");
    assert!(table.contains("STATE EXECUTION  STATUS"), "{table}");
    let again = xdb(&env, &["pause", "user-signup-cy", "-o", "json"])
        .await
        .expect(7);
    assert_eq!(again.json()["subType"], "CONTROL_NOT_APPLICABLE");
    assert!(
        again.stderr.contains("CONTROL_NOT_APPLICABLE (HTTP 409)"),
        "{}",
        again.stderr
    );
    xdb(
        &env,
        &["resume", "user-signup-cy", "--reason", "done looking"],
    )
    .await
    .expect(0);
    let table = xdb(&env, &["describe", "user-signup-cy"])
        .await
        .expect(0)
        .stdout;
    assert!(!table.contains("Paused"), "{table}");
    xdb(&env, &["resume", "user-signup-cy"]).await.expect(7);
    let events = event_types(&env, "user-signup-cy").await;
    assert!(
        events.contains(&"PAUSED".to_string()) && events.contains(&"RESUMED".to_string()),
        "{events:?}"
    );

    // reprioritize: describe shows the new priority and key (its weight kept), history
    // the change; a weight once the key is gone does not apply (exit 7).
    let reordered = xdb(
        &env,
        &[
            "reprioritize",
            "user-signup-cy",
            "--priority",
            "1",
            "--fairness-key",
            "acme",
            "--reason",
            "escalated",
        ],
    )
    .await
    .expect(0);
    assert!(
        reordered
            .stdout
            .starts_with("reprioritized user-signup-cy to priority 1, fairness key acme"),
        "{}",
        reordered.stdout
    );
    let table = xdb(&env, &["describe", "user-signup-cy"])
        .await
        .expect(0)
        .stdout;
    assert!(table.contains("Priority        1\n"), "{table}");
    assert!(
        table.contains("Fairness key    acme (weight 4)\n"),
        "{table}"
    );
    let history = xdb(&env, &["history", "user-signup-cy"])
        .await
        .expect(0)
        .stdout;
    assert!(
        history.contains("REPRIORITIZED")
            && history
                .contains("priority 2 → 1, fairness key tenant-cy (weight 4) → acme (weight 4)"),
        "{history}"
    );
    xdb(
        &env,
        &["reprioritize", "user-signup-cy", "--no-fairness-key"],
    )
    .await
    .expect(0);
    let refused = xdb(
        &env,
        &["reprioritize", "user-signup-cy", "--fairness-weight", "2"],
    )
    .await
    .expect(7);
    assert!(
        refused.stderr.contains("CONTROL_NOT_APPLICABLE"),
        "{}",
        refused.stderr
    );

    let stopped = xdb(&env, &["stop", "user-signup-cy", "--reason", "duplicate"])
        .await
        .expect(0);
    assert_eq!(stopped.stdout, "stopped user-signup-cy (TERMINATED)\n");
    let closed = xdb(&env, &["wait", "user-signup-cy", "-o", "json"])
        .await
        .expect(6)
        .json();
    assert_eq!(closed["status"], "TERMINATED");
    let refused = xdb(&env, &["publish", "user-signup-cy", "verify"])
        .await
        .expect(1);
    assert!(
        refused
            .stderr
            .contains("error: PROCESS_NOT_RUNNING (HTTP 409)"),
        "{}",
        refused.stderr
    );

    // list, filtered, as JSON and as a table (newest first).
    let listed = xdb(
        &env,
        &["list", "--type", "UserSignupProcess", "--all", "-o", "json"],
    )
    .await
    .expect(0)
    .json();
    let ids: Vec<&str> = listed["executions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["processId"].as_str().unwrap())
        .collect();
    assert_eq!(
        ids,
        ["user-signup-cy", "user-signup-bob", "user-signup-ann"]
    );
    let running = xdb(&env, &["list", "--status", "TERMINATED"])
        .await
        .expect(0)
        .stdout;
    let lines: Vec<&str> = running.lines().collect();
    assert_eq!(lines.len(), 2, "{running}");
    assert!(lines[1].starts_with("user-signup-cy "), "{running}");

    // Exit codes scripts rely on: not found 5, usage 2, bad token 1, unreachable 3,
    // a control that does not apply 7 (above).
    let missing = xdb(&env, &["describe", "user-signup-nobody"])
        .await
        .expect(5);
    assert!(
        missing.stderr.contains("PROCESS_NOT_FOUND"),
        "{}",
        missing.stderr
    );
    xdb(
        &env,
        &["rpc", "user-signup-bob", "verify", "--input", "{not json"],
    )
    .await
    .expect(2);
    xdb(&env, &["describe"]).await.expect(2);
    let unauthorized = xdb_with(env.api_url(), None, &["describe", "user-signup-ann"])
        .await
        .expect(1);
    assert!(
        unauthorized.stderr.contains("UNAUTHORIZED"),
        "{}",
        unauthorized.stderr
    );
    xdb_with(
        env.api_url(),
        Some(TOKEN),
        &["describe", "user-signup-ann", "--token", "wrong"],
    )
    .await
    .expect(1);
    let unreachable = xdb_with("http://127.0.0.1:1", None, &["list"])
        .await
        .expect(3);
    assert!(
        unreachable.stderr.contains("cannot reach the XDB service"),
        "{}",
        unreachable.stderr
    );

    env.shutdown().await;
}

both_databases!(cli_drives_signups_to_their_end);
