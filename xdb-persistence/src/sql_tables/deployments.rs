//! Worker deployments, as their registrations in `xdb_sys_process_definitions` name them:
//! which is current for each type, the executions running on each (by worker URL), and
//! the operator's moves between them.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use xdb_protocol::{
    DeploymentRef, DeploymentSummary, ExecutionsMoveRequest, ProcessDefinition, WorkerDeployment,
};

use super::definitions::register_one;
use super::in_list::in_list;
use crate::columns::ColumnReader;
use crate::sql::{Param, SqlConn};
use crate::tables::{Dialect, Lane, Transaction};
use crate::{RegisterOutcome, StoreError};

/// Each (type, deployment) pair ever registered, with its last revision number.
const REGISTERED: &str = "SELECT process_type, deployment_name, deployment_version, \
       worker_url, MAX(revision) FROM xdb_sys_process_definitions \
     GROUP BY process_type, deployment_name, deployment_version, worker_url \
     ORDER BY deployment_name, MAX(revision) DESC";

/// Running executions per worker URL.
const RUNNING_BY_URL: &str = "SELECT worker_url, COUNT(*) FROM xdb_sys_process_executions \
     WHERE status = 'RUNNING' GROUP BY worker_url";

/// The last definition a deployment registered of each type. Parameters: name, version.
const LAST_OF_DEPLOYMENT: &str = "SELECT d.process_type, d.worker_url, d.content_hash, \
       d.definition FROM xdb_sys_process_definitions d \
     WHERE d.deployment_name = ? AND d.deployment_version = ? \
       AND d.revision = (SELECT MAX(m.revision) FROM xdb_sys_process_definitions m \
                         WHERE m.process_type = d.process_type \
                           AND m.deployment_name = d.deployment_name \
                           AND m.deployment_version = d.deployment_version) \
     ORDER BY d.process_type";

/// One registered (type, deployment) pair.
pub(crate) struct Registered {
    pub process_type: String,
    pub deployment: WorkerDeployment,
    pub last_revision: i64,
}

/// The deployments as operators see them, from every registered pair, the current
/// revision of each type (`current`: type → last revision) and the running executions
/// per worker URL. Pure, for its tests.
pub(crate) fn summarize(
    registered: &[Registered],
    current: &HashMap<String, i64>,
    running: &HashMap<String, i64>,
) -> Vec<DeploymentSummary> {
    /// One deployment as its registrations are read.
    struct Gathered {
        deployment: WorkerDeployment,
        newest: i64,
        types: BTreeSet<String>,
        current_for: BTreeSet<String>,
    }
    let mut by_deployment: BTreeMap<(String, String), Gathered> = BTreeMap::new();
    for pair in registered {
        let key = (
            pair.deployment.name.clone(),
            pair.deployment.version.clone(),
        );
        let entry = by_deployment.entry(key).or_insert_with(|| Gathered {
            deployment: pair.deployment.clone(),
            newest: pair.last_revision,
            types: BTreeSet::new(),
            current_for: BTreeSet::new(),
        });
        // The URL of the deployment's newest registration.
        if pair.last_revision >= entry.newest {
            entry.deployment = pair.deployment.clone();
            entry.newest = pair.last_revision;
        }
        entry.types.insert(pair.process_type.clone());
        if current.get(&pair.process_type) == Some(&pair.last_revision) {
            entry.current_for.insert(pair.process_type.clone());
        }
    }
    let mut summaries: Vec<(i64, DeploymentSummary)> = by_deployment
        .into_values()
        .map(|gathered| {
            let deployment = gathered.deployment;
            let running_executions = running.get(&deployment.worker_url).copied().unwrap_or(0);
            let drained = gathered.current_for.is_empty() && running_executions == 0;
            let summary = DeploymentSummary {
                deployment,
                process_types: gathered.types.into_iter().collect(),
                current_for: gathered.current_for.into_iter().collect(),
                running_executions,
                drained,
            };
            (gathered.newest, summary)
        })
        .collect();
    summaries.sort_by(|(a_newest, a), (b_newest, b)| {
        a.deployment
            .name
            .cmp(&b.deployment.name)
            .then(b_newest.cmp(a_newest))
    });
    summaries.into_iter().map(|(_, summary)| summary).collect()
}

pub(crate) async fn deployments<D: Dialect>(store: &D) -> Result<Vec<DeploymentSummary>, StoreError>
where
    D::Session: SqlConn,
{
    let mut session = store.session(Lane::Main).await?;
    let rows = session.query(REGISTERED, &[]).await?;
    let mut registered = Vec::with_capacity(rows.len());
    let mut current: HashMap<String, i64> = HashMap::new();
    for row in &rows {
        let mut columns = D::Session::columns(row, 0);
        let process_type = columns.text()?;
        let deployment = WorkerDeployment {
            name: columns.text()?,
            version: columns.text()?,
            worker_url: columns.text()?,
        };
        let last_revision = columns.bigint()?;
        let newest = current.entry(process_type.clone()).or_insert(last_revision);
        *newest = (*newest).max(last_revision);
        registered.push(Registered {
            process_type,
            deployment,
            last_revision,
        });
    }
    let rows = session.query(RUNNING_BY_URL, &[]).await?;
    let mut running = HashMap::new();
    for row in &rows {
        let mut columns = D::Session::columns(row, 0);
        running.insert(columns.text()?, columns.bigint()?);
    }
    Ok(summarize(&registered, &current, &running))
}

/// Makes `deployment` current for every type it registered; `None` when it registered
/// nothing.
pub(crate) async fn set_current<D: Dialect>(
    store: &D,
    deployment: &DeploymentRef,
    force: bool,
) -> Result<Option<RegisterOutcome>, StoreError> {
    let mut tx = store.begin(Lane::Main).await?;
    let params = [
        deployment.name.as_str().into(),
        deployment.version.as_str().into(),
    ];
    let rows = tx.query(LAST_OF_DEPLOYMENT, &params).await?;
    let mut last = Vec::with_capacity(rows.len());
    for row in &rows {
        let mut columns = D::Tx::columns(row, 0);
        let process_type: String = columns.text()?;
        let worker_url = columns.text()?;
        let hash = columns.text()?.trim_end().to_string();
        let definition: ProcessDefinition = columns.json()?.ok_or_else(|| {
            StoreError::Database(format!("the definition of {process_type} is NULL"))
        })?;
        last.push((worker_url, hash, definition));
    }
    if last.is_empty() {
        return Ok(None);
    }
    let mut registered = Vec::with_capacity(last.len());
    for (worker_url, hash, definition) in &last {
        let of = WorkerDeployment {
            name: deployment.name.clone(),
            version: deployment.version.clone(),
            worker_url: worker_url.clone(),
        };
        match register_one(&mut tx, &of, definition, hash, force).await? {
            Ok(done) => registered.push(done),
            Err(waiting) => {
                return Ok(Some(RegisterOutcome::Incompatible {
                    process_type: definition.process_type.clone(),
                    waiting,
                }))
            }
        }
    }
    tx.commit().await?;
    Ok(Some(RegisterOutcome::Registered(registered)))
}

/// The worker URL `deployment` last registered `process_type` with.
async fn url_of<C: SqlConn>(
    conn: &mut C,
    process_type: &str,
    deployment: &DeploymentRef,
) -> Result<Option<String>, StoreError> {
    let rows = conn
        .query(
            "SELECT worker_url FROM xdb_sys_process_definitions \
             WHERE process_type = ? AND deployment_name = ? AND deployment_version = ? \
             ORDER BY revision DESC LIMIT 1",
            &[
                process_type.into(),
                deployment.name.as_str().into(),
                deployment.version.as_str().into(),
            ],
        )
        .await?;
    match rows.first() {
        Some(row) => Ok(Some(C::columns(row, 0).text()?)),
        None => Ok(None),
    }
}

/// Moves running executions as `request` selects them; `Err` names a deployment that
/// did not register the type.
pub(crate) async fn move_executions<D: Dialect>(
    store: &D,
    request: &ExecutionsMoveRequest,
    receipt: Option<&crate::receipts::Receipt>,
) -> Result<Result<i64, String>, StoreError> {
    let mut tx = store.begin(Lane::Main).await?;
    let process_type = request.process_type.as_str();
    let unknown = |d: &DeploymentRef| {
        format!(
            "deployment {} {} did not register process type '{process_type}'",
            d.name, d.version
        )
    };
    let Some(to_url) = url_of(&mut tx, process_type, &request.to).await? else {
        return Ok(Err(unknown(&request.to)));
    };
    let from_url = match &request.from {
        Some(from) => match url_of(&mut tx, process_type, from).await? {
            Some(url) => Some(url),
            None => return Ok(Err(unknown(from))),
        },
        None => None,
    };
    let mut sql = String::from(
        "UPDATE xdb_sys_process_executions SET worker_url = ? \
         WHERE process_type = ? AND status = 'RUNNING' AND worker_url <> ?",
    );
    let mut params: Vec<Param<'_>> = vec![
        to_url.as_str().into(),
        process_type.into(),
        to_url.as_str().into(),
    ];
    if let Some(from_url) = &from_url {
        sql.push_str(" AND worker_url = ?");
        params.push(from_url.as_str().into());
    }
    if !request.process_ids.is_empty() {
        let mut ids: Vec<Param<'_>> = request
            .process_ids
            .iter()
            .map(|id| id.as_str().into())
            .collect();
        let list = in_list(&mut ids, request.process_ids.len());
        sql.push_str(&format!(" AND process_id IN ({list})"));
        params.extend(ids);
    }
    let moved = tx.execute(&sql, &params).await?;
    if moved > 0 {
        let answer = xdb_protocol::ExecutionsMoveResponse {
            moved: i64::try_from(moved).unwrap_or(i64::MAX),
        };
        let now = store.database_clock().now();
        crate::operations::record_receipt(&mut tx, receipt, &answer, now).await?;
    }
    tx.commit().await?;
    Ok(Ok(i64::try_from(moved).unwrap_or(i64::MAX)))
}

/// Moves every running execution of `definition`'s type to `worker_url`, in the
/// registration's transaction, when its policy says so.
pub(crate) async fn move_to_current<T: Transaction + SqlConn>(
    tx: &mut T,
    definition: &ProcessDefinition,
    worker_url: &str,
) -> Result<u64, StoreError> {
    tx.execute(
        "UPDATE xdb_sys_process_executions SET worker_url = ? \
         WHERE process_type = ? AND status = 'RUNNING' AND worker_url <> ?",
        &[
            worker_url.into(),
            definition.process_type.as_str().into(),
            worker_url.into(),
        ],
    )
    .await
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pair(process_type: &str, version: &str, revision: i64) -> Registered {
        Registered {
            process_type: process_type.into(),
            deployment: WorkerDeployment {
                name: "orders".into(),
                version: version.into(),
                worker_url: format!("http://orders-{version}"),
            },
            last_revision: revision,
        }
    }

    #[test]
    fn a_deployment_is_current_for_the_types_whose_last_revision_it_wrote() {
        let registered = [
            pair("Order", "v1", 1),
            pair("Refund", "v1", 2),
            pair("Order", "v2", 3),
        ];
        let current = HashMap::from([("Order".to_string(), 3), ("Refund".to_string(), 2)]);
        let running = HashMap::from([("http://orders-v1".to_string(), 4)]);
        let summaries = summarize(&registered, &current, &running);
        let v2 = &summaries[0];
        assert_eq!(v2.deployment.version, "v2", "newest first");
        assert_eq!(v2.current_for, ["Order"]);
        assert_eq!((v2.running_executions, v2.drained), (0, false));
        let v1 = &summaries[1];
        assert_eq!(v1.process_types, ["Order", "Refund"]);
        assert_eq!(v1.current_for, ["Refund"]);
        assert_eq!(v1.running_executions, 4);
    }

    #[test]
    fn a_deployment_current_for_nothing_and_running_nothing_is_drained() {
        let registered = [pair("Order", "v1", 1), pair("Order", "v2", 2)];
        let current = HashMap::from([("Order".to_string(), 2)]);
        let summaries = summarize(&registered, &current, &HashMap::new());
        assert!(!summaries[0].drained);
        assert!(summaries[1].drained);
    }
}
