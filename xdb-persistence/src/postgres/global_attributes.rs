//! SQL over the user's business table (global attributes).
//!
//! Identifiers are checked and quoted by [`BusinessTable`]; values travel as one JSONB
//! parameter that `jsonb_populate_record` converts to the table's own column types, so
//! no value is ever spliced into SQL text.

use deadpool_postgres::GenericClient;
use serde_json::{Map, Value};
use xdb_protocol::{GlobalAttributeConfig, GlobalAttributeValue, LockType};

use super::error::describe_pg_error;
use crate::business_table::{attribute_values, BusinessTable};
use crate::StoreError;

fn quote(identifier: &str) -> String {
    format!("\"{}\"", identifier.replace('"', "\"\""))
}

fn app_error(error: tokio_postgres::Error) -> StoreError {
    StoreError::AppDatabase(describe_pg_error(&error))
}

/// The row's key and `values` as the one JSONB record the statements populate from.
fn record<'a>(
    table: &BusinessTable,
    values: impl IntoIterator<Item = &'a GlobalAttributeValue>,
) -> Value {
    let mut record = Map::new();
    record.insert(table.key_column().to_string(), table.key_value().clone());
    for value in values {
        record.insert(value.column.clone(), value.value.clone());
    }
    Value::Object(record)
}

/// Inserts the row if missing and writes `values` into it (the start transaction).
pub(crate) async fn upsert(
    tx: &impl GenericClient,
    config: &GlobalAttributeConfig,
    values: &[GlobalAttributeValue],
) -> Result<(), StoreError> {
    let table = BusinessTable::checked(config, quote)?;
    let (name, key) = (table.quoted(), &table.key);
    let values: Vec<_> = values
        .iter()
        .filter(|v| v.column != table.key_column())
        .collect();
    let mut columns = vec![key.clone()];
    let mut updates = Vec::new();
    for value in &values {
        let column = table.column(&value.column)?;
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
        "INSERT INTO {name} ({column_list}) SELECT {column_list} \
         FROM jsonb_populate_record(NULL::{name}, $1::jsonb) ON CONFLICT ({key}) {conflict}"
    );
    tx.execute(sql.as_str(), &[&record(&table, values)])
        .await
        .map_err(app_error)?;
    Ok(())
}

/// Writes `values` (not empty: see `checked_attribute_writes`) into the existing row.
pub(crate) async fn update(
    tx: &impl GenericClient,
    config: &GlobalAttributeConfig,
    values: &[GlobalAttributeValue],
) -> Result<(), StoreError> {
    let table = BusinessTable::checked(config, quote)?;
    let (name, key) = (table.quoted(), &table.key);
    let assignments = values
        .iter()
        .map(|value| Ok(format!("{0} = r.{0}", table.column(&value.column)?)))
        .collect::<Result<Vec<_>, StoreError>>()?;
    let sql = format!(
        "UPDATE {name} AS t SET {} FROM jsonb_populate_record(NULL::{name}, $1::jsonb) AS r \
         WHERE t.{key} = r.{key}",
        assignments.join(", ")
    );
    let updated = tx
        .execute(sql.as_str(), &[&record(&table, values)])
        .await
        .map_err(app_error)?;
    if updated == 0 {
        return Err(table.missing_row());
    }
    Ok(())
}

/// Reads `columns` (not empty) of the row, locked as asked. A missing row reads as no
/// attributes.
pub(crate) async fn read(
    tx: &impl GenericClient,
    config: &GlobalAttributeConfig,
    columns: &[String],
    lock: LockType,
) -> Result<Vec<GlobalAttributeValue>, StoreError> {
    let table = BusinessTable::checked(config, quote)?;
    let (name, key) = (table.quoted(), &table.key);
    let selected = columns
        .iter()
        .map(|c| Ok(format!("to_jsonb(t.{})", table.column(c)?)))
        .collect::<Result<Vec<_>, StoreError>>()?
        .join(", ");
    let lock_clause = match lock {
        LockType::NoLock => "",
        LockType::SharedLock => " FOR SHARE OF t",
        LockType::ExclusiveLock => " FOR UPDATE OF t",
    };
    let sql = format!(
        "SELECT {selected} FROM {name} AS t \
         WHERE t.{key} = (SELECT r.{key} FROM jsonb_populate_record(NULL::{name}, $1::jsonb) AS r)\
         {lock_clause}"
    );
    let row = tx
        .query_opt(sql.as_str(), &[&record(&table, [])])
        .await
        .map_err(app_error)?;
    let Some(row) = row else {
        return Ok(Vec::new());
    };
    let values = (0..columns.len()).map(|i| row.get::<_, Option<Value>>(i).unwrap_or(Value::Null));
    Ok(attribute_values(columns, values))
}

/// Every column of the row as one JSON object (`to_jsonb` of the row), without a lock;
/// `None` when there is no such row.
pub(crate) async fn read_whole_row(
    tx: &impl GenericClient,
    config: &GlobalAttributeConfig,
) -> Result<Option<Map<String, Value>>, StoreError> {
    let table = BusinessTable::checked(config, quote)?;
    let (name, key) = (table.quoted(), &table.key);
    let sql = format!(
        "SELECT to_jsonb(t) FROM {name} AS t \
         WHERE t.{key} = (SELECT r.{key} FROM jsonb_populate_record(NULL::{name}, $1::jsonb) AS r)"
    );
    let row = tx
        .query_opt(sql.as_str(), &[&record(&table, [])])
        .await
        .map_err(app_error)?;
    Ok(row.and_then(|row| match row.get::<_, Value>(0) {
        Value::Object(columns) => Some(columns),
        _ => None,
    }))
}
