//! Registered process definitions as this instance knows them: read from the database at
//! most once a second, in the background, so checking a request costs no query and
//! another instance's registration applies here within about a second.

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

/// How old the known definitions may be before they are read again.
const MAX_AGE: Duration = Duration::from_secs(1);

/// How old they may be and still answer a request while they are read again.
const MAX_STALE: Duration = Duration::from_secs(30);

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
        self.age().is_some_and(|age| age < MAX_AGE)
    }

    /// How long ago these were read; `None` when they never were (or were forgotten).
    fn age(&self) -> Option<Duration> {
        self.loaded_at.map(|at| at.elapsed())
    }
}

/// The definitions cache of one API instance.
pub struct Definitions {
    registry: Arc<dyn DefinitionRegistry>,
    /// MySQL compares column names without case; PostgreSQL (quoted) with.
    column_names_ignore_case: bool,
    current: Arc<RwLock<Current>>,
    /// One reload at a time; the others wait for it and take its result.
    reload: Arc<tokio::sync::Mutex<()>>,
    /// The business tables' columns that queries compared lately.
    columns: tables::ColumnCache,
}

/// The known snapshot, and how many times it was forgotten: a reload begun before a
/// registration here must not replace the forgetting with what it read.
#[derive(Default)]
struct Current {
    snapshot: Arc<Snapshot>,
    forgotten: u64,
}

impl Definitions {
    pub fn new(registry: Arc<dyn DefinitionRegistry>, column_names_ignore_case: bool) -> Self {
        Self {
            registry,
            column_names_ignore_case,
            current: Arc::default(),
            reload: Arc::default(),
            columns: tables::ColumnCache::default(),
        }
    }

    pub fn registry(&self) -> &Arc<dyn DefinitionRegistry> {
        &self.registry
    }

    pub fn column_names_ignore_case(&self) -> bool {
        self.column_names_ignore_case
    }

    /// The definitions. Older than a second, they are read again in the background and
    /// the request goes on with them, so no request waits for that read once a second;
    /// a request waits only when none are known or they are older than [`MAX_STALE`]
    /// (the reads keep failing).
    pub(crate) async fn snapshot(&self) -> Result<Arc<Snapshot>, StoreError> {
        let (current, _) = self.read();
        match current.age() {
            Some(age) if age < MAX_AGE => return Ok(current),
            Some(age) if age < MAX_STALE => {
                self.reload_in_background();
                return Ok(current);
            }
            _ => {}
        }
        let _reloading = self.reload.lock().await;
        let (current, forgotten) = self.read();
        if current.fresh() {
            return Ok(current);
        }
        let next = Arc::new(load(self.registry.as_ref(), &current).await?);
        store(&self.current, next.clone(), forgotten);
        Ok(next)
    }

    /// Reads the definitions again in a task of its own, unless a reload is under way.
    fn reload_in_background(&self) {
        let Ok(reloading) = self.reload.clone().try_lock_owned() else {
            return;
        };
        let (known, forgotten) = self.read();
        if known.fresh() {
            return;
        }
        let (registry, current) = (self.registry.clone(), self.current.clone());
        tokio::spawn(async move {
            let _reloading = reloading;
            match load(registry.as_ref(), &known).await {
                Ok(next) => store(&current, Arc::new(next), forgotten),
                // The known ones stay in use; a request past MAX_STALE reads them itself.
                Err(error) => tracing::warn!(%error, "reading the registered definitions"),
            }
        });
    }

    /// Forgets the known definitions, so the next request reads them (after this
    /// instance registered some).
    pub(crate) fn invalidate(&self) {
        let mut current = self.current.write().expect("the definitions lock");
        current.snapshot = Arc::default();
        current.forgotten += 1;
    }

    fn read(&self) -> (Arc<Snapshot>, u64) {
        let current = self.current.read().expect("the definitions lock");
        (current.snapshot.clone(), current.forgotten)
    }
}

/// Keeps `next`, read after the `forgotten`th forgetting, unless it was forgotten since.
fn store(current: &RwLock<Current>, next: Arc<Snapshot>, forgotten: u64) {
    let mut current = current.write().expect("the definitions lock");
    if current.forgotten == forgotten {
        current.snapshot = next;
    }
}

/// The stored definitions, compiled; the revisions `known` has compiled are reused.
async fn load(registry: &dyn DefinitionRegistry, known: &Snapshot) -> Result<Snapshot, StoreError> {
    let stored = registry.current_definitions().await?;
    let mut next = Snapshot {
        loaded_at: Some(Instant::now()),
        ..Snapshot::default()
    };
    for stored in stored {
        let process_type = stored.revision.process_type.clone();
        // Unchanged revisions keep their compiled schemas.
        let compiled = match known.by_type.get(&process_type) {
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
        for (process_type, url) in registry.registered_worker_urls().await? {
            let url = url.trim_end_matches('/').to_string();
            next.registered_at.insert((process_type, url));
        }
    }
    Ok(next)
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

#[cfg(test)]
#[path = "reload_tests.rs"]
mod reload_tests;
