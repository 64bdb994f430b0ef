//! One database captured by Pulsar IO: registered, running, streaming; stopped again
//! with its PostgreSQL replication slot gone, so that the database can be dropped.

use std::time::{Duration, Instant};

use crate::{
    registration, AdminError, Capture, ConfigError, Connector, PulsarIoAdmin, SourceRegistration,
    SourceStatus,
};

/// How often a wait looks again.
const POLL: Duration = Duration::from_millis(200);

/// The newest megabytes of offsets a capture keeps: Pulsar IO reads the whole topic when
/// the connector starts, and needs only the last offset of each partition.
pub const OFFSETS_RETENTION_MB: u64 = 64;

/// A capture that could not be started or stopped.
#[derive(Debug, thiserror::Error)]
pub enum CaptureError {
    #[error(transparent)]
    Config(#[from] ConfigError),
    #[error(transparent)]
    Admin(#[from] AdminError),
    #[error("the captured database: {0}")]
    Database(String),
    #[error("source {name}: {what} within {seconds} s (last status: {status:?}){}",
        last_error.as_deref().map(|e| format!("; the database: {e}")).unwrap_or_default())]
    Timeout {
        name: String,
        what: &'static str,
        seconds: u64,
        status: Option<SourceStatus>,
        /// The last error reaching the captured database, if that is what failed.
        last_error: Option<String>,
    },
}

/// A registered source whose connector streams changes.
#[derive(Debug)]
pub struct RunningCapture {
    admin: PulsarIoAdmin,
    registration: SourceRegistration,
    database_url: String,
}

/// Registers `capture` with Pulsar IO and returns once its connector streams: on
/// PostgreSQL once the walsender of its replication slot streams (after the initial
/// snapshot), on MySQL once the snapshot recorded the schema in the history topic (the
/// binary-log position is taken before that, so nothing committed afterwards is
/// missed). A capture that does not get there within `timeout` is removed again.
pub async fn start_capture(
    admin: &PulsarIoAdmin,
    capture: &Capture,
    timeout: Duration,
) -> Result<RunningCapture, CaptureError> {
    let registration = registration(capture)?;
    let running = RunningCapture {
        admin: admin.clone(),
        registration,
        database_url: capture.database_url.clone(),
    };
    if running.registration.connector == Connector::Postgres {
        // Before anything is registered: a database that cannot be reached fails here,
        // at once, with nothing to remove.
        running
            .create_filtered_publication()
            .await
            .map_err(|error| {
                CaptureError::Database(format!(
                    "source {}: creating its publication: {error}",
                    running.registration.name
                ))
            })?;
    }
    // Before the connector writes to them.
    let r = &running.registration;
    admin
        .retain_topic(&r.offsets_topic, Some(OFFSETS_RETENTION_MB))
        .await?;
    if let Some(history) = &r.history_topic {
        admin.retain_topic(history, None).await?;
    }
    admin.create_source(&running.registration).await?;
    match running.wait_streaming(timeout).await {
        Ok(()) => Ok(running),
        Err(error) => {
            let _ = running.stop(timeout).await;
            Err(error)
        }
    }
}

impl RunningCapture {
    /// What was registered (topic names, slot).
    pub fn registration(&self) -> &SourceRegistration {
        &self.registration
    }

    async fn status(&self) -> Result<Option<SourceStatus>, CaptureError> {
        let r = &self.registration;
        Ok(self
            .admin
            .source_status(&r.tenant, &r.namespace, &r.name)
            .await?)
    }

    fn timeout(
        &self,
        what: &'static str,
        limit: Duration,
        status: Option<SourceStatus>,
    ) -> CaptureError {
        CaptureError::Timeout {
            name: self.registration.name.clone(),
            what,
            seconds: limit.as_secs(),
            status,
            last_error: None,
        }
    }

    /// Waits until every instance runs and the connector streams changes.
    pub async fn wait_streaming(&self, timeout: Duration) -> Result<(), CaptureError> {
        let deadline = Instant::now() + timeout;
        loop {
            let status = self.status().await?;
            if status.as_ref().is_some_and(SourceStatus::is_running) {
                break;
            }
            if Instant::now() >= deadline {
                return Err(self.timeout("not running", timeout, status));
            }
            tokio::time::sleep(POLL).await;
        }
        // Pulsar IO may call a connector running for a moment before it fails to reach
        // its database; the database unreachable from here too is the same wait.
        let mut last_error = None;
        loop {
            match self.streams().await {
                Ok(true) => return Ok(()),
                Ok(false) => {}
                Err(CaptureError::Database(error)) => last_error = Some(error),
                Err(other) => return Err(other),
            }
            if Instant::now() >= deadline {
                let status = self.status().await?;
                let mut error = self.timeout("running but not streaming", timeout, status);
                if let CaptureError::Timeout {
                    last_error: slot, ..
                } = &mut error
                {
                    *slot = last_error;
                }
                return Err(error);
            }
            tokio::time::sleep(POLL).await;
        }
    }

    async fn streams(&self) -> Result<bool, CaptureError> {
        match self.registration.connector {
            Connector::Postgres => {
                let slot = self.registration.slot_name.as_deref().unwrap_or_default();
                // An active slot is not yet a stream: the connection that created it
                // holds it through the initial snapshot. Its walsender reaches
                // `catchup` (then `streaming`) once the connector's START_REPLICATION
                // is accepted, which may fail and be retried at first.
                let streaming = self
                    .query_slot(
                        "SELECT 1 FROM pg_replication_slots s \
                         JOIN pg_stat_replication r ON r.pid = s.active_pid \
                         WHERE s.slot_name = $1 AND r.state IN ('catchup', 'streaming')",
                        slot,
                    )
                    .await?;
                Ok(!streaming.is_empty())
            }
            Connector::MySql => {
                let history = self
                    .registration
                    .history_topic
                    .as_deref()
                    .unwrap_or_default();
                Ok(self.admin.topic_has_messages(history).await?)
            }
        }
    }

    /// Creates the source's publication, unless it exists, so that it publishes only the
    /// changes the async service acts on (`xdb_sys_schema::FILTERED_PUBLICATION`);
    /// Debezium then uses it as it is. Without it Debezium creates one of every change,
    /// which works the same, with three events for each one acted on.
    async fn create_filtered_publication(&self) -> Result<(), CaptureError> {
        let (client, connection) = self.connect().await?;
        let created = xdb_sys_schema::create_cdc_publication(&client, &self.registration.name)
            .await
            .map(|_| ())
            .map_err(|e| CaptureError::Database(error_chain(&e)));
        close(client, connection).await;
        created
    }

    async fn query_slot(
        &self,
        sql: &str,
        slot: &str,
    ) -> Result<Vec<tokio_postgres::Row>, CaptureError> {
        let (client, connection) = self.connect().await?;
        let rows = client
            .query(sql, &[&slot])
            .await
            .map_err(|e| CaptureError::Database(e.to_string()));
        close(client, connection).await;
        rows
    }

    async fn connect(
        &self,
    ) -> Result<(tokio_postgres::Client, tokio::task::JoinHandle<()>), CaptureError> {
        let target = xdb_config::DatabaseUrl::parse(&self.database_url)
            .map_err(|e| CaptureError::Database(format!("invalid database URL: {e}")))
            .and_then(|url| {
                xdb_db_connect::PostgresTarget::new(&url)
                    .map_err(|e| CaptureError::Database(e.to_string()))
            })?;
        let (client, connection) = target
            .connect()
            .await
            .map_err(|e| CaptureError::Database(e.to_string()))?;
        let connection = tokio::spawn(async move {
            let _ = connection.await;
        });
        Ok((client, connection))
    }

    /// Restarts the connector (as Pulsar IO does after it failed) and waits until it
    /// streams again from its stored offset.
    pub async fn restart(&self, timeout: Duration) -> Result<(), CaptureError> {
        let r = &self.registration;
        self.admin
            .restart_source(&r.tenant, &r.namespace, &r.name)
            .await?;
        // The restart is asynchronous: let the old instance go before waiting for the new.
        tokio::time::sleep(Duration::from_secs(1)).await;
        self.wait_streaming(timeout).await
    }

    /// Removes the source. On PostgreSQL, drops its replication slot once the stopped
    /// connector let go of it: a slot keeps its database from being dropped and holds
    /// back WAL for ever. (The connector keeps the slot while it runs and across a
    /// restart, so that a restarted connector misses nothing.)
    pub async fn stop(&self, timeout: Duration) -> Result<(), CaptureError> {
        let r = &self.registration;
        self.admin
            .delete_source(&r.tenant, &r.namespace, &r.name)
            .await?;
        let (Connector::Postgres, Some(slot)) = (r.connector, r.slot_name.as_deref()) else {
            return Ok(());
        };
        let deadline = Instant::now() + timeout;
        loop {
            let dropped = self
                .query_slot(
                    "SELECT pg_drop_replication_slot(slot_name) FROM pg_replication_slots \
                     WHERE slot_name = $1 AND NOT active",
                    slot,
                )
                .await;
            let left = self
                .query_slot(
                    "SELECT 1 FROM pg_replication_slots WHERE slot_name = $1",
                    slot,
                )
                .await?;
            if left.is_empty() {
                return Ok(());
            }
            if Instant::now() >= deadline {
                dropped?;
                return Err(self.timeout(
                    "replication slot still in use after the source was deleted",
                    timeout,
                    None,
                ));
            }
            tokio::time::sleep(POLL).await;
        }
    }
}

/// Closes the connection and waits until it is gone, so that the database can be
/// dropped right after.
async fn close(client: tokio_postgres::Client, connection: tokio::task::JoinHandle<()>) {
    drop(client);
    let _ = connection.await;
}

/// An error with its causes: the database's own message is in the last.
fn error_chain(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        text.push_str(&format!(": {cause}"));
        source = cause.source();
    }
    text
}
