//! A failed service call.

use xdb_protocol::{ApiErrorResponse, ErrorSubType};

use crate::error::XdbError;

/// A failed service call.
#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    /// The service refused the request with its JSON error body.
    #[error("XDB service answered HTTP {status} {:?}: {}", error.sub_type, error.message)]
    Api {
        status: u16,
        error: ApiErrorResponse,
    },
    /// A non-2xx answer without a readable error body (a proxy, a crash).
    #[error("XDB service answered HTTP {status}: {body}")]
    Http { status: u16, body: String },
    /// The request did not get an answer.
    #[error("request to the XDB service failed: {0}")]
    Transport(#[from] reqwest::Error),
    /// A 2xx answer whose body is not what the protocol says.
    #[error("unreadable XDB service response: {0}")]
    InvalidResponse(String),
    /// Encoding, decoding or schema checks in the SDK.
    #[error(transparent)]
    Sdk(#[from] XdbError),
}

impl ClientError {
    /// Sorts an answer by status and body: only a non-2xx answer is an error.
    pub fn from_response(status: u16, body: &[u8]) -> Self {
        match serde_json::from_slice::<ApiErrorResponse>(body) {
            Ok(error) => ClientError::Api { status, error },
            Err(_) => ClientError::Http {
                status,
                body: String::from_utf8_lossy(body).into_owned(),
            },
        }
    }

    /// The service's error body, if it sent one.
    pub fn api_error(&self) -> Option<&ApiErrorResponse> {
        match self {
            ClientError::Api { error, .. } => Some(error),
            _ => None,
        }
    }

    pub fn sub_type(&self) -> Option<ErrorSubType> {
        self.api_error().map(|e| e.sub_type)
    }

    /// The HTTP status of a non-2xx answer.
    pub fn status(&self) -> Option<u16> {
        match self {
            ClientError::Api { status, .. } | ClientError::Http { status, .. } => Some(*status),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn maps_error_bodies_to_typed_errors() {
        let body = br#"{"subType":"PROCESS_ALREADY_STARTED","message":"id p1 is running"}"#;
        let err = ClientError::from_response(409, body);
        assert_eq!(err.status(), Some(409));
        assert_eq!(err.sub_type(), Some(ErrorSubType::ProcessAlreadyStarted));
        assert_eq!(err.api_error().unwrap().message, "id p1 is running");
        assert!(err.to_string().contains("id p1 is running"));

        let err = ClientError::from_response(502, b"<html>bad gateway</html>");
        assert_eq!(err.status(), Some(502));
        assert_eq!(err.sub_type(), None);
        assert!(matches!(err, ClientError::Http { ref body, .. } if body.contains("bad gateway")));
    }
}
