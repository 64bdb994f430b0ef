//! Pulsar CDC mode for the bench: the Debezium relay (pulsar-io/relay, started by
//! scripts/ensure-pulsar.sh) captures the bench database, and the async service consumes
//! the change topics instead of claiming rows.

use anyhow::Context as _;

/// Where the broker and the relay's control API are.
#[derive(Debug, Clone)]
pub struct PulsarTarget {
    /// `pulsar://host:port` of the broker.
    pub broker_url: String,
    /// `http://host:port` of the relay's control API.
    pub relay_url: String,
}

/// A running capture of the bench database; [`Capture::stop`] ends it (and drops its
/// replication slot), which must happen before the database is dropped.
pub struct Capture {
    relay_url: String,
    name: String,
    /// The async service's `pulsar.topic_prefix`.
    pub topic_prefix: String,
}

impl Capture {
    /// Starts capturing `database_url` (named `name`); returns once Debezium runs.
    pub async fn start(
        target: &PulsarTarget,
        name: &str,
        database_url: &str,
    ) -> anyhow::Result<Self> {
        let topic_prefix = format!("xdbbench-{name}");
        let response = reqwest::Client::new()
            .post(format!("{}/captures", target.relay_url))
            .json(&serde_json::json!({
                "name": name,
                "database_url": database_url,
                "topic_prefix": topic_prefix,
            }))
            .send()
            .await
            .with_context(|| {
                format!(
                    "the CDC relay does not answer at {}; start it with scripts/ensure-pulsar.sh",
                    target.relay_url
                )
            })?;
        let status = response.status();
        let body = response.text().await.unwrap_or_default();
        anyhow::ensure!(
            status.is_success(),
            "the CDC relay did not capture {name}: {body}"
        );
        Ok(Self {
            relay_url: target.relay_url.clone(),
            name: name.to_string(),
            topic_prefix,
        })
    }

    pub async fn stop(self) -> anyhow::Result<()> {
        reqwest::Client::new()
            .delete(format!("{}/captures/{}", self.relay_url, self.name))
            .send()
            .await
            .and_then(reqwest::Response::error_for_status)
            .with_context(|| format!("stopping the CDC capture of {}", self.name))?;
        Ok(())
    }
}
