//! Options of a typed process start, and how they become a start request.

use std::time::Duration;

use serde::Serialize;
use xdb_protocol::{
    EncodedObject, GlobalAttributeConfig, GlobalAttributeValue, LocalAttributeValue,
    ProcessExecutionStartRequest, ProcessIdReusePolicy, ProcessStartConfig,
};

use crate::encoding;
use crate::error::XdbError;
use crate::registry::ProcessDefinition;

/// Options of [`crate::Client::start_process`].
///
/// Values are encoded as they are added; an encoding failure is kept and reported by the
/// start call, so the builder chains without `?`.
#[derive(Debug, Clone, Default)]
pub struct ProcessStartOptions {
    /// Selects the execution's row in the global-attribute table; required when the
    /// process declares a table.
    pub global_attribute_pk_value: Option<serde_json::Value>,
    /// Columns upserted into that row in the start transaction.
    pub initial_global_attributes: Vec<GlobalAttributeValue>,
    /// Local attributes written in the start transaction.
    pub initial_local_attributes: Vec<LocalAttributeValue>,
    /// The whole execution times out after this; `None` means never.
    pub timeout: Option<Duration>,
    pub id_reuse_policy: Option<ProcessIdReusePolicy>,
    /// The start's `requestId`; `None`: a fresh one for each call.
    pub request_id: Option<String>,
    /// See [`ProcessStartOptions::concurrency_key`].
    pub concurrency_key: Option<String>,
    /// See [`ProcessStartOptions::priority`].
    pub priority: Option<u8>,
    /// See [`ProcessStartOptions::fairness_key`].
    pub fairness_key: Option<String>,
    /// See [`ProcessStartOptions::fairness_weight`].
    pub fairness_weight: Option<u32>,
    encode_error: Option<XdbError>,
}

impl ProcessStartOptions {
    pub fn new() -> Self {
        Self::default()
    }

    /// Sets the primary-key value of the execution's global-attribute row.
    pub fn global_attribute_pk_value(mut self, value: impl Serialize) -> Self {
        match encoding::to_json_value("global attribute primary key value", &value) {
            Ok(v) => self.global_attribute_pk_value = Some(v),
            Err(e) => self.keep_error(e),
        }
        self
    }

    /// Adds an initial write of global attribute `column`.
    pub fn initial_global_attribute(
        mut self,
        column: impl Into<String>,
        value: impl Serialize,
    ) -> Self {
        let column = column.into();
        match encoding::to_json_value(&format!("global attribute {column:?}"), &value) {
            Ok(value) => self
                .initial_global_attributes
                .push(GlobalAttributeValue { column, value }),
            Err(e) => self.keep_error(e),
        }
        self
    }

    /// Adds an initial write of local attribute `key`.
    pub fn initial_local_attribute(
        mut self,
        key: impl Into<String>,
        value: impl Serialize,
    ) -> Self {
        let key = key.into();
        match encoding::encode(&format!("local attribute {key:?}"), &value) {
            Ok(value) => self
                .initial_local_attributes
                .push(LocalAttributeValue { key, value }),
            Err(e) => self.keep_error(e),
        }
        self
    }

    /// Times the whole execution out after `timeout` (rounded up to whole seconds).
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = Some(timeout);
        self
    }

    pub fn id_reuse_policy(mut self, policy: ProcessIdReusePolicy) -> Self {
        self.id_reuse_policy = Some(policy);
        self
    }

    /// Sends the start with this request id (1 to 200 letters, digits and `-_.:`): the
    /// same start sent again with it, even by another process of the caller, answers the
    /// first start's execution instead of starting another (within the service's
    /// retention, 24 hours by default).
    pub fn request_id(mut self, id: impl Into<String>) -> Self {
        self.request_id = Some(id.into());
        self
    }

    /// Counts the execution under this key for its type's `max_running_executions` (a
    /// customer's id, say): at most so many of the key's executions run at once, the
    /// others wait `PENDING` in start order. Ignored by a type without that limit.
    pub fn concurrency_key(mut self, key: impl Into<String>) -> Self {
        self.concurrency_key = Some(key.into());
        self
    }

    /// How soon the execution's tasks are claimed when tasks wait: 1 (first) to 5
    /// (last); unset: 3. The service refuses another value (400).
    pub fn priority(mut self, priority: u8) -> Self {
        self.priority = Some(priority);
        self
    }

    /// Shares the execution's priority by this key (a tenant, a customer's id; 1 to 255
    /// characters, no control characters): when tasks of several keys wait at one
    /// priority, claims serve each key in turn, each taking up to its weight of tasks a
    /// turn, so one key's backlog never starves another's next task. Every task of the
    /// execution inherits it. Unset: the key every start without one shares. The service
    /// refuses an empty, longer or control-character key (400).
    pub fn fairness_key(mut self, key: impl Into<String>) -> Self {
        self.fairness_key = Some(key.into());
        self
    }

    /// How many tasks the [`fairness_key`](Self::fairness_key) takes in each turn: 1 to
    /// 1,000 ([`xdb_protocol::fairness::MAX_WEIGHT`]); unset: 1. Needs a fairness key;
    /// the service refuses a weight without one, or out of bounds (400).
    pub fn fairness_weight(mut self, weight: u32) -> Self {
        self.fairness_weight = Some(weight);
        self
    }

    fn keep_error(&mut self, err: XdbError) {
        self.encode_error.get_or_insert(err);
    }
}

/// Builds the start request for `definition`: process type, starting state with its
/// config, and the global-attribute table from the persistence schema. Checks the
/// options against the schema so mistakes fail here rather than in the service.
pub fn build_start_request(
    definition: &ProcessDefinition,
    process_id: &str,
    worker_url: &str,
    start_state_input: Option<EncodedObject>,
    options: ProcessStartOptions,
) -> Result<ProcessExecutionStartRequest, XdbError> {
    if let Some(err) = options.encode_error {
        return Err(err);
    }
    let schema = definition.persistence_schema();
    let undeclared = |kind: &'static str, name: &str| XdbError::Undeclared {
        kind,
        name: name.to_string(),
        process_type: definition.process_type().to_string(),
    };
    for write in &options.initial_global_attributes {
        let is_pk = schema
            .table()
            .is_some_and(|t| t.primary_key_column == write.column);
        if !is_pk && !schema.declares_global_attribute(&write.column) {
            return Err(undeclared("global attribute", &write.column));
        }
    }
    for write in &options.initial_local_attributes {
        if !schema.declares_local_attribute(&write.key) {
            return Err(undeclared("local attribute", &write.key));
        }
    }
    let global_attribute_config = match (schema.table(), options.global_attribute_pk_value) {
        (Some(table), Some(pk)) => Some(GlobalAttributeConfig {
            table_name: table.table_name.clone(),
            primary_key: GlobalAttributeValue {
                column: table.primary_key_column.clone(),
                value: pk,
            },
            initial_write: options.initial_global_attributes,
        }),
        (Some(_), None) => {
            return Err(XdbError::NotAllowed(format!(
                "process {} keeps global attributes in a table: global_attribute_pk_value is required",
                definition.process_type()
            )))
        }
        (None, Some(_)) => {
            return Err(XdbError::NotAllowed(format!(
                "process {} declares no global attribute table: global_attribute_pk_value must not be set",
                definition.process_type()
            )))
        }
        (None, None) => None,
    };
    let (start_state_id, start_state_config) = match definition.starting_state_id() {
        Some(id) => (Some(id.to_string()), Some(definition.state_config(id)?)),
        None if start_state_input.is_some() => {
            return Err(XdbError::NotAllowed(format!(
                "process {} has no starting state to take an input",
                definition.process_type()
            )))
        }
        None => (None, None),
    };
    let timeout_seconds = options.timeout.map(|t| {
        let secs = t.as_secs() + u64::from(t.subsec_nanos() > 0);
        u32::try_from(secs).unwrap_or(u32::MAX)
    });
    Ok(ProcessExecutionStartRequest {
        request_id: options.request_id,
        process_id: process_id.to_string(),
        process_type: definition.process_type().to_string(),
        worker_url: worker_url.to_string(),
        start_state_id,
        start_state_input,
        start_state_config,
        process_start_config: Some(ProcessStartConfig {
            timeout_seconds,
            id_reuse_policy: options.id_reuse_policy,
            global_attribute_config,
            local_attribute_initial_write: options.initial_local_attributes,
            concurrency_key: options.concurrency_key,
            priority: options.priority,
            fairness_key: options.fairness_key,
            fairness_weight: options.fairness_weight,
        }),
    })
}
