//! Registered process definitions as this instance knows them: read from the database at
//! most once a second, so checking a request costs no query and another instance's
//! registration applies here within a second.

mod checks;
mod tables;

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, RwLock};
use std::time::{Duration, Instant};

use xdb_persistence::{DefinitionRegistry, StoreError};

pub(crate) use checks::{
    check_columns, check_definition, check_publish, content_hash, resolve_reset, resolve_rpc,
    resolve_start, Compiled,
};

/// How old the known definitions may be before a request reads them again.
const MAX_AGE: Duration = Duration::from_secs(1);

/// The current definitions at one moment.
#[derive(Default)]
pub(crate) struct Snapshot {
    loaded_at: Option<Instant>,
    by_type: HashMap<String, Arc<Compiled>>,
    /// Worker URLs of the registering deployments, without a trailing slash.
    worker_urls: HashSet<String>,
    /// (type, worker URL without a trailing slash) of every revision ever registered.
    registered_at: HashSet<(String, String)>,
}

impl Snapshot {
    /// The current definition of `process_type`, if it is registered.
    pub fn get(&self, process_type: &str) -> Option<&Arc<Compiled>> {
        self.by_type.get(process_type)
    }

    pub fn is_empty(&self) -> bool {
        self.by_type.is_empty()
    }

    /// The types registered by the deployment at `worker_url`, if one registered there.
    pub fn types_at(&self, worker_url: &str) -> Option<Vec<&str>> {
        let url = worker_url.trim_end_matches('/');
        if !self.worker_urls.contains(url) {
            return None;
        }
        let mut types: Vec<&str> = self
            .by_type
            .values()
            .filter(|c| {
                c.stored
                    .revision
                    .deployment
                    .worker_url
                    .trim_end_matches('/')
                    == url
            })
            .map(|c| c.definition().process_type.as_str())
            .collect();
        types.sort_unstable();
        Some(types)
    }

    /// Whether `worker_url` is a deployment `process_type` was registered by but that is
    /// no longer current for it (one being drained).
    pub fn is_former_deployment(&self, process_type: &str, worker_url: &str) -> bool {
        let url = worker_url.trim_end_matches('/');
        let current = self.by_type.get(process_type).is_some_and(|c| {
            c.stored
                .revision
                .deployment
                .worker_url
                .trim_end_matches('/')
                == url
        });
        !current
            && self
                .registered_at
                .contains(&(process_type.to_string(), url.to_string()))
    }

    fn fresh(&self) -> bool {
        self.loaded_at.is_some_and(|at| at.elapsed() < MAX_AGE)
    }
}

/// The definitions cache of one API instance.
pub struct Definitions {
    registry: Arc<dyn DefinitionRegistry>,
    /// MySQL compares column names without case; PostgreSQL (quoted) with.
    column_names_ignore_case: bool,
    current: RwLock<Arc<Snapshot>>,
    /// One reload at a time; the others wait for it and take its result.
    reload: tokio::sync::Mutex<()>,
    /// The business tables' columns that queries compared lately.
    columns: tables::ColumnCache,
}

impl Definitions {
    pub fn new(registry: Arc<dyn DefinitionRegistry>, column_names_ignore_case: bool) -> Self {
        Self {
            registry,
            column_names_ignore_case,
            current: RwLock::default(),
            reload: tokio::sync::Mutex::new(()),
            columns: tables::ColumnCache::default(),
        }
    }

    pub fn registry(&self) -> &Arc<dyn DefinitionRegistry> {
        &self.registry
    }

    pub fn column_names_ignore_case(&self) -> bool {
        self.column_names_ignore_case
    }

    /// The definitions, read again when older than a second.
    pub(crate) async fn snapshot(&self) -> Result<Arc<Snapshot>, StoreError> {
        let current = self.read();
        if current.fresh() {
            return Ok(current);
        }
        let _reloading = self.reload.lock().await;
        let current = self.read();
        if current.fresh() {
            return Ok(current);
        }
        let stored = self.registry.current_definitions().await?;
        let mut next = Snapshot {
            loaded_at: Some(Instant::now()),
            ..Snapshot::default()
        };
        for stored in stored {
            let process_type = stored.revision.process_type.clone();
            // Unchanged revisions keep their compiled schemas.
            let compiled = match current.by_type.get(&process_type) {
                Some(known) if known.stored.revision == stored.revision => known.clone(),
                _ => match Compiled::new(stored) {
                    Ok(compiled) => Arc::new(compiled),
                    Err(error) => {
                        // Checked at registration; only a row edited by hand gets here.
                        tracing::error!(%process_type, %error, "a registered definition does not compile; its checks are off");
                        continue;
                    }
                },
            };
            next.worker_urls.insert(
                compiled
                    .stored
                    .revision
                    .deployment
                    .worker_url
                    .trim_end_matches('/')
                    .to_string(),
            );
            next.by_type.insert(process_type, compiled);
        }
        if !next.by_type.is_empty() {
            for (process_type, url) in self.registry.registered_worker_urls().await? {
                let url = url.trim_end_matches('/').to_string();
                next.registered_at.insert((process_type, url));
            }
        }
        let next = Arc::new(next);
        *self.current.write().expect("the definitions lock") = next.clone();
        Ok(next)
    }

    /// Forgets the known definitions, so the next request reads them (after this
    /// instance registered some).
    pub(crate) fn invalidate(&self) {
        *self.current.write().expect("the definitions lock") = Arc::default();
    }

    fn read(&self) -> Arc<Snapshot> {
        self.current.read().expect("the definitions lock").clone()
    }
}

/// The definition of the type `process_id`'s latest execution runs, when any type is
/// registered at all (otherwise nothing is read).
pub(crate) async fn definition_of_process(
    definitions: &Definitions,
    process_id: &str,
) -> Result<Option<Arc<Compiled>>, StoreError> {
    let snapshot = definitions.snapshot().await?;
    if snapshot.is_empty() {
        return Ok(None);
    }
    let Some(process_type) = definitions.registry.process_type_of(process_id).await? else {
        return Ok(None);
    };
    Ok(snapshot.get(&process_type).cloned())
}
