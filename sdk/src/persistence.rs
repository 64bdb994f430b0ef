//! Attribute reads and writes for one call of user code.

use std::collections::HashMap;
use std::sync::Arc;

use serde::de::DeserializeOwned;
use serde::Serialize;
use xdb_protocol::{
    AttributeWrites, EncodedObject, GlobalAttributeValue, LoadedAttributes, LocalAttributeValue,
};

use crate::encoding;
use crate::error::XdbError;
use crate::schema::PersistenceSchema;

/// The attributes loaded for a state API or RPC call, and the writes it makes.
///
/// Reads see the call's own earlier writes. Writes are sent back in the response and XDB
/// applies them in the transaction that records the call's outcome, so they happen only
/// if the outcome is recorded.
#[derive(Debug)]
pub struct Persistence {
    process_type: String,
    schema: Arc<PersistenceSchema>,
    globals: HashMap<String, serde_json::Value>,
    locals: HashMap<String, EncodedObject>,
    global_writes: Vec<GlobalAttributeValue>,
    local_writes: Vec<LocalAttributeValue>,
}

impl Persistence {
    /// Wraps the attributes XDB loaded for a call.
    pub fn new(
        process_type: impl Into<String>,
        schema: Arc<PersistenceSchema>,
        loaded: LoadedAttributes,
    ) -> Self {
        Self {
            process_type: process_type.into(),
            schema,
            globals: loaded
                .global_attributes
                .into_iter()
                .map(|a| (a.column, a.value))
                .collect(),
            locals: loaded
                .local_attributes
                .into_iter()
                .map(|a| (a.key, a.value))
                .collect(),
            global_writes: Vec::new(),
            local_writes: Vec::new(),
        }
    }

    /// Reads global attribute `column` as `T`; `None` when the column was not loaded or is
    /// SQL `NULL`.
    pub fn get_global_attribute<T: DeserializeOwned>(
        &self,
        column: &str,
    ) -> Result<Option<T>, XdbError> {
        match self.globals.get(column) {
            None | Some(serde_json::Value::Null) => Ok(None),
            Some(value) => {
                encoding::from_json_value(&format!("global attribute {column:?}"), value).map(Some)
            }
        }
    }

    /// The raw JSON of global attribute `column`, if loaded.
    pub fn global_attribute_value(&self, column: &str) -> Option<&serde_json::Value> {
        self.globals.get(column)
    }

    /// Writes `value` to global attribute `column` (a declared column of the process's row).
    pub fn set_global_attribute(
        &mut self,
        column: &str,
        value: impl Serialize,
    ) -> Result<(), XdbError> {
        if self.schema.table().is_none() || !self.schema.declares_global_attribute(column) {
            return Err(self.undeclared("global attribute", column));
        }
        let value = encoding::to_json_value(&format!("global attribute {column:?}"), &value)?;
        self.globals.insert(column.to_string(), value.clone());
        upsert(
            &mut self.global_writes,
            |w| w.column == column,
            GlobalAttributeValue {
                column: column.to_string(),
                value,
            },
        );
        Ok(())
    }

    /// Reads local attribute `key` as `T`; `None` when not loaded or never written.
    pub fn get_local_attribute<T: DeserializeOwned>(
        &self,
        key: &str,
    ) -> Result<Option<T>, XdbError> {
        match self.locals.get(key) {
            None => Ok(None),
            Some(value) => {
                encoding::decode(&format!("local attribute {key:?}"), Some(value)).map(Some)
            }
        }
    }

    /// Writes `value` to local attribute `key` (a declared key).
    pub fn set_local_attribute(
        &mut self,
        key: &str,
        value: impl Serialize,
    ) -> Result<(), XdbError> {
        if !self.schema.declares_local_attribute(key) {
            return Err(self.undeclared("local attribute", key));
        }
        let value = encoding::encode(&format!("local attribute {key:?}"), &value)?;
        self.locals.insert(key.to_string(), value.clone());
        upsert(
            &mut self.local_writes,
            |w| w.key == key,
            LocalAttributeValue {
                key: key.to_string(),
                value,
            },
        );
        Ok(())
    }

    /// The writes made so far, in first-write order, last value winning.
    pub fn writes(&self) -> AttributeWrites {
        AttributeWrites {
            global_attributes: self.global_writes.clone(),
            local_attributes: self.local_writes.clone(),
        }
    }

    pub(crate) fn into_writes(self) -> AttributeWrites {
        AttributeWrites {
            global_attributes: self.global_writes,
            local_attributes: self.local_writes,
        }
    }

    fn undeclared(&self, kind: &'static str, name: &str) -> XdbError {
        XdbError::Undeclared {
            kind,
            name: name.to_string(),
            process_type: self.process_type.clone(),
        }
    }
}

/// Replaces the entry `matches` finds, or appends: one write per column or key keeps the
/// response small and its meaning unambiguous.
fn upsert<T>(items: &mut Vec<T>, matches: impl Fn(&T) -> bool, item: T) {
    match items.iter_mut().find(|i| matches(i)) {
        Some(slot) => *slot = item,
        None => items.push(item),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn persistence() -> Persistence {
        let schema = PersistenceSchema::with_table("user", "user_id")
            .global_attribute("status")
            .global_attribute("form")
            .local_attribute("attempts");
        Persistence::new(
            "P",
            Arc::new(schema),
            LoadedAttributes {
                global_attributes: vec![
                    GlobalAttributeValue {
                        column: "status".into(),
                        value: json!("waiting"),
                    },
                    GlobalAttributeValue {
                        column: "form".into(),
                        value: serde_json::Value::Null,
                    },
                ],
                local_attributes: vec![LocalAttributeValue {
                    key: "attempts".into(),
                    value: encoding::encode("a", &2).unwrap(),
                }],
            },
        )
    }

    #[test]
    fn reads_loaded_values_and_null_as_none() {
        let p = persistence();
        assert_eq!(
            p.get_global_attribute::<String>("status").unwrap(),
            Some("waiting".to_string())
        );
        assert_eq!(p.get_global_attribute::<String>("form").unwrap(), None);
        assert_eq!(p.get_global_attribute::<String>("missing").unwrap(), None);
        assert_eq!(p.get_local_attribute::<u32>("attempts").unwrap(), Some(2));
        assert!(p.get_global_attribute::<u32>("status").is_err());
    }

    #[test]
    fn writes_are_read_back_and_collected_once_per_name() {
        let mut p = persistence();
        p.set_global_attribute("status", "verified").unwrap();
        p.set_global_attribute("form", json!({"email": "a@b.c"}))
            .unwrap();
        p.set_global_attribute("status", "waiting-again").unwrap();
        p.set_local_attribute("attempts", 3).unwrap();
        assert_eq!(
            p.get_global_attribute::<String>("status")
                .unwrap()
                .as_deref(),
            Some("waiting-again")
        );
        assert_eq!(p.get_local_attribute::<u32>("attempts").unwrap(), Some(3));
        let writes = p.into_writes();
        assert_eq!(writes.global_attributes.len(), 2);
        assert_eq!(writes.global_attributes[0].column, "status");
        assert_eq!(writes.global_attributes[0].value, json!("waiting-again"));
        assert_eq!(writes.local_attributes[0].value.data, "3");
    }

    #[test]
    fn refuses_undeclared_names() {
        let mut p = persistence();
        assert!(matches!(
            p.set_global_attribute("stauts", "x"),
            Err(XdbError::Undeclared {
                kind: "global attribute",
                ..
            })
        ));
        assert!(matches!(
            p.set_local_attribute("nope", 1),
            Err(XdbError::Undeclared {
                kind: "local attribute",
                ..
            })
        ));
        assert!(p.writes().global_attributes.is_empty());
    }
}
