//! The per-table traits of [`crate::tables`] written once over [`crate::sql::SqlConn`]:
//! each dialect supplies its connection and, where its SQL differs, the text.

pub(crate) mod business_rows;
mod operator_rows;
mod service_instances;
