//! What each process type's limits say about its starts, as this instance knows it:
//! `maxRunningExecutions`, the type's `priority` and fairness, read from the flow limits
//! at most once a second, so a start of an unlimited type costs no query. A limit set or cleared
//! applies to starts within about a second (at once through the store that made the
//! change).

use std::borrow::Cow;
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, RwLock};
use std::time::{Duration, Instant};

use xdb_engine::validation::{check_id, ValidationError};
use xdb_protocol::ProcessExecutionStartRequest;

use crate::columns::ColumnReader;
use crate::flow_limit_store::{effective, WHOLE_TYPE};
use crate::sql::SqlConn;
use crate::sql_tables::flow_limit_rows::from_text;
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
    /// How a type's starts that name no fairness key or weight get one (where set).
    pub fairness: HashMap<String, TypeFairness>,
}

/// A type's `fairnessKeyAttribute` and `fairnessWeight`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct TypeFairness {
    pub key_attribute: Option<String>,
    pub weight: Option<u32>,
}

impl StartRules {
    /// `request` with what its type declares for what it leaves unnamed: the priority,
    /// the fairness key (the value it writes for the key attribute) and the weight of a
    /// keyed start. Borrowed when the type declares nothing that applies.
    pub(crate) fn apply<'a>(
        &self,
        request: &'a ProcessExecutionStartRequest,
    ) -> Result<Cow<'a, ProcessExecutionStartRequest>, ValidationError> {
        let config = request.process_start_config.as_ref();
        let priority = self
            .priorities
            .get(&request.process_type)
            .filter(|_| config.is_none_or(|c| c.priority.is_none()));
        let fairness = match self.fairness.get(&request.process_type) {
            Some(rule) => fairness_of(request, rule)?,
            None => None,
        };
        if priority.is_none() && fairness.is_none() {
            return Ok(Cow::Borrowed(request));
        }
        let mut request = request.clone();
        let config = request
            .process_start_config
            .get_or_insert_with(Default::default);
        if let Some(&priority) = priority {
            config.priority = Some(priority);
        }
        if let Some((key, weight)) = fairness {
            config.fairness_key = Some(key);
            config.fairness_weight = weight;
        }
        Ok(Cow::Owned(request))
    }
}

/// The fairness key and weight `rule` gives `request`, when it gives what the request
/// leaves unnamed: the key it names, else the value it writes for the key attribute
/// (none: no key), and the weight it names, else the type's.
fn fairness_of(
    request: &ProcessExecutionStartRequest,
    rule: &TypeFairness,
) -> Result<Option<(String, Option<u32>)>, ValidationError> {
    const FIELD: &str = "processStartConfig.fairnessKey";
    let config = request.process_start_config.as_ref();
    let named_weight = config.and_then(|c| c.fairness_weight);
    let key = match config.and_then(|c| c.fairness_key.clone()) {
        Some(named) => named,
        None => {
            let Some(attribute) = &rule.key_attribute else {
                return Ok(None);
            };
            let Some(key) = written_value(request, attribute).and_then(value_as_key) else {
                return Ok(None);
            };
            check_id(FIELD, &key).map_err(|refused| {
                ValidationError::new(
                    FIELD,
                    format!(
                        "the value written for global attribute '{attribute}' \
                         (fairnessKeyAttribute) is the key: it {}",
                        refused.problem
                    ),
                )
            })?;
            key
        }
    };
    let derived = config.is_none_or(|c| c.fairness_key.is_none());
    let weight = named_weight.or(rule.weight);
    if !derived && weight == named_weight {
        return Ok(None);
    }
    Ok(Some((key, weight)))
}

/// The value `request` writes for the business row's column `attribute`: as the row's
/// primary key or in its initial write.
fn written_value<'a>(
    request: &'a ProcessExecutionStartRequest,
    attribute: &str,
) -> Option<&'a serde_json::Value> {
    let globals = request
        .process_start_config
        .as_ref()?
        .global_attribute_config
        .as_ref()?;
    std::iter::once(&globals.primary_key)
        .chain(&globals.initial_write)
        .find(|w| w.column.eq_ignore_ascii_case(attribute))
        .map(|w| &w.value)
}

/// A written value as a key: text as it is, anything else as its JSON; null is none.
fn value_as_key(value: &serde_json::Value) -> Option<String> {
    match value {
        serde_json::Value::Null => None,
        serde_json::Value::String(text) => Some(text.clone()),
        other => Some(other.to_string()),
    }
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
        let declared = from_text(columns.optional_text()?)?;
        let override_set = columns.int()? != 0;
        let override_text = from_text(columns.optional_text()?)?;
        let override_limits = override_set.then(|| override_text.unwrap_or_default());
        let effective = effective(&declared, &override_limits);
        if let Some(priority) = effective.priority {
            rules.priorities.insert(process_type.clone(), priority);
        }
        if effective.fairness_key_attribute.is_some() || effective.fairness_weight.is_some() {
            rules.fairness.insert(
                process_type.clone(),
                TypeFairness {
                    key_attribute: effective.fairness_key_attribute.clone(),
                    weight: effective.fairness_weight,
                },
            );
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
    let key = written_value(request, attribute)
        .and_then(value_as_key)
        .ok_or_else(missing)?;
    check_id(FIELD, &key)?;
    Ok(key)
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

    fn fairness_rules(attribute: Option<&str>, weight: Option<u32>) -> StartRules {
        let mut rules = StartRules::default();
        rules.fairness.insert(
            "T".into(),
            TypeFairness {
                key_attribute: attribute.map(String::from),
                weight,
            },
        );
        rules
    }

    fn fairness(request: &ProcessExecutionStartRequest) -> (Option<String>, Option<u32>) {
        let config = request.process_start_config.clone().unwrap_or_default();
        (config.fairness_key, config.fairness_weight)
    }

    #[test]
    fn a_type_s_fairness_attribute_keys_starts_that_name_no_key() {
        let rules = fairness_rules(Some("tenant_id"), Some(3));
        let request = start(None, ("id", json!(1)), &[("Tenant_Id", json!("acme"))]);
        let applied = rules.apply(&request).unwrap();
        assert_eq!(fairness(&applied), (Some("acme".into()), Some(3)));
        let request = start(None, ("tenant_id", json!(7)), &[]);
        let applied = rules.apply(&request).unwrap();
        assert_eq!(fairness(&applied), (Some("7".into()), Some(3)));
    }

    #[test]
    fn a_named_key_and_weight_win_over_the_type_s() {
        let rules = fairness_rules(Some("tenant_id"), Some(3));
        let mut request = start(None, ("id", json!(1)), &[("tenant_id", json!("acme"))]);
        let config = request.process_start_config.as_mut().unwrap();
        config.fairness_key = Some("named".into());
        config.fairness_weight = Some(5);
        assert!(matches!(rules.apply(&request).unwrap(), Cow::Borrowed(_)));
        // A named key without a weight takes the type's weight.
        request
            .process_start_config
            .as_mut()
            .unwrap()
            .fairness_weight = None;
        let applied = rules.apply(&request).unwrap();
        assert_eq!(fairness(&applied), (Some("named".into()), Some(3)));
    }

    #[test]
    fn a_start_writing_no_value_for_the_fairness_attribute_has_no_key() {
        let rules = fairness_rules(Some("tenant_id"), Some(3));
        for writes in [vec![], vec![("tenant_id", json!(null))]] {
            let request = start(None, ("id", json!(1)), &writes);
            let applied = rules.apply(&request).unwrap();
            assert!(matches!(applied, Cow::Borrowed(_)));
            assert_eq!(fairness(&applied), (None, None));
        }
        let long = "x".repeat(300);
        let request = start(None, ("id", json!(1)), &[("tenant_id", json!(long))]);
        let refused = rules.apply(&request).unwrap_err();
        assert_eq!(refused.field, "processStartConfig.fairnessKey");
        assert!(
            refused.problem.contains("'tenant_id'"),
            "{}",
            refused.problem
        );
    }

    #[test]
    fn a_type_s_priority_applies_only_to_starts_naming_none() {
        let mut rules = StartRules::default();
        rules.priorities.insert("T".into(), 1);
        let mut request = start(None, ("id", json!(1)), &[]);
        let applied = rules.apply(&request).unwrap();
        assert_eq!(
            applied.process_start_config.as_ref().unwrap().priority,
            Some(1)
        );
        request.process_start_config.as_mut().unwrap().priority = Some(4);
        assert!(matches!(rules.apply(&request).unwrap(), Cow::Borrowed(_)));
    }
}
