//! The storage contract of registered process definitions (the API service).

use async_trait::async_trait;
use xdb_protocol::{
    DefinitionRevision, DeploymentRef, DeploymentSummary, ExecutionsMoveRequest, ProcessDefinition,
    RegisterDefinitionsRequest, RegisteredDefinition,
};

use crate::StoreError;

/// A revision of a definition with its content.
#[derive(Debug, Clone, PartialEq)]
pub struct StoredDefinition {
    pub revision: DefinitionRevision,
    pub definition: ProcessDefinition,
}

/// Running executions waiting in a state a new definition removes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WaitingIn {
    pub state_id: String,
    pub executions: u64,
}

/// What a registration did: every definition registered (or current already), or none,
/// because one would strand running executions.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RegisterOutcome {
    Registered(Vec<RegisteredDefinition>),
    Incompatible {
        process_type: String,
        waiting: Vec<WaitingIn>,
    },
}

/// A column of a user table as `information_schema` describes it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TableColumn {
    pub name: String,
    /// The SQL type's name as the database reports it (`character varying`, `longtext`).
    pub data_type: String,
    /// A character column's character set and collation on MySQL (`utf8mb4`,
    /// `utf8mb4_general_ci`), which a comparison with XDB's own columns must name; `None`
    /// for other columns and on PostgreSQL.
    pub collation: Option<(String, String)>,
}

/// Registered definitions, and the reads their checks need.
#[async_trait]
pub trait DefinitionRegistry: Send + Sync + 'static {
    /// Registers `request`'s definitions, whose content hashes are `content_hashes` (in
    /// order), in one transaction: a type whose current revision has the same hash and
    /// deployment is left as it is; a type whose new definition drops states that
    /// running executions wait in is refused, and with it the whole request, unless
    /// `request.force`.
    async fn register_definitions(
        &self,
        request: &RegisterDefinitionsRequest,
        content_hashes: &[String],
    ) -> Result<RegisterOutcome, StoreError>;
    /// The current revision of every registered type, by type.
    async fn current_definitions(&self) -> Result<Vec<StoredDefinition>, StoreError>;
    /// One revision of a type (the current one when `revision` is `None`).
    async fn definition(
        &self,
        process_type: &str,
        revision: Option<i64>,
    ) -> Result<Option<StoredDefinition>, StoreError>;
    /// Every revision of a type, newest first.
    async fn definition_revisions(
        &self,
        process_type: &str,
    ) -> Result<Vec<DefinitionRevision>, StoreError>;
    /// The columns of a user table (in `schema`, else the connection's), in table
    /// order; none when the table does not exist.
    async fn table_columns(
        &self,
        schema: Option<&str>,
        table: &str,
    ) -> Result<Vec<TableColumn>, StoreError>;
    /// Every (process type, worker URL) pair any revision registered.
    async fn registered_worker_urls(&self) -> Result<Vec<(String, String)>, StoreError>;
    /// Every deployment with the types it serves and its running executions.
    async fn deployments(&self) -> Result<Vec<DeploymentSummary>, StoreError>;
    /// Makes `deployment` current for every type it registered (a new revision of each
    /// from its last definition); `None` when it registered nothing.
    async fn set_current_deployment(
        &self,
        deployment: &DeploymentRef,
        force: bool,
    ) -> Result<Option<RegisterOutcome>, StoreError>;
    /// Moves the running executions `request` selects; the count moved, or which
    /// deployment did not register the type. With `receipt` (a batch's item), records it
    /// in the same transaction when it moved any.
    async fn move_executions(
        &self,
        request: &ExecutionsMoveRequest,
        receipt: Option<&crate::receipts::Receipt>,
    ) -> Result<Result<i64, String>, StoreError>;
    /// The type of a process id's latest execution, if it has one.
    async fn process_type_of(&self, process_id: &str) -> Result<Option<String>, StoreError>;
}
