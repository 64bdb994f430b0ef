//! When requests wait for the definitions and the business tables' columns to be read,
//! over a registry whose reads wait for the test's go-ahead.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use async_trait::async_trait;
use tokio::sync::Semaphore;
use xdb_persistence::{
    DefinitionRegistry, RegisterOutcome, StoreError, StoredDefinition, TableColumn,
};
use xdb_protocol::{
    DefinitionRevision, DeploymentRef, DeploymentSummary, ExecutionsMoveRequest,
    RegisterDefinitionsRequest,
};

use super::*;

/// Counts its reads of the current definitions and of table columns; each waits for a
/// permit of its own kind.
struct GatedRegistry {
    reads: AtomicUsize,
    permits: Semaphore,
    column_reads: AtomicUsize,
    column_permits: Semaphore,
}

#[async_trait]
impl DefinitionRegistry for GatedRegistry {
    async fn current_definitions(&self) -> Result<Vec<StoredDefinition>, StoreError> {
        self.permits.acquire().await.expect("open").forget();
        self.reads.fetch_add(1, Ordering::SeqCst);
        Ok(Vec::new())
    }
    async fn register_definitions(
        &self,
        _: &RegisterDefinitionsRequest,
        _: &[String],
    ) -> Result<RegisterOutcome, StoreError> {
        unreachable!("not read by the cache")
    }
    async fn definition(
        &self,
        _: &str,
        _: Option<i64>,
    ) -> Result<Option<StoredDefinition>, StoreError> {
        unreachable!("not read by the cache")
    }
    async fn definition_revisions(&self, _: &str) -> Result<Vec<DefinitionRevision>, StoreError> {
        unreachable!("not read by the cache")
    }
    async fn table_columns(
        &self,
        _: Option<&str>,
        table: &str,
    ) -> Result<Vec<TableColumn>, StoreError> {
        self.column_permits.acquire().await.expect("open").forget();
        self.column_reads.fetch_add(1, Ordering::SeqCst);
        Ok(vec![TableColumn {
            name: format!("{table}_id"),
            data_type: "text".into(),
            collation: None,
        }])
    }
    async fn registered_worker_urls(&self) -> Result<Vec<(String, String)>, StoreError> {
        Ok(Vec::new())
    }
    async fn deployments(&self) -> Result<Vec<DeploymentSummary>, StoreError> {
        unreachable!("not read by the cache")
    }
    async fn set_current_deployment(
        &self,
        _: &DeploymentRef,
        _: bool,
    ) -> Result<Option<RegisterOutcome>, StoreError> {
        unreachable!("not read by the cache")
    }
    async fn move_executions(
        &self,
        _: &ExecutionsMoveRequest,
        _: Option<&xdb_persistence::receipts::Receipt>,
    ) -> Result<Result<i64, String>, StoreError> {
        unreachable!("not read by the cache")
    }
    async fn process_type_of(&self, _: &str) -> Result<Option<String>, StoreError> {
        unreachable!("not read by the cache")
    }
}

const DEADLINE: Duration = Duration::from_secs(10);

fn definitions() -> (Arc<GatedRegistry>, Definitions) {
    let registry = Arc::new(GatedRegistry {
        reads: AtomicUsize::new(0),
        permits: Semaphore::new(0),
        column_reads: AtomicUsize::new(0),
        column_permits: Semaphore::new(0),
    });
    let definitions = Definitions::new(registry.clone(), false);
    (registry, definitions)
}

/// Makes the known snapshot `age` old.
fn age(definitions: &Definitions, age: Duration) {
    let mut current = definitions.current.write().unwrap();
    current.snapshot = Arc::new(Snapshot {
        loaded_at: Some(Instant::now() - age),
        ..Snapshot::default()
    });
}

fn loaded_at(definitions: &Definitions) -> Option<Instant> {
    definitions.read().0.loaded_at
}

/// Waits until no reload is under way.
async fn reloads_done(definitions: &Definitions) {
    let _done = tokio::time::timeout(DEADLINE, definitions.reload.lock())
        .await
        .expect("the reload ends");
}

async fn snapshot_now(definitions: &Definitions) -> Arc<Snapshot> {
    tokio::time::timeout(DEADLINE, definitions.snapshot())
        .await
        .expect("answered without waiting for a read")
        .unwrap()
}

#[tokio::test]
async fn stale_definitions_answer_while_they_are_read_again() {
    let (registry, definitions) = definitions();
    registry.permits.add_permits(1);
    snapshot_now(&definitions).await;
    assert_eq!(
        registry.reads.load(Ordering::SeqCst),
        1,
        "none known: read first"
    );

    age(&definitions, Duration::from_secs(2));
    let stale = loaded_at(&definitions);
    // No permit: a request that waited for the read would not be answered.
    let answered = snapshot_now(&definitions).await;
    assert_eq!(answered.loaded_at, stale, "the known ones, without waiting");
    registry.permits.add_permits(1);
    reloads_done(&definitions).await;
    assert_eq!(
        registry.reads.load(Ordering::SeqCst),
        2,
        "read in the background"
    );
    assert!(loaded_at(&definitions) > stale, "and kept");

    age(&definitions, MAX_STALE + Duration::from_secs(1));
    registry.permits.add_permits(1);
    let answered = snapshot_now(&definitions).await;
    assert_eq!(
        registry.reads.load(Ordering::SeqCst),
        3,
        "too old: read first"
    );
    assert!(answered.fresh());
}

#[tokio::test]
async fn a_read_begun_before_a_registration_does_not_hide_it() {
    let (registry, definitions) = definitions();
    age(&definitions, Duration::from_secs(2));
    snapshot_now(&definitions).await;
    // The background read is under way (it waits for its permit); this instance
    // registers meanwhile and forgets what it knew.
    definitions.invalidate();
    registry.permits.add_permits(1);
    reloads_done(&definitions).await;
    assert_eq!(registry.reads.load(Ordering::SeqCst), 1);
    assert_eq!(loaded_at(&definitions), None, "still forgotten: read anew");
    registry.permits.add_permits(1);
    assert!(snapshot_now(&definitions).await.fresh());
}

async fn columns_now(definitions: &Definitions) -> Arc<Vec<TableColumn>> {
    tokio::time::timeout(DEADLINE, definitions.columns_of("orders"))
        .await
        .expect("answered without waiting for a read")
        .unwrap()
}

#[tokio::test]
async fn stale_columns_answer_while_they_are_read_again() {
    let (registry, definitions) = definitions();
    registry.column_permits.add_permits(1);
    let first = columns_now(&definitions).await;
    assert_eq!(first[0].name, "orders_id");
    assert_eq!(
        registry.column_reads.load(Ordering::SeqCst),
        1,
        "none known: read first"
    );

    definitions.age_columns(tables::COLUMNS_TTL + Duration::from_secs(1));
    // No permit: a query that waited for the read would not be answered.
    let answered = columns_now(&definitions).await;
    assert!(
        Arc::ptr_eq(&answered, &first),
        "the known ones, without waiting"
    );
    assert!(
        definitions.rereading_columns(),
        "read again in the background"
    );
    let answered = columns_now(&definitions).await;
    assert!(
        Arc::ptr_eq(&answered, &first),
        "still, with one read under way"
    );
    registry.column_permits.add_permits(1);
    let deadline = Instant::now() + DEADLINE;
    while definitions.rereading_columns() {
        assert!(Instant::now() < deadline, "the background read ends");
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    assert_eq!(
        registry.column_reads.load(Ordering::SeqCst),
        2,
        "one read for both"
    );
    let fresh = columns_now(&definitions).await;
    assert!(
        !Arc::ptr_eq(&fresh, &first),
        "the columns read again are kept"
    );

    definitions.age_columns(tables::COLUMNS_MAX_STALE + Duration::from_secs(1));
    registry.column_permits.add_permits(1);
    let answered = columns_now(&definitions).await;
    assert_eq!(
        registry.column_reads.load(Ordering::SeqCst),
        3,
        "too old: read first"
    );
    assert!(!Arc::ptr_eq(&answered, &fresh));
}
