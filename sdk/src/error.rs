//! Errors of the SDK itself, and the error type user code returns.

/// What user code (states, RPCs) returns on failure: any error, so `?` works on anything.
///
/// The worker answers such an error with HTTP 500 and the error's text, and XDB retries the
/// call according to the state's retry policy.
pub type BoxError = Box<dyn std::error::Error + Send + Sync + 'static>;

/// Result of user code.
pub type Result<T, E = BoxError> = std::result::Result<T, E>;

/// An error raised by the SDK while encoding, decoding or checking against a schema.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum XdbError {
    /// A value could not be turned into JSON.
    #[error("cannot encode {what}: {message}")]
    Encode { what: String, message: String },
    /// A payload or attribute could not be read as the requested type.
    #[error("cannot decode {what}: {message}")]
    Decode { what: String, message: String },
    /// A payload uses an encoding this SDK does not read.
    #[error("unsupported encoding {encoding:?} for {what} (only \"json\" is supported)")]
    UnsupportedEncoding { what: String, encoding: String },
    /// A global attribute column, local attribute key or local queue that the process
    /// did not declare in its schema.
    #[error("{kind} {name:?} is not declared in the schema of process {process_type}")]
    Undeclared {
        kind: &'static str,
        name: String,
        process_type: String,
    },
    /// A state that the process did not register.
    #[error("state {state_id:?} is not registered in process {process_type}")]
    UnknownState {
        process_type: String,
        state_id: String,
    },
    /// The state declares no waitUntil but one was requested.
    #[error("state {state_id:?} does not implement waitUntil")]
    WaitUntilNotImplemented { state_id: String },
    /// An operation that is not allowed where it was used.
    #[error("{0}")]
    NotAllowed(String),
}

/// Why a worker call failed, sorted by who is at fault: the call, which can never succeed
/// as the worker stands (HTTP 400: an input that does not decode, a waitUntil the state
/// does not have), or user code (HTTP 500).
#[derive(Debug)]
pub(crate) enum InvokeError {
    /// `UNDECODABLE_INPUT`.
    UndecodableInput(String),
    /// `NOT_IMPLEMENTED`.
    NotImplemented(String),
    User(BoxError),
}

impl InvokeError {
    /// Sorts an error returned by user code: an SDK refusal of the request itself (no
    /// waitUntil) is the caller's fault, anything else is the user code's.
    pub(crate) fn from_user(err: BoxError) -> Self {
        match err.downcast_ref::<XdbError>() {
            Some(XdbError::WaitUntilNotImplemented { .. }) => {
                InvokeError::NotImplemented(err.to_string())
            }
            _ => InvokeError::User(err),
        }
    }
}
