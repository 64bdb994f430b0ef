//! Self-contained statements of concurrent callers, committed together.
//!
//! A usual transition, and a first start, is one statement outside a transaction block.
//! Under load many are ready at once, and each alone costs the server a transaction, a
//! WAL flush and a round trip. Here statements gathered by [`crate::batches`] go out
//! together: BEGIN, the statements in the order of their keys (the process execution a
//! transition locks, the process id a start claims), COMMIT, in one round trip. A
//! statement that finds a free slot and nobody waiting runs at once, alone, outside a
//! transaction block.
//!
//! Each statement asserts what it needs on its own (see `pipeline`): one that fails
//! makes its batch commit nothing, and then every statement of the batch runs again
//! alone, so that each caller gets its own statement's answer or error.

use std::time::Duration;

use deadpool_postgres::{Object, Pool};
use futures::future::{join_all, try_join_all};

use super::pipeline::{Answers, Pipeline};
use crate::batches::{Batcher, Queued};
use crate::StoreError;

/// Batches in flight at once; statements wait while all are busy. Few, so that
/// statements gather under load instead of each finding a slot of its own.
const SLOTS: usize = 2;

/// Most statements in one batch.
const MAX_BATCH: usize = 32;

type Job = Queued<Pipeline, Answers>;

/// The batcher of one store; cloning shares it.
#[derive(Clone)]
pub(crate) struct StatementBatches {
    batcher: Batcher<Pipeline, Answers>,
}

impl StatementBatches {
    /// Starts batching statements onto connections of `pool`; each waits for a batch at
    /// most `queue_wait`, when one is given (see [`crate::batches`]).
    pub fn start(pool: Pool, queue_wait: Option<Duration>) -> Self {
        let batcher = Batcher::start(SLOTS, MAX_BATCH, queue_wait, move |batch| {
            let pool = pool.clone();
            async move { run_batch(&pool, batch).await }
        });
        Self { batcher }
    }

    /// Runs `pipeline`, a statement taking `key` (see the module's doc), committed
    /// alone or with others.
    pub async fn run(&self, key: String, pipeline: Pipeline) -> Result<Answers, StoreError> {
        self.batcher.run(key, pipeline).await
    }
}

async fn run_batch(pool: &Pool, batch: Vec<Job>) {
    let client = match pool.get().await {
        Ok(client) => client,
        Err(error) => {
            let error = StoreError::from(error);
            for job in batch {
                job.answer(Err(error.for_another_caller()));
            }
            return;
        }
    };
    if batch.len() > 1 {
        match together(&client, &batch).await {
            Ok(Some(answers)) => {
                for (job, answer) in batch.into_iter().zip(answers) {
                    job.answer(Ok(answer));
                }
                return;
            }
            // A statement failed: nothing was committed; each runs again alone.
            Ok(None) => {}
            Err(error) => {
                // The connection failed midway: whether COMMIT got through is unknown,
                // as for a lone statement whose connection fails.
                for job in batch {
                    job.answer(Err(error.for_another_caller()));
                }
                return;
            }
        }
    }
    for job in batch {
        let answer = job.job.run(&client, false).await;
        job.answer(answer);
    }
}

/// Runs every statement of `batch` in one transaction: their answers if all succeeded
/// and it committed, `None` if one failed (the transaction is rolled back).
async fn together(client: &Object, batch: &[Job]) -> Result<Option<Vec<Answers>>, StoreError> {
    let statements: Vec<_> = batch.iter().map(|job| job.job.statement()).collect();
    // Every statement prepared before any is sent: one not prepared yet would go out
    // after its own round trip, behind COMMIT.
    let prepared =
        try_join_all(statements.iter().map(|(sql, _)| client.prepare_cached(sql))).await?;
    let params: Vec<_> = batch.iter().map(|job| job.job.params()).collect();
    // Polled in order, so written in order: BEGIN, the statements, COMMIT.
    let (begun, answered, committed) = futures::join!(
        client.batch_execute("BEGIN"),
        join_all(
            prepared
                .iter()
                .zip(&params)
                .map(|(statement, params)| client.query(statement, params))
        ),
        client.batch_execute("COMMIT")
    );
    begun?;
    if answered.iter().any(Result::is_err) {
        // COMMIT ended the failed transaction (as a rollback).
        committed?;
        return Ok(None);
    }
    committed?;
    let mut answers = Vec::with_capacity(batch.len());
    for ((job, (_, row_at)), rows) in batch.iter().zip(&statements).zip(answered) {
        answers.push(job.job.answers(rows?, *row_at)?);
    }
    Ok(Some(answers))
}

#[cfg(test)]
mod tests {
    use xdb_test_util::TestDatabase;

    use super::*;
    use crate::postgres::pipeline::{param, Answer};
    use crate::postgres::PostgresStore;

    async fn store_with_table() -> (TestDatabase, PostgresStore) {
        let db = TestDatabase::create_postgres().await;
        let store = PostgresStore::connect(db.url(), 4).await.unwrap();
        store
            .pool()
            .get()
            .await
            .unwrap()
            .batch_execute("CREATE TABLE batched (id INT PRIMARY KEY)")
            .await
            .unwrap();
        (db, store)
    }

    fn insert(id: i32) -> Pipeline {
        let mut pipeline = Pipeline::default();
        pipeline.push(
            "INSERT INTO batched (id) VALUES ($1)",
            vec![param(id)],
            Answer::Nothing,
        );
        pipeline
    }

    /// Rows and the transactions that wrote them (a row's `xmin`).
    async fn rows_and_transactions(store: &PostgresStore) -> (i64, i64) {
        let row = store
            .pool()
            .get()
            .await
            .unwrap()
            .query_one(
                "SELECT count(*), count(DISTINCT xmin::text) FROM batched",
                &[],
            )
            .await
            .unwrap();
        (row.get(0), row.get(1))
    }

    #[tokio::test]
    async fn statements_ready_together_commit_in_fewer_transactions() {
        let (_db, store) = store_with_table().await;
        let batches = store.batches();
        let answers = join_all((0..40).map(|id| batches.run(format!("k{id}"), insert(id)))).await;
        assert!(answers.iter().all(Result::is_ok), "{answers:?}");
        let (rows, transactions) = rows_and_transactions(&store).await;
        assert_eq!(rows, 40);
        assert!(
            transactions < 40,
            "{transactions} transactions for 40 statements"
        );
    }

    #[tokio::test]
    async fn a_failing_statement_fails_alone_and_the_others_commit() {
        let (_db, store) = store_with_table().await;
        let batches = store.batches();
        let mut refused = Pipeline::default();
        refused.push(
            "UPDATE batched SET id = id WHERE id = $1 RETURNING 1",
            vec![param(-1)],
            Answer::Exactly(1),
        );
        let mut jobs: Vec<_> = (0..20).map(|id| (format!("k{id}"), insert(id))).collect();
        jobs.insert(7, ("k-refused".into(), refused));
        let answers = join_all(jobs.into_iter().map(|(key, job)| batches.run(key, job))).await;
        for (index, answer) in answers.iter().enumerate() {
            if index == 7 {
                assert!(matches!(answer, Err(StoreError::Stale(_))), "{answer:?}");
            } else {
                assert!(answer.is_ok(), "{answer:?}");
            }
        }
        assert_eq!(rows_and_transactions(&store).await.0, 20);
    }

    #[tokio::test]
    async fn statements_of_one_key_never_share_a_transaction() {
        let (_db, store) = store_with_table().await;
        let batches = store.batches();
        let answers = join_all((0..10).map(|id| batches.run("same".into(), insert(id)))).await;
        assert!(answers.iter().all(Result::is_ok), "{answers:?}");
        assert_eq!(rows_and_transactions(&store).await, (10, 10));
    }
}
