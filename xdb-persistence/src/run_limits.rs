//! What each process type's limits say about its starts, as this instance knows it:
//! `maxRunningExecutions` and the type's `priority`, read from the flow limits at most
//! once a second, so a start of an unlimited type costs no query. A limit set or cleared
//! applies to starts within about a second (at once through the store that made the
//! change).

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, RwLock};
use std::time::{Duration, Instant};

use xdb_engine::validation::{check_id, ValidationError};
use xdb_protocol::{FlowLimits, ProcessExecutionStartRequest};

use crate::columns::ColumnReader;
use crate::flow_limit_store::{effective, WHOLE_TYPE};
use crate::sql::SqlConn;
use crate::tables::{Dialect, Lane};
use crate::StoreError;

/// How old the known limits may be before they are read again.
const MAX_AGE: Duration = Duration::from_secs(1);

/// A type's running-execution limit and what keys it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct RunLimit {
    pub max: u32,
    /// The global attribute whose value at start is the key of a start naming none.
    pub key_attribute: Option<String>,
}

/// What the types' limits say about their starts.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct StartRules {
    /// The running-execution limits, by type.
    pub run_limits: HashMap<String, RunLimit>,
    /// The priority of a type's starts that name none, by type (where one is set).
    pub priorities: HashMap<String, u8>,
}

/// [`StartRules`] as read, shared.
pub(crate) type LimitsByType = Arc<StartRules>;

/// The limits last read, shared by a store's clones.
#[derive(Default)]
pub(crate) struct RunLimits {
    known: RwLock<Option<(Instant, LimitsByType)>>,
    /// One reader at a time.
    reading: tokio::sync::Mutex<()>,
    /// Counts [`RunLimits::forget`]s: a reading that began before one keeps nothing.
    changes: AtomicU64,
}

impl RunLimits {
    /// Every type's start rules, at most about [`MAX_AGE`] old. Once they are known,
    /// no caller waits for another's reading: while one reads them again, the others go
    /// on with what is known (under load a reading may wait for a connection, and every
    /// start would wait behind it).
    pub(crate) async fn current<D: Dialect>(&self, store: &D) -> Result<LimitsByType, StoreError> {
        let known = self.known.read().expect("run limits lock").clone();
        if let Some((read_at, limits)) = known {
            if read_at.elapsed() < MAX_AGE {
                return Ok(limits);
            }
            return match self.reading.try_lock() {
                Ok(_reading) => self.read(store).await,
                Err(_) => Ok(limits),
            };
        }
        // Nothing known (the first start, or the first after a change): wait for it.
        let _reading = self.reading.lock().await;
        if let Some(fresh) = self.fresh() {
            return Ok(fresh);
        }
        self.read(store).await
    }

    /// Reads the limits and keeps them, unless they changed meanwhile.
    async fn read<D: Dialect>(&self, store: &D) -> Result<LimitsByType, StoreError> {
        let changes = self.changes.load(Ordering::SeqCst);
        let read = Arc::new(read_limits(store).await?);
        let mut known = self.known.write().expect("run limits lock");
        if self.changes.load(Ordering::SeqCst) == changes {
            *known = Some((Instant::now(), read.clone()));
        }
        Ok(read)
    }

    /// Drops what was read, so that the next start reads the limits again: after a change
    /// made through this store.
    pub(crate) fn forget(&self) {
        let mut known = self.known.write().expect("run limits lock");
        self.changes.fetch_add(1, Ordering::SeqCst);
        *known = None;
    }

    fn fresh(&self) -> Option<LimitsByType> {
        let known = self.known.read().expect("run limits lock");
        known
            .as_ref()
            .filter(|(read_at, _)| read_at.elapsed() < MAX_AGE)
            .map(|(_, limits)| limits.clone())
    }
}

/// Every type's start rules, read now (admissions take these: they must not act on a
/// limit another instance has just set).
pub(crate) async fn read_limits<D: Dialect>(store: &D) -> Result<StartRules, StoreError> {
    let mut session = store.session(Lane::Main).await?;
    let rows = session
        .query(
            "SELECT process_type, declared, CASE WHEN override_set THEN 1 ELSE 0 END, \
               override_limits FROM xdb_sys_flow_limits WHERE state_id = ?",
            &[WHOLE_TYPE.into()],
        )
        .await?;
    let mut rules = StartRules::default();
    for row in &rows {
        let mut columns = D::Session::columns(row, 0);
        let process_type = columns.text()?;
        let declared = parse(columns.optional_text()?)?;
        let override_set = columns.int()? != 0;
        let override_text = parse(columns.optional_text()?)?;
        let override_limits = override_set.then(|| override_text.unwrap_or_default());
        let effective = effective(&declared, &override_limits);
        if let Some(priority) = effective.priority {
            rules.priorities.insert(process_type.clone(), priority);
        }
        if let Some(max) = effective.max_running_executions {
            let key_attribute = effective.concurrency_key_attribute;
            rules
                .run_limits
                .insert(process_type, RunLimit { max, key_attribute });
        }
    }
    Ok(rules)
}

/// The concurrency key `request` is counted under by `limit`: the key it names, else the
/// value it writes for the limit's key attribute (as the row's primary key or in its
/// initial write), else the key every start without one shares (`""`). A start of a
/// type keyed by an attribute that writes no value for it is refused.
pub(crate) fn key_of(
    request: &ProcessExecutionStartRequest,
    limit: &RunLimit,
) -> Result<String, ValidationError> {
    const FIELD: &str = "processStartConfig.concurrencyKey";
    let config = request.process_start_config.as_ref();
    if let Some(key) = config.and_then(|c| c.concurrency_key.as_ref()) {
        return Ok(key.clone());
    }
    let Some(attribute) = &limit.key_attribute else {
        return Ok(String::new());
    };
    let globals = config.and_then(|c| c.global_attribute_config.as_ref());
    let written = globals.and_then(|g| {
        std::iter::once(&g.primary_key)
            .chain(&g.initial_write)
            .find(|w| w.column.eq_ignore_ascii_case(attribute))
    });
    let missing = || {
        ValidationError::new(
            FIELD,
            format!(
                "the type counts its running executions per global attribute '{attribute}' \
                 (concurrencyKeyAttribute): write a value for it in the start, or name a \
                 concurrencyKey"
            ),
        )
    };
    let key = match written.map(|w| &w.value) {
        None | Some(serde_json::Value::Null) => return Err(missing()),
        Some(serde_json::Value::String(text)) => text.clone(),
        Some(other) => other.to_string(),
    };
    check_id(FIELD, &key)?;
    Ok(key)
}

fn parse(text: Option<String>) -> Result<Option<FlowLimits>, StoreError> {
    text.map(|text| {
        serde_json::from_str(&text)
            .map_err(|e| StoreError::Database(format!("unreadable flow limits {text:?}: {e}")))
    })
    .transpose()
}

#[cfg(test)]
mod tests {
    use serde_json::json;
    use xdb_protocol::{GlobalAttributeConfig, GlobalAttributeValue, ProcessStartConfig};

    use super::*;

    fn start(
        key: Option<&str>,
        pk: (&str, serde_json::Value),
        writes: &[(&str, serde_json::Value)],
    ) -> ProcessExecutionStartRequest {
        ProcessExecutionStartRequest {
            request_id: None,
            process_id: "p".into(),
            process_type: "T".into(),
            worker_url: String::new(),
            start_state_id: None,
            start_state_input: None,
            start_state_config: None,
            process_start_config: Some(ProcessStartConfig {
                concurrency_key: key.map(String::from),
                global_attribute_config: Some(GlobalAttributeConfig {
                    table_name: "orders".into(),
                    primary_key: GlobalAttributeValue {
                        column: pk.0.into(),
                        value: pk.1,
                    },
                    initial_write: writes
                        .iter()
                        .map(|(column, value)| GlobalAttributeValue {
                            column: (*column).into(),
                            value: value.clone(),
                        })
                        .collect(),
                }),
                ..Default::default()
            }),
        }
    }

    fn keyed_by(attribute: Option<&str>) -> RunLimit {
        RunLimit {
            max: 2,
            key_attribute: attribute.map(String::from),
        }
    }

    #[test]
    fn a_named_key_wins_and_no_attribute_means_the_shared_key() {
        let request = start(
            Some("k1"),
            ("id", json!(1)),
            &[("customer_id", json!("c9"))],
        );
        assert_eq!(
            key_of(&request, &keyed_by(Some("customer_id"))).unwrap(),
            "k1"
        );
        let request = start(None, ("id", json!(1)), &[("customer_id", json!("c9"))]);
        assert_eq!(key_of(&request, &keyed_by(None)).unwrap(), "");
    }

    #[test]
    fn the_attribute_is_read_from_the_initial_write_or_the_primary_key() {
        let request = start(None, ("id", json!(1)), &[("Customer_Id", json!("c9"))]);
        assert_eq!(
            key_of(&request, &keyed_by(Some("customer_id"))).unwrap(),
            "c9"
        );
        let request = start(None, ("id", json!(1)), &[("customer_id", json!(42))]);
        assert_eq!(
            key_of(&request, &keyed_by(Some("customer_id"))).unwrap(),
            "42"
        );
        let request = start(None, ("customer_id", json!("c3")), &[]);
        assert_eq!(
            key_of(&request, &keyed_by(Some("customer_id"))).unwrap(),
            "c3"
        );
    }

    #[test]
    fn a_start_writing_no_value_for_the_attribute_is_refused_naming_it() {
        for writes in [vec![], vec![("customer_id", json!(null))]] {
            let request = start(None, ("id", json!(1)), &writes);
            let error = key_of(&request, &keyed_by(Some("customer_id"))).unwrap_err();
            assert_eq!(error.field, "processStartConfig.concurrencyKey");
            assert!(error.problem.contains("'customer_id'"), "{}", error.problem);
        }
        let long = "x".repeat(300);
        let request = start(None, ("id", json!(1)), &[("customer_id", json!(long))]);
        assert!(key_of(&request, &keyed_by(Some("customer_id"))).is_err());
    }
}
