//! `explain` on a filtered list and a count, through the API, `xdb list --explain` and
//! `xdb count --explain`: the database's plan instead of the page or the count, and the
//! index to create when none serves the filter's business columns.

use serde_json::json;
use xdb_integration_tests::{Database, EnvOptions};
use xdb_sdk::protocol::{paths, ProcessExecutionCountResponse, ProcessExecutionListResponse};

use super::{call, fixture, order_env, refusal, start_orders, where_body, PROCESS_TYPE, TABLE};
use crate::cli::xdb_with;

both_databases!(a_filter_no_index_serves_is_explained_with_the_index_to_create);

async fn a_filter_no_index_serves_is_explained_with_the_index_to_create(db: Database) {
    let (env, url, _worker) = order_env(db, EnvOptions::default()).await;
    start_orders(&env, &url, &fixture()).await;

    // `amount` has no index of its own: the plan says so and names the index to create,
    // in SQL the database takes (quoted, the index named as MySQL requires).
    let index = match db {
        Database::Postgres => format!(r#"CREATE INDEX "{TABLE}_amount" ON "{TABLE}" ("amount")"#),
        Database::MySql => format!("CREATE INDEX `{TABLE}_amount` ON `{TABLE}` (`amount`)"),
    };
    let mut body = where_body(json!({"column": "amount", "op": ">", "value": 15}));
    body["explain"] = json!(true);
    let page: ProcessExecutionListResponse =
        call(&env, paths::LIST, &body).await.expect("explained");
    assert!(page.executions.is_empty(), "{page:?}");
    assert_eq!(page.next_page_token, None);
    let plan = page.plan.expect("a plan");
    assert!(plan.advice.iter().any(|a| a.contains(&index)), "{plan:?}");
    assert!(
        plan.plan.is_object() || plan.plan.is_array(),
        "the database's plan: {plan:?}"
    );

    // The same request without `explain` lists, with no plan.
    body["explain"] = json!(false);
    let page: ProcessExecutionListResponse = call(&env, paths::LIST, &body).await.expect("list");
    assert_eq!(page.executions.len(), 2, "{page:?}");
    assert_eq!(page.plan, None);

    // Nothing to explain without a filter over the business row or fields.
    let message = refusal(
        call::<ProcessExecutionListResponse>(&env, paths::LIST, &json!({"explain": true})).await,
    );
    assert!(message.contains("explain"), "{message}");

    // The CLI prints the advice, then the plan.
    let api = env.api_url().to_string();
    let run = explained_by_cli(&api, "list").await;
    assert!(
        run.stdout.contains("the database's plan:"),
        "{}",
        run.stdout
    );

    // A count explains itself the same way, counting nothing.
    let mut body = json!({
        "processType": PROCESS_TYPE,
        "where": {"column": "amount", "op": ">", "value": 15},
        "businessTable": {"tableName": TABLE, "primaryKeyColumn": "id"},
        "explain": true,
    });
    let counted: ProcessExecutionCountResponse =
        call(&env, paths::COUNT, &body).await.expect("explained");
    assert_eq!((counted.count, counted.groups.len()), (0, 0), "{counted:?}");
    let plan = counted.plan.expect("a plan");
    assert!(plan.advice.iter().any(|a| a.contains(&index)), "{plan:?}");
    body["explain"] = json!(false);
    let counted: ProcessExecutionCountResponse =
        call(&env, paths::COUNT, &body).await.expect("count");
    assert_eq!((counted.count, counted.plan), (2, None));
    explained_by_cli(&api, "count").await;
}

/// `xdb <command> --where "amount > 15" --explain` on the orders; asserts it prints the
/// advice for the unindexed column.
async fn explained_by_cli(api: &str, command: &str) -> crate::cli::Run {
    let run = xdb_with(
        api,
        None,
        &[
            command,
            "--where",
            "amount > 15",
            "--explain",
            "-t",
            PROCESS_TYPE,
            "--table",
            TABLE,
            "--key",
            "id",
        ],
    )
    .await
    .expect(0);
    assert!(
        run.stdout
            .contains(&format!("advice: no index of {TABLE} serves")),
        "{command}: {}",
        run.stdout
    );
    run
}
