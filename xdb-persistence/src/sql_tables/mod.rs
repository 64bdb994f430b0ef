//! The per-table traits of [`crate::tables`] written once over [`crate::sql::SqlConn`]:
//! each dialect supplies its connection and, where its SQL differs, the text.

mod attribute_rows;
pub(crate) mod business_rows;
pub(crate) mod first_start_batch;
mod history_rows;
pub(crate) mod in_list;
mod leases;
mod operator_rows;
pub(crate) mod plan_rows;
pub(crate) mod process_rows;
mod queue_rows;
mod service_instances;
mod state_rows;
pub(crate) mod task_queue;
pub(crate) mod task_rows;
pub(crate) mod transition_batch;
