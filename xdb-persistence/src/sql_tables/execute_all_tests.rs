//! [`SqlConn::execute_all`] on both databases: MySQL sends the statements as one text
//! with their parameters as literals, so the literals must round-trip whatever they
//! hold, and each statement must get its own answer.

use crate::columns::ColumnReader;
use crate::sql::{Executed, Param, SqlConn, Statement};
use crate::tables::{Dialect, Lane};
use crate::StoreError;

on_both_databases!(store => store;
    statements_run_together_each_answer,
    a_failing_statement_ends_the_run);

/// Texts a literal must keep as they are: quotes, backslashes, placeholders and
/// statement separators, line breaks, and text beyond ASCII.
const HOSTILE: [&str; 3] = [
    "it's \\' \"quoted\" \\\\ ?",
    "'); DROP TABLE execute_all_notes; --",
    "line\nbreak\r\ttab ; ? ü € 🦀",
];

/// A table of notes numbered by `id`, in the session's database.
async fn notes_table<C: SqlConn>(session: &mut C) {
    let sql = C::KIND.pick(
        "CREATE TABLE execute_all_notes (id BIGSERIAL PRIMARY KEY, note TEXT NOT NULL UNIQUE)",
        "CREATE TABLE execute_all_notes (id BIGINT AUTO_INCREMENT PRIMARY KEY, \
         note VARCHAR(200) NOT NULL UNIQUE) DEFAULT CHARSET = utf8mb4",
    );
    session.execute(sql, &[]).await.unwrap();
}

/// The notes, in id order.
async fn notes<C: SqlConn>(session: &mut C) -> Vec<String> {
    let rows = session
        .query("SELECT note FROM execute_all_notes ORDER BY id", &[])
        .await
        .unwrap();
    rows.iter()
        .map(|row| C::columns(row, 0).text().unwrap())
        .collect()
}

async fn statements_run_together_each_answer<D: Dialect<Session: SqlConn>>(store: D) {
    let mut session = store.session(Lane::Main).await.unwrap();
    notes_table(&mut session).await;
    let insert = "INSERT INTO execute_all_notes (note) VALUES (?), (?)";
    let statements = [
        Statement::ids(insert.into(), vec![HOSTILE[0].into(), HOSTILE[1].into()], 2),
        Statement::matched(
            "UPDATE execute_all_notes SET note = ? WHERE note = ?".into(),
            vec![HOSTILE[2].into(), HOSTILE[1].into()],
        ),
        Statement::matched(
            "UPDATE execute_all_notes SET note = 'none' WHERE id < ?".into(),
            vec![Param::BigInt(Some(0))],
        ),
        Statement::rows(
            "SELECT note FROM execute_all_notes WHERE note IN (?, ?) ORDER BY id".into(),
            vec![HOSTILE[0].into(), HOSTILE[2].into()],
        ),
    ];
    let mut done = session.execute_all(&statements).await.unwrap();
    let rows = done.pop().unwrap().into_rows();
    let read: Vec<String> = rows
        .iter()
        .map(|row| <D::Session as SqlConn>::columns(row, 0).text().unwrap())
        .collect();
    assert_eq!(read, [HOSTILE[0], HOSTILE[2]], "each text as it was sent");
    assert_eq!(
        done.pop().unwrap().matched(),
        0,
        "the second update matched none"
    );
    assert_eq!(
        done.pop().unwrap().matched(),
        1,
        "the first update matched one"
    );
    let ids = done.pop().unwrap().into_ids();
    let told = if session.tells_inserted_ids() { 2 } else { 1 };
    assert_eq!(ids, [1, 2][..told], "the insert's ids");
    assert!(done.pop().is_none(), "one answer per statement");
    assert_eq!(notes(&mut session).await, [HOSTILE[0], HOSTILE[2]]);
}

async fn a_failing_statement_ends_the_run<D: Dialect<Session: SqlConn>>(store: D) {
    let mut session = store.session(Lane::Main).await.unwrap();
    notes_table(&mut session).await;
    let insert = |note: &'static str| {
        Statement::matched(
            "INSERT INTO execute_all_notes (note) VALUES (?)".into(),
            vec![note.into()],
        )
    };
    // Outside a transaction, each statement commits alone: what ran stays.
    let statements = [insert("first"), insert("first"), insert("third")];
    let error = session.execute_all(&statements).await.err();
    assert!(
        matches!(
            error,
            Some(StoreError::Database(_) | StoreError::Conflict(_))
        ),
        "the duplicate fails the run: {error:?}"
    );
    assert_eq!(notes(&mut session).await, ["first"], "the third never ran");
    let done = session.execute_all(&[insert("again")]).await.unwrap();
    assert!(
        matches!(done[..], [Executed::Matched(1)]),
        "the session still works"
    );
}
