//! The few calls of Pulsar's admin REST API a capture needs: register a source, read its
//! status, remove it, and look at a topic.

use std::time::Duration;

use reqwest::{multipart, StatusCode};
use serde_json::Value;

use crate::SourceRegistration;

/// Pulsar's admin REST API (`http://host:8080`).
#[derive(Debug, Clone)]
pub struct PulsarIoAdmin {
    base: String,
    http: reqwest::Client,
}

/// A call Pulsar's admin API did not answer, or refused.
#[derive(Debug, thiserror::Error)]
pub enum AdminError {
    #[error(
        "Pulsar's admin API does not answer at {url}: {source}; \
         start Pulsar with scripts/ensure-pulsar.sh (or set the admin URL)"
    )]
    Unreachable {
        url: String,
        #[source]
        source: reqwest::Error,
    },
    #[error("Pulsar's admin API refused {what}: {status} {body}")]
    Refused {
        what: String,
        status: StatusCode,
        body: String,
    },
}

/// A source's state as Pulsar IO reports it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SourceStatus {
    pub instances: u64,
    pub running: u64,
    /// The first instance's error, if it has one (e.g. the connector could not connect).
    pub error: Option<String>,
    /// Records the instances wrote to Pulsar.
    pub written: u64,
}

impl SourceStatus {
    fn from_json(status: &Value) -> Self {
        let instances = status["instances"].as_array().cloned().unwrap_or_default();
        let field = |name: &str| -> u64 {
            instances
                .iter()
                .filter_map(|i| i["status"][name].as_u64())
                .sum()
        };
        let error = instances
            .iter()
            .filter_map(|i| i["status"]["error"].as_str())
            .find(|e| !e.is_empty())
            .map(str::to_string);
        Self {
            instances: status["numInstances"].as_u64().unwrap_or(0),
            running: status["numRunning"].as_u64().unwrap_or(0),
            error,
            written: field("numWritten"),
        }
    }

    /// Every instance runs.
    pub fn is_running(&self) -> bool {
        self.instances > 0 && self.running == self.instances
    }
}

impl PulsarIoAdmin {
    /// A client of the admin API at `base` (`http://127.0.0.1:8080`).
    pub fn new(base: &str) -> Self {
        let http = reqwest::Client::builder()
            .timeout(Duration::from_secs(60))
            .build()
            .expect("a reqwest client with a timeout");
        Self {
            base: base.trim_end_matches('/').to_string(),
            http,
        }
    }

    /// The admin URL.
    pub fn url(&self) -> &str {
        &self.base
    }

    fn source_path(&self, tenant: &str, namespace: &str, name: &str) -> String {
        format!("{}/admin/v3/sources/{tenant}/{namespace}/{name}", self.base)
    }

    async fn send(
        &self,
        _what: &str,
        request: reqwest::RequestBuilder,
    ) -> Result<(StatusCode, String), AdminError> {
        let response = request
            .send()
            .await
            .map_err(|source| AdminError::Unreachable {
                url: self.base.clone(),
                source,
            })?;
        let status = response.status();
        let body = response.text().await.unwrap_or_default();
        Ok((status, body))
    }

    /// Registers the source; updates it when one of that name exists already.
    pub async fn create_source(&self, registration: &SourceRegistration) -> Result<(), AdminError> {
        let path = self.source_path(
            &registration.tenant,
            &registration.namespace,
            &registration.name,
        );
        let form = || {
            let part = multipart::Part::text(registration.config.to_string())
                .mime_str("application/json")
                .expect("a valid MIME type");
            multipart::Form::new().part("sourceConfig", part)
        };
        let what = format!("creating source {}", registration.name);
        let (status, body) = self
            .send(&what, self.http.post(&path).multipart(form()))
            .await?;
        if status.is_success() {
            return Ok(());
        }
        if status == StatusCode::BAD_REQUEST && body.contains("already exists") {
            let what = format!("updating source {}", registration.name);
            let (status, body) = self
                .send(&what, self.http.put(&path).multipart(form()))
                .await?;
            if status.is_success() {
                return Ok(());
            }
            return Err(AdminError::Refused { what, status, body });
        }
        Err(AdminError::Refused { what, status, body })
    }

    /// The source's status; `None` when there is no such source.
    pub async fn source_status(
        &self,
        tenant: &str,
        namespace: &str,
        name: &str,
    ) -> Result<Option<SourceStatus>, AdminError> {
        let path = format!("{}/status", self.source_path(tenant, namespace, name));
        let what = format!("the status of source {name}");
        let (status, body) = self.send(&what, self.http.get(&path)).await?;
        match status {
            StatusCode::NOT_FOUND => Ok(None),
            s if s.is_success() => {
                let json: Value = serde_json::from_str(&body).unwrap_or(Value::Null);
                Ok(Some(SourceStatus::from_json(&json)))
            }
            status => Err(AdminError::Refused { what, status, body }),
        }
    }

    /// Removes the source (its instances stop); nothing to do when it is gone already.
    pub async fn delete_source(
        &self,
        tenant: &str,
        namespace: &str,
        name: &str,
    ) -> Result<(), AdminError> {
        let path = self.source_path(tenant, namespace, name);
        let what = format!("deleting source {name}");
        let (status, body) = self.send(&what, self.http.delete(&path)).await?;
        if status.is_success() || status == StatusCode::NOT_FOUND {
            return Ok(());
        }
        Err(AdminError::Refused { what, status, body })
    }

    /// Restarts the source's instances (as after a crash of the connector).
    pub async fn restart_source(
        &self,
        tenant: &str,
        namespace: &str,
        name: &str,
    ) -> Result<(), AdminError> {
        let path = format!("{}/restart", self.source_path(tenant, namespace, name));
        let what = format!("restarting source {name}");
        let (status, body) = self.send(&what, self.http.post(&path)).await?;
        if status.is_success() {
            return Ok(());
        }
        Err(AdminError::Refused { what, status, body })
    }

    /// Keeps what `topic` (`persistent://tenant/namespace/name`) holds for ever, or its
    /// newest `size_mb` megabytes: creates the topic, unless it exists, and sets its
    /// retention. Without retention Pulsar deletes the closed ledgers of a topic that no
    /// subscription holds back, and Pulsar IO reads its offsets and Debezium's schema
    /// history back with readers, which hold nothing back: a broker restart, or the
    /// topic moving to another broker, would lose them.
    pub async fn retain_topic(&self, topic: &str, size_mb: Option<u64>) -> Result<(), AdminError> {
        let path = topic.replacen("persistent://", "", 1);
        let url = format!("{}/admin/v2/persistent/{path}", self.base);
        let what = format!("creating topic {topic}");
        let (status, body) = self.send(&what, self.http.put(&url)).await?;
        if !status.is_success() && status != StatusCode::CONFLICT {
            return Err(AdminError::Refused { what, status, body });
        }
        let limit = |size: Option<u64>| size.map_or(-1, |mb| i64::try_from(mb).unwrap_or(-1));
        let retention = serde_json::json!({
            "retentionTimeInMinutes": -1,
            "retentionSizeInMB": limit(size_mb),
        });
        let what = format!("the retention of topic {topic} (topic-level policies must be enabled)");
        let (status, body) = self
            .send(
                &what,
                self.http.post(format!("{url}/retention")).json(&retention),
            )
            .await?;
        if status.is_success() {
            return Ok(());
        }
        Err(AdminError::Refused { what, status, body })
    }

    /// Whether `topic` (`persistent://tenant/namespace/name`) holds at least one message.
    pub async fn topic_has_messages(&self, topic: &str) -> Result<bool, AdminError> {
        let path = topic.replacen("persistent://", "", 1);
        let url = format!(
            "{}/admin/v2/persistent/{path}/examinemessage?initialPosition=earliest&messagePosition=1",
            self.base
        );
        let what = format!("the first message of {topic}");
        let (status, body) = self.send(&what, self.http.get(&url)).await?;
        match status {
            s if s.is_success() => Ok(true),
            // No such topic, or an empty one.
            StatusCode::NOT_FOUND | StatusCode::CONFLICT | StatusCode::PRECONDITION_FAILED => {
                Ok(false)
            }
            status => Err(AdminError::Refused { what, status, body }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn status_reads_pulsar_io_s_answer() {
        let answer = serde_json::json!({
            "numInstances": 1, "numRunning": 1,
            "instances": [{"instanceId": 0, "status": {
                "running": true, "error": "", "numWritten": 3
            }}]
        });
        let status = SourceStatus::from_json(&answer);
        assert!(status.is_running());
        assert_eq!(status.written, 3);
        assert_eq!(status.error, None);

        let failing = serde_json::json!({
            "numInstances": 1, "numRunning": 0,
            "instances": [{"instanceId": 0, "status": {
                "running": false, "error": "Connection refused", "numWritten": 0
            }}]
        });
        let status = SourceStatus::from_json(&failing);
        assert!(!status.is_running());
        assert_eq!(status.error.as_deref(), Some("Connection refused"));
    }
}
