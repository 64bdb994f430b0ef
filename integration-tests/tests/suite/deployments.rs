//! Worker deployments and versions: executions stay pinned to the deployment they
//! started on, starts go to the current one, operators move executions and roll back,
//! and a type whose policy says so moves at the next registration.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use axum::extract::Request;
use axum::middleware::Next;
use axum::Router;
use xdb_integration_tests::{Database, XdbTestEnv};
use xdb_samples::user_signup::{self, Form, UserSignupProcess};
use xdb_sdk::protocol::*;
use xdb_sdk::WorkerService;

use crate::common::*;

both_databases!(
    executions_stay_pinned_while_starts_go_to_the_current_deployment,
    operators_roll_back_and_move_executions,
    a_move_to_current_policy_moves_running_executions_at_registration,
);

/// One deployment of the sign-up worker, counting the execute calls it serves.
struct Deployment {
    url: String,
    worker: WorkerService,
    executes: Arc<AtomicUsize>,
    version: String,
}

impl Deployment {
    async fn start(env: &mut XdbTestEnv, version: &str) -> Self {
        let worker = WorkerService::new().register(UserSignupProcess::default());
        let executes = Arc::new(AtomicUsize::new(0));
        let counter = executes.clone();
        let router: Router = worker.router().layer(axum::middleware::from_fn(
            move |request: Request, next: Next| {
                let counter = counter.clone();
                async move {
                    if request.uri().path() == paths::WORKER_EXECUTE {
                        counter.fetch_add(1, Ordering::SeqCst);
                    }
                    next.run(request).await
                }
            },
        ));
        let url = env.start_worker(router).await;
        Self {
            url,
            worker,
            executes,
            version: version.into(),
        }
    }

    fn deployment(&self) -> WorkerDeployment {
        WorkerDeployment {
            name: "signup".into(),
            version: self.version.clone(),
            worker_url: self.url.clone(),
        }
    }

    fn reference(&self) -> DeploymentRef {
        DeploymentRef {
            name: "signup".into(),
            version: self.version.clone(),
        }
    }

    async fn register(&self, env: &XdbTestEnv, policy: VersioningPolicy) {
        let mut definitions = self.worker.wire_definitions();
        definitions[0].versioning_policy = policy;
        env.client
            .register_definitions(&RegisterDefinitionsRequest {
                deployment: self.deployment(),
                definitions,
                force: false,
            })
            .await
            .expect("the registration");
    }

    fn executes(&self) -> usize {
        self.executes.load(Ordering::SeqCst)
    }
}

/// Starts `user`'s sign-up naming no worker; waits until it waits for verification.
async fn start_waiting(env: &XdbTestEnv, user: &str) -> String {
    let form = Form {
        email: format!("{user}@example.com"),
        name: None,
    };
    let exec = user_signup::start_user_signup(&env.client, None, user, &form)
        .await
        .expect("the start");
    wait_state(env, &exec, "VerifyState", 1, "WAITING_COMMANDS").await;
    exec
}

async fn worker_url_of(env: &XdbTestEnv, user: &str) -> String {
    env.client
        .describe_process(&user_signup::process_id(user))
        .await
        .unwrap()
        .worker_url
}

/// Verifies `user` and waits until its execution completed.
async fn verify(env: &XdbTestEnv, user: &str) {
    user_signup::publish_verification(&env.client, user, "email-link")
        .await
        .unwrap();
    let done = env
        .client
        .wait_for_process_completion(&user_signup::process_id(user), SOON)
        .await
        .unwrap();
    assert_eq!(done.status, ProcessStatus::Completed, "{user}");
}

/// Each state of `exec` ran once: one SubmitState and one VerifyState execution.
async fn each_state_ran_once(env: &XdbTestEnv, exec: &str) {
    let states = env
        .count(
            &format!(
                "SELECT count(*) FROM xdb_sys_async_state_executions \
                 WHERE process_execution_id = '{exec}' AND status = 'COMPLETED'"
            ),
            &[],
        )
        .await;
    assert_eq!(states, 2, "{}", dump_execution(env, exec).await);
}

async fn summary(env: &XdbTestEnv, version: &str) -> DeploymentSummary {
    let listed = env.client.list_deployments().await.unwrap();
    listed
        .deployments
        .into_iter()
        .find(|d| d.deployment.version == version)
        .unwrap_or_else(|| panic!("deployment {version} is listed"))
}

async fn executions_stay_pinned_while_starts_go_to_the_current_deployment(db: Database) {
    let mut env = XdbTestEnv::start(db).await;
    let v1 = Deployment::start(&mut env, "v1").await;
    let v2 = Deployment::start(&mut env, "v2").await;
    v1.register(&env, VersioningPolicy::Pinned).await;
    let ann = start_waiting(&env, "ann").await;
    assert_eq!(v1.executes(), 1, "SubmitState ran on v1");

    v2.register(&env, VersioningPolicy::Pinned).await;
    let bob = start_waiting(&env, "bob").await;
    assert_eq!((v1.executes(), v2.executes()), (1, 1), "bob started on v2");
    assert_eq!(
        worker_url_of(&env, "ann").await,
        v1.url,
        "ann stays pinned to v1"
    );
    assert_eq!(worker_url_of(&env, "bob").await, v2.url);

    // v1 drains: no new starts name it, and its count falls to 0 as ann finishes there.
    let error = expect_api_error(
        user_signup::start_user_signup(
            &env.client,
            Some(&v1.url),
            "carl",
            &Form {
                email: "carl@example.com".into(),
                name: None,
            },
        )
        .await,
        400,
        ErrorSubType::InvalidRequest,
    );
    assert!(
        error.message.contains("former deployment"),
        "{}",
        error.message
    );
    let draining = summary(&env, "v1").await;
    assert_eq!((draining.running_executions, draining.drained), (1, false));
    assert!(draining.current_for.is_empty());
    assert_eq!(summary(&env, "v2").await.current_for, ["UserSignupProcess"]);

    verify(&env, "ann").await;
    verify(&env, "bob").await;
    assert_eq!(
        (v1.executes(), v2.executes()),
        (2, 2),
        "each finished where it started"
    );
    let drained = summary(&env, "v1").await;
    assert_eq!((drained.running_executions, drained.drained), (0, true));
    each_state_ran_once(&env, &ann).await;
    each_state_ran_once(&env, &bob).await;
    env.shutdown().await;
}

async fn operators_roll_back_and_move_executions(db: Database) {
    let mut env = XdbTestEnv::start(db).await;
    let v1 = Deployment::start(&mut env, "v1").await;
    let v2 = Deployment::start(&mut env, "v2").await;
    v1.register(&env, VersioningPolicy::Pinned).await;
    v2.register(&env, VersioningPolicy::Pinned).await;
    let dora = start_waiting(&env, "dora").await;
    assert_eq!(v2.executes(), 1);

    // A rollback: v1 current again, as a new revision.
    let rolled = env
        .client
        .set_current_deployment(&DeploymentSetCurrentRequest {
            deployment: v1.reference(),
            force: false,
        })
        .await
        .unwrap();
    assert!(rolled.registered[0].changed);
    assert_eq!(rolled.registered[0].revision.revision, 3);
    assert_eq!(summary(&env, "v1").await.current_for, ["UserSignupProcess"]);

    // dora moves to v1 and runs her next state there.
    let moved = env
        .client
        .move_executions(&ExecutionsMoveRequest {
            process_type: "UserSignupProcess".into(),
            to: v1.reference(),
            from: Some(v2.reference()),
            process_ids: vec![user_signup::process_id("dora")],
        })
        .await
        .unwrap();
    assert_eq!(moved.moved, 1);
    assert_eq!(worker_url_of(&env, "dora").await, v1.url);
    verify(&env, "dora").await;
    assert_eq!(
        (v1.executes(), v2.executes()),
        (1, 1),
        "VerifyState ran on v1"
    );
    each_state_ran_once(&env, &dora).await;

    let unknown = DeploymentRef {
        name: "signup".into(),
        version: "v9".into(),
    };
    expect_api_error(
        env.client
            .move_executions(&ExecutionsMoveRequest {
                process_type: "UserSignupProcess".into(),
                to: unknown.clone(),
                from: None,
                process_ids: Vec::new(),
            })
            .await,
        404,
        ErrorSubType::DefinitionNotFound,
    );
    expect_api_error(
        env.client
            .set_current_deployment(&DeploymentSetCurrentRequest {
                deployment: unknown,
                force: false,
            })
            .await,
        404,
        ErrorSubType::DefinitionNotFound,
    );
    env.shutdown().await;
}

async fn a_move_to_current_policy_moves_running_executions_at_registration(db: Database) {
    let mut env = XdbTestEnv::start(db).await;
    let v1 = Deployment::start(&mut env, "v1").await;
    let v2 = Deployment::start(&mut env, "v2").await;
    v1.register(&env, VersioningPolicy::MoveToCurrent).await;
    let erin = start_waiting(&env, "erin").await;
    assert_eq!(worker_url_of(&env, "erin").await, v1.url);

    v2.register(&env, VersioningPolicy::MoveToCurrent).await;
    assert_eq!(
        worker_url_of(&env, "erin").await,
        v2.url,
        "moved with the registration"
    );
    verify(&env, "erin").await;
    assert_eq!(
        (v1.executes(), v2.executes()),
        (1, 1),
        "VerifyState ran on v2"
    );
    each_state_ran_once(&env, &erin).await;
    env.shutdown().await;
}
