//! Client requests the database refused for now (a deadlock, a serialization failure, a
//! lock wait that timed out) are tried again before the client hears of it: such a
//! refusal wrote nothing, and on MariaDB a publish racing a transition of the same
//! execution meets deadlocks in ordinary operation.

use std::future::Future;
use std::time::Duration;

use crate::StoreError;

/// Tries in all before a conflict reaches the caller.
const ATTEMPTS: u32 = 4;
/// The pause after the first refusal; each later one is four times longer (5, 20, 80 ms).
const FIRST_PAUSE: Duration = Duration::from_millis(5);

/// Runs `attempt` until it ends in anything but [`StoreError::Conflict`], at most
/// [`ATTEMPTS`] times. Only for work that writes nothing outside the database: an RPC,
/// whose worker already ran, must not be repeated.
pub(crate) async fn retrying_conflicts<T, F, Fut>(mut attempt: F) -> Result<T, StoreError>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<T, StoreError>>,
{
    let mut pause = FIRST_PAUSE;
    for _ in 1..ATTEMPTS {
        match attempt().await {
            Err(StoreError::Conflict(why)) => {
                tracing::debug!(%why, ?pause, "the database refused a request for now; trying again");
                tokio::time::sleep(pause).await;
                pause *= 4;
            }
            other => return other,
        }
    }
    attempt().await
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicU32, Ordering};

    use super::*;

    #[tokio::test(start_paused = true)]
    async fn a_conflict_is_tried_again_until_it_clears() {
        let calls = AtomicU32::new(0);
        let result = retrying_conflicts(|| async {
            match calls.fetch_add(1, Ordering::SeqCst) {
                0 | 1 => Err(StoreError::Conflict("deadlock".into())),
                _ => Ok(7),
            }
        })
        .await;
        assert_eq!(result.unwrap(), 7);
        assert_eq!(calls.load(Ordering::SeqCst), 3);
    }

    #[tokio::test(start_paused = true)]
    async fn a_lasting_conflict_reaches_the_caller_after_every_attempt() {
        let calls = AtomicU32::new(0);
        let result: Result<(), _> = retrying_conflicts(|| async {
            calls.fetch_add(1, Ordering::SeqCst);
            Err(StoreError::Conflict("deadlock".into()))
        })
        .await;
        assert!(matches!(result, Err(StoreError::Conflict(_))));
        assert_eq!(calls.load(Ordering::SeqCst), ATTEMPTS);
    }

    #[tokio::test(start_paused = true)]
    async fn other_errors_are_not_tried_again() {
        let calls = AtomicU32::new(0);
        let result: Result<(), _> = retrying_conflicts(|| async {
            calls.fetch_add(1, Ordering::SeqCst);
            Err(StoreError::ConnectionLost("reset".into()))
        })
        .await;
        assert!(matches!(result, Err(StoreError::ConnectionLost(_))));
        assert_eq!(calls.load(Ordering::SeqCst), 1);
    }
}
