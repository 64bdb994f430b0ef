//! The database queue on MySQL/MariaDB: the connections its upkeep takes. Its claims and
//! the release of dead instances' leases are the generic forms of `sql_tables::leases`;
//! the rest is written once in `sql_tables::task_queue`.

use mysql_async::TxOpts;

use super::tables::MySqlRows;
use super::MySqlStore;
use crate::sql_tables::task_queue::TaskQueue;
use crate::task_claim::ExpiredLeaseLook;
use crate::StoreError;

/// A transaction of the store's, run through [`crate::sql::SqlConn`].
type Tx = MySqlRows<mysql_async::Transaction<'static>>;

/// The main pool without its wait bound, as the queue's upkeep always took it. No
/// LISTEN/NOTIFY: `listen` keeps the trait's `None`, consumers poll (and are woken by the
/// services' own notifications).
impl TaskQueue for MySqlStore {
    type Locking = Tx;

    async fn upkeep(&self) -> Result<Self::Session, StoreError> {
        Ok(MySqlRows {
            conn: self.pool().get_conn().await?,
            store: self.clone(),
        })
    }

    async fn upkeep_locking(&self) -> Result<Tx, StoreError> {
        Ok(MySqlRows {
            conn: self.pool().start_transaction(TxOpts::default()).await?,
            store: self.clone(),
        })
    }

    async fn unlock(locking: Tx) -> Result<(), StoreError> {
        Ok(locking.conn.commit().await?)
    }

    fn expired_lease_look(&self) -> &ExpiredLeaseLook {
        MySqlStore::expired_lease_look(self)
    }

    fn fair_turns(&self) -> &crate::fair_turns::FairTurns {
        &self.fair_turns
    }
}
