//! What registered definitions say of requests: pure checks, each naming the field and
//! what was expected, so a request they refuse writes nothing.

use std::collections::{HashMap, HashSet};

use serde_json::Value;
use sha2::{Digest, Sha256};
use xdb_engine::validation::{
    check_flow_limits, check_identifier, check_state_flow_limits, split_table_name,
};
use xdb_persistence::{StoredDefinition, TableColumn};
use xdb_protocol::canonical_json::with_sorted_keys;
use xdb_protocol::{
    AsyncStateConfig, AttributeType, EncodedObject, GlobalAttributesDefinition, LocalQueueMessage,
    LockType, ProcessDefinition, ProcessExecutionRpcRequest, ProcessExecutionStartRequest,
};

/// A registered definition with its input schemas compiled.
pub(crate) struct Compiled {
    pub stored: StoredDefinition,
    state_inputs: HashMap<String, jsonschema::Validator>,
    rpc_inputs: HashMap<String, jsonschema::Validator>,
}

impl Compiled {
    /// Compiles `stored`'s input schemas; a schema that does not compile is named.
    pub fn new(stored: StoredDefinition) -> Result<Self, String> {
        let mut state_inputs = HashMap::new();
        for (i, state) in stored.definition.states.iter().enumerate() {
            if let Some(schema) = &state.input_schema {
                let field = format!("states[{i}].inputSchema");
                state_inputs.insert(state.id.clone(), compile(&field, schema)?);
            }
        }
        let mut rpc_inputs = HashMap::new();
        for (i, rpc) in stored.definition.rpcs.iter().enumerate() {
            if let Some(schema) = &rpc.input_schema {
                let field = format!("rpcs[{i}].inputSchema");
                rpc_inputs.insert(rpc.name.clone(), compile(&field, schema)?);
            }
        }
        Ok(Self {
            stored,
            state_inputs,
            rpc_inputs,
        })
    }

    pub fn definition(&self) -> &ProcessDefinition {
        &self.stored.definition
    }
}

fn compile(field: &str, schema: &Value) -> Result<jsonschema::Validator, String> {
    jsonschema::validator_for(schema).map_err(|e| format!("{field}: not a valid JSON Schema: {e}"))
}

/// SHA-256 of `definition`'s JSON with every object's keys sorted, hex: equal content,
/// equal hash, whatever order a worker wrote its schemas' keys in.
pub(crate) fn content_hash(definition: &ProcessDefinition) -> String {
    let value = serde_json::to_value(definition).expect("a definition serializes");
    let canonical = serde_json::to_vec(&with_sorted_keys(value)).expect("JSON serializes");
    hex::encode(Sha256::digest(&canonical))
}

/// The rules a definition keeps by itself: names present and unique, start states and
/// table names valid, input schemas compiling. `field` prefixes every message.
pub(crate) fn check_definition(field: &str, definition: &ProcessDefinition) -> Result<(), String> {
    non_empty(&format!("{field}.processType"), &definition.process_type)?;
    if definition.states.is_empty() {
        return Err(format!("{field}.states: must declare at least one state"));
    }
    let states = unique(
        &format!("{field}.states"),
        definition.states.iter().map(|s| s.id.as_str()),
    )?;
    for (i, start) in definition.start_states.iter().enumerate() {
        if !states.contains(start.as_str()) {
            return Err(format!(
                "{field}.startStates[{i}]: '{start}' is not one of the declared states"
            ));
        }
    }
    unique(
        &format!("{field}.localQueues"),
        definition.local_queues.iter().map(String::as_str),
    )?;
    unique(
        &format!("{field}.rpcs"),
        definition.rpcs.iter().map(|r| r.name.as_str()),
    )?;
    unique(
        &format!("{field}.localAttributes"),
        definition.local_attributes.iter().map(|a| a.name.as_str()),
    )?;
    if let Some(globals) = &definition.global_attributes {
        let at = format!("{field}.globalAttributes");
        split_table_name(&format!("{at}.tableName"), &globals.table_name)
            .map_err(|e| e.to_string())?;
        check_identifier(
            &format!("{at}.primaryKeyColumn"),
            &globals.primary_key_column,
        )
        .map_err(|e| e.to_string())?;
        for (i, column) in globals.columns.iter().enumerate() {
            check_identifier(&format!("{at}.columns[{i}].name"), &column.name)
                .map_err(|e| e.to_string())?;
        }
        unique(
            &format!("{at}.columns"),
            globals.columns.iter().map(|c| c.name.as_str()),
        )?;
    }
    if let Some(limits) = &definition.flow_limits {
        check_flow_limits(&format!("{field}.flowLimits"), limits).map_err(|e| e.to_string())?;
    }
    for (i, state) in definition.states.iter().enumerate() {
        if let Some(limits) = &state.flow_limits {
            check_state_flow_limits(&format!("{field}.states[{i}].flowLimits"), limits)
                .map_err(|e| e.to_string())?;
        }
    }
    let stored = StoredDefinition {
        revision: placeholder_revision(),
        definition: definition.clone(),
    };
    Compiled::new(stored)
        .map(|_| ())
        .map_err(|e| format!("{field}.{e}"))
}

fn placeholder_revision() -> xdb_protocol::DefinitionRevision {
    xdb_protocol::DefinitionRevision {
        process_type: String::new(),
        revision: 0,
        content_hash: String::new(),
        deployment: xdb_protocol::WorkerDeployment {
            name: String::new(),
            version: String::new(),
            worker_url: String::new(),
        },
        registered_at_ms: 0,
    }
}

fn non_empty(field: &str, value: &str) -> Result<(), String> {
    if value.trim().is_empty() {
        return Err(format!("{field}: must not be empty"));
    }
    Ok(())
}

fn unique<'a>(
    field: &str,
    names: impl Iterator<Item = &'a str>,
) -> Result<HashSet<&'a str>, String> {
    let mut seen = HashSet::new();
    for (i, name) in names.enumerate() {
        non_empty(&format!("{field}[{i}]"), name)?;
        if !seen.insert(name) {
            return Err(format!("{field}[{i}]: '{name}' is declared twice"));
        }
    }
    Ok(seen)
}

/// Whether a column the database reports as `data_type` can hold an attribute of
/// `declared` type.
pub(crate) fn compatible(declared: AttributeType, data_type: &str) -> bool {
    let t = data_type.to_ascii_lowercase();
    let integer = [
        "smallint",
        "integer",
        "int",
        "bigint",
        "tinyint",
        "mediumint",
    ];
    let decimal = ["numeric", "decimal"];
    let float = ["real", "double precision", "float", "double"];
    let text = [
        "text",
        "tinytext",
        "mediumtext",
        "longtext",
        "enum",
        "set",
        "uuid",
    ];
    let is = |names: &[&str]| names.contains(&t.as_str());
    match declared {
        AttributeType::Any => true,
        AttributeType::String => {
            is(&text) || t.contains("char") || t == "citext" || t == "user-defined"
        }
        AttributeType::Integer => is(&integer) || is(&decimal),
        AttributeType::Number => is(&integer) || is(&decimal) || is(&float),
        AttributeType::Boolean => t == "boolean" || t == "bit" || t == "tinyint",
        AttributeType::Timestamp => t.starts_with("timestamp") || t == "datetime" || t == "date",
        // MariaDB keeps JSON columns as `longtext` with a validity check.
        AttributeType::Json => t == "json" || t == "jsonb" || t == "longtext",
    }
}

/// Checks a business table against what `globals` declares: the table exists, and every
/// declared column (the key included) exists with a compatible type. MySQL compares
/// names without case, as it does itself.
pub(crate) fn check_columns(
    field: &str,
    globals: &GlobalAttributesDefinition,
    columns: &[TableColumn],
    names_ignore_case: bool,
) -> Result<(), String> {
    if columns.is_empty() {
        return Err(format!(
            "{field}.tableName: table '{}' does not exist (or has no columns this service's \
             database user can see)",
            globals.table_name
        ));
    }
    let find = |name: &str| {
        columns.iter().find(|c| {
            if names_ignore_case {
                c.name.eq_ignore_ascii_case(name)
            } else {
                c.name == name
            }
        })
    };
    let missing = |at: String, name: &str| {
        format!(
            "{at}: table '{}' has no column '{name}'",
            globals.table_name
        )
    };
    if find(&globals.primary_key_column).is_none() {
        return Err(missing(
            format!("{field}.primaryKeyColumn"),
            &globals.primary_key_column,
        ));
    }
    for (i, declared) in globals.columns.iter().enumerate() {
        let at = format!("{field}.columns[{i}]");
        let column = find(&declared.name).ok_or_else(|| missing(at.clone(), &declared.name))?;
        if !compatible(declared.attribute_type, &column.data_type) {
            return Err(format!(
                "{at}.type: column '{}' is {} in the database, which cannot hold {:?}",
                declared.name, column.data_type, declared.attribute_type
            ));
        }
    }
    Ok(())
}

/// Checks a start against its process type's definition and fills what the start left
/// to it: the worker URL and the first state's options.
pub(crate) fn resolve_start(
    compiled: &Compiled,
    request: &mut ProcessExecutionStartRequest,
) -> Result<(), String> {
    let definition = compiled.definition();
    if request.worker_url.is_empty() {
        request.worker_url = compiled.stored.revision.deployment.worker_url.clone();
    }
    if let Some(state_id) = &request.start_state_id {
        resolve_state(
            compiled,
            state_id,
            &mut request.start_state_config,
            request.start_state_input.as_ref(),
            &StateFields {
                id: "startStateId",
                config: "startStateConfig",
                input: "startStateInput",
                request: "start",
                start_states_only: true,
            },
        )?;
    }
    if let (Some(declared), Some(config)) = (
        &definition.global_attributes,
        request
            .process_start_config
            .as_ref()
            .and_then(|c| c.global_attribute_config.as_ref()),
    ) {
        let at = "processStartConfig.globalAttributeConfig";
        if config.table_name != declared.table_name {
            return Err(format!(
                "{at}.tableName: process type '{}' declares table '{}'",
                definition.process_type, declared.table_name
            ));
        }
        if config.primary_key.column != declared.primary_key_column {
            return Err(format!(
                "{at}.primaryKey.column: table '{}' is keyed by '{}'",
                declared.table_name, declared.primary_key_column
            ));
        }
        if !declared.columns.is_empty() {
            for (i, value) in config.initial_write.iter().enumerate() {
                let known = value.column == declared.primary_key_column
                    || declared.columns.iter().any(|c| c.name == value.column);
                if !known {
                    return Err(format!(
                        "{at}.initialWrite[{i}].column: '{}' is not a declared column of '{}'",
                        value.column, declared.table_name
                    ));
                }
            }
        }
    }
    Ok(())
}

/// Refuses messages for queues no state of the process can wait on.
pub(crate) fn check_publish(
    definition: &ProcessDefinition,
    messages: &[LocalQueueMessage],
) -> Result<(), String> {
    for (i, message) in messages.iter().enumerate() {
        if !definition.local_queues.contains(&message.queue_name) {
            return Err(format!(
                "messages[{i}].queueName: process type '{}' declares no queue '{}' (it \
                 declares: {})",
                definition.process_type,
                message.queue_name,
                names(definition.local_queues.iter().map(String::as_str))
            ));
        }
    }
    Ok(())
}

/// Checks an RPC call against the declared RPC, and applies the declared loading where
/// the caller gave none. A caller may load fewer columns or keys, or lock harder; never
/// load what is not declared or lock less than declared.
pub(crate) fn resolve_rpc(
    compiled: &Compiled,
    request: &mut ProcessExecutionRpcRequest,
) -> Result<(), String> {
    let definition = compiled.definition();
    let rpc = definition
        .rpcs
        .iter()
        .find(|r| r.name == request.rpc_name)
        .ok_or_else(|| {
            format!(
                "rpcName: process type '{}' has no RPC '{}' (it has: {})",
                definition.process_type,
                request.rpc_name,
                names(definition.rpcs.iter().map(|r| r.name.as_str()))
            )
        })?;
    match (
        &rpc.global_attribute_loading,
        &request.global_attribute_loading,
    ) {
        (Some(declared), None) => request.global_attribute_loading = Some(declared.clone()),
        (declared, Some(asked)) => narrower(
            "globalAttributeLoading",
            declared
                .as_ref()
                .map(|d| (d.columns.as_slice(), d.lock_type)),
            (&asked.columns, asked.lock_type),
        )?,
        (None, None) => {}
    }
    match (
        &rpc.local_attribute_loading,
        &request.local_attribute_loading,
    ) {
        (Some(declared), None) => request.local_attribute_loading = Some(declared.clone()),
        (declared, Some(asked)) => narrower(
            "localAttributeLoading",
            declared.as_ref().map(|d| (d.keys.as_slice(), d.lock_type)),
            (&asked.keys, asked.lock_type),
        )?,
        (None, None) => {}
    }
    if let Some(validator) = compiled.rpc_inputs.get(&rpc.name) {
        check_input("input", request.input.as_ref(), validator)?;
    }
    Ok(())
}

/// Whether `asked` stays within `declared` (nothing declared: nothing may be loaded).
fn narrower(
    field: &str,
    declared: Option<(&[String], LockType)>,
    asked: (&[String], LockType),
) -> Result<(), String> {
    let (names, lock) = declared.unwrap_or((&[], LockType::NoLock));
    if let Some(extra) = asked.0.iter().find(|name| !names.contains(name)) {
        return Err(format!(
            "{field}: '{extra}' is not loaded by the RPC's declared policy (declared: {})",
            self::names(names.iter().map(String::as_str))
        ));
    }
    if lock_rank(asked.1) < lock_rank(lock) {
        return Err(format!(
            "{field}.lockType: the RPC declares {lock:?}; a caller may lock harder, not less"
        ));
    }
    Ok(())
}

fn lock_rank(lock: LockType) -> u8 {
    match lock {
        LockType::NoLock => 0,
        LockType::SharedLock => 1,
        LockType::ExclusiveLock => 2,
    }
}

/// Validates a JSON payload (absent: `null`) against a declared input schema; payloads
/// of another encoding pass untouched, as XDB never reads them.
/// The request fields that name a state to run, its options and its input.
struct StateFields {
    id: &'static str,
    config: &'static str,
    input: &'static str,
    /// What the request is, for messages ("start", "reset").
    request: &'static str,
    /// Whether the state must be one of the declared start states.
    start_states_only: bool,
}

/// Checks a state a request would run: declared (and a start state where that is asked),
/// its options coherent with the declaration, its input fitting the declared schema. A
/// request without options gets the state's declared ones, as a worker's own start would.
fn resolve_state(
    compiled: &Compiled,
    state_id: &str,
    config: &mut Option<AsyncStateConfig>,
    input: Option<&EncodedObject>,
    fields: &StateFields,
) -> Result<(), String> {
    let definition = compiled.definition();
    let state = definition
        .states
        .iter()
        .find(|s| s.id == state_id)
        .ok_or_else(|| {
            format!(
                "{}: process type '{}' has no state '{state_id}' (it has: {})",
                fields.id,
                definition.process_type,
                names(definition.states.iter().map(|s| s.id.as_str()))
            )
        })?;
    if fields.start_states_only
        && !definition.start_states.is_empty()
        && !definition.start_states.iter().any(|s| s == state_id)
    {
        return Err(format!(
            "{}: '{state_id}' is not a start state of process type '{}' (start states: {})",
            fields.id,
            definition.process_type,
            names(definition.start_states.iter().map(String::as_str))
        ));
    }
    match config {
        None => {
            let mut declared = state.config.clone().unwrap_or_default();
            declared.skip_wait_until = !state.has_wait_until;
            *config = Some(declared);
        }
        Some(AsyncStateConfig {
            skip_wait_until: false,
            ..
        }) if !state.has_wait_until => {
            return Err(format!(
                "{}.skipWaitUntil: state '{state_id}' has no waitUntil, so the {} must say \
                 skipWaitUntil: true (or leave {} out)",
                fields.config, fields.request, fields.config
            ));
        }
        Some(_) => {}
    }
    if let Some(validator) = compiled.state_inputs.get(state_id) {
        check_input(fields.input, input, validator)?;
    }
    Ok(())
}

fn check_input(
    field: &str,
    input: Option<&EncodedObject>,
    validator: &jsonschema::Validator,
) -> Result<(), String> {
    let value = match input {
        None => Value::Null,
        Some(object) if object.encoding.eq_ignore_ascii_case("json") => {
            serde_json::from_str(&object.data)
                .map_err(|e| format!("{field}.data: not JSON text: {e}"))?
        }
        Some(_) => return Ok(()),
    };
    if let Some(error) = validator.iter_errors(&value).next() {
        let at = error.instance_path().to_string();
        let at = if at.is_empty() {
            String::new()
        } else {
            format!(" at {at}")
        };
        return Err(format!(
            "{field}: does not match the declared input schema{at}: {error}"
        ));
    }
    Ok(())
}

fn names<'a>(items: impl Iterator<Item = &'a str>) -> String {
    let list: Vec<&str> = items.collect();
    if list.is_empty() {
        "none".to_string()
    } else {
        list.join(", ")
    }
}

#[cfg(test)]
#[path = "checks_tests.rs"]
mod tests;

/// Checks a reset against its process type's definition: the state must be one of its
/// states, its input must fit the state's schema, and a reset without `stateConfig`
/// gets the state's declared options (as a start does).
pub(crate) fn resolve_reset(
    compiled: &Compiled,
    request: &mut xdb_protocol::ProcessExecutionResetRequest,
) -> Result<(), String> {
    resolve_state(
        compiled,
        &request.state_id,
        &mut request.state_config,
        request.state_input.as_ref(),
        &StateFields {
            id: "stateId",
            config: "stateConfig",
            input: "stateInput",
            request: "reset",
            start_states_only: false,
        },
    )
}
