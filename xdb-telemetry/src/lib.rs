//! Tracing for the XDB services and SDK: the log output and OpenTelemetry spans on one
//! `tracing` subscriber, and W3C trace-context (`traceparent`) propagation over HTTP
//! headers and task rows, so one trace follows a process from the client's start
//! request through both services to every worker call.
//!
//! Without the `export` feature only propagation is available (what the SDK needs);
//! it costs nothing when no OpenTelemetry layer is installed.

#[cfg(feature = "export")]
mod export;
mod propagation;

#[cfg(feature = "export")]
pub use export::{init, Telemetry, TelemetryError};
pub use propagation::{
    inject_headers, set_parent_from_headers, set_parent_from_traceparent, traceparent, TRACEPARENT,
};
