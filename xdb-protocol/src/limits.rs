//! Size limits of what clients and workers send, shared by both services and the
//! OpenAPI document (which states the limits it was generated with).

use serde::{Deserialize, Serialize};

/// Largest id the system tables hold (`VARCHAR(255)`): the ceiling of `max_id_chars`.
pub const ID_CHARS_CEILING: usize = 255;
/// Largest worker URL the system tables hold (`VARCHAR(2048)`).
pub const WORKER_URL_CHARS_CEILING: usize = 2048;
/// Largest list page the store serves.
pub const PAGE_SIZE_CEILING: u32 = 1000;

/// Default of `api.max_wait_seconds`: the longest wait-for-completion a client may ask for.
pub const DEFAULT_MAX_WAIT_SECONDS: u32 = 300;
/// Most execution ids one internal notify request may carry.
pub const MAX_NOTIFY_IDS: usize = 10_000;

/// Bounds of what a worker answers, enforced by the engine (an answer over one fails
/// the attempt) and stated in the document's worker response schemas.
pub mod worker {
    /// Longest durable timer, in seconds: 10 years, so a typo cannot overflow a timestamp.
    pub const MAX_TIMER_SECONDS: u32 = 10 * 365 * 24 * 3600;
    /// Most messages one local-queue command may wait for.
    pub const MAX_QUEUE_COMMAND_COUNT: u32 = 1000;
    /// Most next states one execute decision (or one RPC) may start.
    pub const MAX_NEXT_STATES: usize = 100;
}

/// `[limits]` of the config file (`XDB_LIMITS_<KEY>`). Every request body is also bounded
/// as a whole by `api.max_request_bytes` (413).
// `ToSchema` documents the setting (docs/configuration.md is generated from it); the
// OpenAPI document does not include it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(default, deny_unknown_fields)]
pub struct Limits {
    /// Longest id, in characters: process id and type, execution id, state id, queue
    /// name, dedup id, RPC name, local-attribute key, encoding (at most 255).
    pub max_id_chars: usize,
    /// Longest worker URL, in characters (at most 2048).
    pub max_worker_url_chars: usize,
    /// Largest attribute value, in bytes: a global attribute's JSON value as serialized,
    /// a local attribute's `data`. Applies to clients' and workers' writes.
    pub max_attribute_value_bytes: usize,
    /// Largest local-queue message payload (`data`), in bytes, from clients and workers.
    pub max_queue_message_bytes: usize,
    /// Largest list page (at most 1000).
    pub max_page_size: u32,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            max_id_chars: ID_CHARS_CEILING,
            max_worker_url_chars: WORKER_URL_CHARS_CEILING,
            max_attribute_value_bytes: 64 * 1024,
            max_queue_message_bytes: 256 * 1024,
            max_page_size: PAGE_SIZE_CEILING,
        }
    }
}
