//! The user's business table on PostgreSQL: the server converts every value, so the
//! statements of [`crate::sql_tables::business_rows`] need no column kinds, and each
//! column reads back as the `jsonb` that `to_jsonb` made of it.

use serde_json::Value;
use tokio_postgres::Row;

use super::tables::PgRows;
use crate::business_table::{BusinessTable, ColumnKinds};
use crate::sql_tables::business_rows::BusinessConn;
use crate::StoreError;

impl BusinessConn for PgRows {
    async fn column_kinds(
        &mut self,
        _table: &BusinessTable<'_>,
        _columns: &[&str],
    ) -> Result<ColumnKinds, StoreError> {
        Ok(ColumnKinds::new())
    }

    fn json_cells(row: &Row, _kinds: &ColumnKinds) -> Result<Vec<(String, Value)>, StoreError> {
        row.columns()
            .iter()
            .enumerate()
            .map(|(at, column)| {
                let value = row
                    .try_get::<_, Option<Value>>(at)
                    .map_err(|e| StoreError::Database(format!("corrupt row: column {at}: {e}")))?;
                Ok((column.name().to_owned(), value.unwrap_or(Value::Null)))
            })
            .collect()
    }
}
