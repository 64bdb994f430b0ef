//! Work of concurrent callers gathered into batches, each committed as one transaction
//! by a dialect's runner.
//!
//! A job that finds every batch slot busy waits for one, and goes out with the others
//! that waited; a job that finds a free slot and nobody waiting goes out at once, alone.
//! Under load, jobs gather by themselves; a lone caller waits for nobody. Each job has
//! a key (the row it locks first); two jobs of one key never share a batch (the second
//! would see the first's writes, which its guards refuse), and the runner takes a
//! batch's keys in one order, so two batches cannot deadlock on them.

use std::collections::{HashSet, VecDeque};
use std::future::Future;
use std::sync::Arc;

use tokio::sync::{mpsc, oneshot, Semaphore};

use crate::StoreError;

/// One caller's job in a batch, and where its answer goes.
pub(crate) struct Queued<J, A> {
    pub key: String,
    pub job: J,
    pub reply: oneshot::Sender<Result<A, StoreError>>,
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
}

impl<J, A> Clone for Batcher<J, A> {
    fn clone(&self) -> Self {
        Self {
            jobs: self.jobs.clone(),
        }
    }
}

impl<J: Send + 'static, A: Send + 'static> Batcher<J, A> {
    /// Starts gathering jobs into batches of at most `max_batch`, at most `slots` batches
    /// in flight, each handed to `run`, which answers every job of it.
    pub fn start<R, F>(slots: usize, max_batch: usize, run: R) -> Self
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
                let first = match held.pop_front() {
                    Some(job) => job,
                    None => match queue.recv().await {
                        Some(job) => job,
                        None => return,
                    },
                };
                let mut keys = HashSet::from([first.key.clone()]);
                let mut batch = vec![first];
                let mut later = VecDeque::new();
                let waiting = std::iter::from_fn(|| held.pop_front())
                    .chain(std::iter::from_fn(|| queue.try_recv().ok()));
                for job in waiting {
                    if keys.insert(job.key.clone()) {
                        batch.push(job);
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
        Self { jobs }
    }

    /// Runs `job`, which takes `key` first, alone or with others.
    pub async fn run(&self, key: String, job: J) -> Result<A, StoreError> {
        let (reply, answer) = oneshot::channel();
        self.jobs
            .send(Queued { key, job, reply })
            .map_err(|_| stopped())?;
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
        let batcher = Batcher::start(1, 8, move |batch: Vec<Queued<u32, usize>>| {
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
}
