//! Registered process definitions (`xdb_sys_process_definitions`): one row per revision
//! of a process type, the newest being current; and the reads the service checks
//! definitions and requests with (the business table's columns, an execution's type).

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use xdb_protocol::{
    DefinitionRevision, DeploymentRef, DeploymentSummary, ExecutionsMoveRequest, ProcessDefinition,
    RegisterDefinitionsRequest, RegisteredDefinition, VersioningPolicy, WorkerDeployment,
};

use crate::columns::ColumnReader;
use crate::conflict_retry::retrying_conflicts;
use crate::sql::{Param, SqlConn, SqlKind};
use crate::tables::{Dialect, Lane, Transaction};
use crate::{
    DefinitionRegistry, RegisterOutcome, StoreError, StoredDefinition, TableColumn, WaitingIn,
};

const REVISION_COLUMNS: &str = "process_type, revision, content_hash, deployment_name, \
                                deployment_version, worker_url, registered_at";

/// The newest revision of one type, locked against a concurrent registration of it.
/// Parameter: process type.
fn latest_locked() -> String {
    format!(
        "SELECT {REVISION_COLUMNS} FROM xdb_sys_process_definitions \
         WHERE process_type = ? ORDER BY revision DESC LIMIT 1 FOR UPDATE"
    )
}

/// Inserts a revision unless a concurrent registration took its number (0 rows: try
/// again). Parameters: type, revision, hash, deployment name, version, URL, definition.
fn insert_revision(kind: SqlKind) -> &'static str {
    kind.pick(
        "INSERT INTO xdb_sys_process_definitions (process_type, revision, content_hash, \
           deployment_name, deployment_version, worker_url, definition) \
         VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT (process_type, revision) DO NOTHING",
        "INSERT IGNORE INTO xdb_sys_process_definitions (process_type, revision, \
           content_hash, deployment_name, deployment_version, worker_url, definition) \
         VALUES (?, ?, ?, ?, ?, ?, ?)",
    )
}

/// Per state id, the running executions of a type with an unfinished state execution of
/// it. Parameter: process type.
const WAITING_BY_STATE: &str = "SELECT s.state_id, COUNT(DISTINCT s.process_execution_id) \
     FROM xdb_sys_async_state_executions s \
     JOIN xdb_sys_process_executions p ON p.id = s.process_execution_id \
     WHERE p.process_type = ? AND p.status = 'RUNNING' \
       AND s.status IN ('WAIT_UNTIL_RUNNING', 'WAITING_COMMANDS', 'EXECUTE_RUNNING') \
     GROUP BY s.state_id ORDER BY s.state_id";

/// The current revision of every type, with its definition.
fn current_definitions_sql() -> String {
    format!(
        "SELECT {REVISION_COLUMNS}, definition FROM xdb_sys_process_definitions d \
         WHERE revision = (SELECT MAX(revision) FROM xdb_sys_process_definitions m \
                           WHERE m.process_type = d.process_type) \
         ORDER BY process_type"
    )
}

/// A table's columns and SQL types from `information_schema`, in table order.
/// Parameters: schema (NULL: the connection's), table.
fn table_columns_sql(kind: SqlKind) -> &'static str {
    kind.pick(
        "SELECT column_name::text, data_type::text, NULL::text, NULL::text \
         FROM information_schema.columns \
         WHERE table_schema = COALESCE(CAST(? AS TEXT), current_schema()) AND table_name = ? \
         ORDER BY ordinal_position",
        "SELECT COLUMN_NAME, DATA_TYPE, CHARACTER_SET_NAME, COLLATION_NAME \
         FROM information_schema.COLUMNS \
         WHERE TABLE_SCHEMA = COALESCE(?, DATABASE()) AND TABLE_NAME = ? \
         ORDER BY ORDINAL_POSITION",
    )
}

fn read_revision(row: &mut impl ColumnReader) -> Result<DefinitionRevision, StoreError> {
    let process_type = row.text()?;
    let revision = row.bigint()?;
    let content_hash = row.text()?;
    let deployment = WorkerDeployment {
        name: row.text()?,
        version: row.text()?,
        worker_url: row.text()?,
    };
    let registered_at: DateTime<Utc> = row.time()?;
    Ok(DefinitionRevision {
        process_type,
        revision,
        content_hash: content_hash.trim_end().to_string(),
        deployment,
        registered_at_ms: registered_at.timestamp_millis(),
    })
}

fn read_stored(row: &mut impl ColumnReader) -> Result<StoredDefinition, StoreError> {
    let revision = read_revision(row)?;
    let definition: ProcessDefinition = row.json()?.ok_or_else(|| {
        StoreError::Database(format!(
            "the definition of {} revision {} is NULL",
            revision.process_type, revision.revision
        ))
    })?;
    Ok(StoredDefinition {
        revision,
        definition,
    })
}

/// Registers one definition in `tx`: nothing when the current revision is equal, a
/// refusal when it removes states executions wait in (unless forced), else a new
/// revision.
pub(super) async fn register_one<T: Transaction + SqlConn>(
    tx: &mut T,
    deployment: &WorkerDeployment,
    definition: &ProcessDefinition,
    content_hash: &str,
    force: bool,
) -> Result<Result<RegisteredDefinition, Vec<WaitingIn>>, StoreError> {
    let kind = T::KIND;
    let process_type = definition.process_type.as_str();
    let rows = tx.query(&latest_locked(), &[process_type.into()]).await?;
    let latest = match rows.first() {
        Some(row) => Some(read_revision(&mut T::columns(row, 0))?),
        None => None,
    };
    if let Some(latest) = &latest {
        if latest.content_hash == content_hash && &latest.deployment == deployment {
            return Ok(Ok(RegisteredDefinition {
                revision: latest.clone(),
                changed: false,
            }));
        }
        if !force {
            let waiting = waiting_in_removed_states(tx, definition).await?;
            if !waiting.is_empty() {
                return Ok(Err(waiting));
            }
        }
    }
    let revision = latest.as_ref().map_or(1, |latest| latest.revision + 1);
    let params = [
        process_type.into(),
        revision.into(),
        content_hash.into(),
        deployment.name.as_str().into(),
        deployment.version.as_str().into(),
        deployment.worker_url.as_str().into(),
        Param::Json(Some(crate::sql::json(definition))),
    ];
    if tx.execute(insert_revision(kind), &params).await? == 0 {
        return Err(StoreError::Conflict(format!(
            "process type {process_type} was registered concurrently"
        )));
    }
    let rows = tx.query(&latest_locked(), &[process_type.into()]).await?;
    let row = rows
        .first()
        .ok_or_else(|| StoreError::Database("the new revision is not readable".into()))?;
    let revision = read_revision(&mut T::columns(row, 0))?;
    let registered_by = format!("{}@{}", deployment.name, deployment.version);
    super::flow_limit_rows::record_declared(tx, definition, &registered_by).await?;
    if definition.versioning_policy == VersioningPolicy::MoveToCurrent {
        let moved =
            super::deployments::move_to_current(tx, definition, &deployment.worker_url).await?;
        tracing::info!(
            process_type,
            moved,
            "running executions moved to the current deployment"
        );
    }
    Ok(Ok(RegisteredDefinition {
        revision,
        changed: true,
    }))
}

/// The states of the type's running executions that `definition` no longer declares.
async fn waiting_in_removed_states<C: SqlConn>(
    conn: &mut C,
    definition: &ProcessDefinition,
) -> Result<Vec<WaitingIn>, StoreError> {
    let rows = conn
        .query(WAITING_BY_STATE, &[definition.process_type.as_str().into()])
        .await?;
    let mut removed = Vec::new();
    for row in &rows {
        let mut columns = C::columns(row, 0);
        let state_id = columns.text()?;
        let executions = columns.bigint()?;
        if !definition.states.iter().any(|state| state.id == state_id) {
            removed.push(WaitingIn {
                state_id,
                executions: u64::try_from(executions).unwrap_or_default(),
            });
        }
    }
    Ok(removed)
}

#[async_trait]
impl<D: Dialect> DefinitionRegistry for D
where
    D::Session: SqlConn,
{
    async fn register_definitions(
        &self,
        request: &RegisterDefinitionsRequest,
        content_hashes: &[String],
    ) -> Result<RegisterOutcome, StoreError> {
        retrying_conflicts(|| async {
            let mut tx = self.begin(Lane::Main).await?;
            let mut registered = Vec::with_capacity(request.definitions.len());
            for (definition, hash) in request.definitions.iter().zip(content_hashes) {
                let one = register_one(
                    &mut tx,
                    &request.deployment,
                    definition,
                    hash,
                    request.force,
                )
                .await?;
                match one {
                    Ok(done) => registered.push(done),
                    // Dropping the transaction rolls back the types registered before.
                    Err(waiting) => {
                        return Ok(RegisterOutcome::Incompatible {
                            process_type: definition.process_type.clone(),
                            waiting,
                        })
                    }
                }
            }
            tx.commit().await?;
            // A registration may declare running limits: this instance's next start
            // reads them.
            self.run_limits().forget();
            Ok(RegisterOutcome::Registered(registered))
        })
        .await
    }

    async fn current_definitions(&self) -> Result<Vec<StoredDefinition>, StoreError> {
        let mut session = self.session(Lane::Main).await?;
        let rows = session.query(&current_definitions_sql(), &[]).await?;
        rows.iter()
            .map(|row| read_stored(&mut D::Session::columns(row, 0)))
            .collect()
    }

    async fn definition(
        &self,
        process_type: &str,
        revision: Option<i64>,
    ) -> Result<Option<StoredDefinition>, StoreError> {
        let mut session = self.session(Lane::Main).await?;
        let select = format!(
            "SELECT {REVISION_COLUMNS}, definition FROM xdb_sys_process_definitions \
             WHERE process_type = ?"
        );
        let rows = match revision {
            Some(revision) => {
                let sql = format!("{select} AND revision = ?");
                session
                    .query(&sql, &[process_type.into(), revision.into()])
                    .await?
            }
            None => {
                let sql = format!("{select} ORDER BY revision DESC LIMIT 1");
                session.query(&sql, &[process_type.into()]).await?
            }
        };
        match rows.first() {
            Some(row) => Ok(Some(read_stored(&mut D::Session::columns(row, 0))?)),
            None => Ok(None),
        }
    }

    async fn definition_revisions(
        &self,
        process_type: &str,
    ) -> Result<Vec<DefinitionRevision>, StoreError> {
        let mut session = self.session(Lane::Main).await?;
        let sql = format!(
            "SELECT {REVISION_COLUMNS} FROM xdb_sys_process_definitions \
             WHERE process_type = ? ORDER BY revision DESC"
        );
        let rows = session.query(&sql, &[process_type.into()]).await?;
        rows.iter()
            .map(|row| read_revision(&mut D::Session::columns(row, 0)))
            .collect()
    }

    async fn table_columns(
        &self,
        schema: Option<&str>,
        table: &str,
    ) -> Result<Vec<TableColumn>, StoreError> {
        let mut session = self.session(Lane::Main).await?;
        let sql = table_columns_sql(<D::Session as SqlConn>::KIND);
        let rows = session
            .query(sql, &[Param::Text(schema), table.into()])
            .await?;
        rows.iter()
            .map(|row| {
                let mut columns = D::Session::columns(row, 0);
                Ok(TableColumn {
                    name: columns.text()?,
                    data_type: columns.text()?,
                    collation: columns.optional_text()?.zip(columns.optional_text()?),
                })
            })
            .collect()
    }

    async fn registered_worker_urls(&self) -> Result<Vec<(String, String)>, StoreError> {
        let mut session = self.session(Lane::Main).await?;
        let rows = session
            .query(
                "SELECT DISTINCT process_type, worker_url FROM xdb_sys_process_definitions",
                &[],
            )
            .await?;
        rows.iter()
            .map(|row| {
                let mut columns = D::Session::columns(row, 0);
                Ok((columns.text()?, columns.text()?))
            })
            .collect()
    }

    async fn deployments(&self) -> Result<Vec<DeploymentSummary>, StoreError> {
        super::deployments::deployments(self).await
    }

    async fn set_current_deployment(
        &self,
        deployment: &DeploymentRef,
        force: bool,
    ) -> Result<Option<RegisterOutcome>, StoreError> {
        retrying_conflicts(|| super::deployments::set_current(self, deployment, force)).await
    }

    async fn move_executions(
        &self,
        request: &ExecutionsMoveRequest,
        receipt: Option<&crate::receipts::Receipt>,
    ) -> Result<Result<i64, String>, StoreError> {
        retrying_conflicts(|| super::deployments::move_executions(self, request, receipt)).await
    }

    async fn process_type_of(&self, process_id: &str) -> Result<Option<String>, StoreError> {
        let mut session = self.session(Lane::Main).await?;
        let rows = session
            .query(
                "SELECT p.process_type FROM xdb_sys_latest_process_executions l \
                 JOIN xdb_sys_process_executions p ON p.id = l.process_execution_id \
                 WHERE l.process_id = ?",
                &[process_id.into()],
            )
            .await?;
        match rows.first() {
            Some(row) => Ok(Some(D::Session::columns(row, 0).text()?)),
            None => Ok(None),
        }
    }
}
