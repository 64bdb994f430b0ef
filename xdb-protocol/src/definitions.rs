//! Registered process definitions: what a worker deployment tells the service about the
//! process types it hosts, so the service can check requests before writing anything
//! and route starts to the deployment.

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use crate::common::{AsyncStateConfig, GlobalAttributeLoading, LocalAttributeLoading};

/// The type of a declared attribute. Checked at registration against the column's SQL
/// type (`information_schema`): `STRING` fits text, character and enum columns;
/// `INTEGER` integer and decimal columns; `NUMBER` any numeric column; `BOOLEAN` boolean,
/// bit and tinyint columns; `TIMESTAMP` date and time columns; `JSON` json columns (and
/// MariaDB's `longtext` JSON alias); `ANY` every column.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum AttributeType {
    String,
    Integer,
    Number,
    Boolean,
    Timestamp,
    Json,
    #[default]
    Any,
}

/// One declared attribute: a column of the business table, or a local attribute's key.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct AttributeDefinition {
    pub name: String,
    /// Default `ANY`.
    #[serde(default, rename = "type")]
    #[schema(default = AttributeType::default)]
    pub attribute_type: AttributeType,
}

/// The business table whose row holds a process's global attributes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct GlobalAttributesDefinition {
    /// The table, optionally schema-qualified (`schema.table`); it must exist when the
    /// definition is registered.
    pub table_name: String,
    /// The primary-key column.
    pub primary_key_column: String,
    /// The columns the process reads or writes; each must exist with a compatible type.
    #[serde(default)]
    #[schema(default = json!([]))]
    pub columns: Vec<AttributeDefinition>,
}

/// One async state of a process type.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct StateDefinition {
    pub id: String,
    /// Whether the worker implements waitUntil for it; without one, a start or a
    /// movement must say `skipWaitUntil`.
    pub has_wait_until: bool,
    /// The state's options (timeouts, retry policies, failure recovery, loading), applied
    /// to a start that gives none; their `skipWaitUntil` follows `hasWaitUntil`.
    #[serde(default)]
    pub config: Option<AsyncStateConfig>,
    /// A JSON Schema (draft 2020-12) of the state's input, as the SDK derives it from the
    /// input type; absent: any input.
    #[serde(default)]
    #[schema(value_type = Option<Object>)]
    pub input_schema: Option<serde_json::Value>,
    /// Limits on this state's worker calls (see `flow-limits`); absent: none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub flow_limits: Option<crate::FlowLimits>,
}

/// One RPC of a process type, with the loading policy that guards it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct RpcDefinition {
    pub name: String,
    /// Columns loaded (and the lock taken) when the caller says nothing; a caller may
    /// load fewer columns or lock harder, never load undeclared columns or lock less.
    #[serde(default)]
    pub global_attribute_loading: Option<GlobalAttributeLoading>,
    /// Local attributes loaded when the caller says nothing, under the same rule.
    #[serde(default)]
    pub local_attribute_loading: Option<LocalAttributeLoading>,
    /// A JSON Schema of the RPC's input; absent: any input.
    #[serde(default)]
    #[schema(value_type = Option<Object>)]
    pub input_schema: Option<serde_json::Value>,
}

/// A process type as its worker declares it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ProcessDefinition {
    pub process_type: String,
    /// At least one state, ids unique.
    pub states: Vec<StateDefinition>,
    /// The states a start may name; empty: any of `states`.
    #[serde(default)]
    #[schema(default = json!([]))]
    pub start_states: Vec<String>,
    /// The local queues its states wait on; a publish to any other is refused.
    #[serde(default)]
    #[schema(default = json!([]))]
    pub local_queues: Vec<String>,
    #[serde(default)]
    #[schema(default = json!([]))]
    pub rpcs: Vec<RpcDefinition>,
    /// Absent: the process keeps no business row.
    #[serde(default)]
    pub global_attributes: Option<GlobalAttributesDefinition>,
    #[serde(default)]
    #[schema(default = json!([]))]
    pub local_attributes: Vec<AttributeDefinition>,
    /// Default `PINNED`.
    #[serde(default)]
    #[schema(default = VersioningPolicy::default)]
    pub versioning_policy: VersioningPolicy,
    /// Limits on the worker calls of all the type's states together (see
    /// `flow-limits`); absent: none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub flow_limits: Option<crate::FlowLimits>,
    /// Schedules that start this type, owned by the code: each registration creates,
    /// changes and deletes them to match (see `ScheduleDeclaration`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schema(default = json!([]))]
    pub schedules: Vec<crate::ScheduleDeclaration>,
}

/// A deployment of a worker: where its code runs and which build it is.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct WorkerDeployment {
    /// Stable across versions, e.g. the service's name.
    #[schema(min_length = 1, max_length = 255)]
    pub name: String,
    /// The build, e.g. a release number or a commit.
    #[schema(min_length = 1, max_length = 255)]
    pub version: String,
    /// Base URL of the worker, as a start's `workerUrl` would name it.
    pub worker_url: String,
}

/// `POST .../definitions/register`: idempotent; a definition equal to the current one
/// (same content hash, same deployment) writes nothing.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct RegisterDefinitionsRequest {
    pub deployment: WorkerDeployment,
    /// 1 to 100 process types, each named once.
    #[schema(min_items = 1, max_items = 100)]
    pub definitions: Vec<ProcessDefinition>,
    /// Register even when running executions wait in states the new definition removes
    /// (they then fail at their next call). Default false: such a registration is
    /// refused with 409 `DEFINITION_INCOMPATIBLE`, naming the count.
    #[serde(default)]
    #[schema(default = false)]
    pub force: bool,
}

/// One revision of a registered definition, without its content.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct DefinitionRevision {
    pub process_type: String,
    /// 1 for the first registration of the type, one more for each change.
    pub revision: i64,
    /// SHA-256 of the definition's canonical JSON, hex.
    pub content_hash: String,
    pub deployment: WorkerDeployment,
    /// Milliseconds since the Unix epoch.
    pub registered_at_ms: i64,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct RegisteredDefinition {
    /// The current revision after the registration.
    pub revision: DefinitionRevision,
    /// Whether this registration wrote a new revision (false: it was current already).
    pub changed: bool,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct RegisterDefinitionsResponse {
    /// In the order of the request's definitions.
    pub registered: Vec<RegisteredDefinition>,
}

/// `POST .../definitions/list`: the current revision of every registered process type.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct DefinitionsListRequest {}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct DefinitionsListResponse {
    /// By process type.
    pub definitions: Vec<DefinitionRevision>,
}

/// `POST .../definitions/describe`: one process type's definition and its revisions.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct DefinitionDescribeRequest {
    pub process_type: String,
    /// Absent: the current revision.
    #[serde(default)]
    pub revision: Option<i64>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct DefinitionDescribeResponse {
    pub revision: DefinitionRevision,
    pub definition: ProcessDefinition,
    /// Every revision of the type, newest first (the history of its changes).
    pub revisions: Vec<DefinitionRevision>,
}

/// What happens to a type's running executions when another deployment becomes current
/// for it (registers it, or is made current): `PINNED` (the default) keeps each on the
/// worker URL it started with until it closes; `MOVE_TO_CURRENT` moves them in that same
/// transaction, so each runs its next call on the current deployment.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum VersioningPolicy {
    #[default]
    Pinned,
    MoveToCurrent,
}

/// `POST .../deployments/list`: every deployment that registered definitions.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct DeploymentsListRequest {}

/// A deployment, the process types it registered and the executions running on it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct DeploymentSummary {
    pub deployment: WorkerDeployment,
    /// Every type it registered, by name.
    pub process_types: Vec<String>,
    /// The types it is the current deployment of: starts naming no worker go there.
    pub current_for: Vec<String>,
    /// Running executions whose worker URL is this deployment's.
    pub running_executions: i64,
    /// Current for no type and running nothing: it can be shut down.
    pub drained: bool,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct DeploymentsListResponse {
    /// By name, then newest registration first.
    pub deployments: Vec<DeploymentSummary>,
}

/// A deployment by name and version.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct DeploymentRef {
    #[schema(min_length = 1, max_length = 255)]
    pub name: String,
    #[schema(min_length = 1, max_length = 255)]
    pub version: String,
}

/// `POST .../deployments/set-current`: makes a deployment current for every type it
/// registered, as a new revision of each (its last definition of the type); the others
/// then drain. Refused like a registration when it would strand running executions.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct DeploymentSetCurrentRequest {
    pub deployment: DeploymentRef,
    #[serde(default)]
    #[schema(default = false)]
    pub force: bool,
}

/// `POST .../deployments/move`: moves running executions of a type to a deployment that
/// registered it; each runs its next call there (a call in flight finishes where it is).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ExecutionsMoveRequest {
    pub process_type: String,
    pub to: DeploymentRef,
    /// Only executions running on this deployment; absent: on any other.
    #[serde(default)]
    pub from: Option<DeploymentRef>,
    /// Only these process ids (at most 1000); empty: every execution selected above.
    #[serde(default)]
    #[schema(default = json!([]), max_items = 1000)]
    pub process_ids: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ExecutionsMoveResponse {
    /// Executions moved.
    pub moved: i64,
}
