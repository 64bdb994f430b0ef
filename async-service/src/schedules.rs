//! The schedule firer: records the firings schedules' specs make due and starts them.
//!
//! Two steps per pass, both on the database's clock:
//! 1. each due schedule's firings (within its catch-up window) are recorded with the
//!    schedule's next fire time, in one transaction conditional on the version read
//!    (`ScheduleStore::record_firings`), so racing instances record each firing once;
//! 2. each open firing is started under its overlap policy, its process id derived from
//!    the schedule id and nominal time, with `DISALLOW_REUSE`: a start repeated after a
//!    crash (here or on another instance) is refused by the process id and resolved as the
//!    start that happened. A firing is never started twice, and never before its time.
//!
//! The firer runs beside the task source in both queue modes (database queue and Pulsar)
//! and reads the schedule tables itself, every 200 ms: a firing is not a row of
//! `xdb_sys_tasks` and does not travel through the broker. A firing's execution, once
//! started, is ordinary work for the task source.
//!
//! What to record is decided by [`firings_to_record`], a pure function of the row and the
//! clock; what overlap does by `xdb_engine::schedule::decide_overlap`. This module must
//! never decide either itself.

use std::sync::Arc;
use std::time::Duration;

use chrono::{DateTime, Utc};
use tokio::sync::watch;
use uuid::Uuid;
use xdb_engine::decide::DecideError;
use xdb_engine::schedule::{decide_overlap, due_firings, CompiledSpec, OverlapDecision};
use xdb_persistence::{
    NewFiring, NextFiring, OpenFiring, ProcessStore, StoreError, StoredSchedule,
};
use xdb_protocol::{
    firing_process_id, ProcessExecutionDescribeRequest, ProcessExecutionStartRequest,
    ProcessExecutionStopRequest, ProcessExecutionStopType, ProcessIdReusePolicy,
    ProcessStartConfig, ProcessStatus, ScheduleFiringOutcome, ScheduleFiringTrigger,
    ScheduleStartTemplate,
};

/// How often the firer looks for due schedules and open firings: how late (at most) a
/// firing starts after its time.
const POLL: Duration = Duration::from_millis(200);
/// Most schedules, and firings, one pass handles.
const PASS_LIMIT: usize = 64;
/// Most missed firings one schedule records per pass (the rest follow in the next).
const MAX_RECORDED_PER_PASS: usize = 100;
/// How long an instance holds a schedule while it starts its open firings (a pass takes
/// well under a second): a SIGKILLed holder delays that schedule's firings this long at
/// most, never loses them.
const SCHEDULE_LEASE: Duration = Duration::from_secs(5);

/// Fires schedules for this instance; every instance runs one, and they share the work
/// through the rows.
pub(crate) struct ScheduleFirer {
    pub store: Arc<dyn ProcessStore>,
    /// This instance, as the holder of schedules' leases.
    pub owner: String,
}

/// What recording a due schedule's firings writes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Recording {
    pub firings: Vec<NewFiring>,
    pub next: NextFiring,
    /// Missed nominal times the catch-up window dropped: `[first, until)`.
    pub dropped: Option<(i64, i64)>,
}

/// The firings of `schedule` due at `now` and where its spec goes on from; `None` when
/// its stored spec no longer compiles (it was checked when written).
pub(crate) fn firings_to_record(
    schedule: &StoredSchedule,
    now: DateTime<Utc>,
) -> Option<Recording> {
    let info = &schedule.info;
    let spec = CompiledSpec::compile(&info.spec).ok()?;
    let next_nominal = info.next_fire_timestamp_ms?;
    let window_ms = i64::from(info.catchup_window_seconds) * 1000;
    let due = due_firings(
        &spec,
        &info.schedule_id,
        next_nominal,
        now.timestamp_millis(),
        window_ms,
        MAX_RECORDED_PER_PASS,
    );
    let fire_at = |nominal: i64| {
        DateTime::<Utc>::from_timestamp_millis(spec.fire_at(&info.schedule_id, nominal))
    };
    let firings = due
        .nominal
        .iter()
        .filter_map(|nominal| {
            Some(NewFiring {
                nominal_ms: *nominal,
                process_id: firing_process_id(&info.schedule_id, *nominal),
                fired_by: ScheduleFiringTrigger::Spec,
                overlap_policy: info.overlap_policy,
                fire_at: fire_at(*nominal)?,
            })
        })
        .collect();
    Some(Recording {
        firings,
        next: NextFiring {
            nominal_ms: due.next_nominal,
            fire_at: due.next_nominal.and_then(fire_at),
        },
        dropped: due.dropped,
    })
}

/// The start request of a firing.
pub(crate) fn start_request(
    template: &ScheduleStartTemplate,
    process_id: &str,
) -> ProcessExecutionStartRequest {
    let mut config: ProcessStartConfig = template.process_start_config.clone().unwrap_or_default();
    // The firing's own process id: a second start of it is refused, never run.
    config.id_reuse_policy = Some(ProcessIdReusePolicy::DisallowReuse);
    ProcessExecutionStartRequest {
        request_id: None,
        process_id: process_id.to_string(),
        process_type: template.process_type.clone(),
        worker_url: template.worker_url.clone(),
        start_state_id: template.start_state_id.clone(),
        start_state_input: template.start_state_input.clone(),
        start_state_config: template.start_state_config.clone(),
        process_start_config: Some(config),
    }
}

impl ScheduleFirer {
    /// Fires schedules until `stop` turns true.
    pub(crate) async fn run(self, mut stop: watch::Receiver<bool>) {
        while !*stop.borrow() {
            if let Err(error) = self.record_due().await {
                tracing::warn!(%error, "could not record due schedules' firings");
            }
            if let Err(error) = self.start_open().await {
                tracing::warn!(%error, "could not start schedules' firings");
            }
            tokio::select! {
                _ = tokio::time::sleep(POLL) => {}
                _ = stop.changed() => {}
            }
        }
    }

    async fn record_due(&self) -> Result<(), StoreError> {
        for schedule in self.store.due_schedules(PASS_LIMIT).await? {
            let id = &schedule.info.schedule_id;
            let now = self.store.database_clock().now();
            let Some(recording) = firings_to_record(&schedule, now) else {
                tracing::error!(schedule = %id, "a stored schedule's spec does not compile");
                continue;
            };
            if let Some((first, until)) = recording.dropped {
                tracing::info!(
                    schedule = %id, first, until,
                    "missed firings older than the catch-up window are dropped"
                );
            }
            self.store
                .record_firings(
                    id,
                    &recording.firings,
                    Some((schedule.version, recording.next)),
                    None,
                )
                .await?;
        }
        Ok(())
    }

    async fn start_open(&self) -> Result<(), StoreError> {
        let open = self.store.open_firings(PASS_LIMIT).await?;
        // A schedule's firings come in order: one buffered makes those after it the second
        // (skipped under BUFFER_ONE), and one the database refused for now holds back
        // those after it until the next pass.
        let mut held: Option<&str> = None;
        let mut buffered_in: Option<&str> = None;
        let mut leased: Option<&str> = None;
        for firing in &open {
            let schedule_id = firing.schedule_id.as_str();
            if held == Some(schedule_id) {
                continue;
            }
            if leased != Some(schedule_id) {
                if let Some(done) = leased.take() {
                    self.store.release_schedule(done, &self.owner).await?;
                }
                // Another instance decides this schedule's overlaps now.
                if !self
                    .store
                    .lease_schedule(schedule_id, &self.owner, SCHEDULE_LEASE)
                    .await?
                {
                    held = Some(schedule_id);
                    continue;
                }
                leased = Some(schedule_id);
            }
            let another_buffered = buffered_in == Some(schedule_id);
            match self.start_one(firing, another_buffered).await {
                Ok(ScheduleFiringOutcome::Buffered) => buffered_in = Some(schedule_id),
                Ok(_) => {}
                Err(error) if error.is_retryable() => {
                    held = Some(schedule_id);
                    tracing::warn!(%error, schedule = schedule_id, "a firing waits for the next pass");
                }
                Err(error) => {
                    // Given back now, so that another instance may take the schedule
                    // before the lease runs out.
                    if let Some(done) = leased {
                        let _ = self.store.release_schedule(done, &self.owner).await;
                    }
                    return Err(error);
                }
            }
        }
        if let Some(done) = leased {
            self.store.release_schedule(done, &self.owner).await?;
        }
        Ok(())
    }

    /// Decides and applies one open firing; its outcome now.
    async fn start_one(
        &self,
        open: &OpenFiring,
        another_buffered: bool,
    ) -> Result<ScheduleFiringOutcome, StoreError> {
        let schedule_id = open.schedule_id.as_str();
        let nominal = open.firing.nominal_timestamp_ms;
        let Some(schedule) = self.store.get_schedule(schedule_id).await? else {
            return Ok(ScheduleFiringOutcome::Skipped);
        };
        let previous = self.store.previous_started(schedule_id, nominal).await?;
        let running = match &previous {
            Some(previous) => self.running(&previous.process_id, previous).await?,
            None => None,
        };
        let decision = decide_overlap(open.overlap_policy, running.is_some(), another_buffered);
        let resolve = |outcome, execution: Option<Uuid>, reason: Option<String>| async move {
            self.store
                .resolve_firing(schedule_id, nominal, outcome, execution, reason.as_deref())
                .await
                .map(|_| outcome)
        };
        match decision {
            OverlapDecision::Skip => {
                let reason = format!(
                    "the previous firing's execution {} was still running",
                    running.map(|r| r.1).unwrap_or_default()
                );
                resolve(ScheduleFiringOutcome::Skipped, None, Some(reason)).await
            }
            OverlapDecision::Buffer => {
                if open.firing.outcome == ScheduleFiringOutcome::Buffered {
                    return Ok(ScheduleFiringOutcome::Buffered);
                }
                resolve(ScheduleFiringOutcome::Buffered, None, None).await
            }
            OverlapDecision::TerminatePreviousThenStart | OverlapDecision::Start => {
                if let (
                    OverlapDecision::TerminatePreviousThenStart,
                    Some((process_id, execution)),
                ) = (decision, &running)
                {
                    let stop = ProcessExecutionStopRequest {
                        request_id: None,
                        process_id: process_id.clone(),
                        process_execution_id: Some(execution.clone()),
                        stop_type: ProcessExecutionStopType::Terminate,
                        reason: Some(format!(
                            "terminated by schedule {schedule_id}'s next firing"
                        )),
                    };
                    match self.store.stop_process(&stop).await {
                        Ok(_) | Err(StoreError::Decide(DecideError::NotRunning)) => {}
                        Err(error) => return Err(error),
                    }
                }
                let request = start_request(&schedule.info.start, &open.firing.process_id);
                match self.store.start_process(&request).await {
                    Ok(execution) => {
                        tracing::info!(schedule = schedule_id, process_id = %request.process_id, "schedule fired");
                        resolve(ScheduleFiringOutcome::Started, Some(execution), None).await
                    }
                    // Started before a crash (or by a racing instance): that start is this
                    // firing's.
                    Err(StoreError::Decide(DecideError::AlreadyStarted(_))) => {
                        let execution = self.execution_of(&request.process_id).await?;
                        resolve(ScheduleFiringOutcome::Started, execution, None).await
                    }
                    Err(error) if error.is_retryable() => Err(error),
                    Err(error) => {
                        resolve(ScheduleFiringOutcome::Failed, None, Some(error.to_string())).await
                    }
                }
            }
        }
    }

    /// The previous firing's process id and execution, if that execution still runs.
    async fn running(
        &self,
        process_id: &str,
        previous: &xdb_protocol::ScheduleFiring,
    ) -> Result<Option<(String, String)>, StoreError> {
        let request = ProcessExecutionDescribeRequest {
            process_id: process_id.to_string(),
            process_execution_id: previous.process_execution_id.clone(),
        };
        match self.store.process_outcome(&request).await {
            Ok(described) if described.status == ProcessStatus::Running => Ok(Some((
                process_id.to_string(),
                described.process_execution_id,
            ))),
            Ok(_) | Err(StoreError::NotFound(_)) => Ok(None),
            Err(error) => Err(error),
        }
    }

    async fn execution_of(&self, process_id: &str) -> Result<Option<Uuid>, StoreError> {
        let request = ProcessExecutionDescribeRequest {
            process_id: process_id.to_string(),
            process_execution_id: None,
        };
        let described = self.store.process_outcome(&request).await?;
        Ok(Uuid::parse_str(&described.process_execution_id).ok())
    }
}

#[cfg(test)]
#[path = "schedules_tests.rs"]
mod tests;
