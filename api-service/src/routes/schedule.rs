//! Schedules: created, changed and described here, fired by the async service
//! (`xdb_persistence::ScheduleStore`).
//!
//! Every request is checked in full before anything is written: the spec compiles (a bad
//! cron expression, time zone or interval is a 400 naming the field) and the start
//! template passes what a start would (its definition, the worker URL policy, the size of
//! its values). When and whether a firing happens is decided by `xdb_engine::schedule`,
//! never here.

use axum::extract::State;
use axum::Json;
use xdb_engine::decide::DecideError;
use xdb_engine::schedule::CompiledSpec;
use xdb_persistence::{NewFiring, NextFiring, ScheduleChangeNote, StoredSchedule};
use xdb_protocol::{
    firing_process_id, EmptyResponse, ErrorSubType, ProcessExecutionStartRequest,
    ScheduleBackfillRequest, ScheduleBackfillResponse, ScheduleChangeAction,
    ScheduleControlRequest, ScheduleCreateRequest, ScheduleDescribeRequest,
    ScheduleDescribeResponse, ScheduleFiringTrigger, ScheduleHistoryRequest,
    ScheduleHistoryResponse, ScheduleInfo, ScheduleListRequest, ScheduleListResponse, ScheduleSpec,
    ScheduleStartTemplate, ScheduleTriggerRequest, ScheduleTriggerResponse, ScheduleUpdateRequest,
    DEFAULT_CATCHUP_WINDOW_SECONDS, MAX_BACKFILL_FIRINGS, SCHEDULE_NEXT_FIRE_TIMES,
    SCHEDULE_RECENT_FIRINGS,
};

use super::check_history_page;
use super::start::{check_values, check_worker_url, resolve_definition};
use crate::auth::Caller;
use crate::json::ApiJson;
use crate::{ApiError, AppState};

/// Times a pause, resume or update reads the schedule again after another change won.
const VERSION_RACES: usize = 5;

/// `caller`'s `action`, for the audit history.
fn note<'a>(
    action: ScheduleChangeAction,
    caller: &'a Caller,
    reason: Option<&'a str>,
) -> ScheduleChangeNote<'a> {
    ScheduleChangeNote {
        action,
        changed_by: &caller.0,
        reason,
        detail: None,
    }
}

pub(crate) async fn create(
    State(state): State<AppState>,
    caller: Caller,
    ApiJson(request): ApiJson<ScheduleCreateRequest>,
) -> Result<Json<ScheduleDescribeResponse>, ApiError> {
    let spec = compile(&request.spec)?;
    let start = checked_template(&state, &request.schedule_id, request.start).await?;
    let info = ScheduleInfo {
        schedule_id: request.schedule_id,
        spec: request.spec,
        start,
        overlap_policy: request.overlap_policy.unwrap_or_default(),
        catchup_window_seconds: request
            .catchup_window_seconds
            .unwrap_or(DEFAULT_CATCHUP_WINDOW_SECONDS),
        paused: request.paused,
        note: request.note,
        reason: None,
        next_fire_timestamp_ms: None,
        created_timestamp_ms: 0,
        updated_timestamp_ms: 0,
        declared_by: None,
    };
    let next = next_from_now(&state, &spec, &info.schedule_id);
    let created = note(ScheduleChangeAction::Created, &caller, None);
    if !state
        .schedules
        .create_schedule(&info, next, &created)
        .await?
    {
        return Err(ApiError::new(
            ErrorSubType::ScheduleAlreadyExists,
            format!("a schedule with id {} exists", info.schedule_id),
        ));
    }
    tracing::info!(schedule = %info.schedule_id, "schedule created");
    described(&state, &info.schedule_id).await.map(Json)
}

pub(crate) async fn update(
    State(state): State<AppState>,
    caller: Caller,
    ApiJson(request): ApiJson<ScheduleUpdateRequest>,
) -> Result<Json<ScheduleDescribeResponse>, ApiError> {
    let spec = compile(&request.spec)?;
    let start = checked_template(&state, &request.schedule_id, request.start).await?;
    refuse_declared(&stored(&state, &request.schedule_id).await?, "updated")?;
    let updated = note(ScheduleChangeAction::Updated, &caller, None);
    change(&state, &request.schedule_id, &updated, |info| {
        info.spec = request.spec.clone();
        info.start = start.clone();
        if let Some(policy) = request.overlap_policy {
            info.overlap_policy = policy;
        }
        if let Some(window) = request.catchup_window_seconds {
            info.catchup_window_seconds = window;
        }
        if request.note.is_some() {
            info.note = request.note.clone();
        }
        // The new spec fires from now on.
        Some(next_from_now(&state, &spec, &info.schedule_id))
    })
    .await
}

pub(crate) async fn pause(
    State(state): State<AppState>,
    caller: Caller,
    ApiJson(request): ApiJson<ScheduleControlRequest>,
) -> Result<Json<ScheduleDescribeResponse>, ApiError> {
    set_paused(&state, &caller, &request, true).await
}

/// Keeps the next firing where the pause left it, so the firings missed meanwhile are
/// caught up within the window (and the older ones dropped) as after downtime.
pub(crate) async fn resume(
    State(state): State<AppState>,
    caller: Caller,
    ApiJson(request): ApiJson<ScheduleControlRequest>,
) -> Result<Json<ScheduleDescribeResponse>, ApiError> {
    set_paused(&state, &caller, &request, false).await
}

/// Pausing a paused schedule (or resuming a running one) changes nothing, as the
/// contract says: neither its reason nor its history.
async fn set_paused(
    state: &AppState,
    caller: &Caller,
    request: &ScheduleControlRequest,
    paused: bool,
) -> Result<Json<ScheduleDescribeResponse>, ApiError> {
    if stored(state, &request.schedule_id).await?.info.paused == paused {
        return described(state, &request.schedule_id).await.map(Json);
    }
    let action = if paused {
        ScheduleChangeAction::Paused
    } else {
        ScheduleChangeAction::Resumed
    };
    let changed = note(action, caller, request.reason.as_deref());
    change(state, &request.schedule_id, &changed, |info| {
        info.paused = paused;
        info.reason = request.reason.clone();
        None
    })
    .await
}

pub(crate) async fn trigger(
    State(state): State<AppState>,
    caller: Caller,
    ApiJson(request): ApiJson<ScheduleTriggerRequest>,
) -> Result<Json<ScheduleTriggerResponse>, ApiError> {
    let stored = stored(&state, &request.schedule_id).await?;
    let now = state.schedules.database_clock().now();
    let nominal = now.timestamp_millis();
    let firing = NewFiring {
        nominal_ms: nominal,
        process_id: firing_process_id(&request.schedule_id, nominal),
        fired_by: ScheduleFiringTrigger::Manual,
        overlap_policy: request.overlap_policy.unwrap_or(stored.info.overlap_policy),
        fire_at: now,
    };
    let detail = format!("process id {}", firing.process_id);
    let triggered = ScheduleChangeNote {
        detail: Some(&detail),
        ..note(ScheduleChangeAction::Triggered, &caller, None)
    };
    let recorded = state
        .schedules
        .record_firings(
            &request.schedule_id,
            std::slice::from_ref(&firing),
            None,
            Some(&triggered),
        )
        .await?;
    if recorded.is_none() {
        return Err(not_found(&request.schedule_id));
    }
    Ok(Json(ScheduleTriggerResponse {
        nominal_timestamp_ms: nominal,
        process_id: firing.process_id,
    }))
}

pub(crate) async fn backfill(
    State(state): State<AppState>,
    caller: Caller,
    ApiJson(request): ApiJson<ScheduleBackfillRequest>,
) -> Result<Json<ScheduleBackfillResponse>, ApiError> {
    let stored = stored(&state, &request.schedule_id).await?;
    let spec = compile(&stored.info.spec)?;
    let now = state.schedules.database_clock().now();
    if request.start_timestamp_ms >= request.end_timestamp_ms {
        return Err(ApiError::invalid(
            "endTimestampMs: must be after startTimestampMs",
        ));
    }
    if request.end_timestamp_ms > now.timestamp_millis() {
        return Err(ApiError::invalid(
            "endTimestampMs: must not be after now (a backfill runs past firings)",
        ));
    }
    let times = spec.in_range(
        request.start_timestamp_ms,
        request.end_timestamp_ms,
        MAX_BACKFILL_FIRINGS,
    );
    if times.len() > MAX_BACKFILL_FIRINGS {
        return Err(ApiError::invalid(format!(
            "endTimestampMs: the range holds more than {MAX_BACKFILL_FIRINGS} firings; \
             backfill it in parts"
        )));
    }
    let policy = request.overlap_policy.unwrap_or(stored.info.overlap_policy);
    let firings: Vec<NewFiring> = times
        .iter()
        .map(|nominal| NewFiring {
            nominal_ms: *nominal,
            process_id: firing_process_id(&request.schedule_id, *nominal),
            fired_by: ScheduleFiringTrigger::Backfill,
            overlap_policy: policy,
            // Past: due at once, in nominal order.
            fire_at: now,
        })
        .collect();
    let detail = match (firings.first(), firings.last()) {
        (Some(first), Some(last)) => format!(
            "{} firings of the spec, process ids {} to {}",
            firings.len(),
            first.process_id,
            last.process_id
        ),
        _ => "no firing of the spec in the range".to_string(),
    };
    let backfilled = ScheduleChangeNote {
        detail: Some(&detail),
        ..note(ScheduleChangeAction::Backfilled, &caller, None)
    };
    let recorded = state
        .schedules
        .record_firings(&request.schedule_id, &firings, None, Some(&backfilled))
        .await?
        .ok_or_else(|| not_found(&request.schedule_id))?;
    Ok(Json(ScheduleBackfillResponse { firings: recorded }))
}

pub(crate) async fn delete(
    State(state): State<AppState>,
    caller: Caller,
    ApiJson(request): ApiJson<ScheduleControlRequest>,
) -> Result<Json<EmptyResponse>, ApiError> {
    refuse_declared(&stored(&state, &request.schedule_id).await?, "deleted")?;
    let deleted = note(
        ScheduleChangeAction::Deleted,
        &caller,
        request.reason.as_deref(),
    );
    if !state
        .schedules
        .delete_schedule(&request.schedule_id, &deleted)
        .await?
    {
        return Err(not_found(&request.schedule_id));
    }
    tracing::info!(schedule = %request.schedule_id, reason = ?request.reason, "schedule deleted");
    Ok(Json(EmptyResponse {}))
}

pub(crate) async fn list(
    State(state): State<AppState>,
    ApiJson(request): ApiJson<ScheduleListRequest>,
) -> Result<Json<ScheduleListResponse>, ApiError> {
    Ok(Json(state.schedules.list_schedules(&request).await?))
}

pub(crate) async fn describe(
    State(state): State<AppState>,
    ApiJson(request): ApiJson<ScheduleDescribeRequest>,
) -> Result<Json<ScheduleDescribeResponse>, ApiError> {
    described(&state, &request.schedule_id).await.map(Json)
}

pub(crate) async fn history(
    State(state): State<AppState>,
    ApiJson(request): ApiJson<ScheduleHistoryRequest>,
) -> Result<Json<ScheduleHistoryResponse>, ApiError> {
    check_history_page(request.page_size, request.next_page_token.as_deref())?;
    Ok(Json(state.schedules.schedule_history(&request).await?))
}

/// The spec, or a 400 naming its field.
pub(super) fn compile(spec: &ScheduleSpec) -> Result<CompiledSpec, ApiError> {
    CompiledSpec::compile(spec).map_err(|e| ApiError::invalid(e.to_string()))
}

/// The template as a start would be checked (with the first firing's process id), and
/// with what its registered definition fills in: the worker URL of the deployment current
/// now, when the template names none.
async fn checked_template(
    state: &AppState,
    schedule_id: &str,
    template: ScheduleStartTemplate,
) -> Result<ScheduleStartTemplate, ApiError> {
    let mut start = ProcessExecutionStartRequest {
        request_id: None,
        process_id: firing_process_id(schedule_id, 0),
        process_type: template.process_type,
        worker_url: template.worker_url,
        start_state_id: template.start_state_id,
        start_state_input: template.start_state_input,
        start_state_config: template.start_state_config,
        process_start_config: template.process_start_config,
    };
    let prefixed = |e: ApiError| ApiError::new(e.sub_type, format!("start.{}", e.message));
    resolve_definition(state, &mut start)
        .await
        .map_err(prefixed)?;
    check_worker_url(
        &state.config.security.worker_url_prefixes,
        &start.worker_url,
    )
    .map_err(prefixed)?;
    check_values(&start, &state.config.limits).map_err(prefixed)?;
    // As a start checks its request, so that no firing is refused for it.
    xdb_engine::decide::validate_start_request(&start).map_err(|e| match e {
        DecideError::Invalid(invalid) => ApiError::invalid(format!("start.{invalid}")),
        other => ApiError::from(xdb_persistence::StoreError::from(other)),
    })?;
    Ok(ScheduleStartTemplate {
        process_type: start.process_type,
        worker_url: start.worker_url,
        start_state_id: start.start_state_id,
        start_state_input: start.start_state_input,
        start_state_config: start.start_state_config,
        process_start_config: start.process_start_config,
    })
}

/// The spec's first firing after now (the database's clock).
pub(super) fn next_from_now(
    state: &AppState,
    spec: &CompiledSpec,
    schedule_id: &str,
) -> NextFiring {
    let now = state.schedules.database_clock().now().timestamp_millis();
    let nominal = spec.next_after(now);
    NextFiring {
        nominal_ms: nominal,
        fire_at: nominal
            .and_then(|n| chrono::DateTime::from_timestamp_millis(spec.fire_at(schedule_id, n))),
    }
}

/// Applies `edit` to the schedule and writes it back, with `change` in its history, if
/// nobody changed it meanwhile (reading it again otherwise); `edit` answers the new next
/// firing, or `None` to keep it.
async fn change(
    state: &AppState,
    schedule_id: &str,
    change: &ScheduleChangeNote<'_>,
    edit: impl Fn(&mut ScheduleInfo) -> Option<NextFiring>,
) -> Result<Json<ScheduleDescribeResponse>, ApiError> {
    for _ in 0..VERSION_RACES {
        let stored = stored(state, schedule_id).await?;
        let mut info = stored.info.clone();
        let next = edit(&mut info).unwrap_or(NextFiring {
            nominal_ms: stored.info.next_fire_timestamp_ms,
            fire_at: stored.next_fire_at,
        });
        if state
            .schedules
            .replace_schedule(&info, next, stored.version, change)
            .await?
        {
            return described(state, schedule_id).await.map(Json);
        }
    }
    Err(ApiError::overloaded(format!(
        "schedule {schedule_id} kept changing meanwhile; try again"
    )))
}

async fn stored(state: &AppState, schedule_id: &str) -> Result<StoredSchedule, ApiError> {
    state
        .schedules
        .get_schedule(schedule_id)
        .await?
        .ok_or_else(|| not_found(schedule_id))
}

async fn described(
    state: &AppState,
    schedule_id: &str,
) -> Result<ScheduleDescribeResponse, ApiError> {
    let mut schedule = stored(state, schedule_id).await?.info;
    let spec = compile(&schedule.spec)?;
    let now = state.schedules.database_clock().now().timestamp_millis();
    let next_fire_timestamps_ms = spec.next_n(now, SCHEDULE_NEXT_FIRE_TIMES);
    if schedule.paused {
        schedule.next_fire_timestamp_ms = None;
    }
    let recent_firings = state
        .schedules
        .recent_firings(schedule_id, SCHEDULE_RECENT_FIRINGS)
        .await?;
    Ok(ScheduleDescribeResponse {
        schedule,
        next_fire_timestamps_ms,
        recent_firings,
    })
}

/// A schedule a definition declares is changed by registering the definition, not here.
fn refuse_declared(stored: &StoredSchedule, what: &str) -> Result<(), ApiError> {
    match &stored.info.declared_by {
        Some(process_type) => Err(ApiError::invalid(format!(
            "scheduleId: schedule {} is declared by the definition of process type \
             {process_type}, so it is {what} by changing that code and registering it \
             (pause, resume, trigger and backfill work here)",
            stored.info.schedule_id
        ))),
        None => Ok(()),
    }
}

fn not_found(schedule_id: &str) -> ApiError {
    ApiError::new(
        ErrorSubType::ScheduleNotFound,
        format!("no schedule has id {schedule_id}"),
    )
}
