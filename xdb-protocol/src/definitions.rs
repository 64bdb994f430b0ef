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
    /// to a start that gives none.
    #[serde(default)]
    pub config: Option<AsyncStateConfig>,
    /// A JSON Schema (draft 2020-12) of the state's input, as the SDK derives it from the
    /// input type; absent: any input.
    #[serde(default)]
    #[schema(value_type = Option<Object>)]
    pub input_schema: Option<serde_json::Value>,
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
}

/// A deployment of a worker: where its code runs and which build it is.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct WorkerDeployment {
    /// Stable across versions, e.g. the service's name.
    pub name: String,
    /// The build, e.g. a release number or a commit.
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
