//! A transaction's writes sent as one statement, answered in one round trip.
//!
//! Each write becomes a data-modifying CTE of one statement: the server parses, plans,
//! snapshots and answers once instead of once per write, which is most of what a small
//! write costs it. Every CTE sees the same snapshot, so the writes of one pipeline must
//! not touch a row another of them changes (`apply_plan` keeps them apart), and their
//! order is the server's choice, unless a write waits for the first one (see
//! [`Pipeline::first_locks`]). A COMMIT can go out right behind the statement, in its
//! round trip. Writes are named `w0`, `w1`, … in the statement, in push order.
//!
//! A write answering [`Answer::Exactly`] makes the statement fail, writing nothing,
//! when it returns another number of rows: a division by zero (read as
//! [`StoreError::Stale`], see `error`),
//! so that a statement outside a transaction block cannot commit short of a row.

use std::borrow::Cow;
use std::fmt::Write;

use deadpool_postgres::GenericClient;
use tokio_postgres::types::ToSql;
use tokio_postgres::Row;

use crate::StoreError;

/// A parameter owned by the pipeline until its statement is sent.
pub(crate) type Param = Box<dyn ToSql + Sync + Send>;

/// Boxes a parameter value.
pub(crate) fn param<T: ToSql + Sync + Send + 'static>(value: T) -> Param {
    Box::new(value)
}

/// What a write's answer is needed for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Answer {
    /// Nothing: it only writes.
    Nothing,
    /// Counted in the statement (its `RETURNING`, or a `SELECT`'s rows: a `SELECT`
    /// must be, or the server would not run it).
    Count,
    /// Its count and its first row (one write per pipeline at most).
    Row,
    /// Exactly this many rows, or the statement fails.
    Exactly(i64),
}

/// What writes to existing rows add to their `WHERE` when the first write locks
/// (see [`Pipeline::first_locks`]).
const AFTER_FIRST: &str = " AND EXISTS (SELECT FROM w0)";

struct Queued {
    sql: Cow<'static, str>,
    params: Vec<Param>,
    answer: Answer,
}

/// Writes to send in one go.
#[derive(Default)]
pub(crate) struct Pipeline {
    writes: Vec<Queued>,
    first_locks: bool,
}

/// What the writes of a [`Pipeline`] answered that is read back: the row of the write
/// answering [`Answer::Row`] (the counts of the others are the statement's own
/// business: [`Answer::Exactly`] is asserted in it).
#[derive(Debug)]
pub(crate) struct Answers {
    row: Option<(Row, usize)>,
}

impl Answers {
    /// The first row of the write answering [`Answer::Row`], with the column its own
    /// columns start at; `None` when it returned no row.
    pub fn row(&self) -> Option<(&Row, usize)> {
        self.row.as_ref().map(|(row, at)| (row, *at))
    }
}

impl Pipeline {
    /// A pipeline whose first write (pushed next) locks rows that every later write to
    /// an existing row must wait for: they add [`Pipeline::after_first`] to their
    /// `WHERE`, so the server runs the first before it locks any of theirs, and they
    /// change nothing when it found no row.
    pub fn first_locks() -> Self {
        Self {
            writes: Vec::new(),
            first_locks: true,
        }
    }

    /// Whether no write was pushed.
    pub fn is_empty(&self) -> bool {
        self.writes.is_empty()
    }

    /// The condition a write to existing rows adds to its `WHERE` (empty unless
    /// [`Pipeline::first_locks`]).
    pub fn after_first(&self) -> &'static str {
        if self.first_locks {
            AFTER_FIRST
        } else {
            ""
        }
    }

    /// Adds a write (its parameters are `$1`, `$2`, … of its own, every one used),
    /// named `w{n}` for the `n` writes before it.
    pub fn push(&mut self, sql: impl Into<Cow<'static, str>>, params: Vec<Param>, answer: Answer) {
        debug_assert!(
            answer != Answer::Row || self.writes.iter().all(|w| w.answer != Answer::Row),
            "one write per pipeline answers with its row"
        );
        self.writes.push(Queued {
            sql: sql.into(),
            params,
            answer,
        });
    }

    /// Sends the writes as one statement, and COMMIT right behind it when `commit`.
    pub async fn run(
        &self,
        client: &impl GenericClient,
        commit: bool,
    ) -> Result<Answers, StoreError> {
        if self.writes.is_empty() {
            if commit {
                client.batch_execute("COMMIT").await?;
            }
            return Ok(Answers { row: None });
        }
        let (sql, columns) = self.statement();
        let statement = if commit {
            let (statement, commit) =
                futures::try_join!(client.prepare_cached(&sql), client.prepare_cached("COMMIT"))?;
            Some((statement, commit))
        } else {
            None
        };
        let params = self.params();
        let rows = match statement {
            // Polled in order: the statement is written before COMMIT.
            Some((statement, commit)) => {
                futures::try_join!(
                    client.query(&statement, &params),
                    client.query(&commit, &[])
                )?
                .0
            }
            None => {
                let statement = client.prepare_cached(&sql).await?;
                client.query(&statement, &params).await?
            }
        };
        self.answers(rows, columns)
    }

    /// Every write's parameters, in statement order.
    pub fn params(&self) -> Vec<&(dyn ToSql + Sync)> {
        self.writes
            .iter()
            .flat_map(|w| w.params.iter())
            .map(|p| p.as_ref() as &(dyn ToSql + Sync))
            .collect()
    }

    /// What the writes answered, from the statement's rows (`row_at` as
    /// [`Pipeline::statement`] gave it).
    pub fn answers(&self, rows: Vec<Row>, row_at: usize) -> Result<Answers, StoreError> {
        let first = rows
            .into_iter()
            .next()
            .ok_or_else(|| StoreError::Database("the writes answered no row".into()))?;
        // The row-answering write's count is among the answered writes' columns.
        let row = self
            .writes
            .iter()
            .filter(|w| w.answer != Answer::Nothing)
            .position(|w| w.answer == Answer::Row)
            .filter(|&column| first.get::<_, i64>(column) > 0)
            .map(|_| (first, row_at));
        Ok(Answers { row })
    }

    /// The one statement, and the column the row-answering write's columns start at.
    pub fn statement(&self) -> (String, usize) {
        let mut sql =
            String::with_capacity(64 + self.writes.iter().map(|w| w.sql.len() + 48).sum::<usize>());
        sql.push_str("WITH ");
        let mut offset = 0;
        for (index, write) in self.writes.iter().enumerate() {
            if index > 0 {
                sql.push_str(", ");
            }
            let _ = write!(sql, "w{index} AS (");
            renumber_into(&write.sql, offset, &mut sql);
            sql.push(')');
            offset += write.params.len();
        }
        // Every answered write is counted (an exact count divides by whether it holds:
        // by zero when not); the row-answering write joins its rows.
        let counted: Vec<String> = self
            .writes
            .iter()
            .enumerate()
            .filter_map(|(index, write)| match write.answer {
                Answer::Nothing => None,
                Answer::Exactly(rows) => Some(format!(
                    "(SELECT count(*) / (count(*) = {rows})::int FROM w{index})"
                )),
                Answer::Count | Answer::Row => Some(format!("(SELECT count(*) FROM w{index})")),
            })
            .collect();
        if counted.is_empty() {
            sql.push_str(" SELECT 0");
        } else {
            let _ = write!(sql, " SELECT {}", counted.join(", "));
        }
        let row_at = counted.len();
        if let Some(index) = self.writes.iter().position(|w| w.answer == Answer::Row) {
            let _ = write!(
                sql,
                ", r.* FROM (VALUES (0)) AS one(x) LEFT JOIN w{index} AS r ON true LIMIT 1"
            );
        }
        (sql, row_at)
    }
}

/// Copies `sql` into `out` with every `$n` placeholder moved up by `offset`. Our
/// statements hold `$` only in placeholders (no dollar quoting, no `$` in literals).
fn renumber_into(sql: &str, offset: usize, out: &mut String) {
    let bytes = sql.as_bytes();
    let mut copied = 0;
    let mut at = 0;
    while at < bytes.len() {
        if bytes[at] == b'$' && bytes.get(at + 1).is_some_and(u8::is_ascii_digit) {
            let digits = bytes[at + 1..]
                .iter()
                .take_while(|b| b.is_ascii_digit())
                .count();
            let number: usize = sql[at + 1..at + 1 + digits].parse().expect("ASCII digits");
            out.push_str(&sql[copied..at]);
            let _ = write!(out, "${}", number + offset);
            at += 1 + digits;
            copied = at;
        } else {
            at += 1;
        }
    }
    out.push_str(&sql[copied..]);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn placeholders_move_up_by_the_offset_and_nothing_else_changes() {
        let mut out = String::new();
        renumber_into(
            "UPDATE t SET a = $1, b = $12 WHERE c = 'é' AND d = $2",
            3,
            &mut out,
        );
        assert_eq!(out, "UPDATE t SET a = $4, b = $15 WHERE c = 'é' AND d = $5");
    }

    #[test]
    fn one_statement_counts_answered_writes_and_joins_the_row() {
        let mut pipeline = Pipeline::default();
        pipeline.push("UPDATE a SET x = $1", vec![param(1)], Answer::Nothing);
        pipeline.push(
            "UPDATE b SET y = $1 WHERE z = $2 RETURNING 1",
            vec![param(1), param(2)],
            Answer::Count,
        );
        pipeline.push(
            "INSERT INTO c VALUES ($1) RETURNING id",
            vec![param(3)],
            Answer::Row,
        );
        let (sql, row_at) = pipeline.statement();
        assert_eq!(
            sql,
            "WITH w0 AS (UPDATE a SET x = $1), \
             w1 AS (UPDATE b SET y = $2 WHERE z = $3 RETURNING 1), \
             w2 AS (INSERT INTO c VALUES ($4) RETURNING id) \
             SELECT (SELECT count(*) FROM w1), (SELECT count(*) FROM w2), r.* \
             FROM (VALUES (0)) AS one(x) LEFT JOIN w2 AS r ON true LIMIT 1"
        );
        assert_eq!(row_at, 2);
    }

    #[test]
    fn an_exact_count_fails_by_dividing_by_zero_and_guards_follow_the_first_write() {
        let mut pipeline = Pipeline::first_locks();
        pipeline.push("SELECT 1 FROM a FOR UPDATE", vec![], Answer::Exactly(1));
        let guard = pipeline.after_first();
        pipeline.push(
            format!("DELETE FROM b WHERE x = $1{guard} RETURNING 1"),
            vec![param(1)],
            Answer::Row,
        );
        let (sql, row_at) = pipeline.statement();
        assert_eq!(
            sql,
            "WITH w0 AS (SELECT 1 FROM a FOR UPDATE), \
             w1 AS (DELETE FROM b WHERE x = $1 AND EXISTS (SELECT FROM w0) RETURNING 1) \
             SELECT (SELECT count(*) / (count(*) = 1)::int FROM w0), \
             (SELECT count(*) FROM w1), r.* \
             FROM (VALUES (0)) AS one(x) LEFT JOIN w1 AS r ON true LIMIT 1"
        );
        assert_eq!(row_at, 2);
    }

    #[test]
    fn writes_answering_nothing_still_make_a_statement() {
        let mut pipeline = Pipeline::default();
        pipeline.push(
            "DELETE FROM a WHERE x = $1",
            vec![param(1)],
            Answer::Nothing,
        );
        let (sql, _) = pipeline.statement();
        assert_eq!(sql, "WITH w0 AS (DELETE FROM a WHERE x = $1) SELECT 0");
    }
}
