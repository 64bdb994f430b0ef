//! How a call is sent: one attempt over HTTP, sent again while the retry policy says so,
//! and a write's request id, left out for a service of the release before request ids.

use std::time::Duration;

use serde::de::DeserializeOwned;
use serde::Serialize;
use xdb_protocol::ErrorSubType;

use super::retry::{retryable, with_request_id, IdempotentRequest, Repeat, Retryable};
use super::{Client, ClientError};
use crate::error::XdbError;

/// The longest pause before a retry, whatever `Retry-After` says.
const MAX_RETRY_AFTER: Duration = Duration::from_secs(30);

impl Client {
    /// One attempt: the answer's body, or the failure and the pause its answer asks for.
    async fn attempt(
        &self,
        path: &str,
        body: &[u8],
        timeout: Duration,
    ) -> Result<Vec<u8>, (ClientError, Duration)> {
        // The caller's current span becomes the parent of the service's request span.
        let mut headers = reqwest::header::HeaderMap::new();
        xdb_telemetry::inject_headers(&tracing::Span::current(), &mut headers);
        let mut post = self
            .http
            .post(format!("{}{path}", self.service_url))
            .headers(headers)
            .header(reqwest::header::CONTENT_TYPE, "application/json")
            .timeout(timeout)
            .body(body.to_vec());
        if let Some(token) = &self.bearer_token {
            post = post.bearer_auth(token);
        }
        let no_answer = |e: reqwest::Error| (ClientError::Transport(e), Duration::ZERO);
        let response = post.send().await.map_err(no_answer)?;
        let status = response.status();
        let pause = retry_after(response.headers());
        let answer = response.bytes().await.map_err(no_answer)?;
        if status.is_success() {
            return Ok(answer.to_vec());
        }
        Err((ClientError::from_response(status.as_u16(), &answer), pause))
    }

    /// Sends `request` (serialized once: every attempt sends the same bytes) until it
    /// is answered, a failure is final, or the retries run out.
    async fn send<Req: Serialize + ?Sized>(
        &self,
        path: &str,
        request: &Req,
        timeout: Duration,
        repeat: Repeat,
    ) -> Result<Vec<u8>, ClientError> {
        let body = serde_json::to_vec(request).map_err(|e| {
            ClientError::Sdk(XdbError::Encode {
                what: format!("request to {path}"),
                message: e.to_string(),
            })
        })?;
        let mut retry = 0;
        loop {
            let (error, retry_after) = match self.attempt(path, &body, timeout).await {
                Ok(answer) => return Ok(answer),
                Err(failure) => failure,
            };
            let Some(why) = retryable(repeat, &error).filter(|_| retry < self.retries) else {
                return Err(error);
            };
            let pause = match why {
                Retryable::NoAnswer => self.backoff.pause(retry),
                Retryable::Unavailable => retry_after,
            };
            retry += 1;
            tracing::debug!(path, ?pause, retry, %error, "sending the call again");
            tokio::time::sleep(pause).await;
        }
    }

    pub(super) async fn call_with_timeout<Req: Serialize + ?Sized, Resp: DeserializeOwned>(
        &self,
        path: &str,
        request: &Req,
        timeout: Duration,
        repeat: Repeat,
    ) -> Result<Resp, ClientError> {
        let body = self.send(path, request, timeout, repeat).await?;
        serde_json::from_slice(&body)
            .map_err(|e| ClientError::InvalidResponse(format!("{path}: {e}")))
    }

    pub(super) async fn call<Req: Serialize + ?Sized, Resp: DeserializeOwned>(
        &self,
        path: &str,
        request: &Req,
        repeat: Repeat,
    ) -> Result<Resp, ClientError> {
        self.call_with_timeout(path, request, self.request_timeout, repeat)
            .await
    }

    /// A write with a request id (the caller's, else a fresh one): safe to send again.
    pub(super) async fn call_idempotent<Req: IdempotentRequest, Resp: DeserializeOwned>(
        &self,
        path: &str,
        request: &Req,
    ) -> Result<Resp, ClientError> {
        let body = self.send_idempotent_body(path, request).await?;
        serde_json::from_slice(&body)
            .map_err(|e| ClientError::InvalidResponse(format!("{path}: {e}")))
    }

    /// [`Client::call_idempotent`] of a call whose answer has nothing to read.
    pub(super) async fn send_idempotent<Req: IdempotentRequest>(
        &self,
        path: &str,
        request: &Req,
    ) -> Result<(), ClientError> {
        self.send_idempotent_body(path, request).await.map(drop)
    }

    /// Sends `request` with a request id. A service of a release before request ids
    /// refuses the field (every request is checked against its document): when the id
    /// is the client's own, not the caller's, the request goes again without it, as
    /// that service would have taken it, so a rolling upgrade of the services can come
    /// after the clients'.
    async fn send_idempotent_body<Req: IdempotentRequest>(
        &self,
        path: &str,
        request: &Req,
    ) -> Result<Vec<u8>, ClientError> {
        let with_id = with_request_id(request);
        let sent = self
            .send(path, &with_id, self.request_timeout, Repeat::Safe)
            .await;
        match sent {
            Err(error)
                if predates_request_ids(&error) && request.clone().request_id_mut().is_none() =>
            {
                self.send(path, request, self.request_timeout, Repeat::Unsafe)
                    .await
            }
            sent => sent,
        }
    }
}

/// Whether `error` is a service's refusal of the `requestId` field itself: a release
/// before request ids.
fn predates_request_ids(error: &ClientError) -> bool {
    error.sub_type() == Some(ErrorSubType::InvalidRequest)
        && error
            .api_error()
            .is_some_and(|e| e.message.contains("unknown field") && e.message.contains("requestId"))
}

/// The pause a refusal asks for: `Retry-After` in seconds (the service never sends an
/// HTTP date), 1 s when absent or unreadable, at most [`MAX_RETRY_AFTER`].
fn retry_after(headers: &reqwest::header::HeaderMap) -> Duration {
    headers
        .get(reqwest::header::RETRY_AFTER)
        .and_then(|value| value.to_str().ok())
        .and_then(|text| text.trim().parse::<u64>().ok())
        .map_or(Duration::from_secs(1), Duration::from_secs)
        .min(MAX_RETRY_AFTER)
}

#[cfg(test)]
mod tests {
    use xdb_protocol::paths;
    use xdb_protocol::*;

    use super::*;

    #[test]
    fn retry_after_is_read_in_seconds_and_bounded() {
        let mut headers = reqwest::header::HeaderMap::new();
        assert_eq!(retry_after(&headers), Duration::from_secs(1));
        headers.insert(reqwest::header::RETRY_AFTER, "2".parse().unwrap());
        assert_eq!(retry_after(&headers), Duration::from_secs(2));
        headers.insert(reqwest::header::RETRY_AFTER, "86400".parse().unwrap());
        assert_eq!(retry_after(&headers), MAX_RETRY_AFTER);
        headers.insert(
            reqwest::header::RETRY_AFTER,
            "Wed, 21 Oct 2015 07:28:00 GMT".parse().unwrap(),
        );
        assert_eq!(retry_after(&headers), Duration::from_secs(1));
    }

    /// A service whose stop path refuses `refusals` times with OVERLOADED, then
    /// answers 200; its URL and the count of calls it got.
    async fn overloaded_service(
        refusals: usize,
    ) -> (String, std::sync::Arc<std::sync::atomic::AtomicUsize>) {
        use std::sync::atomic::{AtomicUsize, Ordering};
        use std::sync::Arc;
        let calls = Arc::new(AtomicUsize::new(0));
        let counted = calls.clone();
        let app = axum::Router::new().route(
            paths::STOP,
            axum::routing::post(move || {
                let call = counted.fetch_add(1, Ordering::SeqCst);
                async move {
                    use axum::http::StatusCode;
                    use axum::response::IntoResponse;
                    if call < refusals {
                        let body = r#"{"subType":"OVERLOADED","message":"busy"}"#;
                        let status = StatusCode::SERVICE_UNAVAILABLE;
                        (status, [("retry-after", "0")], body).into_response()
                    } else {
                        (StatusCode::OK, "{}").into_response()
                    }
                }
            }),
        );
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        tokio::spawn(async move { axum::serve(listener, app).await });
        (url, calls)
    }

    fn stop_request() -> ProcessExecutionStopRequest {
        ProcessExecutionStopRequest {
            process_execution_id: None,
            request_id: None,
            process_id: "p1".into(),
            stop_type: Default::default(),
            reason: None,
        }
    }

    #[tokio::test]
    async fn overloaded_calls_are_sent_again_a_bounded_number_of_times() {
        use std::sync::atomic::Ordering;
        let (url, calls) = overloaded_service(2).await;
        Client::new(&url).stop(&stop_request()).await.unwrap();
        assert_eq!(calls.load(Ordering::SeqCst), 3);

        let (url, calls) = overloaded_service(5).await;
        let client = Client::new(&url).with_overload_retries(1);
        let error = client.stop(&stop_request()).await.unwrap_err();
        assert_eq!(error.sub_type(), Some(ErrorSubType::Overloaded));
        assert_eq!(error.status(), Some(503));
        assert_eq!(calls.load(Ordering::SeqCst), 2);
    }
}
