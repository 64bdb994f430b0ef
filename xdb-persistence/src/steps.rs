//! Statements sent together: writes of one transaction whose outcomes no later
//! statement of the group reads, each with what its caller requires of it (a number of
//! rows matched, or the ids of the rows it inserted). A dialect may send the group in
//! one round trip ([`crate::sql::SqlConn::run_in_order`]); [`run_each`] sends them one
//! after the other.

use crate::sql::{Param, SqlConn};
use crate::StoreError;

/// One statement of a group.
#[derive(Debug)]
pub(crate) struct Step<'a> {
    pub sql: String,
    pub params: Vec<Param<'a>>,
    pub expect: Expect,
}

/// What a step's caller requires of it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Expect {
    /// Nothing: whatever it matched.
    Anything,
    /// Exactly this many rows matched; else the group fails as [`StoreError::Stale`]
    /// with this message, and the transaction must be rolled back.
    Rows(u64, &'static str),
    /// An `INSERT` of this many rows into a table numbered by its `id` column: the ids
    /// [`SqlConn::insert_numbered`] tells.
    Ids(usize),
}

impl<'a> Step<'a> {
    /// `sql` with `params`, whatever it matches.
    pub fn new(sql: String, params: Vec<Param<'a>>) -> Self {
        Self::expecting(sql, params, Expect::Anything)
    }

    /// `sql` with `params`, required to do what `expect` says.
    pub fn expecting(sql: String, params: Vec<Param<'a>>, expect: Expect) -> Self {
        Step {
            sql,
            params,
            expect,
        }
    }
}

/// Runs `steps` in order, a round trip each; the ids of each [`Expect::Ids`] step, in
/// order.
pub(crate) async fn run_each<C: SqlConn>(
    conn: &mut C,
    steps: &[Step<'_>],
) -> Result<Vec<Vec<i64>>, StoreError> {
    let mut told = Vec::new();
    for step in steps {
        match step.expect {
            Expect::Anything => {
                conn.execute(&step.sql, &step.params).await?;
            }
            Expect::Rows(rows, stale) => {
                if conn.execute(&step.sql, &step.params).await? != rows {
                    return Err(StoreError::Stale(stale.into()));
                }
            }
            Expect::Ids(rows) => {
                told.push(conn.insert_numbered(&step.sql, &step.params, rows).await?);
            }
        }
    }
    Ok(told)
}
