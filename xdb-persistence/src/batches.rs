//! Work of concurrent callers gathered into batches, each committed as one transaction
//! by a dialect's runner.
//!
//! A job that finds every batch slot busy waits for one, and goes out with the others
//! that waited; a job that finds a free slot and nobody waiting goes out at once, alone.
//! Under load, jobs gather by themselves; a lone caller waits for nobody. Each job has
//! a key (the row it locks first); two jobs of one key never share a batch (the second
//! would see the first's writes, which its guards refuse), and the runner takes a
//! batch's keys in one order, so two batches cannot deadlock on them.
//!
//! A batcher may bound how long a job waits for a batch (the API store's
//! `api.pool_wait_ms`: an admitted request must not queue without end behind a slow
//! database). A job that waited that long is withdrawn and its caller gets
//! [`StoreError::Overloaded`]. Withdrawn, not abandoned: the caller and the batcher
//! race for the job's [`Ticket`], and a withdrawn job is never sent, so a refused start
//! cannot take effect later as a surprise. A job the batcher took first is already on
//! its way to the database; its caller waits for the answer, as for any statement sent.

use std::collections::{HashSet, VecDeque};
use std::future::Future;
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::{mpsc, oneshot, Semaphore};

use crate::StoreError;

/// One caller's job in a batch, and where its answer goes.
pub(crate) struct Queued<J, A> {
    pub key: String,
    pub job: J,
    pub reply: oneshot::Sender<Result<A, StoreError>>,
    ticket: Ticket,
}

/// Who has a queued job: still nobody, the batcher (it goes out in a batch), or its
/// caller (withdrawn after the wait; it never goes out). Decided once.
#[derive(Clone, Default)]
pub(crate) struct Ticket(Arc<AtomicU8>);

const QUEUED: u8 = 0;
const TAKEN: u8 = 1;
const WITHDRAWN: u8 = 2;

impl Ticket {
    /// The batcher takes the job into a batch; false if its caller withdrew it.
    fn take(&self) -> bool {
        self.settle(TAKEN)
    }

    /// The caller withdraws the job; false if the batcher took it already.
    fn withdraw(&self) -> bool {
        self.settle(WITHDRAWN)
    }

    fn is_withdrawn(&self) -> bool {
        self.0.load(Ordering::Acquire) == WITHDRAWN
    }

    fn settle(&self, to: u8) -> bool {
        self.0
            .compare_exchange(QUEUED, to, Ordering::AcqRel, Ordering::Acquire)
            .is_ok()
    }
}

impl<J, A> Queued<J, A> {
    /// Answers the caller (who may have gone: then nobody hears it).
    pub fn answer(self, answer: Result<A, StoreError>) {
        let _ = self.reply.send(answer);
    }
}

/// The batcher of one store and lane; cloning shares it.
pub(crate) struct Batcher<J, A> {
    jobs: mpsc::UnboundedSender<Queued<J, A>>,
    /// How long a job may wait for a batch; unbounded when `None`.
    queue_wait: Option<Duration>,
}

impl<J, A> Clone for Batcher<J, A> {
    fn clone(&self) -> Self {
        Self {
            jobs: self.jobs.clone(),
            queue_wait: self.queue_wait,
        }
    }
}

impl<J: Send + 'static, A: Send + 'static> Batcher<J, A> {
    /// Starts gathering jobs into batches of at most `max_batch`, at most `slots` batches
    /// in flight, each handed to `run`, which answers every job of it. A job waits for a
    /// batch at most `queue_wait`, when one is given (see the module's doc).
    pub fn start<R, F>(slots: usize, max_batch: usize, queue_wait: Option<Duration>, run: R) -> Self
    where
        R: Fn(Vec<Queued<J, A>>) -> F + Send + Sync + 'static,
        F: Future<Output = ()> + Send + 'static,
    {
        let (jobs, mut queue) = mpsc::unbounded_channel::<Queued<J, A>>();
        tokio::spawn(async move {
            let slots = Arc::new(Semaphore::new(slots));
            // Jobs whose key was already in a batch, first in the next one.
            let mut held: VecDeque<Queued<J, A>> = VecDeque::new();
            loop {
                let slot = slots.clone().acquire_owned().await.expect("never closed");
                let first = loop {
                    let job = match held.pop_front() {
                        Some(job) => job,
                        None => match queue.recv().await {
                            Some(job) => job,
                            None => return,
                        },
                    };
                    // A withdrawn job is dropped unsent; its caller has its answer.
                    if job.ticket.take() {
                        break job;
                    }
                };
                let mut keys = HashSet::from([first.key.clone()]);
                let mut batch = vec![first];
                let mut later = VecDeque::new();
                let waiting = std::iter::from_fn(|| held.pop_front())
                    .chain(std::iter::from_fn(|| queue.try_recv().ok()));
                for job in waiting {
                    if job.ticket.is_withdrawn() {
                        continue;
                    }
                    if keys.insert(job.key.clone()) {
                        if job.ticket.take() {
                            batch.push(job);
                        }
                    } else {
                        later.push_back(job);
                    }
                    if batch.len() == max_batch {
                        break;
                    }
                }
                held.extend(later);
                batch.sort_by(|a, b| a.key.cmp(&b.key));
                let running = run(batch);
                tokio::spawn(async move {
                    running.await;
                    drop(slot);
                });
            }
        });
        Self { jobs, queue_wait }
    }

    /// Runs `job`, which takes `key` first, alone or with others; refused with
    /// [`StoreError::Overloaded`], unsent, when it waited the queue wait for a batch.
    pub async fn run(&self, key: String, job: J) -> Result<A, StoreError> {
        let (reply, mut answer) = oneshot::channel();
        let ticket = Ticket::default();
        self.jobs
            .send(Queued {
                key,
                job,
                reply,
                ticket: ticket.clone(),
            })
            .map_err(|_| stopped())?;
        if let Some(wait) = self.queue_wait {
            if let Ok(answered) = tokio::time::timeout(wait, &mut answer).await {
                return answered.map_err(|_| stopped())?;
            }
            if ticket.withdraw() {
                return Err(StoreError::Overloaded(format!(
                    "the statement waited {} ms for a batch and was not sent",
                    wait.as_millis()
                )));
            }
            // Taken into a batch just now: it is being sent; its answer follows.
        }
        answer.await.map_err(|_| stopped())?
    }
}

fn stopped() -> StoreError {
    StoreError::Database("the batcher stopped".into())
}

#[cfg(test)]
mod tests {
    use std::sync::Mutex;

    use futures::future::join_all;

    use super::*;

    /// The keys of each batch run, in order.
    type Seen = Arc<Mutex<Vec<Vec<String>>>>;

    /// A batcher whose runner records each batch's keys and answers with the batch size.
    fn recording() -> (Batcher<u32, usize>, Seen) {
        let seen = Arc::new(Mutex::new(Vec::new()));
        let record = seen.clone();
        let batcher = Batcher::start(1, 8, None, move |batch: Vec<Queued<u32, usize>>| {
            let record = record.clone();
            async move {
                tokio::task::yield_now().await;
                record
                    .lock()
                    .unwrap()
                    .push(batch.iter().map(|job| job.key.clone()).collect());
                let size = batch.len();
                for job in batch {
                    job.answer(Ok(size));
                }
            }
        });
        (batcher, seen)
    }

    #[tokio::test]
    async fn waiting_jobs_go_together_in_key_order_and_never_share_a_key() {
        let (batcher, seen) = recording();
        let keys = ["b", "a", "b", "c", "a", "d", "e", "f", "g", "h", "i", "j"];
        let answers = join_all(keys.iter().map(|k| batcher.run(k.to_string(), 0))).await;
        assert!(answers.iter().all(Result::is_ok), "{answers:?}");
        let batches = seen.lock().unwrap().clone();
        assert_eq!(batches.iter().map(Vec::len).sum::<usize>(), keys.len());
        assert!(batches.len() < keys.len(), "{batches:?}");
        for batch in &batches {
            assert!(batch.len() <= 8, "{batch:?}");
            let mut sorted = batch.clone();
            sorted.sort();
            sorted.dedup();
            assert_eq!(&sorted, batch, "sorted, each key once: {batch:?}");
        }
    }

    #[tokio::test]
    async fn a_lone_job_goes_alone() {
        let (batcher, seen) = recording();
        assert_eq!(batcher.run("k".into(), 0).await.unwrap(), 1);
        assert_eq!(*seen.lock().unwrap(), vec![vec!["k".to_string()]]);
    }

    #[tokio::test]
    async fn a_job_that_waited_too_long_is_refused_and_never_runs() {
        let seen: Seen = Arc::default();
        // Every batch waits here until the test opens the gate.
        let gate = Arc::new(Semaphore::new(0));
        let batcher = {
            let (seen, gate) = (seen.clone(), gate.clone());
            Batcher::start(
                1,
                8,
                Some(Duration::from_millis(50)),
                move |batch: Vec<Queued<u32, usize>>| {
                    let (seen, gate) = (seen.clone(), gate.clone());
                    async move {
                        let keys = batch.iter().map(|job| job.key.clone()).collect();
                        seen.lock().unwrap().push(keys);
                        gate.acquire().await.unwrap().forget();
                        for job in batch {
                            job.answer(Ok(1));
                        }
                    }
                },
            )
        };
        // The only slot is taken by "a", held at the gate.
        let first = tokio::spawn({
            let batcher = batcher.clone();
            async move { batcher.run("a".into(), 0).await }
        });
        while seen.lock().unwrap().is_empty() {
            tokio::task::yield_now().await;
        }
        let refused = batcher.run("b".into(), 0).await;
        assert!(
            matches!(refused, Err(StoreError::Overloaded(_))),
            "{refused:?}"
        );
        gate.add_permits(8);
        assert_eq!(first.await.unwrap().unwrap(), 1);
        // The slot is free again: "c" runs, and "b" was dropped unsent on the way.
        assert_eq!(batcher.run("c".into(), 0).await.unwrap(), 1);
        assert_eq!(
            *seen.lock().unwrap(),
            vec![vec!["a".to_string()], vec!["c".to_string()]]
        );
    }

    #[test]
    fn a_ticket_is_decided_once() {
        let taken = Ticket::default();
        assert!(taken.take());
        assert!(!taken.withdraw(), "a job on its way cannot be withdrawn");
        let withdrawn = Ticket::default();
        assert!(withdrawn.withdraw());
        assert!(withdrawn.is_withdrawn() && !withdrawn.take());
    }
}
