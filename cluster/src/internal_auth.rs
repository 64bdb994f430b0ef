//! Authenticity of the calls service instances make to each other (the wake-ups over the
//! internal API where the database cannot push notifications).
//!
//! Every call is signed as XDB signs its calls to workers ([`xdb_worker_auth`]: an
//! HMAC-SHA256 of a timestamp and the body, header `X-XDB-Signature`), with a secret all
//! instances share: `security.internal_secret`, or else the one the schema installer drew
//! (`xdb_sys_cluster_secrets`). Timestamps are on the database's clock, which every
//! instance measures, so a skewed machine clock neither breaks signatures nor widens the
//! replay window.
//!
//! A receiver refuses an unsigned or wrongly signed call with 401 and a log line. Only
//! during the one-release window of a rolling upgrade from a release that did not sign
//! (`security.accept_unsigned_internal_calls`) does it take an unsigned call, and then as
//! a hint alone: it wakes the receiver to read the database, and whatever outcome the
//! call carries is dropped. Never does an answer to a client come from an outcome an
//! unauthenticated peer supplied.

use std::sync::Arc;

use axum::body::Body;
use axum::extract::{FromRef, FromRequest, Request};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::Json;
use xdb_persistence::{DatabaseClock, InstanceRegistry, StoreError};
use xdb_protocol::{ApiErrorResponse, ErrorSubType};
use xdb_worker_auth::{SignatureError, MIN_SECRET_BYTES, SIGNATURE_HEADER};

/// How far a signature's timestamp may be from the receiver's reading of the database
/// clock. Calls are sent within a second of signing; the margin covers a slow peer, not
/// clock skew (there is none on the database's clock).
pub const SIGNATURE_WINDOW_SECONDS: u64 = 30;

/// Largest internal call body read: a wake-up carries at most `MAX_NOTIFY_IDS` ids and
/// 256 KiB of outcomes.
const MAX_BODY_BYTES: usize = 2 * 1024 * 1024;

/// How an accepted internal call was authenticated.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Authenticity {
    /// Signed with the shared secret, within the window: its content may be trusted.
    Signed,
    /// Unsigned, accepted as a hint during an upgrade window: it may only wake the
    /// receiver to read the database.
    UnsignedHint,
}

/// Signs this instance's internal calls and checks those it receives; clones share it.
#[derive(Clone)]
pub struct InternalAuth {
    inner: Arc<Inner>,
}

struct Inner {
    secret: Vec<u8>,
    clock: DatabaseClock,
    accept_unsigned: bool,
}

impl std::fmt::Debug for InternalAuth {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("InternalAuth")
            .field("secret", &"redacted")
            .field("accept_unsigned", &self.inner.accept_unsigned)
            .finish()
    }
}

impl InternalAuth {
    /// Signs and checks with `secret`, timestamps read from `clock`.
    pub fn new(secret: impl Into<Vec<u8>>, clock: DatabaseClock, accept_unsigned: bool) -> Self {
        Self {
            inner: Arc::new(Inner {
                secret: secret.into(),
                clock,
                accept_unsigned,
            }),
        }
    }

    /// The `configured` secret (`security.internal_secret`, validated at start-up), or
    /// else the one in the database.
    pub async fn resolve(
        configured: Option<&str>,
        registry: &dyn InstanceRegistry,
        clock: DatabaseClock,
        accept_unsigned: bool,
    ) -> Result<Self, StoreError> {
        let secret = match configured {
            Some(secret) => secret.to_string(),
            None => registry.internal_secret().await?,
        };
        if secret.len() < MIN_SECRET_BYTES {
            return Err(StoreError::Database(format!(
                "the internal secret is shorter than {MIN_SECRET_BYTES} bytes"
            )));
        }
        Ok(Self::new(secret, clock, accept_unsigned))
    }

    fn now(&self) -> u64 {
        u64::try_from(self.inner.clock.now().timestamp()).unwrap_or(0)
    }

    /// The `X-XDB-Signature` value for a call with `body`, signed now.
    pub fn sign(&self, body: &[u8]) -> String {
        xdb_worker_auth::sign(&self.inner.secret, self.now(), body)
    }

    /// Whether a call with `body` and signature `header` is to be taken, and how.
    pub fn check(&self, header: Option<&str>, body: &[u8]) -> Result<Authenticity, SignatureError> {
        let now = self.now();
        match xdb_worker_auth::verify(
            &self.inner.secret,
            header,
            body,
            now,
            SIGNATURE_WINDOW_SECONDS,
        ) {
            Ok(()) => Ok(Authenticity::Signed),
            Err(SignatureError::Missing) if self.inner.accept_unsigned => {
                Ok(Authenticity::UnsignedHint)
            }
            Err(error) => Err(error),
        }
    }
}

/// An internal call's body extracted by `E` once its signature passed
/// [`InternalAuth::check`]; a refused call is answered 401 and logged.
pub struct Authenticated<E> {
    pub body: E,
    pub authenticity: Authenticity,
}

impl<S, E> FromRequest<S> for Authenticated<E>
where
    S: Send + Sync,
    InternalAuth: FromRef<S>,
    E: FromRequest<S>,
{
    type Rejection = Response;

    async fn from_request(request: Request, state: &S) -> Result<Self, Self::Rejection> {
        let auth = InternalAuth::from_ref(state);
        let (parts, body) = request.into_parts();
        let bytes = axum::body::to_bytes(body, MAX_BODY_BYTES)
            .await
            .map_err(|_| refusal(StatusCode::PAYLOAD_TOO_LARGE, "the body is too large"))?;
        let header = parts
            .headers
            .get(SIGNATURE_HEADER)
            .and_then(|value| value.to_str().ok());
        let authenticity = match auth.check(header, &bytes) {
            Ok(authenticity) => authenticity,
            Err(error) => {
                tracing::warn!(
                    path = %parts.uri.path(),
                    %error,
                    "refused an internal call: not signed with this cluster's internal secret"
                );
                return Err(refusal(
                    StatusCode::UNAUTHORIZED,
                    &format!("internal calls must be signed with the cluster's secret: {error}"),
                ));
            }
        };
        let request = Request::from_parts(parts, Body::from(bytes));
        let body = E::from_request(request, state)
            .await
            .map_err(IntoResponse::into_response)?;
        Ok(Self { body, authenticity })
    }
}

fn refusal(status: StatusCode, message: &str) -> Response {
    let sub_type = if status == StatusCode::UNAUTHORIZED {
        ErrorSubType::Unauthorized
    } else {
        ErrorSubType::InvalidRequest
    };
    let body = ApiErrorResponse {
        sub_type,
        message: message.to_string(),
        worker_error: None,
    };
    (status, Json(body)).into_response()
}

#[cfg(test)]
mod tests {
    use chrono::TimeDelta;

    use super::*;

    const SECRET: &[u8] = b"0123456789abcdef0123456789abcdef";

    fn auth(offset_seconds: i64, accept_unsigned: bool) -> InternalAuth {
        let clock = DatabaseClock::with_offset(TimeDelta::seconds(offset_seconds));
        InternalAuth::new(SECRET, clock, accept_unsigned)
    }

    #[test]
    fn a_signed_call_is_taken_by_an_instance_sharing_the_secret() {
        let header = auth(0, false).sign(b"{}");
        assert_eq!(
            auth(0, false).check(Some(&header), b"{}"),
            Ok(Authenticity::Signed)
        );
    }

    #[test]
    fn signatures_are_timed_by_the_database_clock_not_the_machines() {
        // This machine's clock runs 10 minutes ahead of the database's: the signature
        // carries the database's time, which every instance reads alike.
        let skewed = auth(600, false);
        let header = skewed.sign(b"{}");
        let stamped: u64 = header
            .strip_prefix("t=")
            .and_then(|rest| rest.split(',').next())
            .and_then(|t| t.parse().ok())
            .unwrap();
        let machine = u64::try_from(chrono::Utc::now().timestamp()).unwrap();
        assert!(
            (machine - 602..=machine - 598).contains(&stamped),
            "{stamped} vs {machine}"
        );
        assert_eq!(skewed.check(Some(&header), b"{}"), Ok(Authenticity::Signed));
    }

    #[test]
    fn unsigned_forged_changed_and_replayed_calls_are_refused() {
        let receiver = auth(0, false);
        assert_eq!(receiver.check(None, b"{}"), Err(SignatureError::Missing));
        let other = InternalAuth::new(
            b"another-secret-of-32-bytes-00000".to_vec(),
            DatabaseClock::with_offset(TimeDelta::zero()),
            false,
        );
        assert_eq!(
            receiver.check(Some(&other.sign(b"{}")), b"{}"),
            Err(SignatureError::Mismatch)
        );
        let header = receiver.sign(b"{\"newTasks\":true}");
        assert_eq!(
            receiver.check(Some(&header), b"{\"newTasks\":false}"),
            Err(SignatureError::Mismatch)
        );
        let old =
            xdb_worker_auth::sign(SECRET, receiver.now() - SIGNATURE_WINDOW_SECONDS - 1, b"{}");
        assert!(matches!(
            receiver.check(Some(&old), b"{}"),
            Err(SignatureError::Expired(_))
        ));
    }

    #[test]
    fn during_an_upgrade_window_only_unsigned_calls_pass_and_only_as_hints() {
        let receiver = auth(0, true);
        assert_eq!(receiver.check(None, b"{}"), Ok(Authenticity::UnsignedHint));
        assert_eq!(
            receiver.check(Some("t=1,v1=00"), b"{}"),
            Err(SignatureError::Expired(receiver.now() - 1)),
            "a wrong signature is not an old release's call"
        );
    }
}
