//! Reads the web console makes beside the service API: what an execution keeps (its
//! local attributes) and the business row it drives, for the execution page.

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use crate::{GlobalAttributeValue, LocalAttributeValue};

/// `POST /api/v1/xdb/console/process-execution/attributes`: the attributes of the
/// current (or a given) execution of a process.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ProcessExecutionAttributesRequest {
    pub process_id: String,
    /// An execution of the process id (as the start answered it); absent: the latest.
    #[serde(default)]
    pub process_execution_id: Option<String>,
}

/// An execution's local attributes and its global-attribute row.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ProcessExecutionAttributesResponse {
    pub process_execution_id: String,
    /// Absent when the process has no global-attribute table.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub global_attributes: Option<BusinessRow>,
    /// Every local attribute the execution keeps, by key.
    pub local_attributes: Vec<LocalAttributeValue>,
}

/// The business row a process's global attributes are, as the database has it now.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct BusinessRow {
    /// The user table, as the start named it.
    pub table_name: String,
    /// The primary-key column and the value that selects the row.
    pub primary_key: GlobalAttributeValue,
    /// Every column of the row as JSON (column name → value, converted like attribute
    /// reads); null when no such row exists (yet, or any more).
    #[schema(value_type = Option<Object>)]
    pub row: Option<serde_json::Map<String, serde_json::Value>>,
}
