//! Claims by id, gathered: the tasks of change events that come together are claimed
//! with one statement.
//!
//! Every change event and timer message names one task, which is claimed by id before
//! it is handled. One claim a message made the claim the largest statement of Pulsar
//! mode under load: a commit, and on MySQL a transaction of three or four round trips,
//! per task. Here claims are sent as they come while fewer than
//! [`STATEMENTS_AT_ONCE`] are in flight, and the ones asked for meanwhile wait and go
//! together in the next statement. A lone event's claim is sent at once: nothing waits
//! on a timer to fill a batch.

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use prometheus::Histogram;
use tokio::sync::{mpsc, oneshot};
use tokio::task::{JoinHandle, JoinSet};
use xdb_persistence::{StoreError, TaskClaim, TaskSource};

/// Claim statements in flight at once; the claims asked for while they run go in the
/// next one.
const STATEMENTS_AT_ONCE: usize = 2;

/// Most tasks one statement claims (its `IN` list is padded to a power of two, so a few
/// statement shapes serve every batch).
const MOST_PER_STATEMENT: usize = 64;

/// Why a claim has no answer.
#[derive(Debug, Clone, thiserror::Error)]
pub(crate) enum ClaimFailed {
    #[error("{0}")]
    Store(Arc<StoreError>),
    #[error("the store answered {answers} claims for {asked} tasks")]
    Miscounted { asked: usize, answers: usize },
    #[error("the instance is shutting down")]
    Stopped,
}

/// One task's claim and who waits for its answer.
struct Request {
    task_id: i64,
    answer: oneshot::Sender<Result<TaskClaim, ClaimFailed>>,
}

/// What claims tasks by id: the store ([`TaskSource::claim_tasks`]).
pub(crate) trait ClaimByIds: Send + Sync + 'static {
    fn claim_by_ids(
        &self,
        task_ids: &[i64],
        owner: &str,
        lease: Duration,
    ) -> impl Future<Output = Result<Vec<TaskClaim>, StoreError>> + Send;
}

impl ClaimByIds for Arc<dyn TaskSource> {
    async fn claim_by_ids(
        &self,
        task_ids: &[i64],
        owner: &str,
        lease: Duration,
    ) -> Result<Vec<TaskClaim>, StoreError> {
        self.claim_tasks(task_ids, owner, lease).await
    }
}

/// Claims tasks by id for this instance, gathering the claims asked for together.
pub(crate) struct GatheredClaims {
    requests: mpsc::UnboundedSender<Request>,
    server: JoinHandle<()>,
}

impl GatheredClaims {
    /// Claims for `owner`, each leased for `lease`, with `claimer`; each statement's
    /// task count goes to `batch_tasks`.
    pub fn new(
        claimer: impl ClaimByIds,
        owner: String,
        lease: Duration,
        batch_tasks: Histogram,
    ) -> Self {
        let (requests, received) = mpsc::unbounded_channel();
        let claimer = Arc::new(claimer);
        let server = tokio::spawn(serve(received, claimer, owner.into(), lease, batch_tasks));
        Self { requests, server }
    }

    /// Claims task `task_id` (see [`TaskSource::claim_tasks`]).
    pub async fn claim(&self, task_id: i64) -> Result<TaskClaim, ClaimFailed> {
        self.ask(task_id).await.unwrap_or(Err(ClaimFailed::Stopped))
    }

    /// Asks for task `task_id`'s claim; the answer comes on the receiver.
    fn ask(&self, task_id: i64) -> oneshot::Receiver<Result<TaskClaim, ClaimFailed>> {
        let (answer, answered) = oneshot::channel();
        // Sent or not (the server is gone only once this handle is), the receiver tells.
        let _ = self.requests.send(Request { task_id, answer });
        answered
    }
}

impl Drop for GatheredClaims {
    fn drop(&mut self) {
        // Its statements in flight with it: nobody waits for their answers any more.
        self.server.abort();
    }
}

/// Sends the claims asked for, at most [`STATEMENTS_AT_ONCE`] statements at a time,
/// until every [`GatheredClaims`] handle is gone.
async fn serve<C: ClaimByIds>(
    mut requests: mpsc::UnboundedReceiver<Request>,
    claimer: Arc<C>,
    owner: Arc<str>,
    lease: Duration,
    batch_tasks: Histogram,
) {
    let mut running = JoinSet::new();
    loop {
        tokio::select! {
            Some(_) = running.join_next(), if !running.is_empty() => {}
            first = requests.recv(), if running.len() < STATEMENTS_AT_ONCE => {
                let Some(first) = first else { break };
                let batch = gather(first, &mut requests);
                batch_tasks.observe(batch.len() as f64);
                running.spawn(claim_batch(claimer.clone(), owner.clone(), lease, batch));
            }
        }
    }
    while running.join_next().await.is_some() {}
}

/// `first` and the claims already waiting behind it, up to [`MOST_PER_STATEMENT`].
fn gather(first: Request, requests: &mut mpsc::UnboundedReceiver<Request>) -> Vec<Request> {
    let mut batch = vec![first];
    while batch.len() < MOST_PER_STATEMENT {
        match requests.try_recv() {
            Ok(request) => batch.push(request),
            Err(_) => break,
        }
    }
    batch
}

/// Claims `batch` with one statement and answers each of its waiters.
async fn claim_batch<C: ClaimByIds>(
    claimer: Arc<C>,
    owner: Arc<str>,
    lease: Duration,
    batch: Vec<Request>,
) {
    let ids: Vec<i64> = batch.iter().map(|request| request.task_id).collect();
    tracing::trace!(tasks = ids.len(), "claiming tasks by id");
    let answers = match claimer.claim_by_ids(&ids, &owner, lease).await {
        Ok(answers) if answers.len() == ids.len() => answers.into_iter().map(Ok).collect(),
        Ok(answers) => {
            let failed = ClaimFailed::Miscounted {
                asked: ids.len(),
                answers: answers.len(),
            };
            vec![Err(failed); ids.len()]
        }
        Err(error) => vec![Err(ClaimFailed::Store(Arc::new(error))); ids.len()],
    };
    for (request, answer) in batch.into_iter().zip(answers) {
        // A waiter gone (its instance is stopping) leaves its task leased until the
        // lease runs out or the shutdown gives leases back.
        let _ = request.answer.send(answer);
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Mutex;

    use tokio::sync::Semaphore;

    use super::*;

    /// Answers every task `Gone` (or fails, if told to), recording each statement's
    /// ids; a statement waits for a permit of `gate` first.
    struct Recorder {
        statements: Arc<Mutex<Vec<Vec<i64>>>>,
        gate: Arc<Semaphore>,
        fail: bool,
    }

    impl ClaimByIds for Recorder {
        async fn claim_by_ids(
            &self,
            task_ids: &[i64],
            _: &str,
            _: Duration,
        ) -> Result<Vec<TaskClaim>, StoreError> {
            self.statements.lock().unwrap().push(task_ids.to_vec());
            self.gate.acquire().await.unwrap().forget();
            if self.fail {
                return Err(StoreError::Database("refused".into()));
            }
            Ok(task_ids.iter().map(|_| TaskClaim::Gone).collect())
        }
    }

    type Statements = Arc<Mutex<Vec<Vec<i64>>>>;

    fn claims(fail: bool) -> (GatheredClaims, Statements, Arc<Semaphore>) {
        let (claims, statements, gate, _) = claims_measured(fail);
        (claims, statements, gate)
    }

    /// [`claims`], with the histogram of its statements' task counts.
    fn claims_measured(fail: bool) -> (GatheredClaims, Statements, Arc<Semaphore>, Histogram) {
        let statements = Statements::default();
        let gate = Arc::new(Semaphore::new(0));
        let recorder = Recorder {
            statements: statements.clone(),
            gate: gate.clone(),
            fail,
        };
        let batch_tasks = Histogram::with_opts(prometheus::HistogramOpts::new("tasks", "tasks"))
            .expect("valid histogram");
        let lease = Duration::from_secs(30);
        let claims = GatheredClaims::new(recorder, "me".into(), lease, batch_tasks.clone());
        (claims, statements, gate, batch_tasks)
    }

    async fn until_sent(statements: &Statements, count: usize) {
        tokio::time::timeout(Duration::from_secs(10), async {
            while statements.lock().unwrap().len() < count {
                tokio::task::yield_now().await;
            }
        })
        .await
        .expect("the statements are sent");
    }

    #[tokio::test]
    async fn claims_asked_for_while_statements_run_go_together_in_the_next() {
        let (claims, statements, gate, batch_tasks) = claims_measured(false);
        let first = claims.ask(1);
        until_sent(&statements, 1).await;
        let second = claims.ask(2);
        until_sent(&statements, 2).await;
        let waiting: Vec<_> = [3, 4, 5, 3].into_iter().map(|id| claims.ask(id)).collect();
        gate.add_permits(3);
        for answered in [first, second].into_iter().chain(waiting) {
            assert_eq!(answered.await.unwrap().unwrap(), TaskClaim::Gone);
        }
        assert_eq!(
            *statements.lock().unwrap(),
            vec![vec![1], vec![2], vec![3, 4, 5, 3]]
        );
        // Alone, a claim goes at once.
        gate.add_permits(1);
        assert_eq!(claims.claim(6).await.unwrap(), TaskClaim::Gone);
        assert_eq!(statements.lock().unwrap().last(), Some(&vec![6]));
        // Each statement's task count is measured: 1, 1, 4 and 1.
        assert_eq!(batch_tasks.get_sample_count(), 4);
        assert_eq!(batch_tasks.get_sample_sum(), 7.0);
    }

    #[tokio::test]
    async fn a_failed_statement_fails_every_claim_in_it() {
        let (claims, statements, gate) = claims(true);
        let first = claims.ask(1);
        until_sent(&statements, 1).await;
        let second = claims.ask(2);
        let third = claims.ask(3);
        gate.add_permits(2);
        for answered in [first, second, third] {
            let failed = answered.await.unwrap().unwrap_err();
            assert!(matches!(failed, ClaimFailed::Store(_)), "{failed}");
            assert_eq!(failed.to_string(), "database error: refused");
        }
    }

    #[tokio::test]
    async fn claims_in_flight_when_the_handle_goes_are_answered_stopped() {
        let (claims, statements, _gate) = claims(false);
        let waiting = claims.ask(1);
        until_sent(&statements, 1).await;
        drop(claims);
        let stopped = waiting.await.unwrap_or(Err(ClaimFailed::Stopped));
        assert!(matches!(stopped, Err(ClaimFailed::Stopped)), "{stopped:?}");
    }
}
