//! The business table a query's column conditions read: the one the process type's
//! registered definition declares, else the request's `businessTable`; and its columns
//! as `information_schema` reports them (the same read registration checks tables
//! with), kept per table so a query costs no catalog read: older than [`COLUMNS_TTL`]
//! they are read again in the background while requests go on with them.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use xdb_engine::validation::{check_identifier, split_table_name};
use xdb_persistence::{DefinitionRegistry, QueryTable, TableColumn};
use xdb_protocol::{BusinessTableRef, GlobalAttributesDefinition};

use super::Definitions;
use crate::ApiError;

/// How long a table's columns are trusted: a column added since shows within this and
/// one read.
pub(super) const COLUMNS_TTL: Duration = Duration::from_secs(30);

/// How old they may be and still answer a query while they are read again. A catalog
/// read took 6 to 23 ms on PostgreSQL; past this a query waits for it.
pub(super) const COLUMNS_MAX_STALE: Duration = Duration::from_secs(300);

/// A table's columns, when they were read, and whether they are being read again.
struct ReadColumns {
    read_at: Instant,
    columns: Arc<Vec<TableColumn>>,
    rereading: bool,
}

/// Table columns by `schema.table` (schema empty: the connection's).
#[derive(Default)]
pub(crate) struct ColumnCache {
    tables: Arc<Mutex<HashMap<String, ReadColumns>>>,
}

impl ColumnCache {
    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, ReadColumns>> {
        self.tables.lock().expect("the column cache lock")
    }

    fn keep(&self, key: String, columns: Arc<Vec<TableColumn>>) {
        let read = ReadColumns {
            read_at: Instant::now(),
            columns,
            rereading: false,
        };
        self.lock().insert(key, read);
    }

    /// Reads `table`'s columns again in a task of its own, unless that is under way; a
    /// table that is gone is forgotten, a failed read leaves the known columns in use.
    fn reread_in_background(
        &self,
        registry: Arc<dyn DefinitionRegistry>,
        key: String,
        schema: Option<String>,
        table: String,
    ) {
        {
            let mut tables = self.lock();
            match tables.get_mut(&key) {
                Some(read) if !read.rereading => read.rereading = true,
                _ => return,
            }
        }
        let cache = ColumnCache {
            tables: self.tables.clone(),
        };
        tokio::spawn(async move {
            match registry.table_columns(schema.as_deref(), &table).await {
                Ok(columns) if columns.is_empty() => {
                    cache.lock().remove(&key);
                }
                Ok(columns) => cache.keep(key, Arc::new(columns)),
                Err(error) => {
                    tracing::warn!(%error, %table, "reading a business table's columns");
                    if let Some(read) = cache.lock().get_mut(&key) {
                        read.rereading = false;
                    }
                }
            }
        });
    }
}

/// The table of `process_type`: the definition's when it declares one (a different
/// `explicit` one is refused), else `explicit`. `type_field` names where the request
/// holds the type, for the message when it has none.
pub(crate) fn choose_table(
    type_field: &str,
    process_type: Option<&str>,
    declared: Option<&GlobalAttributesDefinition>,
    explicit: Option<&BusinessTableRef>,
) -> Result<BusinessTableRef, String> {
    let Some(process_type) = process_type else {
        return Err(format!(
            "{type_field}: is needed to compare columns of the business row (the table is \
             the type's)"
        ));
    };
    match (declared, explicit) {
        (Some(declared), Some(explicit))
            if explicit.table_name != declared.table_name
                || explicit.primary_key_column != declared.primary_key_column =>
        {
            Err(format!(
                "businessTable: process type '{process_type}' is registered with table '{}' \
                 keyed by '{}'; leave businessTable out or name the same",
                declared.table_name, declared.primary_key_column
            ))
        }
        (Some(declared), _) => Ok(BusinessTableRef {
            table_name: declared.table_name.clone(),
            primary_key_column: declared.primary_key_column.clone(),
        }),
        (None, Some(explicit)) => {
            split_table_name("businessTable.tableName", &explicit.table_name)
                .map_err(|e| e.to_string())?;
            check_identifier(
                "businessTable.primaryKeyColumn",
                &explicit.primary_key_column,
            )
            .map_err(|e| e.to_string())?;
            Ok(explicit.clone())
        }
        (None, None) => Err(format!(
            "businessTable: process type '{process_type}' has no registered definition \
             declaring its table (globalAttributes); pass businessTable with its tableName \
             and primaryKeyColumn"
        )),
    }
}

impl Definitions {
    /// The business table of a query when it `needs` one (it compares or groups by
    /// columns), with its columns; a 400 naming the field when none is known.
    pub(crate) async fn query_table(
        &self,
        needs: bool,
        type_field: &str,
        process_type: Option<&str>,
        explicit: Option<&BusinessTableRef>,
    ) -> Result<Option<QueryTable>, ApiError> {
        if !needs {
            return Ok(None);
        }
        let snapshot = self.snapshot().await?;
        let declared = process_type
            .and_then(|t| snapshot.get(t))
            .and_then(|compiled| compiled.definition().global_attributes.as_ref());
        let chosen = choose_table(type_field, process_type, declared, explicit)
            .map_err(ApiError::invalid)?;
        let columns = self.columns_of(&chosen.table_name).await?;
        if columns.is_empty() {
            return Err(ApiError::invalid(format!(
                "businessTable.tableName: table '{}' does not exist (or has no columns this \
                 service's database user can see)",
                chosen.table_name
            )));
        }
        Ok(Some(QueryTable {
            table_name: chosen.table_name,
            key_column: chosen.primary_key_column,
            columns: columns.as_ref().clone(),
            names_ignore_case: self.column_names_ignore_case(),
        }))
    }

    /// `table_name`'s columns, from the cache while fresh or read again in the
    /// background; a missing table is not kept.
    pub(super) async fn columns_of(
        &self,
        table_name: &str,
    ) -> Result<Arc<Vec<TableColumn>>, ApiError> {
        let parts = split_table_name("businessTable.tableName", table_name)
            .map_err(|e| ApiError::invalid(e.to_string()))?;
        let (schema, table) = match parts.as_slice() {
            [schema, table] => (Some(*schema), *table),
            [table] => (None, *table),
            _ => unreachable!("split_table_name gives one or two parts"),
        };
        let key = format!("{}.{table}", schema.unwrap_or_default());
        let known = self
            .columns
            .lock()
            .get(&key)
            .map(|read| (read.read_at.elapsed(), read.columns.clone()));
        match known {
            Some((age, columns)) if age < COLUMNS_TTL => return Ok(columns),
            Some((age, columns)) if age < COLUMNS_MAX_STALE => {
                self.columns.reread_in_background(
                    self.registry().clone(),
                    key,
                    schema.map(str::to_string),
                    table.to_string(),
                );
                return Ok(columns);
            }
            _ => {}
        }
        let columns = Arc::new(self.registry().table_columns(schema, table).await?);
        if !columns.is_empty() {
            self.columns.keep(key, columns.clone());
        }
        Ok(columns)
    }

    /// Makes the known columns of every table `age` old.
    #[cfg(test)]
    pub(super) fn age_columns(&self, age: Duration) {
        for read in self.columns.lock().values_mut() {
            read.read_at = Instant::now() - age;
        }
    }

    /// Whether a background read of some table's columns is under way.
    #[cfg(test)]
    pub(super) fn rereading_columns(&self) -> bool {
        self.columns.lock().values().any(|read| read.rereading)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn declared() -> GlobalAttributesDefinition {
        serde_json::from_value(serde_json::json!({
            "tableName": "orders", "primaryKeyColumn": "order_id"
        }))
        .unwrap()
    }

    fn explicit(table: &str, key: &str) -> BusinessTableRef {
        BusinessTableRef {
            table_name: table.into(),
            primary_key_column: key.into(),
        }
    }

    #[test]
    fn the_definition_is_preferred_then_the_request() {
        let declared = declared();
        let chosen = choose_table("processType", Some("Order"), Some(&declared), None).unwrap();
        assert_eq!(chosen, explicit("orders", "order_id"));
        let same = explicit("orders", "order_id");
        assert!(choose_table("processType", Some("Order"), Some(&declared), Some(&same)).is_ok());
        let other = explicit("invoices", "id");
        let refused =
            choose_table("processType", Some("Order"), Some(&declared), Some(&other)).unwrap_err();
        assert!(refused.starts_with("businessTable:"), "{refused}");
        let chosen = choose_table("processType", Some("Order"), None, Some(&other)).unwrap();
        assert_eq!(chosen, other);
    }

    #[test]
    fn a_query_without_a_known_table_is_refused() {
        let refused = choose_table("filter.processType", None, None, None).unwrap_err();
        assert!(refused.starts_with("filter.processType:"), "{refused}");
        let refused = choose_table("processType", Some("Order"), None, None).unwrap_err();
        assert!(refused.contains("pass businessTable"), "{refused}");
        let hostile = explicit("orders; DROP TABLE x", "id");
        assert!(choose_table("processType", Some("Order"), None, Some(&hostile)).is_err());
        let hostile = explicit("orders", "id\"");
        assert!(choose_table("processType", Some("Order"), None, Some(&hostile)).is_err());
    }
}
