//! XDB persistence: every transactional operation of the services behind one trait.
//!
//! Each operation loads and locks the rows it needs, asks `xdb-engine` for a plan and
//! applies the plan in the same transaction, together with the user's business-row
//! writes. This crate owns SQL; it must never decide process semantics itself.
//!
//! Two dialects implement [`ProcessStore`]: [`postgres::PostgresStore`] and
//! [`mysql::MySqlStore`] (MySQL 8 / MariaDB); [`connect`] picks one by URL scheme.

mod error;
pub mod mysql;
mod notifications;
pub mod postgres;
mod store;
mod task_claim;

use std::sync::Arc;

pub use error::StoreError;
pub use notifications::{Notification, Notifications};
pub use store::*;
pub use task_claim::TaskClaim;

/// Connects a store of at most `pool_size` connections, choosing the dialect by the URL
/// scheme: `postgres://`/`postgresql://` (or a libpq `key=value` string) → PostgreSQL,
/// `mysql://`/`mariadb://` → MySQL/MariaDB.
pub async fn connect(
    database_url: &str,
    pool_size: usize,
) -> Result<Arc<dyn ProcessStore>, StoreError> {
    let url = database_url.trim();
    let scheme = url
        .split_once("://")
        .map(|(scheme, _)| scheme.to_ascii_lowercase());
    match scheme.as_deref() {
        Some("postgres" | "postgresql") => Ok(Arc::new(
            postgres::PostgresStore::connect(url, pool_size).await?,
        )),
        None if url.contains('=') => Ok(Arc::new(
            postgres::PostgresStore::connect(url, pool_size).await?,
        )),
        Some("mysql" | "mariadb") => {
            Ok(Arc::new(mysql::MySqlStore::connect(url, pool_size).await?))
        }
        // Never echo the URL itself: it may carry a password.
        Some(other) => Err(StoreError::Database(format!(
            "invalid database URL: unknown scheme `{other}://`; expected postgres:// or mysql://"
        ))),
        None => Err(StoreError::Database(
            "invalid database URL: expected e.g. postgres://user@host:5432/db or \
             mysql://user@host:3306/db"
                .into(),
        )),
    }
}
