//! XDB's Pulsar CDC mode on Apache Pulsar IO: the committed Debezium source configs
//! (`pulsar-io/debezium-postgres-source.yaml`, `debezium-mysql-source.yaml`) turned into
//! a source registration for one database, and the admin REST calls that register, watch
//! and remove it. The tests and the bench capture their databases through this, with the
//! committed files as they are but for connection settings and names.

mod admin;
mod capture;
mod source_config;

pub use admin::{AdminError, PulsarIoAdmin, SourceStatus};
pub use capture::{start_capture, CaptureError, RunningCapture, OFFSETS_RETENTION_MB};
pub use source_config::{registration, Capture, ConfigError, Connector, SourceRegistration};
