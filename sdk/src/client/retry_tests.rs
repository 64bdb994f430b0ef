//! Retries against a real local HTTP server that answers from a script: drops the
//! connection, refuses with a status, or answers.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use xdb_protocol::*;

use super::{is_valid_request_id, Client, ClientError};

/// What the server does with one request.
#[derive(Debug, Clone)]
enum Answer {
    /// Reads the request, then closes the connection without a word.
    Drop,
    /// Answers this status and body (with `Retry-After: 0`).
    Status(u16, &'static str),
}

/// One request the server read: its path and body.
#[derive(Debug, Clone)]
struct Seen {
    path: String,
    body: serde_json::Value,
}

/// A server that answers its requests from `script`, in order, then 200 with `ok`;
/// its URL and what it read.
async fn scripted_service(
    script: Vec<Answer>,
    ok: &'static str,
) -> (String, Arc<Mutex<Vec<Seen>>>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let seen = Arc::new(Mutex::new(Vec::new()));
    let log = seen.clone();
    tokio::spawn(async move {
        let mut script = script.into_iter();
        loop {
            let Ok((mut stream, _)) = listener.accept().await else {
                return;
            };
            let Some((path, body)) = read_request(&mut stream).await else {
                continue;
            };
            let body = serde_json::from_slice(&body).unwrap_or(serde_json::Value::Null);
            log.lock().unwrap().push(Seen { path, body });
            let (status, text) = match script.next() {
                Some(Answer::Drop) => {
                    drop(stream);
                    continue;
                }
                Some(Answer::Status(status, text)) => (status, text),
                None => (200, ok),
            };
            let response = format!(
                "HTTP/1.1 {status} X\r\ncontent-type: application/json\r\nretry-after: 0\r\n\
                 content-length: {}\r\nconnection: close\r\n\r\n{text}",
                text.len()
            );
            let _ = stream.write_all(response.as_bytes()).await;
            let _ = stream.shutdown().await;
        }
    });
    (url, seen)
}

/// Reads one HTTP/1.1 request: its path and body.
async fn read_request(stream: &mut tokio::net::TcpStream) -> Option<(String, Vec<u8>)> {
    let mut data = Vec::new();
    let mut chunk = [0u8; 4096];
    let head_end = loop {
        if let Some(at) = data.windows(4).position(|w| w == b"\r\n\r\n") {
            break at + 4;
        }
        let n = stream.read(&mut chunk).await.ok()?;
        if n == 0 {
            return None;
        }
        data.extend_from_slice(&chunk[..n]);
    };
    let head = String::from_utf8_lossy(&data[..head_end]).to_string();
    let path = head.split_whitespace().nth(1)?.to_string();
    let length: usize = head
        .lines()
        .find_map(|line| {
            let (name, value) = line.split_once(':')?;
            name.eq_ignore_ascii_case("content-length")
                .then(|| value.trim().parse().ok())?
        })
        .unwrap_or(0);
    while data.len() < head_end + length {
        let n = stream.read(&mut chunk).await.ok()?;
        if n == 0 {
            return None;
        }
        data.extend_from_slice(&chunk[..n]);
    }
    Some((path, data[head_end..head_end + length].to_vec()))
}

/// A client that retries at once (1 ms pauses).
fn client(url: &str) -> Client {
    Client::new(url).with_retry_backoff(Duration::from_millis(1), Duration::from_millis(5))
}

fn stop_request(request_id: Option<&str>) -> ProcessExecutionStopRequest {
    ProcessExecutionStopRequest {
        request_id: request_id.map(str::to_string),
        process_id: "p1".into(),
        process_execution_id: None,
        stop_type: ProcessExecutionStopType::Fail,
        reason: Some("why".into()),
    }
}

const OVERLOADED: &str = r#"{"subType":"OVERLOADED","message":"busy"}"#;
const DATABASE_UNAVAILABLE: &str = r#"{"subType":"DATABASE_UNAVAILABLE","message":"db"}"#;
const CONFLICT: &str = r#"{"subType":"REQUEST_ID_CONFLICT","message":"used"}"#;
const INVALID: &str = r#"{"subType":"INVALID_REQUEST","message":"bad"}"#;

fn request_id(seen: &Seen) -> String {
    seen.body["requestId"]
        .as_str()
        .unwrap_or_default()
        .to_string()
}

#[tokio::test]
async fn a_write_is_sent_again_with_the_same_request_id_and_body() {
    let script = vec![
        Answer::Drop,
        Answer::Status(503, DATABASE_UNAVAILABLE),
        Answer::Status(503, "<html>unavailable</html>"),
    ];
    let (url, seen) = scripted_service(script, "{}").await;
    client(&url).stop(&stop_request(None)).await.unwrap();
    let seen = seen.lock().unwrap().clone();
    assert_eq!(seen.len(), 4, "three retries, then the answer");
    let id = request_id(&seen[0]);
    assert!(is_valid_request_id(&id), "a generated id: {id:?}");
    for attempt in &seen {
        assert_eq!(attempt.path, paths::STOP);
        assert_eq!(attempt.body, seen[0].body, "the same body every time");
    }
    assert_eq!(seen[0].body["reason"], "why");
}

#[tokio::test]
async fn the_callers_request_id_is_sent_on_every_attempt() {
    let (url, seen) = scripted_service(vec![Answer::Drop], r#"{"processExecutionId":"e1"}"#).await;
    let request = ProcessExecutionStartRequest {
        request_id: Some("order-42:start".into()),
        process_id: "order-42".into(),
        process_type: "Order".into(),
        worker_url: String::new(),
        start_state_id: None,
        start_state_input: None,
        start_state_config: None,
        process_start_config: None,
    };
    let response = client(&url).start(&request).await.unwrap();
    assert_eq!(response.process_execution_id, "e1");
    let seen = seen.lock().unwrap().clone();
    assert_eq!(seen.len(), 2);
    for attempt in &seen {
        assert_eq!(request_id(attempt), "order-42:start");
    }
}

#[tokio::test]
async fn each_call_gets_its_own_request_id() {
    let (url, seen) = scripted_service(vec![], "{}").await;
    let client = client(&url);
    client.stop(&stop_request(None)).await.unwrap();
    client.stop(&stop_request(None)).await.unwrap();
    let seen = seen.lock().unwrap().clone();
    assert_eq!(seen.len(), 2);
    assert_ne!(request_id(&seen[0]), request_id(&seen[1]));
}

#[tokio::test]
async fn refusals_other_than_503_are_final() {
    for (body, status, sub_type) in [
        (CONFLICT, 409, ErrorSubType::RequestIdConflict),
        (INVALID, 400, ErrorSubType::InvalidRequest),
    ] {
        let (url, seen) = scripted_service(vec![Answer::Status(status, body)], "{}").await;
        let error = client(&url)
            .stop(&stop_request(Some("r1")))
            .await
            .unwrap_err();
        assert_eq!(error.sub_type(), Some(sub_type));
        assert_eq!(error.status(), Some(status));
        assert_eq!(seen.lock().unwrap().len(), 1, "{sub_type:?} is not retried");
    }
}

#[tokio::test]
async fn retries_are_bounded() {
    let (url, seen) = scripted_service(vec![Answer::Drop; 10], "{}").await;
    let error = client(&url)
        .with_retries(2)
        .pause(&ProcessExecutionControlRequest {
            process_id: "p1".into(),
            ..Default::default()
        })
        .await
        .unwrap_err();
    assert!(matches!(error, ClientError::Transport(_)), "{error}");
    let seen = seen.lock().unwrap().clone();
    assert_eq!(seen.len(), 3, "the first attempt and two retries");
    assert!(seen.iter().all(|s| request_id(s) == request_id(&seen[0])));

    let (url, seen) = scripted_service(vec![Answer::Status(503, OVERLOADED); 10], "{}").await;
    let error = client(&url)
        .with_retries(0)
        .stop(&stop_request(None))
        .await
        .unwrap_err();
    assert_eq!(error.sub_type(), Some(ErrorSubType::Overloaded));
    assert_eq!(seen.lock().unwrap().len(), 1);
}

#[tokio::test]
async fn a_refused_connection_is_retried_then_reported() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    drop(listener);
    let started = std::time::Instant::now();
    let error = Client::new(&url)
        .with_retries(3)
        .with_retry_backoff(Duration::from_millis(20), Duration::from_millis(40))
        .stop(&stop_request(None))
        .await
        .unwrap_err();
    assert!(
        matches!(&error, ClientError::Transport(e) if e.is_connect()),
        "{error}"
    );
    // Pauses of 20, 40 and 40 ms: it did wait between attempts, and not for long.
    let took = started.elapsed();
    assert!(took >= Duration::from_millis(100), "{took:?}");
    assert!(took < Duration::from_secs(5), "{took:?}");
}

#[tokio::test]
async fn reads_are_retried_and_unsafe_writes_are_not() {
    let (url, seen) = scripted_service(
        vec![Answer::Drop, Answer::Status(503, DATABASE_UNAVAILABLE)],
        r#"{"count":7}"#,
    )
    .await;
    let count = client(&url)
        .count(&ProcessExecutionCountRequest::default())
        .await
        .unwrap();
    assert_eq!(count.count, 7);
    assert_eq!(seen.lock().unwrap().len(), 3);

    // An RPC may have run when its answer was lost: never sent again then.
    let (url, seen) = scripted_service(vec![Answer::Drop], r#"{}"#).await;
    let error = client(&url)
        .rpc(&ProcessExecutionRpcRequest {
            process_id: "p1".into(),
            rpc_name: "r".into(),
            input: None,
            timeout_seconds: None,
            global_attribute_loading: None,
            local_attribute_loading: None,
        })
        .await
        .unwrap_err();
    assert!(matches!(error, ClientError::Transport(_)), "{error}");
    assert_eq!(seen.lock().unwrap().len(), 1);
    assert!(seen.lock().unwrap()[0].body.get("requestId").is_none());
}

#[tokio::test]
async fn batch_calls_use_their_paths_and_batch_start_a_request_id() {
    let info = serde_json::json!({
        "batchId": "b1", "operation": "TERMINATE", "status": "COMPLETED",
        "request": {"operation": "TERMINATE"}, "ratePerSecond": 100,
        "expected": 2, "matched": 2, "done": 2, "skipped": 0, "failed": 0,
        "createdTimestampMs": 1
    });
    let describe = serde_json::json!({"batch": info, "notDone": []}).to_string();
    let describe: &'static str = Box::leak(describe.into_boxed_str());
    let (url, seen) = scripted_service(
        vec![
            Answer::Drop,
            Answer::Status(200, r#"{"batchId":"b1","expected":2}"#),
        ],
        describe,
    )
    .await;
    let client = client(&url);
    let started = client
        .batch_start(&BatchStartRequest {
            request_id: None,
            operation: BatchOperation::Terminate,
            process_type: Some("Order".into()),
            where_: None,
            business_table: None,
            rate_per_second: Some(10),
            reason: None,
            identity: None,
            messages: vec![],
            reset: None,
            move_to: None,
            reprioritize: None,
        })
        .await
        .unwrap();
    assert_eq!((started.batch_id.as_str(), started.expected), ("b1", 2));
    let described = client
        .batch_describe(&BatchDescribeRequest {
            batch_id: "b1".into(),
        })
        .await
        .unwrap();
    assert_eq!(described.batch.done, 2);
    let cancelled = client
        .batch_cancel(&BatchCancelRequest {
            batch_id: "b1".into(),
            reason: None,
            identity: None,
        })
        .await
        .unwrap();
    assert_eq!(cancelled.batch.status, BatchStatus::Completed);
    let seen = seen.lock().unwrap().clone();
    let paths: Vec<&str> = seen.iter().map(|s| s.path.as_str()).collect();
    assert_eq!(
        paths,
        [
            paths::BATCH_START,
            paths::BATCH_START,
            paths::BATCH_DESCRIBE,
            paths::BATCH_CANCEL
        ]
    );
    assert_eq!(seen[0].body, seen[1].body);
    assert!(is_valid_request_id(&request_id(&seen[0])));
}

/// What a service of the release before request ids answers a request carrying one.
const UNKNOWN_REQUEST_ID: &str = r#"{"subType":"INVALID_REQUEST","message":"request body: unknown field `requestId`, expected one of `processId`, `reason`"}"#;

#[tokio::test]
async fn a_service_before_request_ids_gets_a_write_again_without_the_clients_own_id() {
    let refused = || vec![Answer::Status(400, UNKNOWN_REQUEST_ID)];
    let (url, seen) = scripted_service(refused(), "{}").await;
    client(&url).stop(&stop_request(None)).await.unwrap();
    let seen = seen.lock().unwrap().clone();
    assert_eq!(seen.len(), 2);
    assert!(is_valid_request_id(&request_id(&seen[0])));
    assert!(
        seen[1].body.get("requestId").is_none(),
        "{:?}",
        seen[1].body
    );
    let mut first = seen[0].body.clone();
    first.as_object_mut().unwrap().remove("requestId");
    assert_eq!(first, seen[1].body, "the same request but for its id");

    // The caller's own id is never dropped: the refusal is the caller's to see.
    let (url, seen) = scripted_service(refused(), "{}").await;
    let error = client(&url)
        .stop(&stop_request(Some("r1")))
        .await
        .unwrap_err();
    assert_eq!(error.sub_type(), Some(ErrorSubType::InvalidRequest));
    assert_eq!(seen.lock().unwrap().len(), 1);

    // Another 400 keeps the id and is final.
    let (url, seen) = scripted_service(vec![Answer::Status(400, INVALID)], "{}").await;
    let error = client(&url).stop(&stop_request(None)).await.unwrap_err();
    assert_eq!(error.sub_type(), Some(ErrorSubType::InvalidRequest));
    assert_eq!(seen.lock().unwrap().len(), 1);

    // Without an id a repeat could act twice: a lost answer is not sent again.
    let mut script = refused();
    script.push(Answer::Drop);
    let (url, seen) = scripted_service(script, "{}").await;
    let error = client(&url).stop(&stop_request(None)).await.unwrap_err();
    assert!(matches!(error, ClientError::Transport(_)), "{error}");
    assert_eq!(seen.lock().unwrap().len(), 2);
}

#[tokio::test]
async fn setting_a_flow_limit_is_sent_again_as_its_repeat_leaves_the_same_override() {
    let entry = r#"{"processType":"Order","effective":{"maxCallsPerSecond":2.5,"maxConcurrentCalls":8},
        "override":{"maxCallsPerSecond":2.5,"maxConcurrentCalls":8},"updatedTimestampMs":7}"#;
    let script = vec![Answer::Drop, Answer::Status(503, DATABASE_UNAVAILABLE)];
    let (url, seen) = scripted_service(script, entry).await;
    let request = FlowLimitsSetRequest {
        process_type: "Order".into(),
        state_id: None,
        override_limits: Some(FlowLimits {
            max_calls_per_second: Some(2.5),
            max_concurrent_calls: Some(8),
            ..Default::default()
        }),
        reason: Some("downstream slow".into()),
    };
    let answer = client(&url).flow_limits_set(&request).await.unwrap();
    assert_eq!(answer.effective.max_calls_per_second, Some(2.5));
    assert_eq!(answer.effective.max_concurrent_calls, Some(8));
    let seen = seen.lock().unwrap().clone();
    assert_eq!(seen.len(), 3, "two retries, then the answer");
    for attempt in &seen {
        assert_eq!(attempt.path, paths::FLOW_LIMITS_SET);
        assert_eq!(attempt.body["override"]["maxCallsPerSecond"], 2.5);
        assert_eq!(attempt.body["override"]["maxConcurrentCalls"], 8);
        assert_eq!(attempt.body, seen[0].body, "the same body every time");
    }

    let (url, seen) = scripted_service(vec![Answer::Status(400, INVALID)], entry).await;
    let error = client(&url).flow_limits_set(&request).await.unwrap_err();
    assert_eq!(error.sub_type(), Some(ErrorSubType::InvalidRequest));
    assert_eq!(seen.lock().unwrap().len(), 1, "a refusal is final");
}

#[tokio::test]
async fn clearing_a_flow_limit_sends_no_override() {
    let entry = r#"{"processType":"Order","stateId":"S","effective":{},"updatedTimestampMs":7}"#;
    let (url, seen) = scripted_service(vec![], entry).await;
    let request = FlowLimitsSetRequest {
        process_type: "Order".into(),
        state_id: Some("S".into()),
        override_limits: None,
        reason: None,
    };
    let answer = client(&url).flow_limits_set(&request).await.unwrap();
    assert_eq!(answer.override_limits, None);
    let body = seen.lock().unwrap()[0].body.clone();
    assert_eq!(
        body,
        serde_json::json!({"processType": "Order", "stateId": "S"})
    );
}
