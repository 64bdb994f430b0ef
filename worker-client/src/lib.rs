//! Calls the user's worker over HTTP, turning every way it can fail into one error type.
//!
//! Used by the async service (state APIs) and the API service (RPC).
//!
//! `https://` workers are checked against the public web roots and, when configured,
//! a CA of the user's own ([`WorkerTls`]); XDB can show them a client certificate
//! (mutual TLS). reqwest's rustls backend, on ring like every TLS client of XDB.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde::de::DeserializeOwned;
use serde::Serialize;
use thiserror::Error;
use tracing::Instrument;
use xdb_protocol::{WorkerErrorResponse, WorkerErrorType};

#[derive(Debug, Error)]
pub enum WorkerCallError {
    #[error("worker call timed out after {0:?}")]
    Timeout(Duration),
    #[error("worker unreachable: {0}")]
    Unreachable(String),
    /// A non-2xx answer. `non_retryable`: its body named an `errorType` that says the
    /// call can never succeed as the worker stands (see [`WorkerErrorType::retryable`]).
    #[error("worker answered HTTP {status}: {detail}")]
    Status {
        status: u16,
        detail: String,
        non_retryable: Option<WorkerErrorType>,
    },
    #[error("worker answered an invalid body: {0}")]
    InvalidBody(String),
}

/// TLS to `https://` workers beyond the defaults (`security.worker_*_file`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct WorkerTls {
    /// CA certificate(s) (PEM) a worker's certificate may lead to, beside the public
    /// web roots.
    pub ca_file: Option<PathBuf>,
    /// A client certificate chain (PEM) and its private key (PEM), shown to workers
    /// that ask for one.
    pub client_certificate: Option<(PathBuf, PathBuf)>,
}

/// Why the worker client cannot be built: a file of [`WorkerTls`] is unusable. The
/// message names the setting.
#[derive(Debug, Error)]
#[error("{setting}: {problem}")]
pub struct WorkerTlsError {
    setting: &'static str,
    problem: String,
}

/// A pooled HTTP client for worker calls.
#[derive(Clone)]
pub struct WorkerClient {
    http: reqwest::Client,
    max_response_bytes: usize,
    /// Signs every call (see `xdb_worker_auth`) when set.
    signing_secret: Option<Arc<[u8]>>,
}

impl WorkerClient {
    pub fn new(max_response_bytes: usize) -> Self {
        Self::with_tls(max_response_bytes, &WorkerTls::default())
            .expect("the HTTP client builds without files")
    }

    /// [`WorkerClient::new`] with a CA and a client certificate for `https://` workers.
    pub fn with_tls(max_response_bytes: usize, tls: &WorkerTls) -> Result<Self, WorkerTlsError> {
        let mut builder = reqwest::Client::builder()
            .pool_max_idle_per_host(64)
            .tcp_nodelay(true);
        if let Some(path) = &tls.ca_file {
            let setting = "security.worker_ca_file";
            let pem = read(setting, path)?;
            let certificates = reqwest::Certificate::from_pem_bundle(&pem)
                .map_err(|error| problem(setting, format!("{}: {error}", path.display())))?;
            if certificates.is_empty() {
                return Err(problem(
                    setting,
                    format!("{} holds no PEM certificate", path.display()),
                ));
            }
            for certificate in certificates {
                builder = builder.add_root_certificate(certificate);
            }
        }
        if let Some((cert_file, key_file)) = &tls.client_certificate {
            let setting = "security.worker_client_cert_file";
            // reqwest reads the key and the chain from one PEM buffer.
            let mut pem = read("security.worker_client_key_file", key_file)?;
            pem.push(b'\n');
            pem.extend(read(setting, cert_file)?);
            let identity = reqwest::Identity::from_pem(&pem).map_err(|error| {
                problem(
                    setting,
                    format!(
                        "{} with key {}: {error}",
                        cert_file.display(),
                        key_file.display()
                    ),
                )
            })?;
            builder = builder.identity(identity);
        }
        let http = builder
            .build()
            .map_err(|error| problem("security.worker_*_file", error.to_string()))?;
        Ok(Self {
            http,
            max_response_bytes,
            signing_secret: None,
        })
    }

    /// Signs every call with `secret`, which the workers share, so they can refuse
    /// calls that do not come from XDB.
    pub fn with_signing_secret(mut self, secret: Option<&str>) -> Self {
        self.signing_secret = secret.map(|s| Arc::from(s.as_bytes()));
        self
    }

    /// POSTs `request` to `base_url` + `path` and decodes the answer, in a client span
    /// whose trace context the worker receives as `traceparent`.
    pub async fn call<Req: Serialize, Resp: DeserializeOwned>(
        &self,
        base_url: &str,
        path: &str,
        request: &Req,
        timeout: Duration,
        idempotency_key: &str,
    ) -> Result<Resp, WorkerCallError> {
        let url = format!("{}{}", base_url.trim_end_matches('/'), path);
        let span = tracing::info_span!(
            "xdb.worker.call",
            otel.name = %format!("POST {path}"),
            otel.kind = "client",
            url.full = %url,
            http.response.status_code = tracing::field::Empty,
            otel.status_code = tracing::field::Empty,
        );
        let mut headers = reqwest::header::HeaderMap::new();
        xdb_telemetry::inject_headers(&span, &mut headers);
        // Serialized here, not by reqwest, because the signature covers these bytes.
        let body = serde_json::to_vec(request)
            .map_err(|e| WorkerCallError::InvalidBody(format!("request: {e}")))?;
        let mut post = self
            .http
            .post(&url)
            .headers(headers)
            .header("Idempotency-Key", idempotency_key)
            .header(reqwest::header::CONTENT_TYPE, "application/json");
        if let Some(secret) = &self.signing_secret {
            let now = SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .map_or(0, |d| d.as_secs());
            post = post.header(
                xdb_worker_auth::SIGNATURE_HEADER,
                xdb_worker_auth::sign(secret, now, &body),
            );
        }
        let post = post.body(body);
        let call = async move {
            let mut response = post
                .send()
                .await
                .map_err(|e| WorkerCallError::Unreachable(with_causes(&e)))?;
            let status = response.status();
            tracing::Span::current().record("http.response.status_code", status.as_u16());
            let mut body = Vec::new();
            while let Some(chunk) = response
                .chunk()
                .await
                .map_err(|e| WorkerCallError::Unreachable(with_causes(&e)))?
            {
                body.extend_from_slice(&chunk);
                if body.len() > self.max_response_bytes {
                    return Err(WorkerCallError::InvalidBody(format!(
                        "the response is over {} bytes",
                        self.max_response_bytes
                    )));
                }
            }
            if !status.is_success() {
                return Err(status_error(status.as_u16(), &body));
            }
            // Valid JSON, but no database can store it (PostgreSQL refuses it in text and
            // JSON): an unusable answer, failed like any other.
            if xdb_engine::validation::json_has_nul_escape(&body) {
                return Err(WorkerCallError::InvalidBody(
                    "the response contains U+0000 (NUL), which the database cannot store".into(),
                ));
            }
            serde_json::from_slice(&body).map_err(|e| WorkerCallError::InvalidBody(explain(&e)))
        };
        let result = match tokio::time::timeout(timeout, call.instrument(span.clone())).await {
            Ok(result) => result,
            Err(_) => Err(WorkerCallError::Timeout(timeout)),
        };
        if result.is_err() {
            span.record("otel.status_code", "ERROR");
        }
        result
    }
}

impl WorkerCallError {
    /// The worker's non-retryable `errorType` and its detail, when it answered one.
    pub fn non_retryable(&self) -> Option<(WorkerErrorType, &str)> {
        match self {
            WorkerCallError::Status {
                non_retryable: Some(kind),
                detail,
                ..
            } => Some((*kind, detail)),
            _ => None,
        }
    }
}

/// A non-2xx answer, classified once here: only a [`WorkerErrorResponse`] body naming a
/// non-retryable `errorType` is non-retryable. Any other body (text, another JSON, an
/// unknown or absent `errorType`) and any other status stay a failed attempt.
fn status_error(status: u16, body: &[u8]) -> WorkerCallError {
    match serde_json::from_slice::<WorkerErrorResponse>(body) {
        Ok(answer) => WorkerCallError::Status {
            status,
            non_retryable: answer.non_retryable(),
            detail: answer.detail,
        },
        Err(_) => WorkerCallError::Status {
            status,
            detail: String::from_utf8_lossy(body).chars().take(1000).collect(),
            non_retryable: None,
        },
    }
}

/// The decoding error of a worker's answer, with the payload's shape when the answer put
/// something else where a payload belongs (the commonest mistake of a new SDK).
fn explain(error: &serde_json::Error) -> String {
    let text = error.to_string();
    let payload = text.contains("EncodedObject")
        || text.contains("missing field `encoding`")
        || text.contains("missing field `data`");
    if payload {
        format!(
            "{text} (a payload is {{\"encoding\": \"json\", \"data\": \"<the value as JSON \
             text>\"}})"
        )
    } else {
        text
    }
}

/// reqwest's message with its causes: "error sending request" alone does not say that
/// a certificate was refused, or why.
fn with_causes(error: &reqwest::Error) -> String {
    let mut text = error.to_string();
    let mut source = std::error::Error::source(error);
    while let Some(cause) = source {
        let cause_text = cause.to_string();
        if !text.contains(&cause_text) {
            text.push_str(": ");
            text.push_str(&cause_text);
        }
        source = cause.source();
    }
    text
}

fn read(setting: &'static str, path: &std::path::Path) -> Result<Vec<u8>, WorkerTlsError> {
    std::fs::read(path)
        .map_err(|error| problem(setting, format!("cannot read {}: {error}", path.display())))
}

fn problem(setting: &'static str, problem: String) -> WorkerTlsError {
    WorkerTlsError { setting, problem }
}

#[cfg(test)]
mod tests {
    use xdb_protocol::ProcessRpcWorkerResponse;

    use xdb_protocol::WorkerErrorType;

    use super::{explain, status_error};

    #[test]
    fn only_a_typed_non_retryable_answer_is_non_retryable() {
        let never = status_error(
            400,
            br#"{"detail": "no state X", "errorType": "UNKNOWN_STATE"}"#,
        );
        assert_eq!(
            never.non_retryable(),
            Some((WorkerErrorType::UnknownState, "no state X"))
        );
        assert_eq!(never.to_string(), "worker answered HTTP 400: no state X");
        for (status, body) in [
            (
                400,
                &br#"{"detail": "bad", "errorType": "INVALID_REQUEST"}"#[..],
            ),
            (
                500,
                br#"{"detail": "boom", "errorType": "USER_CODE_ERROR"}"#,
            ),
            (401, br#"{"detail": "sig", "errorType": "UNAUTHORIZED"}"#),
            (400, br#"{"detail": "x", "errorType": "SOMETHING_NEW"}"#),
            (400, br#"{"detail": "x"}"#),
            (400, b"UNKNOWN_STATE"),
            (502, b"<html>bad gateway</html>"),
            (400, br#"{"errorType": "UNKNOWN_STATE"}"#),
        ] {
            let error = status_error(status, body);
            assert_eq!(error.non_retryable(), None, "{status} {body:?}");
        }
    }

    fn decode(body: &str) -> String {
        explain(&serde_json::from_str::<ProcessRpcWorkerResponse>(body).unwrap_err())
    }

    #[test]
    fn a_plain_value_for_a_payload_is_explained() {
        for body in [
            r#"{"output": "done"}"#,
            r#"{"output": {"value": "done"}}"#,
            r#"{"output": {"encoding": "json"}}"#,
        ] {
            let message = decode(body);
            assert!(
                message.ends_with(
                    r#"(a payload is {"encoding": "json", "data": "<the value as JSON text>"})"#
                ),
                "{body}: {message}"
            );
        }
        assert!(!decode(r#"{"writes": 1}"#).contains("a payload is"));
    }
}
