//! A small fake of [`TaskSource`] for the task sources' unit tests: claims return the
//! batches it was given, in turn, then nothing, and claims of named executions the
//! answers it was given for them; it records every claim's limit, every named claim's
//! executions and every lease renewal, and refuses what no loop under test asks of it.

use std::collections::VecDeque;
use std::sync::Mutex;
use std::time::Duration;

use async_trait::async_trait;
use uuid::Uuid;
use xdb_engine::Task;
use xdb_persistence::{
    Claimed, NamedClaimed, OperatorGauges, ReleasedLeases, StoreError, TaskClaim, TaskSource,
};

#[derive(Default)]
pub(crate) struct ScriptedTaskSource {
    batches: Mutex<VecDeque<Vec<Task>>>,
    /// The limit of every claim, in order.
    limits: Mutex<Vec<i64>>,
    /// The ids of every renewal, sorted, in order.
    renewed: Mutex<Vec<Vec<i64>>>,
    /// What claims of named executions answer, in turn (then nothing, complete).
    named_answers: Mutex<VecDeque<(Vec<Task>, bool)>>,
    /// The executions of every named claim, in order.
    named_claims: Mutex<Vec<Vec<Uuid>>>,
}

impl ScriptedTaskSource {
    /// A source whose claims return `batches`, one a claim.
    pub(crate) fn with(batches: impl IntoIterator<Item = Vec<Task>>) -> Self {
        Self {
            batches: Mutex::new(batches.into_iter().collect()),
            ..Self::default()
        }
    }

    /// Claims of named executions answer `answers` (their tasks, whether complete), in
    /// turn.
    pub(crate) fn answering_named(
        self,
        answers: impl IntoIterator<Item = (Vec<Task>, bool)>,
    ) -> Self {
        *self.named_answers.lock().unwrap() = answers.into_iter().collect();
        self
    }

    pub(crate) fn named_claims(&self) -> Vec<Vec<Uuid>> {
        self.named_claims.lock().unwrap().clone()
    }

    pub(crate) fn claim_limits(&self) -> Vec<i64> {
        self.limits.lock().unwrap().clone()
    }

    pub(crate) fn renewals(&self) -> Vec<Vec<i64>> {
        self.renewed.lock().unwrap().clone()
    }
}

#[async_trait]
impl TaskSource for ScriptedTaskSource {
    async fn lease_due(
        &self,
        _owner: &str,
        limit: i64,
        _lease: Duration,
        _ahead: f64,
        _lowest_priority: u8,
    ) -> Result<Vec<Claimed>, StoreError> {
        self.limits.lock().unwrap().push(limit);
        let batch = self.batches.lock().unwrap().pop_front().unwrap_or_default();
        assert!(
            batch.len() as i64 <= limit,
            "the script claims within the limit"
        );
        Ok(claimed(batch))
    }
    async fn lease_named(
        &self,
        executions: &[Uuid],
        _owner: &str,
        limit: usize,
        _lease: Duration,
        _ahead: Duration,
        _lowest_priority: u8,
    ) -> Result<NamedClaimed, StoreError> {
        self.named_claims.lock().unwrap().push(executions.to_vec());
        let (tasks, complete) = self
            .named_answers
            .lock()
            .unwrap()
            .pop_front()
            .unwrap_or((Vec::new(), true));
        assert!(tasks.len() <= limit, "the script claims within the limit");
        Ok(NamedClaimed {
            claimed: claimed(tasks),
            complete,
        })
    }
    async fn next_task_due_in(&self) -> Result<Option<Duration>, StoreError> {
        Ok(None)
    }
    async fn renew_leases(&self, _: &str, ids: &[i64], _: Duration) -> Result<u64, StoreError> {
        let mut ids = ids.to_vec();
        ids.sort();
        let renewed = ids.len() as u64;
        self.renewed.lock().unwrap().push(ids);
        Ok(renewed)
    }
    async fn count_backlog(&self, _: i64) -> Result<i64, StoreError> {
        unreachable!("no loop under test counts")
    }
    async fn operator_gauges(&self, _: i32, _: i64) -> Result<OperatorGauges, StoreError> {
        unreachable!("no loop under test counts")
    }
    async fn claim_tasks(
        &self,
        _: &[i64],
        _: &str,
        _: Duration,
    ) -> Result<Vec<TaskClaim>, StoreError> {
        unreachable!("the loops under test claim due tasks, not tasks by id")
    }
    async fn release_leases(&self, _: &str) -> Result<u64, StoreError> {
        unreachable!("no loop under test releases")
    }
    async fn release_dead_leases(
        &self,
        _: &str,
        _: Duration,
    ) -> Result<ReleasedLeases, StoreError> {
        unreachable!("no loop under test releases")
    }
}

fn claimed(tasks: Vec<Task>) -> Vec<Claimed> {
    tasks
        .into_iter()
        .map(|task| Claimed {
            task,
            call: None,
            priority: None,
        })
        .collect()
}
