//! When a call is sent again, with what pause, and the request ids that make sending a
//! write again safe.

use std::time::Duration;

use xdb_protocol::{
    BatchStartRequest, ErrorSubType, ProcessExecutionControlRequest, ProcessExecutionResetRequest,
    ProcessExecutionStartRequest, ProcessExecutionStopRequest, PublishToLocalQueueRequest,
};

use super::ClientError;

/// Most characters of a `requestId`.
pub const MAX_REQUEST_ID_CHARS: usize = 200;

/// Whether `id` is a valid `requestId`: 1 to 200 characters, each a letter, a digit or
/// one of `-_.:`.
pub fn is_valid_request_id(id: &str) -> bool {
    !id.is_empty()
        && id.len() <= MAX_REQUEST_ID_CHARS
        && id
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.' | ':'))
}

/// A fresh request id (a random UUID).
pub fn new_request_id() -> String {
    uuid::Uuid::new_v4().to_string()
}

/// A request that carries a `requestId`: the service answers a repeat of it (same id,
/// same body) with the first answer, without doing anything again.
pub trait IdempotentRequest: serde::Serialize + Clone {
    fn request_id_mut(&mut self) -> &mut Option<String>;
}

macro_rules! idempotent {
    ($($request:ty),*) => {$(
        impl IdempotentRequest for $request {
            fn request_id_mut(&mut self) -> &mut Option<String> {
                &mut self.request_id
            }
        }
    )*};
}

idempotent!(
    ProcessExecutionStartRequest,
    ProcessExecutionStopRequest,
    PublishToLocalQueueRequest,
    ProcessExecutionControlRequest,
    ProcessExecutionResetRequest,
    BatchStartRequest
);

/// `request` with its request id: the caller's, else a fresh one.
pub(crate) fn with_request_id<R: IdempotentRequest>(request: &R) -> R {
    let mut request = request.clone();
    let id = request.request_id_mut();
    if id.is_none() {
        *id = Some(new_request_id());
    }
    request
}

/// What sending a call again could do.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Repeat {
    /// Nothing more than the first send: a read, or a write with a request id. Sent again
    /// when no answer came (connection refused or reset, a timeout) and on any 503.
    Safe,
    /// A write the service may have done without answering (an RPC, a registration):
    /// sent again only when it surely did nothing, a connection that never opened or an
    /// `OVERLOADED` refusal.
    Unsafe,
}

/// Pauses between attempts after a call got no answer: `initial`, doubled each time,
/// at most `max`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Backoff {
    pub initial: Duration,
    pub max: Duration,
}

impl Default for Backoff {
    fn default() -> Self {
        Self {
            initial: Duration::from_millis(250),
            max: Duration::from_secs(5),
        }
    }
}

impl Backoff {
    /// The pause before retry number `retry` (0 for the first).
    pub fn pause(&self, retry: u32) -> Duration {
        self.initial
            .saturating_mul(2u32.saturating_pow(retry.min(16)))
            .min(self.max)
    }
}

/// Why an attempt may be sent again.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Retryable {
    /// No answer came; pause by the backoff.
    NoAnswer,
    /// The service answered 503; pause as its `Retry-After` says.
    Unavailable,
}

/// Whether a failed attempt of a call that can be repeated as `repeat` is worth sending
/// again, and why. Any status other than 503 is final.
pub(crate) fn retryable(repeat: Repeat, error: &ClientError) -> Option<Retryable> {
    match (repeat, error) {
        (_, ClientError::Transport(e)) if e.is_connect() => Some(Retryable::NoAnswer),
        (Repeat::Safe, ClientError::Transport(e))
            if e.is_timeout() || e.is_request() || e.is_body() || e.is_decode() =>
        {
            Some(Retryable::NoAnswer)
        }
        (Repeat::Safe, error) if error.status() == Some(503) => Some(Retryable::Unavailable),
        (Repeat::Unsafe, error) if error.sub_type() == Some(ErrorSubType::Overloaded) => {
            Some(Retryable::Unavailable)
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn request_ids_follow_the_contract() {
        assert!(is_valid_request_id(&new_request_id()));
        assert!(is_valid_request_id("deploy-42:step_1.a"));
        assert!(!is_valid_request_id(""));
        assert!(!is_valid_request_id("with space"));
        assert!(!is_valid_request_id("slash/no"));
        assert!(!is_valid_request_id(&"a".repeat(201)));
        assert!(is_valid_request_id(&"a".repeat(200)));
        assert_ne!(new_request_id(), new_request_id());
    }

    #[test]
    fn the_callers_request_id_is_kept_else_one_is_set() {
        let mut request = ProcessExecutionStopRequest {
            request_id: None,
            process_id: "p".into(),
            process_execution_id: None,
            stop_type: Default::default(),
            reason: None,
        };
        let sent = with_request_id(&request);
        assert!(is_valid_request_id(sent.request_id.as_deref().unwrap()));
        request.request_id = Some("mine".into());
        assert_eq!(
            with_request_id(&request).request_id.as_deref(),
            Some("mine")
        );
    }

    #[test]
    fn backoff_doubles_up_to_its_cap() {
        let backoff = Backoff::default();
        assert_eq!(backoff.pause(0), Duration::from_millis(250));
        assert_eq!(backoff.pause(1), Duration::from_millis(500));
        assert_eq!(backoff.pause(3), Duration::from_secs(2));
        assert_eq!(backoff.pause(5), Duration::from_secs(5));
        assert_eq!(backoff.pause(u32::MAX), Duration::from_secs(5));
    }

    #[test]
    fn only_503_is_retried_among_statuses() {
        let api = |status, sub_type: &str| {
            let body = format!(r#"{{"subType":"{sub_type}","message":"m"}}"#);
            ClientError::from_response(status, body.as_bytes())
        };
        let overloaded = api(503, "OVERLOADED");
        let database = api(503, "DATABASE_UNAVAILABLE");
        let gateway = ClientError::from_response(503, b"<html>");
        for error in [&overloaded, &database, &gateway] {
            assert_eq!(
                retryable(Repeat::Safe, error),
                Some(Retryable::Unavailable),
                "{error}"
            );
        }
        assert_eq!(
            retryable(Repeat::Unsafe, &overloaded),
            Some(Retryable::Unavailable)
        );
        assert_eq!(retryable(Repeat::Unsafe, &database), None);
        assert_eq!(retryable(Repeat::Unsafe, &gateway), None);
        for error in [
            api(409, "REQUEST_ID_CONFLICT"),
            api(400, "INVALID_REQUEST"),
            api(404, "PROCESS_NOT_FOUND"),
            api(500, "INTERNAL"),
            ClientError::from_response(502, b"bad gateway"),
            ClientError::from_response(504, b"timeout"),
        ] {
            assert_eq!(retryable(Repeat::Safe, &error), None, "{error}");
        }
    }
}
