//! Pulsar CDC mode: an instance SIGKILLed while it holds a message (its worker call in
//! flight, the message unacknowledged) loses its work to another instance within two
//! seconds, with the default 30 s lease, again and again.
//!
//! The broker redelivers the dead consumer's message at once, but the other instance
//! finds the task still leased (and publishes a timer for the lease's end); what runs it
//! is the release of the dead instance's leases once its heartbeat is stale, whose
//! change event reaches the subscription like any other. The sweep for tasks without
//! events is off, so nothing else can.
//!
//! The same holds for a continuation: a task the transition created leased to the
//! instance, whose own change event is passed over, so no message of it is held at all.

use xdb_config::QueueMode;
use xdb_integration_tests::processes::hang::HangProcess;
use xdb_integration_tests::Database;

use crate::liveness_takeover::{takeover_after_sigkill, takeover_of};

async fn sigkilled_instance_s_work_runs_elsewhere_within_two_seconds(db: Database) {
    takeover_after_sigkill(db, QueueMode::Pulsar).await;
}

async fn sigkilled_instance_s_continuation_runs_elsewhere_within_two_seconds(db: Database) {
    takeover_of(db, QueueMode::Pulsar, HangProcess::after_wait_until(), 5).await;
}

both_databases!(
    sigkilled_instance_s_work_runs_elsewhere_within_two_seconds,
    sigkilled_instance_s_continuation_runs_elsewhere_within_two_seconds,
);
