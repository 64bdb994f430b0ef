//! One trace follows a process from the client's start request through the API
//! service, the task rows and the async service to every worker call, with real
//! services, databases and SDK worker, and spans exported over OTLP/HTTP to an
//! in-process collector.
//!
//! Its own test binary: the exporter and subscriber are process-wide. The PostgreSQL
//! and MariaDB runs share them, so each looks only at its own trace.

mod collector;

use std::sync::OnceLock;
use std::time::Duration;

use tracing::Instrument;
use xdb_config::{LogSettings, TelemetrySettings};
use xdb_integration_tests::processes::timer::TimerProcess;
use xdb_integration_tests::{eventually, Database, XdbTestEnv};
use xdb_sdk::protocol::{paths, ProcessStatus};
use xdb_sdk::{ProcessDefinition, ProcessStartOptions, WorkerService};
use xdb_telemetry::Telemetry;

use collector::{Collector, ReceivedSpan};
use opentelemetry_proto::tonic::trace::v1::span::SpanKind;

const SOON: Duration = Duration::from_secs(20);

/// The collector and the installed exporter, once per binary.
fn tracing_installed() -> &'static (Collector, Telemetry) {
    static INSTALLED: OnceLock<(Collector, Telemetry)> = OnceLock::new();
    INSTALLED.get_or_init(|| {
        let collector = Collector::start();
        let log = LogSettings {
            level: "warn".into(),
            ..Default::default()
        };
        let telemetry = TelemetrySettings {
            enabled: true,
            otlp_endpoint: collector.endpoint.clone(),
            service_name: Some("xdb-trace-test".into()),
            sample_ratio: 1.0,
        };
        // Off the test's runtime: the exporter builds a blocking HTTP client.
        let installed = std::thread::spawn(move || xdb_telemetry::init(&log, &telemetry, "test"))
            .join()
            .expect("installing telemetry does not panic")
            .expect("telemetry installs");
        (collector, installed)
    })
}

/// The trace and span id of `span`, from its `traceparent`.
fn ids_of(span: &tracing::Span) -> (String, String) {
    let traceparent = xdb_telemetry::traceparent(span).expect("the span is recorded");
    let parts: Vec<&str> = traceparent.split('-').collect();
    (parts[1].to_string(), parts[2].to_string())
}

fn find<'a>(spans: &'a [ReceivedSpan], name: &str, kind: SpanKind) -> Option<&'a ReceivedSpan> {
    spans.iter().find(|s| s.name == name && s.kind == kind)
}

#[track_caller]
fn one<'a>(spans: &'a [ReceivedSpan], name: &str, kind: SpanKind) -> &'a ReceivedSpan {
    let found: Vec<_> = spans
        .iter()
        .filter(|s| s.name == name && s.kind == kind)
        .collect();
    assert_eq!(found.len(), 1, "one {kind:?} span {name}: {spans:#?}");
    found[0]
}

#[track_caller]
fn assert_parent(child: &ReceivedSpan, parent: &ReceivedSpan) {
    assert_eq!(
        child.parent_span_id, parent.span_id,
        "{} should be a child of {}",
        child.name, parent.name
    );
}

async fn one_trace_from_the_start_request_to_every_worker_call(db: Database) {
    let (collector, telemetry) = tracing_installed();
    let mut env = XdbTestEnv::start(db).await;
    // waitUntil answers with a timer, whose firing calls execute: two tasks, the second
    // created by the first one's decision.
    let timer = TimerProcess::new(Duration::from_millis(50));
    let worker = env
        .start_worker(WorkerService::new().register(timer.clone()).router())
        .await;

    let root = tracing::info_span!("test.start_process");
    let (trace_id, root_span_id) = ids_of(&root);
    let execution = env
        .client
        .start_process_with(
            &ProcessDefinition::new(timer.clone()),
            "traced",
            Some(&worker),
            (),
            ProcessStartOptions::new(),
        )
        .instrument(root.clone())
        .await
        .unwrap();
    drop(root);
    let done = env
        .client
        .wait_for_process_completion("traced", SOON)
        .await
        .unwrap();
    assert_eq!(done.status, ProcessStatus::Completed, "{done:?}");

    let start_name = format!("POST {}", paths::START);
    let wait_until_call = format!("POST {}", paths::WORKER_WAIT_UNTIL);
    let execute_call = format!("POST {}", paths::WORKER_EXECUTE);
    let ours = || {
        collector
            .spans()
            .into_iter()
            .filter(|s| s.trace_id == trace_id)
            .collect::<Vec<_>>()
    };
    // Spans end as the work around them returns, just after the process completed;
    // each flush exports what has ended so far.
    eventually("the process's spans to be exported", SOON, || async {
        tokio::task::spawn_blocking(|| telemetry.force_flush())
            .await
            .expect("the flush does not panic")
            .expect("the collector accepts the spans");
        let spans = ours();
        find(&spans, "test.start_process", SpanKind::Internal).is_some()
            && find(&spans, &execute_call, SpanKind::Server).is_some()
            && find(&spans, "handle TIMER", SpanKind::Consumer).is_some()
    })
    .await;
    let spans = ours();

    let root = one(&spans, "test.start_process", SpanKind::Internal);
    assert_eq!(root.span_id, root_span_id);
    assert!(root.parent_span_id.is_empty(), "{root:?}");
    // Every span hangs off another span of the same trace.
    for span in spans.iter().filter(|s| s.span_id != root_span_id) {
        assert!(
            spans.iter().any(|p| p.span_id == span.parent_span_id),
            "{} has no parent in the trace: {spans:#?}",
            span.name
        );
    }
    // The chain: client → API request → task → worker call → worker, and each task's
    // handling under the handling of the task whose decision created it.
    let start = one(&spans, &start_name, SpanKind::Server);
    assert_parent(start, root);
    let wait_until = one(&spans, "handle WAIT_UNTIL", SpanKind::Consumer);
    assert_eq!(
        wait_until.attributes.get("process_execution_id"),
        Some(&execution)
    );
    assert_parent(wait_until, start);
    let fired = one(&spans, "handle TIMER", SpanKind::Consumer);
    assert_parent(fired, wait_until);
    // The timer is its state's last command: the execute is called in its handling.
    assert!(find(&spans, "handle EXECUTE", SpanKind::Consumer).is_none());
    for (task, path) in [(wait_until, &wait_until_call), (fired, &execute_call)] {
        let call = one(&spans, path, SpanKind::Client);
        assert_parent(call, task);
        assert_parent(one(&spans, path, SpanKind::Server), call);
    }
    // No span of this execution started a trace of its own.
    let strays: Vec<_> = collector
        .spans()
        .into_iter()
        .filter(|s| s.attributes.get("process_execution_id") == Some(&execution))
        .filter(|s| s.trace_id != trace_id)
        .collect();
    assert!(strays.is_empty(), "spans outside the trace: {strays:#?}");
    env.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_one_trace_from_the_start_request_to_every_worker_call() {
    one_trace_from_the_start_request_to_every_worker_call(Database::Postgres).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mysql_one_trace_from_the_start_request_to_every_worker_call() {
    one_trace_from_the_start_request_to_every_worker_call(Database::MySql).await
}
