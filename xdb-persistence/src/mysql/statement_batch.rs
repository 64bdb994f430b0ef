//! A transaction's writes sent as one multi-statement query, answered in one round trip.
//!
//! Each write is one of the store's own statements; its `?` placeholders are filled with
//! its values as the driver renders them as SQL literals ([`Value::as_sql`], with the
//! backslash escapes the session's SQL mode keeps), never with text built here. The
//! server runs the statements in order and stops at the first that fails; what each
//! changed is read back from its own answer, so the checks a write needs (a version
//! that moved, a message consumed meanwhile) still apply, and a failed check leaves the
//! caller's transaction to be rolled back.

use mysql_async::prelude::Queryable;
use mysql_async::{Row, Value};

use crate::StoreError;

/// What a write's answer must show.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Expect {
    /// Nothing: it only writes.
    Nothing,
    /// Exactly this many matched rows, or the transition is stale (`reason` says why).
    Rows(u64, &'static str),
}

/// What one write answered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Answer {
    pub affected_rows: u64,
    pub last_insert_id: Option<u64>,
}

/// Writes to send together.
#[derive(Debug, Default)]
pub(crate) struct StatementBatch {
    sql: String,
    expected: Vec<Expect>,
}

impl StatementBatch {
    /// Adds `sql` (the store's statement; `?` only as placeholders) with `params`.
    pub fn push(&mut self, sql: &str, params: &[Value], expect: Expect) {
        if !self.sql.is_empty() {
            self.sql.push_str(";\n");
        }
        render_into(sql, params, &mut self.sql);
        self.expected.push(expect);
    }

    pub fn is_empty(&self) -> bool {
        self.expected.is_empty()
    }

    /// How many writes were pushed: the index of the next one's answer.
    pub fn len(&self) -> usize {
        self.expected.len()
    }

    /// Sends the writes; their answers in order, once every write ran and answered as
    /// expected. `Stale` when one found other rows than it expects; the server's error
    /// when one failed (the writes after it did not run).
    pub async fn run(&self, conn: &mut impl Queryable) -> Result<Vec<Answer>, StoreError> {
        if self.is_empty() {
            return Ok(Vec::new());
        }
        let mut result = conn.query_iter(self.sql.as_str()).await?;
        let mut answers = Vec::with_capacity(self.expected.len());
        loop {
            answers.push(Answer {
                affected_rows: result.affected_rows(),
                last_insert_id: result.last_insert_id(),
            });
            if result.is_empty() {
                break;
            }
            let _: Vec<Row> = result.collect().await?;
        }
        // A write that failed shows only here (its answer above is not one).
        result.drop_result().await?;
        if answers.len() != self.expected.len() {
            return Err(StoreError::Database(format!(
                "{} writes sent, {} answered",
                self.expected.len(),
                answers.len()
            )));
        }
        for (answer, expect) in answers.iter().zip(&self.expected) {
            if let Expect::Rows(rows, reason) = expect {
                if answer.affected_rows != *rows {
                    return Err(StoreError::Stale((*reason).into()));
                }
            }
        }
        Ok(answers)
    }
}

/// Copies `sql` into `out` with each `?` replaced by the next value as a SQL literal.
fn render_into(sql: &str, params: &[Value], out: &mut String) {
    let mut values = params.iter();
    let mut rest = sql;
    while let Some(at) = rest.find('?') {
        out.push_str(&rest[..at]);
        let value = values
            .next()
            .expect("a value for every placeholder of the store's statement");
        out.push_str(&value.as_sql(false));
        rest = &rest[at + 1..];
    }
    out.push_str(rest);
    debug_assert!(values.next().is_none(), "a placeholder for every value");
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_become_escaped_literals_in_place_of_the_placeholders() {
        let mut out = String::new();
        render_into(
            "UPDATE t SET a = ?, b = ? WHERE c = ? AND d = ?",
            &[
                Value::from("it's a \"quote\" and a \\ and a ?"),
                Value::NULL,
                Value::from(42_i64),
                Value::from(
                    chrono::NaiveDate::from_ymd_opt(2026, 11, 25)
                        .unwrap()
                        .and_hms_micro_opt(13, 5, 10, 123_456)
                        .unwrap(),
                ),
            ],
            &mut out,
        );
        assert_eq!(
            out,
            "UPDATE t SET a = 'it\\'s a \\\"quote\\\" and a \\\\ and a ?', b = NULL \
             WHERE c = 42 AND d = '2026-11-25 13:05:10.123456'"
        );
    }

    #[test]
    fn writes_are_separated_and_their_expectations_kept_in_order() {
        let mut batch = StatementBatch::default();
        batch.push(
            "DELETE FROM a WHERE x = ?",
            &[Value::from(1_i64)],
            Expect::Nothing,
        );
        batch.push(
            "UPDATE b SET y = 1 WHERE x = ?",
            &[Value::from(2_i64)],
            Expect::Rows(1, "moved"),
        );
        assert_eq!(
            batch.sql,
            "DELETE FROM a WHERE x = 1;\nUPDATE b SET y = 1 WHERE x = 2"
        );
        assert_eq!(
            batch.expected,
            vec![Expect::Nothing, Expect::Rows(1, "moved")]
        );
    }
}
