//! SQL over the user's global-attribute table.
//!
//! Every identifier is validated by `xdb_engine::validation` and then double-quoted;
//! values travel as one JSONB parameter that `jsonb_populate_record` converts to the
//! table's own column types, so no value is ever spliced into SQL text.

use deadpool_postgres::GenericClient;
use serde_json::{Map, Value};
use xdb_engine::validation::{check_identifier, split_table_name};
use xdb_protocol::{GlobalAttributeConfig, GlobalAttributeValue, LockType};

use super::error::describe_pg_error;
use crate::StoreError;

fn quote(identifier: &str) -> String {
    format!("\"{}\"", identifier.replace('"', "\"\""))
}

fn quoted_table(config: &GlobalAttributeConfig) -> Result<String, StoreError> {
    let parts = split_table_name("tableName", &config.table_name)
        .map_err(|e| StoreError::Decide(e.into()))?;
    Ok(parts.iter().map(|p| quote(p)).collect::<Vec<_>>().join("."))
}

fn checked_column(column: &str) -> Result<String, StoreError> {
    check_identifier("column", column).map_err(|e| StoreError::Decide(e.into()))?;
    Ok(quote(column))
}

fn app_error(error: tokio_postgres::Error) -> StoreError {
    StoreError::AppDatabase(describe_pg_error(&error))
}

/// Inserts the row if missing and writes `values` into it (the start transaction).
pub(crate) async fn upsert(
    tx: &impl GenericClient,
    config: &GlobalAttributeConfig,
    values: &[GlobalAttributeValue],
) -> Result<(), StoreError> {
    let table = quoted_table(config)?;
    let key = checked_column(&config.primary_key.column)?;
    let mut record = Map::new();
    record.insert(
        config.primary_key.column.clone(),
        config.primary_key.value.clone(),
    );
    let mut columns = vec![key.clone()];
    let mut updates = Vec::new();
    for value in values
        .iter()
        .filter(|v| v.column != config.primary_key.column)
    {
        let column = checked_column(&value.column)?;
        record.insert(value.column.clone(), value.value.clone());
        updates.push(format!("{column} = EXCLUDED.{column}"));
        columns.push(column);
    }
    let column_list = columns.join(", ");
    let conflict = if updates.is_empty() {
        "DO NOTHING".to_string()
    } else {
        format!("DO UPDATE SET {}", updates.join(", "))
    };
    let sql = format!(
        "INSERT INTO {table} ({column_list}) SELECT {column_list} \
         FROM jsonb_populate_record(NULL::{table}, $1::jsonb) ON CONFLICT ({key}) {conflict}"
    );
    tx.execute(sql.as_str(), &[&Value::Object(record)])
        .await
        .map_err(app_error)?;
    Ok(())
}

/// Writes `values` into the existing row.
pub(crate) async fn update(
    tx: &impl GenericClient,
    config: &GlobalAttributeConfig,
    values: &[GlobalAttributeValue],
) -> Result<(), StoreError> {
    if values.is_empty() {
        return Ok(());
    }
    let table = quoted_table(config)?;
    let key = checked_column(&config.primary_key.column)?;
    let mut record = Map::new();
    record.insert(
        config.primary_key.column.clone(),
        config.primary_key.value.clone(),
    );
    let mut assignments = Vec::new();
    for value in values {
        let column = checked_column(&value.column)?;
        record.insert(value.column.clone(), value.value.clone());
        assignments.push(format!("{column} = r.{column}"));
    }
    let sql = format!(
        "UPDATE {table} AS t SET {} FROM jsonb_populate_record(NULL::{table}, $1::jsonb) AS r \
         WHERE t.{key} = r.{key}",
        assignments.join(", ")
    );
    let updated = tx
        .execute(sql.as_str(), &[&Value::Object(record)])
        .await
        .map_err(app_error)?;
    if updated == 0 {
        return Err(StoreError::AppDatabase(format!(
            "no row in {} with {} = {}",
            config.table_name, config.primary_key.column, config.primary_key.value
        )));
    }
    Ok(())
}

/// Reads `columns` of the row, locked as asked. A missing row reads as no attributes.
pub(crate) async fn read(
    tx: &impl GenericClient,
    config: &GlobalAttributeConfig,
    columns: &[String],
    lock: LockType,
) -> Result<Vec<GlobalAttributeValue>, StoreError> {
    if columns.is_empty() {
        return Ok(Vec::new());
    }
    let table = quoted_table(config)?;
    let key = checked_column(&config.primary_key.column)?;
    let selected = columns
        .iter()
        .map(|c| checked_column(c).map(|q| format!("to_jsonb(t.{q})")))
        .collect::<Result<Vec<_>, _>>()?
        .join(", ");
    let lock_clause = match lock {
        LockType::NoLock => "",
        LockType::SharedLock => " FOR SHARE OF t",
        LockType::ExclusiveLock => " FOR UPDATE OF t",
    };
    let sql = format!(
        "SELECT {selected} FROM {table} AS t \
         WHERE t.{key} = (SELECT r.{key} FROM jsonb_populate_record(NULL::{table}, $1::jsonb) AS r)\
         {lock_clause}"
    );
    let mut record = Map::new();
    record.insert(
        config.primary_key.column.clone(),
        config.primary_key.value.clone(),
    );
    let row = tx
        .query_opt(sql.as_str(), &[&Value::Object(record)])
        .await
        .map_err(app_error)?;
    let Some(row) = row else {
        return Ok(Vec::new());
    };
    Ok(columns
        .iter()
        .enumerate()
        .map(|(index, column)| GlobalAttributeValue {
            column: column.clone(),
            value: row.get::<_, Option<Value>>(index).unwrap_or(Value::Null),
        })
        .collect())
}
