//! Pulsar CDC mode: an instance SIGKILLed while it holds a message (its worker call in
//! flight, the message unacknowledged) loses its work to another instance within two
//! seconds, with the default 30 s lease, again and again.
//!
//! The broker redelivers the dead consumer's message at once, but the other instance
//! finds the task still leased (and publishes a timer for the lease's end); what runs it
//! is the release of the dead instance's leases once its heartbeat is stale, whose
//! change event reaches the subscription like any other. The sweep for tasks without
//! events is off, so nothing else can.

use xdb_config::QueueMode;
use xdb_integration_tests::Database;

use crate::liveness_takeover::takeover_after_sigkill;

async fn sigkilled_instance_s_work_runs_elsewhere_within_two_seconds(db: Database) {
    takeover_after_sigkill(db, QueueMode::Pulsar).await;
}

both_databases!(sigkilled_instance_s_work_runs_elsewhere_within_two_seconds);
