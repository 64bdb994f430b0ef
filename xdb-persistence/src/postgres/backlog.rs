//! The queue-backlog gauge's count.

use super::PostgresStore;
use crate::StoreError;

pub(crate) async fn count_backlog(store: &PostgresStore, cap: i64) -> Result<i64, StoreError> {
    let client = store.pool().get().await?;
    // `now()`, not `clock_timestamp()`: only a stable bound stops the index scan at the
    // tasks due now instead of walking every waiting timer.
    let statement = client
        .prepare_cached(
            "SELECT COUNT(*) FROM (SELECT 1 FROM xdb_sys_tasks \
               WHERE fire_at <= now() \
                 AND (lease_expires_at IS NULL OR lease_expires_at < now()) \
               LIMIT $1) due",
        )
        .await?;
    Ok(client.query_one(&statement, &[&cap]).await?.get(0))
}
