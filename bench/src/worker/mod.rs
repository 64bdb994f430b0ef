//! The bench's worker, hosted in-process with the SDK: the processes of
//! [`processes`], and a [`Recorder`] of when their worker calls happened.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context as _;
use xdb_sdk::{ProcessDefinition, WorkerService};

pub mod processes;
pub mod recorder;

pub use processes::{BenchProcess, QueueProcess, TimerProcess, WaitingProcess};
pub use recorder::Recorder;

/// How long the waiting scenario's timers are: far beyond any run.
pub const FAR_TIMER: Duration = Duration::from_secs(7 * 24 * 3600);

/// The bench's processes, built once so the worker and the client agree on them.
#[derive(Clone)]
pub struct Processes {
    pub recorder: Arc<Recorder>,
    /// The timer process's timer.
    pub timer_delay: Duration,
    pub bench: Arc<ProcessDefinition>,
    pub timer: Arc<ProcessDefinition>,
    pub queue: Arc<ProcessDefinition>,
    pub waiting: Arc<ProcessDefinition>,
}

impl Processes {
    /// The processes, the timer process's timer `timer_delay` long.
    pub fn new(timer_delay: Duration) -> Processes {
        let recorder = Arc::new(Recorder::default());
        Processes {
            bench: Arc::new(ProcessDefinition::new(BenchProcess)),
            timer: Arc::new(ProcessDefinition::new(TimerProcess {
                delay: timer_delay,
                events: recorder.clone(),
            })),
            queue: Arc::new(ProcessDefinition::new(QueueProcess {
                recorder: recorder.clone(),
            })),
            waiting: Arc::new(ProcessDefinition::new(WaitingProcess {
                recorder: recorder.clone(),
                delay: FAR_TIMER,
            })),
            recorder,
            timer_delay,
        }
    }
}

/// The worker serving the bench's processes on a free loopback port; aborted when
/// dropped.
pub struct Worker {
    url: String,
    service: WorkerService,
    task: tokio::task::JoinHandle<()>,
}

impl Worker {
    /// Serves `processes` (their recorder sees every call).
    pub async fn start(processes: &Processes) -> anyhow::Result<Worker> {
        let listener = xdb_sdk::worker::bind_listener(([127, 0, 0, 1], 0).into())
            .context("cannot bind the worker's port")?;
        let addr: SocketAddr = listener.local_addr()?;
        let recorder = processes.recorder.clone();
        let service = WorkerService::new()
            .register(BenchProcess)
            .register(TimerProcess {
                delay: processes.timer_delay,
                events: recorder.clone(),
            })
            .register(QueueProcess {
                recorder: recorder.clone(),
            })
            .register(WaitingProcess {
                recorder,
                delay: FAR_TIMER,
            });
        let app = service.router();
        let task = tokio::spawn(async move {
            if let Err(error) = axum::serve(listener, app).await {
                eprintln!("xdb-bench: the worker stopped: {error}");
            }
        });
        Ok(Worker {
            url: format!("http://{addr}"),
            service,
            task,
        })
    }

    /// Registers the served process types with the API service at `service_url`, so its
    /// requests go through the definitions' checks.
    pub async fn register_definitions(&self, service_url: &str) -> anyhow::Result<()> {
        let deployment = xdb_sdk::protocol::WorkerDeployment {
            name: "xdb-bench".into(),
            version: env!("CARGO_PKG_VERSION").into(),
            worker_url: self.url.clone(),
        };
        self.service
            .register_with(&xdb_sdk::Client::new(service_url), deployment, false)
            .await
            .context("cannot register the bench's process definitions")?;
        Ok(())
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
