//! Receipts: what a request with a `requestId` did, or what a batch did to one execution,
//! recorded in the same transaction as the effect (`xdb_sys_request_receipts`).
//!
//! A request sent again with the same id finds its receipt and gets the first answer
//! back, nothing done twice, even when that answer was lost after the commit. The
//! decisions here (is the receipt this request's, is it still kept) are pure; the
//! statements are in `sql_tables::receipt_rows`.

use std::time::Duration;

use chrono::{DateTime, Utc};
use serde::Serialize;
use sha2::{Digest, Sha256};
use uuid::Uuid;
use xdb_protocol::canonical_json::with_sorted_keys;
use xdb_protocol::{
    BatchItemOutcome, ProcessExecutionControlRequest, ProcessExecutionResetRequest,
    ProcessExecutionStartRequest, ProcessExecutionStopRequest,
    ProcessExecutionWaitForCompletionResponse, PublishToLocalQueueRequest,
};

use crate::StoreError;

/// A request that changes an execution, as one value: what [`crate::ProcessApi::apply`]
/// runs with a receipt (a client's idempotent request, or a batch's item).
#[derive(Debug, Clone, Copy)]
pub enum ClientRequest<'a> {
    Start(&'a ProcessExecutionStartRequest),
    Stop(&'a ProcessExecutionStopRequest),
    Publish(&'a PublishToLocalQueueRequest),
    Control(Control, &'a ProcessExecutionControlRequest),
    Reset(&'a ProcessExecutionResetRequest),
}

/// An operator's control of one execution.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Control {
    RetryNow,
    GiveUp,
    Pause,
    Resume,
    Reprioritize,
}

impl ClientRequest<'_> {
    /// The operation's name in a receipt: a request id names one operation.
    pub fn operation(&self) -> &'static str {
        match self {
            ClientRequest::Start(_) => "start",
            ClientRequest::Stop(_) => "stop",
            ClientRequest::Publish(_) => "publish-to-local-queue",
            ClientRequest::Control(Control::RetryNow, _) => "retry-now",
            ClientRequest::Control(Control::GiveUp, _) => "give-up",
            ClientRequest::Control(Control::Pause, _) => "pause",
            ClientRequest::Control(Control::Resume, _) => "resume",
            ClientRequest::Control(Control::Reprioritize, _) => "reprioritize",
            ClientRequest::Reset(_) => "reset",
        }
    }

    /// The client's `requestId`, if it sent one.
    pub fn request_id(&self) -> Option<&str> {
        match self {
            ClientRequest::Start(r) => r.request_id.as_deref(),
            ClientRequest::Stop(r) => r.request_id.as_deref(),
            ClientRequest::Publish(r) => r.request_id.as_deref(),
            ClientRequest::Control(_, r) => r.request_id.as_deref(),
            ClientRequest::Reset(r) => r.request_id.as_deref(),
        }
    }

    /// The process id it acts on.
    pub fn process_id(&self) -> &str {
        match self {
            ClientRequest::Start(r) => &r.process_id,
            ClientRequest::Stop(r) => &r.process_id,
            ClientRequest::Publish(r) => &r.process_id,
            ClientRequest::Control(_, r) => &r.process_id,
            ClientRequest::Reset(r) => &r.process_id,
        }
    }

    /// SHA-256 of the request's canonical JSON, hex: equal bodies, equal hashes,
    /// whatever their keys' order.
    pub fn body_hash(&self) -> String {
        match self {
            ClientRequest::Start(r) => body_hash(r),
            ClientRequest::Stop(r) => body_hash(r),
            ClientRequest::Publish(r) => body_hash(r),
            ClientRequest::Control(_, r) => body_hash(r),
            ClientRequest::Reset(r) => body_hash(r),
        }
    }
}

/// SHA-256 of `body`'s canonical JSON, hex.
pub fn body_hash(body: &impl Serialize) -> String {
    let value = serde_json::to_value(body).expect("requests serialize");
    let canonical = serde_json::to_vec(&with_sorted_keys(value)).expect("JSON serializes");
    hex::encode(Sha256::digest(&canonical))
}

/// A start's answer as its receipt keeps it.
pub(crate) fn started_answer(process_execution_id: Uuid) -> String {
    let answer = xdb_protocol::ProcessExecutionStartResponse {
        process_execution_id: process_execution_id.to_string(),
    };
    serde_json::to_string(&answer).expect("answers serialize")
}

/// What to record with a request's effect.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Receipt {
    pub request_id: String,
    pub operation: &'static str,
    pub body_hash: String,
    /// A batch's item: the batch (kept as long as the batch, not the retention).
    pub batch_id: Option<Uuid>,
    /// How long a client's receipt answers for its request id.
    pub retention: Duration,
}

impl Receipt {
    /// The receipt of a client's `request`, if it carries a request id (checked here).
    pub fn of_client(
        request: &ClientRequest<'_>,
        retention: Duration,
    ) -> Result<Option<Receipt>, StoreError> {
        let Some(request_id) = request.request_id() else {
            return Ok(None);
        };
        check_request_id(request_id)?;
        Ok(Some(Receipt {
            request_id: request_id.to_owned(),
            operation: request.operation(),
            body_hash: request.body_hash(),
            batch_id: None,
            retention,
        }))
    }

    /// The receipt of a request of another kind (`operation`) with `request_id`.
    pub fn of_request(
        request_id: Option<&str>,
        operation: &'static str,
        body: &impl Serialize,
        retention: Duration,
    ) -> Result<Option<Receipt>, StoreError> {
        let Some(request_id) = request_id else {
            return Ok(None);
        };
        check_request_id(request_id)?;
        Ok(Some(Receipt {
            request_id: request_id.to_owned(),
            operation,
            body_hash: body_hash(body),
            batch_id: None,
            retention,
        }))
    }

    /// The receipt of what batch `batch_id` does to execution `execution`.
    pub fn of_batch_item(batch_id: Uuid, execution: Uuid, operation: &'static str) -> Receipt {
        Receipt {
            request_id: batch_item_key(batch_id, execution),
            operation,
            body_hash: String::new(),
            batch_id: Some(batch_id),
            retention: Duration::MAX,
        }
    }
}

/// The request id of a batch's item.
pub(crate) fn batch_item_key(batch_id: Uuid, execution: Uuid) -> String {
    format!("batch:{batch_id}:{execution}")
}

/// Longest request id.
pub const MAX_REQUEST_ID_CHARS: usize = xdb_protocol::openapi::MAX_REQUEST_ID_CHARS;

/// A client's request id: 1 to 200 characters of letters, digits and `-_.:`, and not of
/// the form batches use.
pub fn check_request_id(request_id: &str) -> Result<(), StoreError> {
    let fits = !request_id.is_empty()
        && request_id.len() <= MAX_REQUEST_ID_CHARS
        && request_id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"-_.:".contains(&b));
    if !fits {
        return Err(invalid(format!(
            "requestId: 1 to {MAX_REQUEST_ID_CHARS} characters of letters, digits and -_.: \
             (got {} characters)",
            request_id.chars().count()
        )));
    }
    if request_id.starts_with("batch:") {
        return Err(invalid(
            "requestId: ids starting with \"batch:\" are the batches' own".to_owned(),
        ));
    }
    Ok(())
}

fn invalid(message: String) -> StoreError {
    StoreError::Decide(xdb_engine::decide::DecideError::Invalid(
        xdb_engine::validation::ValidationError::new("requestId", message),
    ))
}

/// A receipt as stored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredReceipt {
    pub operation: String,
    pub body_hash: String,
    pub answer: String,
    pub outcome: BatchItemOutcome,
    pub created_at: DateTime<Utc>,
}

/// What a stored receipt means for a request with the same id.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Replay {
    /// The same request: answer this.
    Answer(serde_json::Value),
    /// Kept past its retention: forget it, and run the request.
    Expired,
}

/// Whether `stored` answers `receipt`'s request, read at `now`.
pub(crate) fn replay(
    stored: &StoredReceipt,
    receipt: &Receipt,
    now: DateTime<Utc>,
) -> Result<Replay, StoreError> {
    let age = (now - stored.created_at).to_std().unwrap_or_default();
    if receipt.batch_id.is_none() && age > receipt.retention {
        return Ok(Replay::Expired);
    }
    if stored.operation != receipt.operation || stored.body_hash != receipt.body_hash {
        let what = if stored.operation != receipt.operation {
            format!("a {} request", stored.operation)
        } else {
            format!("a {} request with a different body", stored.operation)
        };
        return Err(StoreError::RequestIdConflict(format!(
            "requestId {:?} was used for {what} at {}; use a new id for a new request",
            receipt.request_id,
            stored.created_at.format("%Y-%m-%dT%H:%M:%S%.3fZ")
        )));
    }
    let answer = serde_json::from_str(&stored.answer)
        .map_err(|e| StoreError::Database(format!("unreadable receipt answer: {e}")))?;
    Ok(Replay::Answer(answer))
}

/// What [`crate::ProcessApi::apply`] answers: the REST answer, and for a stop, the answer
/// for waiters on completion (none when replayed: they heard it the first time).
#[derive(Debug, Clone, PartialEq)]
pub struct RequestAnswer {
    pub answer: serde_json::Value,
    /// Whether the answer is a receipt's: nothing was done this time.
    pub replayed: bool,
    /// For a batch's item replayed: what the batch recorded.
    pub outcome: BatchItemOutcome,
    pub closed_outcome: Option<Box<ProcessExecutionWaitForCompletionResponse>>,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stop(reason: &str) -> ProcessExecutionStopRequest {
        ProcessExecutionStopRequest {
            request_id: Some("r-1".into()),
            process_id: "p".into(),
            process_execution_id: None,
            stop_type: Default::default(),
            reason: Some(reason.into()),
        }
    }

    fn stored(receipt: &Receipt, at: DateTime<Utc>) -> StoredReceipt {
        StoredReceipt {
            operation: receipt.operation.to_owned(),
            body_hash: receipt.body_hash.clone(),
            answer: "{}".into(),
            outcome: BatchItemOutcome::Done,
            created_at: at,
        }
    }

    #[test]
    fn the_same_request_replays_and_another_conflicts() {
        let hour = Duration::from_secs(3600);
        let first = stop("a");
        let receipt = Receipt::of_client(&ClientRequest::Stop(&first), hour)
            .unwrap()
            .unwrap();
        let now = Utc::now();
        let kept = stored(&receipt, now);
        assert_eq!(
            replay(&kept, &receipt, now).unwrap(),
            Replay::Answer(serde_json::json!({}))
        );
        let other = stop("b");
        let changed = Receipt::of_client(&ClientRequest::Stop(&other), hour)
            .unwrap()
            .unwrap();
        let error = replay(&kept, &changed, now).unwrap_err();
        assert!(
            matches!(&error, StoreError::RequestIdConflict(m) if m.contains("different body")),
            "{error:?}"
        );
        let pause = ProcessExecutionControlRequest {
            request_id: Some("r-1".into()),
            process_id: "p".into(),
            ..Default::default()
        };
        let as_pause = Receipt::of_client(&ClientRequest::Control(Control::Pause, &pause), hour)
            .unwrap()
            .unwrap();
        let error = replay(&kept, &as_pause, now).unwrap_err();
        assert!(
            matches!(&error, StoreError::RequestIdConflict(m) if m.contains("a stop request")),
            "{error:?}"
        );
        let later = now + chrono::Duration::seconds(3601);
        assert_eq!(replay(&kept, &receipt, later).unwrap(), Replay::Expired);
    }

    #[test]
    fn request_ids_are_checked() {
        for bad in ["", "a b", "é", "batch:x", &"x".repeat(201), "a;drop"] {
            assert!(check_request_id(bad).is_err(), "{bad:?}");
        }
        for good in ["a", "0f9c-1:2.3_x", &"x".repeat(200)] {
            assert!(check_request_id(good).is_ok(), "{good:?}");
        }
    }

    #[test]
    fn key_order_does_not_change_the_hash() {
        let a: serde_json::Value = serde_json::json!({"a": 1, "b": {"c": 2, "d": 3}});
        let b: serde_json::Value = serde_json::from_str(r#"{"b":{"d":3,"c":2},"a":1}"#).unwrap();
        assert_eq!(body_hash(&a), body_hash(&b));
        assert_ne!(body_hash(&a), body_hash(&serde_json::json!({"a": 2})));
    }
}
