//! The benchmarked process, hosted in-process: `StateA` → `StateB` → graceful complete,
//! neither state with a `waitUntil`, so each process costs two `execute` calls.

use std::net::SocketAddr;

use anyhow::Context as _;
use xdb_sdk::*;

/// Two states, no attributes, no queues: measures XDB's own overhead.
#[derive(Debug, Default, Clone, Copy)]
pub struct BenchProcess;

impl Process for BenchProcess {
    fn state_schema(&self) -> StateSchema {
        StateSchema::with_starting_state(StateA).state(StateB)
    }
}

/// Moves straight on to [`StateB`].
pub struct StateA;

#[async_trait]
impl AsyncState for StateA {
    type Input = ();

    async fn execute(
        &self,
        _ctx: &Context,
        _input: (),
        _results: &CommandResults,
        _persistence: &mut Persistence,
        _communication: &mut Communication,
    ) -> Result<StateDecision> {
        Ok(StateDecision::single_next_state::<StateB>(()))
    }
}

/// Completes the process.
pub struct StateB;

#[async_trait]
impl AsyncState for StateB {
    type Input = ();

    async fn execute(
        &self,
        _ctx: &Context,
        _input: (),
        _results: &CommandResults,
        _persistence: &mut Persistence,
        _communication: &mut Communication,
    ) -> Result<StateDecision> {
        Ok(StateDecision::graceful_complete_process(()))
    }
}

/// The worker serving [`BenchProcess`] on a free loopback port; aborted when dropped.
pub struct Worker {
    url: String,
    task: tokio::task::JoinHandle<()>,
}

impl Worker {
    pub async fn start() -> anyhow::Result<Worker> {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .context("cannot bind the worker's port")?;
        let addr: SocketAddr = listener.local_addr()?;
        let app = WorkerService::new().register(BenchProcess).router();
        let task = tokio::spawn(async move {
            if let Err(error) = axum::serve(listener, app).await {
                eprintln!("xdb-bench: the worker stopped: {error}");
            }
        });
        Ok(Worker {
            url: format!("http://{addr}"),
            task,
        })
    }

    /// The URL to give XDB as the process's worker.
    pub fn url(&self) -> &str {
        &self.url
    }
}

impl Drop for Worker {
    fn drop(&mut self) {
        self.task.abort();
    }
}
