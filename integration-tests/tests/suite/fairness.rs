//! Fairness keys through the API, the async service and a real worker: with 50,000
//! starts of tenant A waiting, 100 starts of tenant B at the same priority and weight,
//! made after all of them, finish while A's backlog still drains, where by due time
//! alone they would wait for the whole backlog. A weight out of bounds is a 400 naming
//! the field, and starts nothing. In Pulsar mode the broker delivers the change events
//! in the order they were written, and the instance gives its places to the received
//! ones by key in turn: with 400 of A's received, B's 10 run among the first.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use futures::StreamExt;
use serde_json::json;
use xdb_config::QueueMode;
use xdb_integration_tests::{eventually, Database, EnvOptions, XdbTestEnv};
use xdb_protocol::{
    ErrorSubType, FlowLimits, FlowLimitsSetRequest, ProcessExecutionDescribeRequest,
};
use xdb_samples::email::EmailOutbox;
use xdb_samples::sample_router;
use xdb_samples::user_signup::{self, start_user_signup, Form, UserSignupProcess};
use xdb_sdk::*;

use crate::common::*;

both_databases!(
    a_tenant_s_backlog_does_not_starve_another_tenant,
    a_type_s_fairness_attribute_keys_its_starts_through_the_api
);
pulsar_mode_too!(a_tenant_s_backlog_does_not_starve_another_tenant);

/// Worker calls the async instance runs at once.
const IN_FLIGHT: usize = 8;

/// The test's sizes in each mode.
#[derive(Debug, Clone, Copy)]
struct Sizes {
    /// Tenant A's starts, queued before an instance runs.
    backlog: usize,
    /// Tenant B's, made after them.
    other: usize,
    /// Each of A's calls takes this long, so that its backlog lasts: the database
    /// queue runs at most IN_FLIGHT / 20 ms = 400 a second, over two minutes for the
    /// whole backlog; in Pulsar mode, 80 a second, while B's events are on their way.
    a_call: Duration,
    /// At most this many of A's complete before B's last one (by due time, or in
    /// delivery order, alone: all of them).
    a_done_bound: usize,
}

fn sizes() -> Sizes {
    if xdb_integration_tests::pulsar::current_queue_mode() == QueueMode::Pulsar {
        Sizes {
            backlog: 400,
            other: 10,
            a_call: Duration::from_millis(100),
            a_done_bound: 200,
        }
    } else {
        Sizes {
            backlog: 50_000,
            other: 100,
            a_call: Duration::from_millis(20),
            a_done_bound: 1_000,
        }
    }
}

/// One state whose execute counts which tenant came, and completes.
#[derive(Debug, Clone)]
struct TenantProcess {
    sizes: Sizes,
    a_done: Arc<AtomicUsize>,
    b_done: Arc<AtomicUsize>,
    /// A's completions when B's last one completed.
    a_done_when_b_finished: Arc<AtomicUsize>,
}

impl Process for TenantProcess {
    fn state_schema(&self) -> StateSchema {
        StateSchema::with_starting_state(TenantState(self.clone()))
    }
}

struct TenantState(TenantProcess);

#[async_trait]
impl AsyncState for TenantState {
    type Input = ();

    async fn execute(
        &self,
        ctx: &Context,
        _input: (),
        _results: &CommandResults,
        _persistence: &mut Persistence,
        _communication: &mut Communication,
    ) -> Result<StateDecision> {
        let process = &self.0;
        if ctx.process_id.starts_with("a-") {
            tokio::time::sleep(process.sizes.a_call).await;
            process.a_done.fetch_add(1, Ordering::SeqCst);
        } else if process.b_done.fetch_add(1, Ordering::SeqCst) + 1 == process.sizes.other {
            process
                .a_done_when_b_finished
                .store(process.a_done.load(Ordering::SeqCst), Ordering::SeqCst);
        }
        Ok(StateDecision::graceful_complete_process(json!(null)))
    }
}

async fn a_tenant_s_backlog_does_not_starve_another_tenant(db: Database) {
    let sizes = sizes();
    let (backlog, other) = (sizes.backlog, sizes.other);
    let process = TenantProcess {
        sizes,
        a_done: Arc::default(),
        b_done: Arc::default(),
        a_done_when_b_finished: Arc::default(),
    };
    let mut env = XdbTestEnv::start_with(
        db,
        EnvOptions {
            async_instances: 0,
            max_in_flight: IN_FLIGHT,
            ..Default::default()
        },
    )
    .await;
    let worker = serve(&mut env, &process).await;
    let queued = Instant::now();
    let starts = futures::stream::iter(0..backlog)
        .map(|i| {
            let options = ProcessStartOptions::new().fairness_key("tenant-a");
            let (env, process, worker) = (&env, &process, &worker);
            async move { start(env, process, worker, &format!("a-{i}"), options).await }
        })
        .buffer_unordered(32);
    let failed = starts.filter(|started| futures::future::ready(started.is_err()));
    assert_eq!(failed.count().await, 0, "every backlog start succeeds");
    println!(
        "fairness-report db={db:?} backlog_queued_in={:?}",
        queued.elapsed()
    );
    for i in 0..other {
        let options = ProcessStartOptions::new().fairness_key("tenant-b");
        start(&env, &process, &worker, &format!("b-{i}"), options)
            .await
            .unwrap();
    }
    let refused = start(
        &env,
        &process,
        &worker,
        "refused",
        ProcessStartOptions::new()
            .fairness_key("tenant-b")
            .fairness_weight(1001),
    )
    .await;
    let error = expect_api_error(refused, 400, ErrorSubType::InvalidRequest);
    assert!(
        error.message.contains("processStartConfig.fairnessWeight"),
        "{}",
        error.message
    );
    let b = env
        .client
        .describe(&ProcessExecutionDescribeRequest {
            process_id: "b-0".into(),
            process_execution_id: None,
        })
        .await
        .unwrap();
    assert_eq!(b.fairness_key.as_deref(), Some("tenant-b"));

    let running = Instant::now();
    env.add_async_instance().await;
    // Each of B's 100 is claimed at its turn, one in two claims: within 200 claims of
    // one task, however long A's backlog. (Measured: in about a second.)
    eventually(
        "tenant B's executions completed",
        Duration::from_secs(60),
        || async { process.b_done.load(Ordering::SeqCst) >= other },
    )
    .await;
    let took = running.elapsed();
    let a_done = process.a_done_when_b_finished.load(Ordering::SeqCst);
    println!(
        "fairness-report db={db:?} backlog={backlog} other={other} other_done_in={took:?} \
         backlog_done_meanwhile={a_done}"
    );
    // By due time alone B's would have waited for all of A's: A's backlog has hardly
    // begun to drain. Both keys take turns, so A ran about as many as B meanwhile,
    // plus the calls in flight (in Pulsar mode, plus those run before B's events came).
    assert!(
        a_done < sizes.a_done_bound,
        "{a_done} of A's ran before B's {other}"
    );
    let describe_refused = env
        .client
        .describe(&ProcessExecutionDescribeRequest {
            process_id: "refused".into(),
            process_execution_id: None,
        })
        .await;
    assert!(
        describe_refused.is_err(),
        "the refused start started nothing"
    );
    env.shutdown().await;
}

/// An operator's override of the sign-up type's limits names its business row's
/// primary key as the fairness attribute: each start is then keyed by its user, with
/// the type's weight.
async fn a_type_s_fairness_attribute_keys_its_starts_through_the_api(db: Database) {
    let mut env = XdbTestEnv::start(db).await;
    let worker = env
        .start_worker(sample_router(EmailOutbox::new(), Duration::from_secs(60)))
        .await;
    let process_type =
        UserSignupProcess::new(EmailOutbox::new(), Duration::from_secs(60)).process_type();
    let set = env
        .client
        .flow_limits_set(&FlowLimitsSetRequest {
            process_type: process_type.clone(),
            state_id: None,
            override_limits: Some(FlowLimits {
                fairness_key_attribute: Some("user_id".into()),
                fairness_weight: Some(2),
                ..Default::default()
            }),
            reason: Some("share claims by user".into()),
        })
        .await
        .unwrap();
    assert_eq!(
        set.effective.fairness_key_attribute.as_deref(),
        Some("user_id")
    );
    let form = Form {
        email: "ann@example.com".into(),
        name: None,
    };
    start_user_signup(&env.client, Some(&worker), "ann", &form)
        .await
        .expect("start");
    let described = env
        .client
        .describe(&ProcessExecutionDescribeRequest {
            process_id: user_signup::process_id("ann"),
            process_execution_id: None,
        })
        .await
        .unwrap();
    assert_eq!(
        (described.fairness_key.as_deref(), described.fairness_weight),
        (Some("ann"), Some(2)),
        "keyed by the row's user, weighed by the type"
    );
    env.shutdown().await;
}
