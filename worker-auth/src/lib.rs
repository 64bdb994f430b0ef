//! Worker-call signatures: XDB signs every call it makes to a worker with a secret it
//! shares with the worker, so the worker can refuse calls from anyone else.
//!
//! The header [`SIGNATURE_HEADER`] carries `t=<unix seconds>,v1=<hex HMAC-SHA256>` of
//! `"<t>.<body>"`. The timestamp bounds replays: [`verify`] refuses a signature older
//! (or newer) than the allowed skew. Pure functions, no IO; the clock is passed in.

use hmac::{Hmac, KeyInit, Mac};
use sha2::Sha256;
use thiserror::Error;

/// The request header holding the signature.
pub const SIGNATURE_HEADER: &str = "X-XDB-Signature";

/// Shortest secret accepted: HMAC keys shorter than this are guessable.
pub const MIN_SECRET_BYTES: usize = 16;

/// How far a signature's timestamp may be from the verifier's clock, in seconds.
pub const DEFAULT_MAX_SKEW_SECONDS: u64 = 300;

/// Why a call's signature was refused.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum SignatureError {
    #[error("the request carries no {SIGNATURE_HEADER} header")]
    Missing,
    #[error("the {SIGNATURE_HEADER} header is not `t=<seconds>,v1=<hex>`")]
    Malformed,
    #[error("the signature's timestamp is {0} s away from this worker's clock")]
    Expired(u64),
    #[error("the signature does not match: the secret differs or the body was changed")]
    Mismatch,
}

fn mac(secret: &[u8], timestamp: u64, body: &[u8]) -> Hmac<Sha256> {
    let mut mac = Hmac::<Sha256>::new_from_slice(secret).expect("HMAC takes keys of any size");
    mac.update(timestamp.to_string().as_bytes());
    mac.update(b".");
    mac.update(body);
    mac
}

/// The header value signing `body` at `timestamp` (unix seconds).
pub fn sign(secret: &[u8], timestamp: u64, body: &[u8]) -> String {
    let tag = mac(secret, timestamp, body).finalize().into_bytes();
    format!("t={timestamp},v1={}", hex::encode(tag))
}

/// Checks `header` against `body` with the verifier's clock at `now` (unix seconds).
pub fn verify(
    secret: &[u8],
    header: Option<&str>,
    body: &[u8],
    now: u64,
    max_skew_seconds: u64,
) -> Result<(), SignatureError> {
    let header = header.ok_or(SignatureError::Missing)?;
    let mut timestamp = None;
    let mut tag = None;
    for part in header.split(',') {
        match part.trim().split_once('=') {
            Some(("t", value)) => timestamp = value.parse::<u64>().ok(),
            Some(("v1", value)) => tag = hex::decode(value).ok(),
            _ => {}
        }
    }
    let (Some(timestamp), Some(tag)) = (timestamp, tag) else {
        return Err(SignatureError::Malformed);
    };
    let skew = now.abs_diff(timestamp);
    if skew > max_skew_seconds {
        return Err(SignatureError::Expired(skew));
    }
    // Constant-time comparison.
    mac(secret, timestamp, body)
        .verify_slice(&tag)
        .map_err(|_| SignatureError::Mismatch)
}

#[cfg(test)]
mod tests {
    use super::*;

    const SECRET: &[u8] = b"0123456789abcdef-secret";

    #[test]
    fn a_signature_verifies_with_the_same_secret_and_body() {
        let header = sign(SECRET, 1_700_000_000, b"{\"a\":1}");
        assert!(header.starts_with("t=1700000000,v1="));
        assert_eq!(
            verify(SECRET, Some(&header), b"{\"a\":1}", 1_700_000_010, 300),
            Ok(())
        );
    }

    #[test]
    fn another_secret_or_body_does_not_verify() {
        let header = sign(SECRET, 1_700_000_000, b"{\"a\":1}");
        assert_eq!(
            verify(
                b"another-secret-0123",
                Some(&header),
                b"{\"a\":1}",
                1_700_000_000,
                300
            ),
            Err(SignatureError::Mismatch)
        );
        assert_eq!(
            verify(SECRET, Some(&header), b"{\"a\":2}", 1_700_000_000, 300),
            Err(SignatureError::Mismatch)
        );
    }

    #[test]
    fn old_missing_and_malformed_signatures_are_refused() {
        let header = sign(SECRET, 1_700_000_000, b"x");
        assert_eq!(
            verify(SECRET, Some(&header), b"x", 1_700_000_301, 300),
            Err(SignatureError::Expired(301))
        );
        assert_eq!(
            verify(SECRET, None, b"x", 1_700_000_000, 300),
            Err(SignatureError::Missing)
        );
        for bad in ["", "t=1", "v1=00", "t=x,v1=00", "t=1,v1=zz"] {
            assert_eq!(
                verify(SECRET, Some(bad), b"x", 1, 300),
                Err(SignatureError::Malformed),
                "{bad:?}"
            );
        }
    }
}
