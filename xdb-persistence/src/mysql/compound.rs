//! A group of statements in one round trip on MariaDB (see [`crate::steps`]): a
//! compound statement, `BEGIN NOT ATOMIC … END`, prepared with the steps' placeholders
//! in order. MariaDB's cost is per statement and round trip: a transition's five writes
//! went out as five. Each step's requirement is checked inside: a row count other than
//! the one expected raises a signal that names the step, and the ids an insert was
//! given are kept in a variable and read at the end, in one result row. MySQL has no
//! compound statement outside stored programs; there the steps go one by one.

use std::fmt::Write;

use mysql_async::prelude::Queryable;
use mysql_async::{Params, Row};

use super::sql_conn::mysql_value;
use crate::steps::{Expect, Step};
use crate::StoreError;

/// What the signal of a step whose row count was not the one expected says, before
/// the step's position.
const STALE_SIGNAL: &str = "xdb: stale step ";

/// The compound statement of `steps`: each step, then its check; last, one row of the
/// first id each [`Expect::Ids`] step was given, when any is.
pub(super) fn compound_sql(steps: &[Step<'_>]) -> String {
    let numbered: Vec<usize> = steps
        .iter()
        .enumerate()
        .filter(|(_, step)| matches!(step.expect, Expect::Ids(_)))
        .map(|(at, _)| at)
        .collect();
    let mut sql = String::from("BEGIN NOT ATOMIC ");
    for at in &numbered {
        let _ = write!(sql, "DECLARE xdb_first_id_{at} BIGINT; ");
    }
    for (at, step) in steps.iter().enumerate() {
        sql.push_str(&step.sql);
        sql.push_str("; ");
        match step.expect {
            Expect::Anything => {}
            Expect::Rows(rows, _) => {
                let _ = write!(
                    sql,
                    "IF ROW_COUNT() <> {rows} THEN \
                     SIGNAL SQLSTATE '45000' SET MESSAGE_TEXT = '{STALE_SIGNAL}{at}'; END IF; "
                );
            }
            Expect::Ids(_) => {
                let _ = write!(sql, "SET xdb_first_id_{at} = LAST_INSERT_ID(); ");
            }
        }
    }
    if !numbered.is_empty() {
        let columns: Vec<String> = numbered
            .iter()
            .map(|at| format!("xdb_first_id_{at}"))
            .collect();
        let _ = write!(sql, "SELECT {}; ", columns.join(", "));
    }
    sql.push_str("END");
    sql
}

/// Runs `steps` as one compound statement on `conn`; the ids of each [`Expect::Ids`]
/// step (every row's where `tells_ids`, else the first's).
pub(super) async fn run_compound<Q: Queryable>(
    conn: &mut Q,
    steps: &[Step<'_>],
    tells_ids: bool,
) -> Result<Vec<Vec<i64>>, StoreError> {
    let sql = compound_sql(steps);
    let params: Vec<_> = steps
        .iter()
        .flat_map(|step| step.params.iter().map(mysql_value))
        .collect();
    let params = if params.is_empty() {
        Params::Empty
    } else {
        Params::Positional(params)
    };
    let rows: Vec<Row> = conn
        .exec(sql, params)
        .await
        .map_err(|error| stale_step(error, steps))?;
    let numbered = steps.iter().filter_map(|step| match step.expect {
        Expect::Ids(rows) => Some(rows),
        _ => None,
    });
    let Some(row) = rows.first() else {
        return match numbered.count() {
            0 => Ok(Vec::new()),
            _ => Err(StoreError::Database(
                "the compound statement told no inserted ids".into(),
            )),
        };
    };
    numbered
        .enumerate()
        .map(|(column, rows)| {
            let first: i64 = row.get_opt(column).and_then(Result::ok).ok_or_else(|| {
                StoreError::Database("an insert of the compound statement got no id".into())
            })?;
            let told = if tells_ids { rows } else { 1 };
            Ok((first..first + told as i64).collect())
        })
        .collect()
}

/// `error` as a [`StoreError`]: the signal of a step whose row count was not the one
/// expected is that step's `Stale`.
fn stale_step(error: mysql_async::Error, steps: &[Step<'_>]) -> StoreError {
    if let mysql_async::Error::Server(server) = &error {
        let step = server
            .message
            .strip_prefix(STALE_SIGNAL)
            .and_then(|at| at.parse::<usize>().ok())
            .and_then(|at| steps.get(at));
        if let Some(Step {
            expect: Expect::Rows(_, stale),
            ..
        }) = step
        {
            return StoreError::Stale((*stale).into());
        }
    }
    error.into()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sql::Param;

    #[test]
    fn each_step_is_followed_by_its_check_and_the_ids_come_last() {
        let steps = [
            Step::expecting(
                "UPDATE a SET v = ? WHERE id = ?".into(),
                vec![Param::from(1), Param::from(2)],
                Expect::Rows(1, "moved"),
            ),
            Step::new("INSERT INTO b VALUES (?)".into(), vec![Param::from(3)]),
            Step::expecting(
                "INSERT INTO c (v) VALUES (?), (?)".into(),
                vec![Param::from(4), Param::from(5)],
                Expect::Ids(2),
            ),
        ];
        assert_eq!(
            compound_sql(&steps),
            "BEGIN NOT ATOMIC DECLARE xdb_first_id_2 BIGINT; \
             UPDATE a SET v = ? WHERE id = ?; \
             IF ROW_COUNT() <> 1 THEN SIGNAL SQLSTATE '45000' \
             SET MESSAGE_TEXT = 'xdb: stale step 0'; END IF; \
             INSERT INTO b VALUES (?); \
             INSERT INTO c (v) VALUES (?), (?); SET xdb_first_id_2 = LAST_INSERT_ID(); \
             SELECT xdb_first_id_2; END"
        );
    }

    #[test]
    fn a_signal_naming_a_counted_step_is_that_steps_stale() {
        let steps = [Step::expecting(
            "UPDATE a SET v = 1".into(),
            Vec::new(),
            Expect::Rows(1, "a state execution changed meanwhile"),
        )];
        let signal = |message: &str| {
            mysql_async::Error::Server(mysql_async::ServerError {
                code: 1644,
                message: message.into(),
                state: "45000".into(),
            })
        };
        assert!(matches!(
            stale_step(signal("xdb: stale step 0"), &steps),
            StoreError::Stale(message) if message == "a state execution changed meanwhile"
        ));
        assert!(matches!(
            stale_step(signal("xdb: stale step 7"), &steps),
            StoreError::Database(_)
        ));
    }
}
