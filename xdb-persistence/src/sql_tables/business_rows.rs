//! The user's business table (global attributes) written once over [`SqlConn`]: which
//! statement, its column lists, its lock and the upsert's shape. A dialect adds only
//! [`BusinessConn`] (the columns' kinds, and their values read back as JSON) and, in
//! [`Param::Cell`], a JSON value bound for a column of a kind.
//!
//! Identifiers are checked and quoted by [`BusinessTable`]; a value is always a
//! parameter. PostgreSQL converts it in the statement: a JSONB `{column: value}` that
//! `jsonb_populate_record` turns into the column's own type, so the server's rules apply
//! to every type. MySQL has no such function: the value is bound converted by the
//! column's kind (see `mysql::global_attributes`).

use std::iter;

use serde_json::{Map, Value};
use xdb_protocol::{GlobalAttributeConfig, GlobalAttributeValue, LockType};

use crate::business_table::{attribute_values, kind_of, BusinessTable, ColumnKinds};
use crate::sql::{Param, SqlConn, SqlKind};
use crate::tables::Answer;
use crate::StoreError;

/// What a dialect adds to [`SqlConn`] for the user's business table.
pub(crate) trait BusinessConn: SqlConn {
    /// The kinds of `columns` of `table`, where the dialect converts values itself.
    fn column_kinds(
        &mut self,
        table: &BusinessTable<'_>,
        columns: &[&str],
    ) -> impl Answer<ColumnKinds>;
    /// Each column of `row`, by name, its value as JSON (a column's kind from `kinds`).
    fn json_cells(row: &Self::Row, kinds: &ColumnKinds)
        -> Result<Vec<(String, Value)>, StoreError>;
}

/// A statement's error on the user's table: refusals are the table's (a missing column,
/// a constraint), while a conflict or a lost connection stays what it is, to be retried.
pub(crate) fn in_user_table(error: StoreError) -> StoreError {
    match error {
        StoreError::Database(message) => StoreError::AppDatabase(message),
        other => other,
    }
}

/// The SQL standing for a value written into `column` (quoted) of `table`.
fn cell_sql(table: &BusinessTable<'_>, column: &str) -> String {
    match table.kind {
        SqlKind::Postgres => format!(
            "(jsonb_populate_record(NULL::{}, CAST(? AS jsonb))).{column}",
            table.quoted()
        ),
        SqlKind::MySql => "?".to_owned(),
    }
}

/// The parameter for `value` written into `column`, as [`cell_sql`] takes it.
fn cell_param<'v>(
    table: &BusinessTable<'_>,
    kinds: &ColumnKinds,
    column: &str,
    value: &'v Value,
) -> Param<'v> {
    match table.kind {
        SqlKind::Postgres => {
            let record = Map::from_iter([(column.to_owned(), value.clone())]);
            Param::Json(Some(Value::Object(record)))
        }
        SqlKind::MySql => Param::Cell(value, kind_of(kinds, column)),
    }
}

/// `WHERE` the row is the one `config` names; its parameter is [`key_param`].
fn key_match(table: &BusinessTable<'_>) -> String {
    format!("WHERE t.{} = {}", table.key, cell_sql(table, &table.key))
}

fn key_param<'v>(table: &BusinessTable<'v>, kinds: &ColumnKinds) -> Param<'v> {
    cell_param(table, kinds, table.key_column(), table.key_value())
}

/// The key column followed by `columns`, as the column kinds are asked for.
pub(crate) fn with_key<'c>(
    table: &BusinessTable<'c>,
    columns: impl IntoIterator<Item = &'c str>,
) -> Vec<&'c str> {
    iter::once(table.key_column()).chain(columns).collect()
}

/// Reads `columns` (not empty) of the row, locked as asked. A missing row reads as no
/// attributes.
pub(crate) async fn read<C: BusinessConn>(
    conn: &mut C,
    config: &GlobalAttributeConfig,
    columns: &[String],
    lock: LockType,
) -> Result<Vec<GlobalAttributeValue>, StoreError> {
    let table = BusinessTable::checked(config, C::KIND)?;
    let sql = read_sql(&table, columns, lock)?;
    let names = with_key(&table, columns.iter().map(String::as_str));
    let kinds = conn.column_kinds(&table, &names).await?;
    let Some(cells) = first_row(conn, &sql, &[key_param(&table, &kinds)], &kinds).await? else {
        return Ok(Vec::new());
    };
    Ok(attribute_values(columns, cells.into_iter().map(|(_, v)| v)))
}

fn read_sql(
    table: &BusinessTable<'_>,
    columns: &[String],
    lock: LockType,
) -> Result<String, StoreError> {
    let selected = columns
        .iter()
        .map(|c| {
            let column = table.column(c)?;
            Ok(table
                .kind
                .pick(format!("to_jsonb(t.{column})"), format!("t.{column}")))
        })
        .collect::<Result<Vec<_>, StoreError>>()?
        .join(", ");
    let lock = match lock {
        LockType::NoLock => "",
        // MariaDB has no FOR SHARE; both MySQL servers accept this form.
        LockType::SharedLock => table.kind.pick(" FOR SHARE OF t", " LOCK IN SHARE MODE"),
        LockType::ExclusiveLock => table.kind.pick(" FOR UPDATE OF t", " FOR UPDATE"),
    };
    Ok(format!(
        "SELECT {selected} FROM {} AS t {}{lock}",
        table.quoted(),
        key_match(table)
    ))
}

/// Every column of the row, by name, read without a lock; `None` when there is no such
/// row. Only the table and key, checked and quoted, are named in the statement.
pub(crate) async fn read_whole_row<C: BusinessConn>(
    conn: &mut C,
    config: &GlobalAttributeConfig,
) -> Result<Option<Map<String, Value>>, StoreError> {
    let table = BusinessTable::checked(config, C::KIND)?;
    let kinds = conn.column_kinds(&table, &[table.key_column()]).await?;
    // PostgreSQL converts the whole row to one JSON object; MySQL's row is converted
    // column by column.
    let sql = format!(
        "SELECT {} FROM {} AS t {}",
        C::KIND.pick("to_jsonb(t)", "t.*"),
        table.quoted(),
        key_match(&table)
    );
    let Some(cells) = first_row(conn, &sql, &[key_param(&table, &kinds)], &kinds).await? else {
        return Ok(None);
    };
    Ok(match C::KIND {
        SqlKind::Postgres => match cells.into_iter().next() {
            Some((_, Value::Object(columns))) => Some(columns),
            _ => None,
        },
        SqlKind::MySql => Some(cells.into_iter().collect()),
    })
}

/// The first row `sql` returns, its cells as JSON.
async fn first_row<C: BusinessConn>(
    conn: &mut C,
    sql: &str,
    params: &[Param<'_>],
    kinds: &ColumnKinds,
) -> Result<Option<Vec<(String, Value)>>, StoreError> {
    let rows = conn.query(sql, params).await.map_err(in_user_table)?;
    rows.first()
        .map(|row| C::json_cells(row, kinds))
        .transpose()
}

/// Inserts the row if missing and writes `values` into it (the start transaction).
///
/// MySQL's `INSERT … ON DUPLICATE KEY UPDATE` fires on *any* unique key, not only the
/// primary key PostgreSQL's `ON CONFLICT (key)` names. So there every assignment only
/// applies when the conflicting row has our primary key, and a conflict on another
/// unique key, which would leave our row missing, is reported as an error instead of
/// overwriting a different row.
pub(crate) async fn upsert<C: BusinessConn>(
    conn: &mut C,
    config: &GlobalAttributeConfig,
    values: &[GlobalAttributeValue],
) -> Result<(), StoreError> {
    let table = BusinessTable::checked(config, C::KIND)?;
    let values: Vec<&GlobalAttributeValue> = values
        .iter()
        .filter(|v| v.column != table.key_column())
        .collect();
    let sql = upsert_sql(&table, &values)?;
    let names = with_key(&table, values.iter().map(|v| v.column.as_str()));
    let kinds = conn.column_kinds(&table, &names).await?;
    let params: Vec<Param<'_>> = iter::once(key_param(&table, &kinds))
        .chain(
            values
                .iter()
                .map(|v| cell_param(&table, &kinds, &v.column, &v.value)),
        )
        .collect();
    conn.execute(&sql, &params).await.map_err(in_user_table)?;
    if C::KIND == SqlKind::MySql {
        let found = format!(
            "SELECT 1 FROM {} AS t {}",
            table.quoted(),
            key_match(&table)
        );
        let rows = conn
            .query(&found, &params[..1])
            .await
            .map_err(in_user_table)?;
        if rows.is_empty() {
            return Err(StoreError::AppDatabase(format!(
                "cannot insert the row {} = {} into {}: it conflicts with another row on a \
                 unique key",
                config.primary_key.column, config.primary_key.value, config.table_name
            )));
        }
    }
    Ok(())
}

fn upsert_sql(
    table: &BusinessTable<'_>,
    values: &[&GlobalAttributeValue],
) -> Result<String, StoreError> {
    let key = &table.key;
    let mut columns = vec![key.clone()];
    let mut updates = Vec::new();
    for value in values {
        let column = table.column(&value.column)?;
        updates.push(table.kind.pick(
            format!("{column} = EXCLUDED.{column}"),
            format!("{column} = IF({key} <=> VALUES({key}), VALUES({column}), {column})"),
        ));
        columns.push(column);
    }
    let updates = updates.join(", ");
    let on_conflict = match (table.kind, updates.is_empty()) {
        (SqlKind::Postgres, true) => format!("ON CONFLICT ({key}) DO NOTHING"),
        (SqlKind::Postgres, false) => format!("ON CONFLICT ({key}) DO UPDATE SET {updates}"),
        (SqlKind::MySql, true) => format!("ON DUPLICATE KEY UPDATE {key} = {key}"),
        (SqlKind::MySql, false) => format!("ON DUPLICATE KEY UPDATE {updates}"),
    };
    let cells: Vec<String> = columns.iter().map(|c| cell_sql(table, c)).collect();
    Ok(format!(
        "INSERT INTO {} ({}) VALUES ({}) {on_conflict}",
        table.quoted(),
        columns.join(", "),
        cells.join(", ")
    ))
}

/// The statement that writes `values` (not empty) into the existing row, and its
/// parameters; the dialects run it within their plan's writes.
pub(crate) fn update_statement<'v>(
    table: &BusinessTable<'v>,
    kinds: &ColumnKinds,
    values: &'v [GlobalAttributeValue],
) -> Result<(String, Vec<Param<'v>>), StoreError> {
    let mut assignments = Vec::new();
    let mut params = Vec::new();
    for value in values {
        let column = table.column(&value.column)?;
        assignments.push(format!("{column} = {}", cell_sql(table, &column)));
        params.push(cell_param(table, kinds, &value.column, &value.value));
    }
    params.push(key_param(table, kinds));
    let sql = format!(
        "UPDATE {} AS t SET {} {}",
        table.quoted(),
        assignments.join(", "),
        key_match(table)
    );
    Ok((sql, params))
}

/// Writes `values` (not empty: see `checked_attribute_writes`) into the existing row
/// `config` names.
pub(crate) async fn update<C: BusinessConn>(
    conn: &mut C,
    config: &GlobalAttributeConfig,
    values: &[GlobalAttributeValue],
) -> Result<(), StoreError> {
    let table = BusinessTable::checked(config, C::KIND)?;
    let names = with_key(&table, values.iter().map(|v| v.column.as_str()));
    let kinds = conn.column_kinds(&table, &names).await?;
    let (sql, params) = update_statement(&table, &kinds, values)?;
    let rows = conn.execute(&sql, &params).await.map_err(in_user_table)?;
    updated(&table, rows)
}

/// An update that matched `rows` rows: the row must have been there.
pub(crate) fn updated(table: &BusinessTable<'_>, rows: u64) -> Result<(), StoreError> {
    if rows == 0 {
        return Err(table.missing_row());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::business_table::ColumnKind;

    fn config() -> GlobalAttributeConfig {
        GlobalAttributeConfig {
            table_name: "app.users".into(),
            primary_key: GlobalAttributeValue {
                column: "id".into(),
                value: json!("u1"),
            },
            initial_write: Vec::new(),
        }
    }

    fn value(column: &str, value: Value) -> GlobalAttributeValue {
        GlobalAttributeValue {
            column: column.into(),
            value,
        }
    }

    #[test]
    fn reads_name_their_columns_and_lock_each_dialects_way() {
        let config = config();
        let columns = vec!["email".to_string(), "score".to_string()];
        let table = BusinessTable::checked(&config, SqlKind::Postgres).unwrap();
        assert_eq!(
            read_sql(&table, &columns, LockType::SharedLock).unwrap(),
            "SELECT to_jsonb(t.\"email\"), to_jsonb(t.\"score\") FROM \"app\".\"users\" AS t \
             WHERE t.\"id\" = (jsonb_populate_record(NULL::\"app\".\"users\", \
             CAST(? AS jsonb))).\"id\" FOR SHARE OF t"
        );
        let table = BusinessTable::checked(&config, SqlKind::MySql).unwrap();
        assert_eq!(
            read_sql(&table, &columns, LockType::ExclusiveLock).unwrap(),
            "SELECT t.`email`, t.`score` FROM `app`.`users` AS t WHERE t.`id` = ? FOR UPDATE"
        );
        let bad = vec!["email, password".to_string()];
        assert!(matches!(
            read_sql(&table, &bad, LockType::NoLock),
            Err(StoreError::Decide(_))
        ));
    }

    #[test]
    fn upserts_update_only_the_columns_written() {
        let config = config();
        let values = [value("email", json!("a@x"))];
        let values: Vec<_> = values.iter().collect();
        let table = BusinessTable::checked(&config, SqlKind::MySql).unwrap();
        assert_eq!(
            upsert_sql(&table, &values).unwrap(),
            "INSERT INTO `app`.`users` (`id`, `email`) VALUES (?, ?) ON DUPLICATE KEY UPDATE \
             `email` = IF(`id` <=> VALUES(`id`), VALUES(`email`), `email`)"
        );
        assert_eq!(
            upsert_sql(&table, &[]).unwrap(),
            "INSERT INTO `app`.`users` (`id`) VALUES (?) ON DUPLICATE KEY UPDATE `id` = `id`"
        );
        let table = BusinessTable::checked(&config, SqlKind::Postgres).unwrap();
        let sql = upsert_sql(&table, &values).unwrap();
        assert!(
            sql.ends_with("ON CONFLICT (\"id\") DO UPDATE SET \"email\" = EXCLUDED.\"email\""),
            "{sql}"
        );
        assert!(upsert_sql(&table, &[])
            .unwrap()
            .ends_with("ON CONFLICT (\"id\") DO NOTHING"));
    }

    #[test]
    fn values_are_parameters_converted_each_dialects_way() {
        let config = config();
        let values = [
            value("Active", json!(true)),
            value("note", json!("x'); --")),
        ];
        let kinds = ColumnKinds::from([("active".to_string(), ColumnKind::Bool)]);
        let table = BusinessTable::checked(&config, SqlKind::MySql).unwrap();
        let (sql, params) = update_statement(&table, &kinds, &values).unwrap();
        assert_eq!(
            sql,
            "UPDATE `app`.`users` AS t SET `Active` = ?, `note` = ? WHERE t.`id` = ?"
        );
        assert!(matches!(params[0], Param::Cell(v, ColumnKind::Bool) if *v == json!(true)));
        assert!(matches!(params[1], Param::Cell(v, ColumnKind::Other) if *v == values[1].value));
        assert!(matches!(params[2], Param::Cell(v, ColumnKind::Other) if *v == json!("u1")));
        let table = BusinessTable::checked(&config, SqlKind::Postgres).unwrap();
        let (sql, params) = update_statement(&table, &ColumnKinds::new(), &values).unwrap();
        assert_eq!(sql.matches('?').count(), params.len());
        assert!(matches!(&params[1], Param::Json(Some(v)) if *v == json!({"note": "x'); --"})));
        assert!(matches!(&params[2], Param::Json(Some(v)) if *v == json!({"id": "u1"})));
    }
}
