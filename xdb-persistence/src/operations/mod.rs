//! Storage operations, each written once over the per-table traits of
//! [`crate::tables`]: the dialects supply statements, never this logic.
//!
//! An operation loads and locks the rows it needs, asks `xdb-engine` for a plan and
//! applies it in the same transaction. Where a dialect has a faster one-statement form
//! (see [`crate::tables::Dialect::transition_as_read`]), the operation offers it first
//! and falls back to the generic form, which every dialect keeps tested.

mod attributes;
mod backing_off;
mod client_requests;
mod controls;
mod deliveries;
mod failures;
mod filtered;
mod list;
mod queries;
mod receipted;
mod reset;
mod rpc;
mod run_slots;
mod start;
mod state_calls;
mod states;
mod task_transitions;

pub(crate) use client_requests::{publish_to_local_queue, stop_process};
pub(crate) use controls::{control, held_back, hold_back, set_aside};
pub(crate) use failures::state_api_failed;
pub(crate) use filtered::{count_matching, list_matching};
pub(crate) use list::list_processes;
pub(crate) use queries::{describe_process, process_attributes, process_history};
pub(crate) use receipted::{apply_request, record_batch_item, record_receipt, replayed};
pub(crate) use reset::reset;
pub(crate) use rpc::rpc;
pub(crate) use run_slots::{admit_pending, forget_closed};
pub(crate) use start::start_process;
pub(crate) use state_calls::{continuation_call_without_reads, fired_timer_call, load_state_call};
pub(crate) use states::process_states;
pub(crate) use task_transitions::{
    complete_execute, complete_fired_execute, complete_wait_until, fire_timer, timeout_process,
};
