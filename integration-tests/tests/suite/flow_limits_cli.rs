//! `xdb flow-limits` as an operator runs it against a registered type: an override on a
//! state (a rate and a concurrency) and on the type (its priority, then no limit), refusals naming the field (exit 1) that change nothing, a
//! usage error (exit 2), the list and the history as tables and as JSON.

use xdb_integration_tests::{Database, XdbTestEnv};
use xdb_protocol::WorkerDeployment;
use xdb_samples::user_signup::UserSignupProcess;
use xdb_sdk::worker::WorkerService;

use crate::cli::{xdb_with, Run};

both_databases!(an_operator_overrides_and_clears_flow_limits);

const TYPE: &str = "UserSignupProcess";

async fn an_operator_overrides_and_clears_flow_limits(db: Database) {
    let mut env = XdbTestEnv::start(db).await;
    let worker = WorkerService::new().register(UserSignupProcess::default());
    let url = env.start_worker(worker.router()).await;
    let deployment = WorkerDeployment {
        name: "signup".into(),
        version: "1".into(),
        worker_url: url,
    };
    worker
        .register_with(&env.client, deployment, false)
        .await
        .expect("the registration");
    let api = env.api_url().to_string();
    let xdb = |args: &'static [&'static str]| {
        let api = api.clone();
        async move { xdb_with(&api, None, args).await }
    };

    let set: Run = xdb(&[
        "-o",
        "json",
        "flow-limits",
        "set",
        "-t",
        TYPE,
        "--state",
        "VerifyState",
        "--max-calls-per-second",
        "2.5",
        "--max-concurrent-calls",
        "3",
        "--reason",
        "mail API throttles",
    ])
    .await
    .expect(0);
    let entry = set.json();
    assert_eq!(entry["stateId"], "VerifyState", "{entry}");
    assert_eq!(entry["effective"]["maxCallsPerSecond"], 2.5, "{entry}");
    assert_eq!(entry["effective"]["maxConcurrentCalls"], 3, "{entry}");
    assert_eq!(entry["override"]["maxConcurrentCalls"], 3, "{entry}");

    // The type's priority: its starts that name none are claimed at it.
    let prioritized = xdb(&[
        "-o",
        "json",
        "flow-limits",
        "set",
        "-t",
        TYPE,
        "--priority",
        "2",
        "--reason",
        "launch day",
    ])
    .await
    .expect(0)
    .json();
    assert_eq!(prioritized["effective"]["priority"], 2, "{prioritized}");
    xdb(&["flow-limits", "set", "-t", TYPE, "--priority", "9"])
        .await
        .expect(2);
    let on_a_state = xdb(&[
        "flow-limits",
        "set",
        "-t",
        TYPE,
        "--state",
        "VerifyState",
        "--priority",
        "1",
    ])
    .await
    .expect(2);
    assert!(
        on_a_state.stderr.contains("--state"),
        "{}",
        on_a_state.stderr
    );

    let zero = xdb(&[
        "flow-limits",
        "set",
        "-t",
        TYPE,
        "--max-calls-per-second",
        "0",
    ])
    .await
    .expect(1);
    assert!(zero.stderr.contains("maxCallsPerSecond"), "{}", zero.stderr);
    let no_calls = xdb(&[
        "flow-limits",
        "set",
        "-t",
        TYPE,
        "--state",
        "VerifyState",
        "--max-concurrent-calls",
        "0",
    ])
    .await
    .expect(1);
    assert!(
        no_calls.stderr.contains("override.maxConcurrentCalls"),
        "{}",
        no_calls.stderr
    );
    let too_many = xdb(&[
        "flow-limits",
        "set",
        "-t",
        TYPE,
        "--max-concurrent-calls",
        "100001",
        "--max-calls-per-second",
        "1",
    ])
    .await
    .expect(1);
    assert!(
        too_many.stderr.contains("override.maxConcurrentCalls"),
        "{}",
        too_many.stderr
    );
    let unknown_state = xdb(&[
        "flow-limits",
        "set",
        "-t",
        TYPE,
        "--state",
        "NoSuchState",
        "--max-calls-per-second",
        "1",
    ])
    .await
    .expect(1);
    assert!(
        unknown_state.stderr.contains("stateId"),
        "{}",
        unknown_state.stderr
    );
    xdb(&["flow-limits", "set", "-t", TYPE, "--clear", "--unlimited"])
        .await
        .expect(2);
    xdb(&[
        "flow-limits",
        "set",
        "-t",
        TYPE,
        "--unlimited",
        "--max-concurrent-calls",
        "2",
    ])
    .await
    .expect(2);

    let unlimited = xdb(&["flow-limits", "set", "-t", TYPE, "--unlimited"])
        .await
        .expect(0);
    assert!(
        unlimited.stdout.contains("unlimited"),
        "{}",
        unlimited.stdout
    );
    let listed = xdb(&["flow-limits", "list", "-t", TYPE]).await.expect(0);
    let verify_row = listed
        .stdout
        .lines()
        .find(|line| line.contains("VerifyState"))
        .unwrap_or_else(|| panic!("no VerifyState row:\n{}", listed.stdout));
    let verify_cells: Vec<&str> = verify_row.split_whitespace().collect();
    assert_eq!(
        verify_cells[1..8],
        ["VerifyState", "-", "2.5/s", "2.5/s", "-", "3", "3"][..],
        "the refused 0 changed nothing: {}",
        listed.stdout
    );
    let whole_row = listed
        .stdout
        .lines()
        .find(|line| line.contains("(all states)"))
        .unwrap_or_else(|| panic!("no row for the type:\n{}", listed.stdout));
    assert!(whole_row.contains("unlimited"), "{}", listed.stdout);

    let cleared = xdb(&["-o", "json", "flow-limits", "set", "-t", TYPE, "--clear"])
        .await
        .expect(0)
        .json();
    assert!(cleared.get("override").is_none(), "{cleared}");

    let history = xdb(&["-o", "json", "flow-limits", "history", "-t", TYPE])
        .await
        .expect(0)
        .json();
    let changes = history["changes"].as_array().expect("changes");
    let operator: Vec<(&str, bool)> = changes
        .iter()
        .filter(|c| c["source"] == "OPERATOR")
        .map(|c| {
            (
                c["stateId"].as_str().unwrap_or("-"),
                c.get("after").is_some(),
            )
        })
        .collect();
    assert_eq!(
        operator,
        [
            ("-", false),
            ("-", true),
            ("-", true),
            ("VerifyState", true)
        ],
        "newest first, the refusals not among them: {history}"
    );
    let table = xdb(&["flow-limits", "history", "-t", TYPE]).await.expect(0);
    let verify_change = table
        .stdout
        .lines()
        .find(|line| line.contains("mail API throttles"))
        .unwrap_or_else(|| panic!("no change with the reason:\n{}", table.stdout));
    assert!(
        verify_change.contains("- → 2.5/s, 3 at once"),
        "{}",
        table.stdout
    );
    let priority_change = table
        .stdout
        .lines()
        .find(|line| line.contains("launch day"))
        .unwrap_or_else(|| panic!("no change with the reason:\n{}", table.stdout));
    assert!(
        priority_change.contains("- → priority 2"),
        "{}",
        table.stdout
    );
}
