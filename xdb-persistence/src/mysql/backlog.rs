//! The queue-backlog gauge's count.

use mysql_async::prelude::Queryable;

use super::MySqlStore;
use crate::StoreError;

pub(crate) async fn count_backlog(store: &MySqlStore, cap: i64) -> Result<i64, StoreError> {
    let mut conn = store.pool().get_conn().await?;
    let count: Option<i64> = conn
        .exec_first(
            "SELECT COUNT(*) FROM (SELECT 1 FROM xdb_sys_tasks \
               WHERE fire_at <= UTC_TIMESTAMP(6) \
                 AND (lease_expires_at IS NULL OR lease_expires_at < UTC_TIMESTAMP(6)) \
               LIMIT ?) due",
            (cap,),
        )
        .await?;
    Ok(count.unwrap_or(0))
}
