//! [`AttributeRows`]: the user's business row (through [`super::business_rows`]) and
//! `xdb_sys_local_attributes`, read as asked. A local attribute whose value is null
//! reads as absent.

use serde_json::{Map, Value};
use uuid::Uuid;
use xdb_protocol::{GlobalAttributeConfig, GlobalAttributeValue, LocalAttributeValue, LockType};

use super::business_rows::{self, BusinessConn};
use super::in_list::in_list;
use crate::columns::ColumnReader;
use crate::sql::{Param, SqlConn, SqlKind};
use crate::tables::AttributeRows;
use crate::StoreError;

/// The `key` column's name, quoted where the word is reserved.
fn key(kind: SqlKind) -> &'static str {
    kind.pick("key", "`key`")
}

/// The execution's local attributes among `keys`, locked as asked.
async fn read_local_attributes<C: SqlConn>(
    conn: &mut C,
    process: Uuid,
    keys: &[String],
    lock: LockType,
) -> Result<Vec<LocalAttributeValue>, StoreError> {
    if keys.is_empty() {
        return Ok(Vec::new());
    }
    let lock = match lock {
        LockType::NoLock => "",
        LockType::SharedLock => C::KIND.pick(" FOR SHARE", " LOCK IN SHARE MODE"),
        LockType::ExclusiveLock => " FOR UPDATE",
    };
    let mut params: Vec<Param<'_>> = vec![process.into()];
    params.extend(keys.iter().map(|k| Param::from(k.as_str())));
    let sql = format!(
        "SELECT {key}, value FROM xdb_sys_local_attributes \
         WHERE process_execution_id = ? AND {key} IN ({list}){lock}",
        key = key(C::KIND),
        list = in_list(&mut params, keys.len()),
    );
    attributes::<C>(conn.query(&sql, &params).await?)
}

/// Sets the execution's local attributes `values`.
pub(crate) async fn write_local_attributes<C: SqlConn>(
    conn: &mut C,
    process: Uuid,
    values: &[LocalAttributeValue],
) -> Result<(), StoreError> {
    let sql = C::KIND.pick(
        "INSERT INTO xdb_sys_local_attributes (process_execution_id, key, value) \
         VALUES (?, ?, ?) ON CONFLICT (process_execution_id, key) \
         DO UPDATE SET value = EXCLUDED.value",
        "INSERT INTO xdb_sys_local_attributes (process_execution_id, `key`, value) \
         VALUES (?, ?, ?) ON DUPLICATE KEY UPDATE value = VALUES(value)",
    );
    for attribute in values {
        let value = Param::Json(Some(crate::sql::json(&attribute.value)));
        let params = [process.into(), attribute.key.as_str().into(), value];
        conn.execute(sql, &params).await?;
    }
    Ok(())
}

/// Every local attribute of the execution, by key.
async fn all_local_attributes<C: SqlConn>(
    conn: &mut C,
    process: Uuid,
) -> Result<Vec<LocalAttributeValue>, StoreError> {
    let sql = format!(
        "SELECT {key}, value FROM xdb_sys_local_attributes \
         WHERE process_execution_id = ? ORDER BY {key}",
        key = key(C::KIND),
    );
    attributes::<C>(conn.query(&sql, &[process.into()]).await?)
}

impl<C: BusinessConn> AttributeRows for C {
    async fn read_business_row(
        &mut self,
        config: &GlobalAttributeConfig,
        columns: &[String],
        lock: LockType,
    ) -> Result<Vec<GlobalAttributeValue>, StoreError> {
        business_rows::read(self, config, columns, lock).await
    }

    async fn upsert_business_row(
        &mut self,
        config: &GlobalAttributeConfig,
        writes: &[GlobalAttributeValue],
    ) -> Result<(), StoreError> {
        business_rows::upsert(self, config, writes).await
    }

    async fn read_local_attributes(
        &mut self,
        process: Uuid,
        keys: &[String],
        lock: LockType,
    ) -> Result<Vec<LocalAttributeValue>, StoreError> {
        read_local_attributes(self, process, keys, lock).await
    }

    async fn read_whole_business_row(
        &mut self,
        config: &GlobalAttributeConfig,
    ) -> Result<Option<Map<String, Value>>, StoreError> {
        business_rows::read_whole_row(self, config).await
    }

    async fn all_local_attributes(
        &mut self,
        process: Uuid,
    ) -> Result<Vec<LocalAttributeValue>, StoreError> {
        all_local_attributes(self, process).await
    }
}

/// Rows of `key, value` as attributes, those with a null value left out.
fn attributes<C: SqlConn>(rows: Vec<C::Row>) -> Result<Vec<LocalAttributeValue>, StoreError> {
    let mut attributes = Vec::with_capacity(rows.len());
    for row in &rows {
        let mut columns = C::columns(row, 0);
        let key = columns.text()?;
        if let Some(value) = columns.json()? {
            attributes.push(LocalAttributeValue { key, value });
        }
    }
    Ok(attributes)
}
