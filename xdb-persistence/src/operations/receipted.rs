//! Requests run with a receipt: a client's request with a request id, or a batch's item.
//! A request whose id has a receipt answers from it and does nothing again.

use chrono::{DateTime, Utc};
use serde::Serialize;
use xdb_protocol::{BatchItemOutcome, EmptyResponse, ProcessExecutionStartResponse};

use crate::conflict_retry::retrying_conflicts;
use crate::receipts::{self, ClientRequest, Receipt, Replay, RequestAnswer};
use crate::sql::json;
use crate::tables::{Dialect, Lane, ReceiptRows};
use crate::StoreError;

/// Records `receipt`, if any, with `answer` in the transaction of the effect, before its
/// commit. A receipt there already means a twin request committed first: this one fails,
/// rolled back, and [`apply_request`] answers it from the twin's receipt.
pub(crate) async fn record_receipt<T: ReceiptRows>(
    tx: &mut T,
    receipt: Option<&Receipt>,
    answer: &impl Serialize,
    now: DateTime<Utc>,
) -> Result<(), StoreError> {
    let Some(receipt) = receipt else {
        return Ok(());
    };
    let answer = serde_json::to_string(answer).expect("answers serialize");
    if tx
        .insert_receipt(receipt, BatchItemOutcome::Done, &answer, now)
        .await?
    {
        return Ok(());
    }
    Err(StoreError::RequestIdConflict(format!(
        "requestId {:?} was taken by a concurrent request",
        receipt.request_id
    )))
}

/// Runs `request`, recording `receipt` with its effect; or answers from the receipt of an
/// earlier request with the same id (`REQUEST_ID_CONFLICT` when that one differed).
///
/// The receipt is not looked up first: a repeat is rare, and its receipt insert at
/// commit refuses it anyway (rolling its effect back), so only a failed request pays
/// the lookup.
pub(crate) async fn apply_request<D: Dialect>(
    store: &D,
    request: ClientRequest<'_>,
    receipt: Option<&Receipt>,
) -> Result<RequestAnswer, StoreError> {
    let Some(receipt) = receipt else {
        return run(store, request, None).await;
    };
    match run(store, request, Some(receipt)).await {
        Ok(answer) => Ok(answer),
        // A request with the same id may have committed first (this one then failed: the
        // id taken, the process id started, the execution stopped): its answer is ours.
        Err(error) => match lookup(store, receipt).await? {
            Lookup::Answer(answer) => Ok(answer),
            Lookup::Absent => Err(error),
            // The id's receipt outlived its retention (refusing this request's): gone
            // now, so the request runs as a new one.
            Lookup::Expired => run(store, request, Some(receipt)).await,
        },
    }
}

/// What the receipt of a request id says.
enum Lookup {
    Answer(RequestAnswer),
    /// Past its retention, and deleted.
    Expired,
    Absent,
}

/// The answer of `receipt`'s request id, if a request recorded one (and it is kept).
pub(crate) async fn replayed<D: Dialect>(
    store: &D,
    receipt: &Receipt,
) -> Result<Option<RequestAnswer>, StoreError> {
    Ok(match lookup(store, receipt).await? {
        Lookup::Answer(answer) => Some(answer),
        Lookup::Expired | Lookup::Absent => None,
    })
}

async fn lookup<D: Dialect>(store: &D, receipt: &Receipt) -> Result<Lookup, StoreError> {
    let mut session = store.session(Lane::Main).await?;
    let Some(stored) = session.find_receipt(&receipt.request_id).await? else {
        return Ok(Lookup::Absent);
    };
    match receipts::replay(&stored, receipt, store.database_clock().now())? {
        Replay::Answer(answer) => Ok(Lookup::Answer(RequestAnswer {
            answer,
            replayed: true,
            outcome: stored.outcome,
            closed_outcome: None,
        })),
        Replay::Expired => {
            session.delete_receipt(&receipt.request_id).await?;
            Ok(Lookup::Expired)
        }
    }
}

async fn run<D: Dialect>(
    store: &D,
    request: ClientRequest<'_>,
    receipt: Option<&Receipt>,
) -> Result<RequestAnswer, StoreError> {
    let (answer, closed_outcome) = match request {
        ClientRequest::Start(r) => {
            let id = retrying_conflicts(|| super::start_process(store, r, receipt)).await?;
            let answer = ProcessExecutionStartResponse {
                process_execution_id: id.to_string(),
            };
            (json(&answer), None)
        }
        ClientRequest::Stop(r) => {
            let closed = retrying_conflicts(|| super::stop_process(store, r, receipt)).await?;
            (json(&EmptyResponse {}), closed)
        }
        ClientRequest::Publish(r) => {
            retrying_conflicts(|| super::publish_to_local_queue(store, r, receipt)).await?;
            (json(&EmptyResponse {}), None)
        }
        ClientRequest::Control(control, r) => {
            let answer = retrying_conflicts(|| super::control(store, control, r, receipt)).await?;
            (json(&answer), None)
        }
        ClientRequest::Reset(r) => {
            let answer = retrying_conflicts(|| super::reset(store, r, receipt)).await?;
            (json(&answer), None)
        }
    };
    Ok(RequestAnswer {
        answer,
        replayed: false,
        outcome: BatchItemOutcome::Done,
        closed_outcome,
    })
}

/// Records what a batch did to an execution where the operation did not apply or
/// failed (nothing else was written, so it has its own statement); `false` when the
/// item had a receipt already.
pub(crate) async fn record_batch_item<D: Dialect>(
    store: &D,
    receipt: &Receipt,
    outcome: BatchItemOutcome,
    reason: &str,
) -> Result<bool, StoreError> {
    let answer = serde_json::json!({ "reason": reason }).to_string();
    let now = store.database_clock().now();
    let mut session = store.session(Lane::Main).await?;
    session.insert_receipt(receipt, outcome, &answer, now).await
}
