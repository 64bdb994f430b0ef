//! Registered process definitions: registration (idempotent, versioned, checked against
//! the business table), and the checks they give starts, publishes and RPCs.

use serde_json::json;
use xdb_integration_tests::{eventually, Database, XdbTestEnv};
use xdb_samples::user_signup::{
    self, Form, UserSignupProcess, QUEUE_VERIFY, RPC_VERIFY, STATUS_VERIFIED,
};
use xdb_sdk::protocol::*;
use xdb_sdk::WorkerService;

use crate::common::*;

both_databases!(
    registration_is_idempotent_versioned_and_survives_a_restart,
    registration_checks_the_business_table,
    starts_publishes_and_rpcs_are_checked_against_the_definition,
    a_start_without_worker_url_runs_on_the_registered_deployment,
    a_registration_stranding_running_executions_is_refused_unless_forced,
);

fn deployment(version: &str, worker_url: &str) -> WorkerDeployment {
    WorkerDeployment {
        name: "signup-service".into(),
        version: version.into(),
        worker_url: worker_url.into(),
    }
}

/// A worker hosting the sign-up sample, registered as `version`; its URL and service.
async fn registered_signup(env: &mut XdbTestEnv, version: &str) -> (String, WorkerService) {
    let worker = WorkerService::new().register(UserSignupProcess::default());
    let url = env.start_worker(worker.router()).await;
    let response = worker
        .register_with(&env.client, deployment(version, &url), false)
        .await
        .expect("the registration");
    assert_eq!(response.registered.len(), 1);
    (url, worker)
}

async fn definition_rows(env: &XdbTestEnv) -> i64 {
    env.count("SELECT count(*) FROM xdb_sys_process_definitions", &[])
        .await
}

async fn registration_is_idempotent_versioned_and_survives_a_restart(db: Database) {
    let mut env = XdbTestEnv::start(db).await;
    let worker = WorkerService::new().register(UserSignupProcess::default());
    let url = env.start_worker(worker.router()).await;
    let first = worker
        .register_with(&env.client, deployment("v1", &url), false)
        .await
        .unwrap();
    let again = worker
        .register_with(&env.client, deployment("v1", &url), false)
        .await
        .unwrap();
    assert!(first.registered[0].changed);
    assert!(
        !again.registered[0].changed,
        "the same definition writes nothing"
    );
    assert_eq!(first.registered[0].revision, again.registered[0].revision);
    assert_eq!(first.registered[0].revision.revision, 1);
    assert_eq!(definition_rows(&env).await, 1);

    let described = env
        .client
        .describe_definition(&DefinitionDescribeRequest {
            process_type: "UserSignupProcess".into(),
            revision: None,
        })
        .await
        .unwrap();
    let definition = &described.definition;
    let states: Vec<(&str, bool)> = definition
        .states
        .iter()
        .map(|s| (s.id.as_str(), s.has_wait_until))
        .collect();
    assert_eq!(states, [("SubmitState", false), ("VerifyState", true)]);
    assert_eq!(definition.local_queues, [QUEUE_VERIFY]);
    let rpc = &definition.rpcs[0];
    assert_eq!(rpc.name, RPC_VERIFY);
    assert_eq!(
        rpc.global_attribute_loading.as_ref().unwrap().lock_type,
        LockType::ExclusiveLock
    );
    let globals = definition.global_attributes.as_ref().unwrap();
    assert_eq!(
        (
            globals.table_name.as_str(),
            globals.primary_key_column.as_str()
        ),
        ("user", "user_id")
    );

    // A new version of the deployment is a new revision; the old one stays as history.
    let second = worker
        .register_with(&env.client, deployment("v2", &url), false)
        .await
        .unwrap();
    assert!(second.registered[0].changed);
    assert_eq!(second.registered[0].revision.revision, 2);

    env.restart_api().await;
    let listed = env.client.list_definitions().await.unwrap();
    assert_eq!(listed.definitions.len(), 1);
    assert_eq!(listed.definitions[0].revision, 2);
    assert_eq!(listed.definitions[0].deployment.version, "v2");
    let described = env
        .client
        .describe_definition(&DefinitionDescribeRequest {
            process_type: "UserSignupProcess".into(),
            revision: Some(1),
        })
        .await
        .unwrap();
    assert_eq!(described.revision.deployment.version, "v1");
    let versions: Vec<i64> = described.revisions.iter().map(|r| r.revision).collect();
    assert_eq!(versions, [2, 1]);
    expect_api_error(
        env.client
            .describe_definition(&DefinitionDescribeRequest {
                process_type: "NoSuchProcess".into(),
                revision: None,
            })
            .await,
        404,
        ErrorSubType::DefinitionNotFound,
    );
    env.shutdown().await;
}

async fn registration_checks_the_business_table(db: Database) {
    let mut env = XdbTestEnv::start(db).await;
    let worker = WorkerService::new().register(UserSignupProcess::default());
    let url = env.start_worker(worker.router()).await;
    let refused = |edit: fn(&mut GlobalAttributesDefinition)| {
        let mut definition = worker.wire_definitions().remove(0);
        edit(definition.global_attributes.as_mut().unwrap());
        RegisterDefinitionsRequest {
            deployment: deployment("v1", &url),
            definitions: vec![definition],
            force: false,
        }
    };
    type Edit = fn(&mut GlobalAttributesDefinition);
    let cases: [(Edit, &str); 4] = [
        (
            |g| g.table_name = "no_such_table".into(),
            "definitions[0].globalAttributes.tableName",
        ),
        (
            |g| g.primary_key_column = "id".into(),
            "definitions[0].globalAttributes.primaryKeyColumn",
        ),
        (
            |g| g.columns[1].name = "state".into(),
            "definitions[0].globalAttributes.columns[1]",
        ),
        (
            |g| g.columns[1].attribute_type = AttributeType::Integer,
            "definitions[0].globalAttributes.columns[1].type",
        ),
    ];
    for (edit, field) in cases {
        let error = expect_api_error(
            env.client.register_definitions(&refused(edit)).await,
            400,
            ErrorSubType::InvalidRequest,
        );
        assert!(
            error.message.starts_with(field),
            "{field}: {}",
            error.message
        );
    }
    assert_eq!(
        definition_rows(&env).await,
        0,
        "a refused registration writes nothing"
    );
    env.shutdown().await;
}

fn form() -> Form {
    Form {
        email: "ann@example.com".into(),
        name: None,
    }
}

async fn starts_publishes_and_rpcs_are_checked_against_the_definition(db: Database) {
    let mut env = XdbTestEnv::start(db).await;
    let (url, worker) = registered_signup(&mut env, "v1").await;
    // A type with a declared input schema, registered beside it (never started).
    let mut schemed = worker.wire_definitions().remove(0);
    schemed.process_type = "SchemedSignup".into();
    schemed.states[0].input_schema = Some(json!({
        "type": "object", "required": ["email"],
        "properties": {"email": {"type": "string", "format": "email"}}
    }));
    env.client
        .register_definitions(&RegisterDefinitionsRequest {
            deployment: WorkerDeployment {
                name: "schemed".into(),
                version: "v1".into(),
                worker_url: format!("{url}/schemed"),
            },
            definitions: vec![schemed],
            force: false,
        })
        .await
        .unwrap();
    let before = env.row_counts().await;
    let start = |process_type: &str, state: &str, input: Option<serde_json::Value>| {
        ProcessExecutionStartRequest {
            request_id: None,
            process_id: "refused".into(),
            process_type: process_type.into(),
            worker_url: url.clone(),
            start_state_id: Some(state.into()),
            start_state_input: input.map(|v| EncodedObject::json(&v).unwrap()),
            start_state_config: None,
            process_start_config: None,
        }
    };
    let mut no_skip = start("UserSignupProcess", "SubmitState", None);
    no_skip.start_state_config = Some(AsyncStateConfig::default());
    let mut schemed = start("SchemedSignup", "SubmitState", Some(json!({"name": "ann"})));
    schemed.worker_url.clear();
    let cases = [
        (start("NoSuchProcess", "SubmitState", None), "processType:"),
        (
            start("UserSignupProcess", "NoSuchState", None),
            "startStateId:",
        ),
        (no_skip, "startStateConfig.skipWaitUntil:"),
        (schemed, "startStateInput:"),
    ];
    for (request, field) in cases {
        let error = expect_api_error(
            env.client.start(&request).await,
            400,
            ErrorSubType::InvalidRequest,
        );
        assert!(
            error.message.starts_with(field),
            "{field}: {}",
            error.message
        );
    }
    assert_eq!(
        env.row_counts().await,
        before,
        "refused starts write nothing"
    );

    let exec = user_signup::start_user_signup(&env.client, Some(&url), "ann", &form())
        .await
        .unwrap();
    wait_state(&env, &exec, "VerifyState", 1, "WAITING_COMMANDS").await;
    let before = env.row_counts().await;
    let error = expect_api_error(
        env.client
            .publish_to_local_queue(&user_signup::process_id("ann"), "verfy", "x", None)
            .await,
        400,
        ErrorSubType::InvalidRequest,
    );
    assert!(
        error.message.starts_with("messages[0].queueName:") && error.message.contains("verify"),
        "{}",
        error.message
    );
    let rpc = |name: &str, loading: Option<GlobalAttributeLoading>| ProcessExecutionRpcRequest {
        process_id: user_signup::process_id("ann"),
        rpc_name: name.into(),
        input: Some(EncodedObject::json(&"cli").unwrap()),
        timeout_seconds: None,
        global_attribute_loading: loading,
        local_attribute_loading: None,
    };
    let error = expect_api_error(
        env.client.rpc(&rpc("verfy", None)).await,
        400,
        ErrorSubType::InvalidRequest,
    );
    assert!(error.message.starts_with("rpcName:"), "{}", error.message);
    let unlocked = GlobalAttributeLoading {
        columns: vec!["status".into()],
        lock_type: LockType::NoLock,
    };
    let error = expect_api_error(
        env.client.rpc(&rpc(RPC_VERIFY, Some(unlocked))).await,
        400,
        ErrorSubType::InvalidRequest,
    );
    assert!(error.message.contains("lockType"), "{}", error.message);
    assert_eq!(
        env.row_counts().await,
        before,
        "refused publishes and RPCs write nothing"
    );

    // Said nothing of loading: the declared policy loads the status the RPC's guard reads,
    // so it finds the row verified (by someone else) and does not verify it again;
    // without the policy it would load nothing, see no status and verify.
    env.execute_sql("UPDATE \"user\" SET status = 'verified' WHERE user_id = 'ann'")
        .await;
    let answer = env.client.rpc(&rpc(RPC_VERIFY, None)).await.unwrap();
    assert_eq!(decode(&answer.output), json!("already verified"));
    let user = env.user_row("ann").await.unwrap();
    assert_eq!(user.status.as_deref(), Some(STATUS_VERIFIED));
    assert_eq!(user.source, None, "the RPC wrote nothing");
    env.shutdown().await;
}

async fn a_start_without_worker_url_runs_on_the_registered_deployment(db: Database) {
    let mut env = XdbTestEnv::start(db).await;
    let (url, _worker) = registered_signup(&mut env, "v1").await;
    let exec = user_signup::start_user_signup(&env.client, None, "bob", &form())
        .await
        .expect("a start naming no worker");
    user_signup::publish_verification(&env.client, "bob", "email-link")
        .await
        .unwrap();
    let done = env
        .client
        .wait_for_process_completion(&user_signup::process_id("bob"), SOON)
        .await
        .unwrap();
    assert_eq!(
        done.status,
        ProcessStatus::Completed,
        "{}",
        dump_execution(&env, &exec).await
    );
    let described = env
        .client
        .describe_process(&user_signup::process_id("bob"))
        .await
        .unwrap();
    assert_eq!(described.worker_url, url);

    // A type nobody registered still needs its worker named.
    let error = expect_api_error(
        env.client
            .start(&ProcessExecutionStartRequest {
                request_id: None,
                process_id: "orphan".into(),
                process_type: "Unregistered".into(),
                worker_url: String::new(),
                start_state_id: None,
                start_state_input: None,
                start_state_config: None,
                process_start_config: None,
            })
            .await,
        400,
        ErrorSubType::InvalidRequest,
    );
    assert!(error.message.starts_with("workerUrl:"), "{}", error.message);
    env.shutdown().await;
}

async fn a_registration_stranding_running_executions_is_refused_unless_forced(db: Database) {
    let mut env = XdbTestEnv::start(db).await;
    let (url, worker) = registered_signup(&mut env, "v1").await;
    for user in ["carl", "dora"] {
        let exec = user_signup::start_user_signup(&env.client, Some(&url), user, &form())
            .await
            .unwrap();
        wait_state(&env, &exec, "VerifyState", 1, "WAITING_COMMANDS").await;
    }
    let mut without_verify = worker.wire_definitions().remove(0);
    without_verify.states.retain(|s| s.id != "VerifyState");
    let mut request = RegisterDefinitionsRequest {
        deployment: deployment("v2", &url),
        definitions: vec![without_verify],
        force: false,
    };
    let error = expect_api_error(
        env.client.register_definitions(&request).await,
        409,
        ErrorSubType::DefinitionIncompatible,
    );
    assert!(
        error.message.contains("VerifyState (2 running executions)"),
        "{}",
        error.message
    );
    assert_eq!(definition_rows(&env).await, 1, "nothing registered");

    request.force = true;
    let forced = env.client.register_definitions(&request).await.unwrap();
    assert_eq!(forced.registered[0].revision.revision, 2);
    eventually("the forced definition to be current", SOON, || async {
        let listed = env.client.list_definitions().await.unwrap();
        listed.definitions[0].deployment.version == "v2"
    })
    .await;
    env.shutdown().await;
}
