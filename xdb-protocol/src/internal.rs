//! The internal API between XDB's own services.

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

/// `POST /api/v1/xdb/internal/notify`: wakes a service instance where the database
/// cannot push notifications (MySQL). Losing one only delays work until the next poll.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct InternalNotifyRequest {
    /// New tasks were committed (for async-service instances).
    #[serde(default)]
    pub new_tasks: bool,
    /// These executions closed (for API-service instances with waiters); at most
    /// `MAX_NOTIFY_IDS`.
    #[serde(default)]
    #[schema(max_items = 10000)]
    pub closed_process_execution_ids: Vec<String>,
}
