//! Schedules declared by a definition (`Process::schedules`): the registration creates
//! them, firing at the registering deployment; a registration declaring otherwise changes
//! them (keeping an operator's pause), one declaring nothing deletes them, each change in
//! the history as the deployment's. Operators may pause them but not update or delete
//! them, and a declaration may not take an operator's schedule's id.

use std::time::Duration;

use serde_json::{json, Value};
use xdb_integration_tests::{eventually, Database, XdbTestEnv};
use xdb_protocol::paths;
use xdb_sdk::*;

use crate::common::*;

both_databases!(a_definition_owns_the_schedules_it_declares);

const TYPE: &str = "DeclaredTicker";
const DEADLINE: Duration = Duration::from_secs(30);

/// A process type declaring `schedules`, whose one state completes at once.
#[derive(Clone)]
struct Ticker {
    schedules: Vec<protocol::ScheduleDeclaration>,
}

impl Process for Ticker {
    fn process_type(&self) -> String {
        TYPE.into()
    }

    fn state_schema(&self) -> StateSchema {
        StateSchema::with_starting_state(Tick)
    }

    fn schedules(&self) -> Vec<protocol::ScheduleDeclaration> {
        self.schedules.clone()
    }
}

struct Tick;

#[async_trait]
impl AsyncState for Tick {
    type Input = ();

    async fn execute(
        &self,
        _ctx: &Context,
        _input: (),
        _results: &CommandResults,
        _persistence: &mut Persistence,
        _communication: &mut Communication,
    ) -> Result<StateDecision> {
        Ok(StateDecision::graceful_complete_process(()))
    }
}

fn declaration(spec: Value) -> protocol::ScheduleDeclaration {
    serde_json::from_value(json!({
        "scheduleId": "ticks",
        "spec": spec,
        "startStateId": "Tick",
        "overlapPolicy": "ALLOW_ALL",
        "note": "declared in code",
    }))
    .unwrap()
}

async fn register(
    env: &XdbTestEnv,
    schedules: Vec<protocol::ScheduleDeclaration>,
    version: &str,
    url: &str,
) -> std::result::Result<protocol::RegisterDefinitionsResponse, ClientError> {
    WorkerService::new()
        .register(Ticker { schedules })
        .register_with(
            &env.client,
            protocol::WorkerDeployment {
                name: "ticker".into(),
                version: version.into(),
                worker_url: url.into(),
            },
            false,
        )
        .await
}

async fn ok(env: &XdbTestEnv, path: &str, body: Value) -> Value {
    let (status, answer) = call(env, path, body).await;
    assert_eq!(status, 200, "{path}: {answer}");
    answer
}

async fn history_actions(env: &XdbTestEnv) -> Vec<(String, String)> {
    let history = ok(env, paths::SCHEDULE_HISTORY, json!({"scheduleId": "ticks"})).await;
    history["changes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            let action = c["action"].as_str().unwrap().to_string();
            (action, c["changedBy"].as_str().unwrap().to_string())
        })
        .collect()
}

async fn a_definition_owns_the_schedules_it_declares(db: Database) {
    let mut env = XdbTestEnv::start(db).await;
    let worker = WorkerService::new().register(Ticker {
        schedules: Vec::new(),
    });
    let url = env.start_worker(worker.router()).await;

    // Declared every second: created by the registration, firing at the deployment.
    let every_second = declaration(json!({"interval": {"everySeconds": 1}}));
    register(&env, vec![every_second.clone()], "v1", &url)
        .await
        .expect("the registration");
    let described = ok(
        &env,
        paths::SCHEDULE_DESCRIBE,
        json!({"scheduleId": "ticks"}),
    )
    .await;
    assert_eq!(described["schedule"]["declaredBy"], TYPE, "{described}");
    assert_eq!(described["schedule"]["start"]["workerUrl"], url.as_str());
    eventually("a declared firing completes", DEADLINE, || async {
        let described = ok(
            &env,
            paths::SCHEDULE_DESCRIBE,
            json!({"scheduleId": "ticks"}),
        )
        .await;
        let Some(process_id) = described["recentFirings"]
            .as_array()
            .unwrap()
            .iter()
            .find(|f| f["outcome"] == "STARTED")
            .and_then(|f| f["processId"].as_str().map(String::from))
        else {
            return false;
        };
        let (_, process) = call(&env, paths::DESCRIBE, json!({ "processId": process_id })).await;
        process["status"] == "COMPLETED"
    })
    .await;

    // Its code owns it: an operator may pause it, not change or delete it.
    let control = json!({"scheduleId": "ticks", "reason": "quiet night"});
    ok(&env, paths::SCHEDULE_PAUSE, control.clone()).await;
    for path in [paths::SCHEDULE_UPDATE, paths::SCHEDULE_DELETE] {
        let body = if path == paths::SCHEDULE_DELETE {
            control.clone()
        } else {
            json!({"scheduleId": "ticks", "spec": {"interval": {"everySeconds": 5}},
                   "start": {"processType": TYPE, "workerUrl": url}})
        };
        let (status, answer) = call(&env, path, body).await;
        assert_eq!(status, 400, "{path}: {answer}");
        let message = answer["message"].as_str().unwrap();
        assert!(message.contains("declared by the definition"), "{message}");
    }

    // Registered again unchanged: nothing changes. Declared otherwise by v2: changed,
    // still paused.
    register(&env, vec![every_second], "v1", &url)
        .await
        .unwrap();
    let nightly = declaration(json!({"cron": {"expression": "0 3 * * *"}}));
    register(&env, vec![nightly], "v2", &url).await.unwrap();
    let described = ok(
        &env,
        paths::SCHEDULE_DESCRIBE,
        json!({"scheduleId": "ticks"}),
    )
    .await;
    assert_eq!(described["schedule"]["paused"], true, "{described}");
    assert_eq!(
        described["schedule"]["spec"]["cron"]["expression"], "0 3 * * *",
        "{described}"
    );

    // Declared no more by v3: deleted.
    register(&env, Vec::new(), "v3", &url).await.unwrap();
    let (status, _) = call(
        &env,
        paths::SCHEDULE_DESCRIBE,
        json!({"scheduleId": "ticks"}),
    )
    .await;
    assert_eq!(status, 404);
    assert_eq!(
        history_actions(&env).await,
        [
            ("DELETED".to_string(), "ticker@v3".to_string()),
            ("UPDATED".into(), "ticker@v2".into()),
            ("PAUSED".into(), "anonymous".into()),
            ("CREATED".into(), "ticker@v1".into()),
        ]
    );

    // An operator's schedule is never taken over: the registration is refused whole.
    ok(
        &env,
        paths::SCHEDULE_CREATE,
        json!({"scheduleId": "ticks", "spec": {"interval": {"everySeconds": 60}},
               "start": {"processType": TYPE, "workerUrl": url}, "paused": true}),
    )
    .await;
    let every_minute = declaration(json!({"interval": {"everySeconds": 60}}));
    let refused = register(&env, vec![every_minute], "v4", &url)
        .await
        .expect_err("a taken id");
    let message = refused.to_string();
    assert!(message.contains("schedules[0].scheduleId"), "{message}");
    assert!(message.contains("made by an operator"), "{message}");
    let definition = ok(
        &env,
        paths::DEFINITIONS_DESCRIBE,
        json!({ "processType": TYPE }),
    )
    .await;
    assert_eq!(
        definition["revision"]["deployment"]["version"], "v3",
        "nothing registered: {definition}"
    );

    // A declaration that cannot fire is refused before anything is written.
    let bad = declaration(json!({"cron": {"expression": "61 * * * *"}}));
    let refused = register(&env, vec![bad], "v5", &url).await.unwrap_err();
    assert!(
        refused.to_string().contains("definitions[0].schedules[0]"),
        "{refused}"
    );
}
