//! One file per endpoint.

mod attributes;
mod batch;
mod console;
mod count;
mod declared_schedules;
mod definitions;
mod deployments;
mod describe;
mod flow_limits;
mod health;
mod history;
mod internal_notify;
mod list;
mod openapi;
mod operate;
mod publish_to_local_queue;
mod receipted;
mod rpc;
mod schedule;
mod start;
mod stop;
mod wait_for_completion;

use axum::routing::{get, post};
use axum::Router;
use xdb_protocol::paths;

use crate::{ApiError, AppState};

pub(crate) use internal_notify::internal_notify;

pub(crate) fn routes(console: bool) -> Router<AppState> {
    Router::new()
        .route(paths::START, post(start::start))
        .route(paths::STOP, post(stop::stop))
        .route(paths::DESCRIBE, post(describe::describe))
        .route(paths::LIST, post(list::list))
        .route(paths::COUNT, post(count::count))
        .route(paths::HISTORY, post(history::history))
        .route(
            paths::PUBLISH_TO_LOCAL_QUEUE,
            post(publish_to_local_queue::publish_to_local_queue),
        )
        .route(
            paths::WAIT_FOR_COMPLETION,
            post(wait_for_completion::wait_for_completion),
        )
        .route(paths::RPC, post(rpc::rpc))
        .route(paths::STATES, post(operate::states))
        .route(paths::RETRY_NOW, post(operate::retry_now))
        .route(paths::GIVE_UP, post(operate::give_up))
        .route(paths::PAUSE, post(operate::pause))
        .route(paths::RESUME, post(operate::resume))
        .route(paths::REPRIORITIZE, post(operate::reprioritize))
        .route(paths::RESET, post(operate::reset))
        .route(paths::DEFINITIONS_REGISTER, post(definitions::register))
        .route(paths::DEFINITIONS_LIST, post(definitions::list))
        .route(paths::DEFINITIONS_DESCRIBE, post(definitions::describe))
        .route(paths::DEPLOYMENTS_LIST, post(deployments::list))
        .route(
            paths::DEPLOYMENTS_SET_CURRENT,
            post(deployments::set_current),
        )
        .route(paths::DEPLOYMENTS_MOVE, post(deployments::move_executions))
        .route(paths::BATCH_START, post(batch::start))
        .route(paths::BATCH_LIST, post(batch::list))
        .route(paths::BATCH_DESCRIBE, post(batch::describe))
        .route(paths::BATCH_CANCEL, post(batch::cancel))
        .route(paths::SCHEDULE_CREATE, post(schedule::create))
        .route(paths::SCHEDULE_UPDATE, post(schedule::update))
        .route(paths::SCHEDULE_PAUSE, post(schedule::pause))
        .route(paths::SCHEDULE_RESUME, post(schedule::resume))
        .route(paths::SCHEDULE_TRIGGER, post(schedule::trigger))
        .route(paths::SCHEDULE_BACKFILL, post(schedule::backfill))
        .route(paths::SCHEDULE_DELETE, post(schedule::delete))
        .route(paths::SCHEDULE_LIST, post(schedule::list))
        .route(paths::SCHEDULE_DESCRIBE, post(schedule::describe))
        .route(paths::SCHEDULE_HISTORY, post(schedule::history))
        .route(paths::FLOW_LIMITS_SET, post(flow_limits::set))
        .route(paths::FLOW_LIMITS_LIST, post(flow_limits::list))
        .route(paths::FLOW_LIMITS_HISTORY, post(flow_limits::history))
        .route(paths::CONSOLE_ATTRIBUTES, post(attributes::attributes))
        .route(paths::OPENAPI, get(openapi::openapi))
        .route("/health/live", get(health::live))
        .route("/health/ready", get(health::ready))
        .merge(console::routes(console))
}

/// Checks an audit history's page request: a page size of 1 to 1000, and a token that
/// this service could have given (a change id).
fn check_history_page(page_size: Option<u32>, token: Option<&str>) -> Result<(), ApiError> {
    if let Some(size) = page_size {
        if !(1..=1000).contains(&size) {
            return Err(ApiError::invalid("pageSize: must be 1 to 1000"));
        }
    }
    if token.is_some_and(|token| token.parse::<i64>().is_err()) {
        return Err(ApiError::invalid(
            "nextPageToken: not a token this service gave",
        ));
    }
    Ok(())
}
