//! Pulsar CDC mode for the bench: the real Pulsar IO Debezium source (the committed
//! `pulsar-io/debezium-*-source.yaml`, registered through `xdb-pulsar-io` with the
//! standalone of scripts/ensure-pulsar.sh) captures the bench database, and the async
//! service consumes the change topics instead of claiming rows.

use std::time::Duration;

use anyhow::Context as _;
use xdb_pulsar_io::{start_capture, PulsarIoAdmin, RunningCapture};

/// How long the capture may take to start streaming or to stop.
const CAPTURE_TIMEOUT: Duration = Duration::from_secs(120);

/// Where the broker and its admin API (with the Pulsar IO functions worker) are.
#[derive(Debug, Clone)]
pub struct PulsarTarget {
    /// `pulsar://host:port` of the broker.
    pub broker_url: String,
    /// `http://host:port` of Pulsar's admin API.
    pub admin_url: String,
}

/// A running capture of the bench database; [`Capture::stop`] removes the source (and
/// its replication slot), which must happen before the database is dropped.
pub struct Capture {
    running: RunningCapture,
    /// The async service's `pulsar.topic_prefix`.
    pub topic_prefix: String,
}

impl Capture {
    /// Starts capturing `database_url` (named `name`); returns once Debezium streams.
    pub async fn start(
        target: &PulsarTarget,
        name: &str,
        database_url: &str,
    ) -> anyhow::Result<Self> {
        let topic_prefix = format!("xdbbench-{name}");
        let capture = xdb_pulsar_io::Capture {
            name: name.to_string(),
            database_url: database_url.to_string(),
            topic_prefix: topic_prefix.clone(),
            throwaway: true,
        };
        let running = start_capture(&PulsarIoAdmin::new(&target.admin_url), &capture, CAPTURE_TIMEOUT)
            .await
            .with_context(|| format!("capturing {name} with Pulsar IO"))?;
        Ok(Self {
            running,
            topic_prefix,
        })
    }

    pub async fn stop(self) -> anyhow::Result<()> {
        self.running
            .stop(CAPTURE_TIMEOUT)
            .await
            .context("stopping the Pulsar IO capture")
    }
}
