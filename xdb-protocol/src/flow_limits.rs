//! Flow limits: how fast the async service may call a process type's worker, per type
//! or per state, across all async instances.
//!
//! A limit is *declared* by the process's definition (what the code's authors expect
//! their downstream services to take) and may be *overridden* at run time by an
//! operator (what the downstream takes today). The override wins while it is set;
//! clearing it returns to the declared limit. Every change, by a registration or by an
//! operator, is kept in an audit history.

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

/// Largest calls-per-second limit: above it a limit is no limit in practice, and a typo
/// (a rate in calls per hour, say) is refused rather than silently meaningless.
pub const MAX_CALLS_PER_SECOND: f64 = 1_000_000.0;
/// Largest concurrent-calls limit.
pub const MAX_CONCURRENT_CALLS: u32 = 100_000;
/// Largest running-executions limit.
pub const MAX_RUNNING_EXECUTIONS: u32 = 100_000;
/// Longest concurrency key a start may give, in characters.
pub const MAX_CONCURRENCY_KEY_CHARS: usize = 255;
/// Longest reason an operator may give for a change, in characters.
pub const MAX_FLOW_LIMIT_REASON_CHARS: usize = 1024;

/// Limits on a process type's or a state's worker calls. An absent field is no limit.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct FlowLimits {
    /// At most this many worker calls (waitUntil and execute) a second across all async
    /// instances; more than 0, at most 1,000,000; fractions allowed (`0.5`: one call
    /// every two seconds). A call over the limit waits: briefly in the instance, or, for
    /// a longer wait, as its task due later (shown by `states` as `FLOW_LIMITED`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_calls_per_second: Option<f64>,
    /// At most this many worker calls running at once across all async instances (of
    /// the state; on a type, of all its states together); 1 to 100,000. A call over the
    /// limit waits for a running one to end, as its task due a little later (shown by
    /// `states` as `FLOW_LIMITED`). A call holds its place until its outcome is
    /// committed, and an instance that dies gives its places back with its leases.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_concurrent_calls: Option<u32>,
    /// At most this many executions of the type running at once per concurrency key
    /// (the start's `processStartConfig.concurrencyKey`; starts without one share one
    /// key); 1 to 100,000, on a type's limits only. A start over the limit is held:
    /// its execution is `PENDING` (a pause of the limit's own) and starts, in start
    /// order, when one of its key closes. A slot is the running execution itself, so
    /// it frees in the transaction that closes it, whatever becomes of any instance.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_running_executions: Option<u32>,
    /// With `maxRunningExecutions`: the global attribute (a column of the process's
    /// business row, e.g. `customer_id`) whose value as the start writes it (in its
    /// initial write, or as the row's primary key) is the concurrency key of a start
    /// that names none. Such a start that writes no value for it is refused (400). A
    /// type's limits only.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub concurrency_key_attribute: Option<String>,
    /// The priority of the type's starts that name none (`processStartConfig.priority`):
    /// 1 (claimed first) to 5; absent: 3. A type's limits only. Not a limit: it orders
    /// which waiting tasks are claimed first.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(minimum = 1, maximum = 5)]
    pub priority: Option<u8>,
    /// The global attribute (a column of the process's business row, e.g. `tenant_id`)
    /// whose value as the start writes it (in its initial write, or as the row's
    /// primary key) is the fairness key of a start that names none
    /// (`processStartConfig.fairnessKey`). A start that writes no value for it has no
    /// key. A type's limits only. Not a limit: it shares claims between keys.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fairness_key_attribute: Option<String>,
    /// The weight of the type's keyed starts that name none
    /// (`processStartConfig.fairnessWeight`): 1 to 1,000; absent: 1. A type's limits
    /// only.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(minimum = 1, maximum = 1000)]
    pub fairness_weight: Option<u32>,
}

impl FlowLimits {
    /// Whether no field limits anything (a priority or fairness orders, but limits
    /// nothing).
    pub fn is_unlimited(&self) -> bool {
        self.max_calls_per_second.is_none()
            && self.max_concurrent_calls.is_none()
            && self.max_running_executions.is_none()
    }

    /// Whether nothing is declared at all: no limit, no priority, no fairness.
    pub fn is_empty(&self) -> bool {
        self.is_unlimited()
            && self.priority.is_none()
            && self.fairness_key_attribute.is_none()
            && self.fairness_weight.is_none()
    }
}

/// Where a limit or a change came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum FlowLimitSource {
    /// A definition's registration declared it.
    Definition,
    /// An operator set or cleared an override.
    Operator,
}

impl FlowLimitSource {
    /// The name stored and sent.
    pub fn as_str(self) -> &'static str {
        match self {
            FlowLimitSource::Definition => "DEFINITION",
            FlowLimitSource::Operator => "OPERATOR",
        }
    }

    /// The source a stored name names.
    pub fn parse(text: &str) -> Option<Self> {
        match text {
            "DEFINITION" => Some(FlowLimitSource::Definition),
            "OPERATOR" => Some(FlowLimitSource::Operator),
            _ => None,
        }
    }
}

/// The limits of one process type (`stateId` absent) or of one of its states.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct FlowLimitsEntry {
    pub process_type: String,
    /// Absent: the limits apply to the calls of all the type's states together.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub state_id: Option<String>,
    /// What the last registration of the type's definition declared.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub declared: Option<FlowLimits>,
    /// An operator's override, in force while set (`{}`: no limit, whatever is declared).
    #[serde(default, rename = "override", skip_serializing_if = "Option::is_none")]
    pub override_limits: Option<FlowLimits>,
    /// What the async service applies: the override if set, else the declared limits.
    pub effective: FlowLimits,
    pub updated_timestamp_ms: i64,
}

/// `POST .../flow-limits/set`: sets or clears an operator's override of a process
/// type's or a state's limits. The type need not be registered.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct FlowLimitsSetRequest {
    pub process_type: String,
    /// Absent: the limits of the whole type.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub state_id: Option<String>,
    /// The override; `null` or absent clears it, so the declared limits apply again.
    #[serde(default, rename = "override", skip_serializing_if = "Option::is_none")]
    pub override_limits: Option<FlowLimits>,
    /// Why, kept in the audit history (at most 1024 characters).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

/// `POST .../flow-limits/list`: the limits in force, by process type and state.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct FlowLimitsListRequest {
    /// Only this type's limits.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub process_type: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct FlowLimitsListResponse {
    /// Ordered by process type, then state (the type's own first).
    pub limits: Vec<FlowLimitsEntry>,
}

/// `POST .../flow-limits/history`: changes of limits, newest first.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct FlowLimitsHistoryRequest {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub process_type: Option<String>,
    /// 1 to 1000; absent: 50.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub page_size: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next_page_token: Option<String>,
}

/// One change of one entry's declared limits or override.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct FlowLimitChange {
    pub change_id: i64,
    pub process_type: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub state_id: Option<String>,
    /// `DEFINITION`: a registration changed the declared limits; `OPERATOR`: an operator
    /// set or cleared the override.
    pub source: FlowLimitSource,
    /// The declared limits or the override before the change (absent: none).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub before: Option<FlowLimits>,
    /// After it (absent: none, i.e. cleared).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub after: Option<FlowLimits>,
    /// The operator's token name (or `anonymous` without tokens), or the deployment
    /// (`name@version`) whose registration made the change.
    pub changed_by: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    pub changed_timestamp_ms: i64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct FlowLimitsHistoryResponse {
    pub changes: Vec<FlowLimitChange>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next_page_token: Option<String>,
}
