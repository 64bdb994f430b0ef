//! The user's business table as statements name it. Every identifier is checked by
//! `xdb_engine::validation` and then quoted the dialect's way, so nothing unchecked is
//! ever spliced into SQL text, and a bad name is refused before any statement runs.

use std::collections::HashMap;

use serde_json::Value;
use xdb_engine::validation::{check_identifier, split_table_name};
use xdb_protocol::{GlobalAttributeConfig, GlobalAttributeValue};

use crate::sql::SqlKind;
use crate::StoreError;

/// How a column's values convert between JSON and SQL where the dialect converts them
/// itself (MySQL, from the column's type; PostgreSQL converts in its statements).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ColumnKind {
    Json,
    Bool,
    Decimal,
    Date,
    DateTime,
    Timestamp,
    Binary,
    Other,
}

/// A table's column kinds by lower-cased name (MySQL column names are case-insensitive).
pub(crate) type ColumnKinds = HashMap<String, ColumnKind>;

/// `column`'s kind in `kinds`; a column not listed converts as [`ColumnKind::Other`].
pub(crate) fn kind_of(kinds: &ColumnKinds, column: &str) -> ColumnKind {
    kinds
        .get(&column.to_ascii_lowercase())
        .copied()
        .unwrap_or(ColumnKind::Other)
}

/// The table and primary key `config` names, checked.
pub(crate) struct BusinessTable<'a> {
    pub config: &'a GlobalAttributeConfig,
    /// The table's name, with its schema first when one is given.
    pub parts: Vec<&'a str>,
    /// The primary key column, quoted.
    pub key: String,
    /// The SQL the names are quoted for.
    pub kind: SqlKind,
}

impl<'a> BusinessTable<'a> {
    /// `config`'s table, its names checked and quoted for `kind`.
    pub fn checked(config: &'a GlobalAttributeConfig, kind: SqlKind) -> Result<Self, StoreError> {
        let parts = split_table_name("tableName", &config.table_name)
            .map_err(|e| StoreError::Decide(e.into()))?;
        let key = checked_column(&config.primary_key.column, kind)?;
        Ok(Self {
            config,
            parts,
            key,
            kind,
        })
    }

    /// The table's name as SQL: each part quoted.
    pub fn quoted(&self) -> String {
        let parts: Vec<String> = self
            .parts
            .iter()
            .map(|part| quote(self.kind, part))
            .collect();
        parts.join(".")
    }

    /// `column`, checked and quoted.
    pub fn column(&self, column: &str) -> Result<String, StoreError> {
        checked_column(column, self.kind)
    }

    /// The primary key's column name, as written in the config.
    pub fn key_column(&self) -> &'a str {
        &self.config.primary_key.column
    }

    /// The primary key's value.
    pub fn key_value(&self) -> &'a Value {
        &self.config.primary_key.value
    }

    /// The error for an update that found no row to write.
    pub fn missing_row(&self) -> StoreError {
        StoreError::AppDatabase(format!(
            "no row in {} with {} = {}",
            self.config.table_name, self.config.primary_key.column, self.config.primary_key.value
        ))
    }
}

fn checked_column(column: &str, kind: SqlKind) -> Result<String, StoreError> {
    check_identifier("column", column).map_err(|e| StoreError::Decide(e.into()))?;
    Ok(quote(kind, column))
}

/// `identifier` quoted for `kind`, its quote characters doubled.
fn quote(kind: SqlKind, identifier: &str) -> String {
    let mark = kind.pick("\"", "`");
    format!("{mark}{}{mark}", identifier.replace(mark, &mark.repeat(2)))
}

/// The attributes read: `columns` paired with the row's `values`, in order.
pub(crate) fn attribute_values(
    columns: &[String],
    values: impl IntoIterator<Item = Value>,
) -> Vec<GlobalAttributeValue> {
    columns
        .iter()
        .zip(values)
        .map(|(column, value)| GlobalAttributeValue {
            column: column.clone(),
            value,
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn config(table: &str, key: &str) -> GlobalAttributeConfig {
        GlobalAttributeConfig {
            table_name: table.into(),
            primary_key: GlobalAttributeValue {
                column: key.into(),
                value: json!("ann"),
            },
            initial_write: Vec::new(),
        }
    }

    #[test]
    fn names_are_checked_then_quoted() {
        let config = config("app.user", "user_id");
        let table = BusinessTable::checked(&config, SqlKind::MySql).unwrap();
        assert_eq!(table.quoted(), "`app`.`user`");
        assert_eq!(table.key, "`user_id`");
        assert_eq!(table.column("status").unwrap(), "`status`");
        assert!(matches!(table.column("a`b"), Err(StoreError::Decide(_))));
        let table = BusinessTable::checked(&config, SqlKind::Postgres).unwrap();
        assert_eq!(table.quoted(), "\"app\".\"user\"");
        assert_eq!(table.column("Status").unwrap(), "\"Status\"");
        assert!(matches!(table.column("a\"b"), Err(StoreError::Decide(_))));
    }

    #[test]
    fn bad_table_or_key_names_are_refused() {
        for (name, key) in [("a.b.c", "id"), ("us er", "id"), ("user", "id; DROP")] {
            let config = config(name, key);
            let checked = BusinessTable::checked(&config, SqlKind::Postgres);
            assert!(
                matches!(checked, Err(StoreError::Decide(_))),
                "{name} {key}"
            );
        }
    }

    #[test]
    fn values_pair_with_their_columns() {
        let columns = vec!["a".to_string(), "b".to_string()];
        let values = attribute_values(&columns, [json!(1), Value::Null]);
        assert_eq!(values[1].column, "b");
        assert_eq!(values[0].value, json!(1));
    }

    #[test]
    fn kinds_are_found_whatever_the_case() {
        let kinds = ColumnKinds::from([("active".to_string(), ColumnKind::Bool)]);
        assert_eq!(kind_of(&kinds, "Active"), ColumnKind::Bool);
        assert_eq!(kind_of(&kinds, "other"), ColumnKind::Other);
    }
}
