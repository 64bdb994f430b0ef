//! Checks on client- and worker-supplied text before it reaches SQL or the queue.
//!
//! Identifiers are validated here *and* quoted by the dialect: a name that passes is safe
//! to quote, and anything else is refused with a message naming the field.

use thiserror::Error;
use xdb_protocol::{
    AttributeWrites, GlobalAttributeValue, Limits, LocalAttributeValue, LocalQueueMessage,
};

/// Longest process id, state id, queue name, dedup id or attribute key, in characters
/// (the system tables' `VARCHAR(255)`); requests are held to `limits.max_id_chars`.
pub const MAX_ID_LENGTH: usize = xdb_protocol::limits::ID_CHARS_CEILING;
/// Longest SQL identifier part (PostgreSQL's limit; MySQL's is 64).
pub const MAX_IDENTIFIER_LENGTH: usize = 63;
/// Longest worker URL, in characters; requests are held to `limits.max_worker_url_chars`.
pub const MAX_WORKER_URL_LENGTH: usize = xdb_protocol::limits::WORKER_URL_CHARS_CEILING;

#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[error("{field}: {problem}")]
pub struct ValidationError {
    pub field: String,
    pub problem: String,
}

impl ValidationError {
    pub fn new(field: impl Into<String>, problem: impl Into<String>) -> Self {
        Self {
            field: field.into(),
            problem: problem.into(),
        }
    }
}

/// Flow limits as a definition declares them or an operator sets them: a rate more than
/// 0 and at most [`xdb_protocol::MAX_CALLS_PER_SECOND`], a concurrency 1 to
/// [`xdb_protocol::MAX_CONCURRENT_CALLS`], running executions 1 to
/// [`xdb_protocol::MAX_RUNNING_EXECUTIONS`], a priority 1 to 5, a fairness weight 1 to
/// [`xdb_protocol::fairness::MAX_WEIGHT`], attributes that are column names. `field`
/// names the limits.
pub fn check_flow_limits(
    field: &str,
    limits: &xdb_protocol::FlowLimits,
) -> Result<(), ValidationError> {
    if let Some(rate) = limits.max_calls_per_second {
        if !(rate.is_finite() && rate > 0.0 && rate <= xdb_protocol::MAX_CALLS_PER_SECOND) {
            return Err(ValidationError::new(
                format!("{field}.maxCallsPerSecond"),
                format!(
                    "must be more than 0 and at most {}, not {rate}",
                    xdb_protocol::MAX_CALLS_PER_SECOND
                ),
            ));
        }
    }
    if let Some(calls) = limits.max_concurrent_calls {
        if !(1..=xdb_protocol::MAX_CONCURRENT_CALLS).contains(&calls) {
            return Err(ValidationError::new(
                format!("{field}.maxConcurrentCalls"),
                format!(
                    "must be 1 to {}, not {calls}",
                    xdb_protocol::MAX_CONCURRENT_CALLS
                ),
            ));
        }
    }
    if let Some(running) = limits.max_running_executions {
        if !(1..=xdb_protocol::MAX_RUNNING_EXECUTIONS).contains(&running) {
            return Err(ValidationError::new(
                format!("{field}.maxRunningExecutions"),
                format!(
                    "must be 1 to {}, not {running}",
                    xdb_protocol::MAX_RUNNING_EXECUTIONS
                ),
            ));
        }
    }
    if let Some(priority) = limits.priority {
        check_priority(&format!("{field}.priority"), priority)?;
    }
    if let Some(attribute) = &limits.concurrency_key_attribute {
        let at = format!("{field}.concurrencyKeyAttribute");
        check_identifier(&at, attribute)?;
        if limits.max_running_executions.is_none() {
            return Err(ValidationError::new(
                at,
                "keys the running-executions limit: set maxRunningExecutions with it",
            ));
        }
    }
    if let Some(attribute) = &limits.fairness_key_attribute {
        check_identifier(&format!("{field}.fairnessKeyAttribute"), attribute)?;
    }
    if let Some(weight) = limits.fairness_weight {
        check_fairness_weight(&format!("{field}.fairnessWeight"), weight)?;
    }
    Ok(())
}

/// A priority, wherever one is given (a start, a type's limits, a reprioritize): 1
/// (claimed first) to 5. `field` names it.
pub fn check_priority(field: &str, priority: u8) -> Result<(), ValidationError> {
    use xdb_protocol::priority::{HIGHEST, LOWEST};
    if (HIGHEST..=LOWEST).contains(&priority) {
        return Ok(());
    }
    Err(ValidationError::new(
        field,
        format!("must be {HIGHEST} (claimed first) to {LOWEST}, not {priority}"),
    ))
}

/// A fairness weight, wherever one is given: 1 to
/// [`xdb_protocol::fairness::MAX_WEIGHT`]. `field` names it.
pub fn check_fairness_weight(field: &str, weight: u32) -> Result<(), ValidationError> {
    use xdb_protocol::fairness::MAX_WEIGHT;
    if (1..=MAX_WEIGHT).contains(&weight) {
        return Ok(());
    }
    Err(ValidationError::new(
        field,
        format!("must be 1 to {MAX_WEIGHT}, not {weight}"),
    ))
}

/// [`check_flow_limits`] for one state's limits: a state cannot set what is the type's
/// (its running executions, their keys, its starts' priority and fairness).
pub fn check_state_flow_limits(
    field: &str,
    limits: &xdb_protocol::FlowLimits,
) -> Result<(), ValidationError> {
    let type_only = [
        (
            limits.max_running_executions.is_some(),
            "maxRunningExecutions",
            "limits a process type's executions",
        ),
        (
            limits.concurrency_key_attribute.is_some(),
            "concurrencyKeyAttribute",
            "keys a process type's executions",
        ),
        (
            limits.priority.is_some(),
            "priority",
            "is the priority of a process type's starts",
        ),
        (
            limits.fairness_key_attribute.is_some(),
            "fairnessKeyAttribute",
            "keys a process type's starts",
        ),
        (
            limits.fairness_weight.is_some(),
            "fairnessWeight",
            "weighs a process type's starts",
        ),
    ];
    if let Some((_, name, what)) = type_only.into_iter().find(|(set, _, _)| *set) {
        return Err(ValidationError::new(
            format!("{field}.{name}"),
            format!("{what}: set it on the type, not on a state"),
        ));
    }
    check_flow_limits(field, limits)
}

/// An id chosen by a client or worker: non-empty, bounded, printable, no control characters.
pub fn check_id(field: &str, value: &str) -> Result<(), ValidationError> {
    if value.is_empty() {
        return Err(ValidationError::new(field, "must not be empty"));
    }
    // Characters, as the columns (and the OpenAPI document's maxLength) count them.
    if value.len() > MAX_ID_LENGTH && value.chars().count() > MAX_ID_LENGTH {
        return Err(ValidationError::new(
            field,
            format!("is longer than {MAX_ID_LENGTH} characters"),
        ));
    }
    if value.chars().any(char::is_control) {
        return Err(ValidationError::new(
            field,
            "must not contain control characters",
        ));
    }
    Ok(())
}

/// A SQL identifier: letters, digits and `_`, not starting with a digit.
pub fn check_identifier(field: &str, value: &str) -> Result<(), ValidationError> {
    let mut chars = value.chars();
    let valid_start = chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_');
    if !valid_start
        || value.len() > MAX_IDENTIFIER_LENGTH
        || !value.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
    {
        return Err(ValidationError::new(
            field,
            format!(
                "'{}' is not a valid SQL identifier (letters, digits and _, at most {MAX_IDENTIFIER_LENGTH}, not starting with a digit)",
                truncate(value, 80)
            ),
        ));
    }
    Ok(())
}

/// A table name, optionally schema-qualified: returns its parts.
pub fn split_table_name<'a>(field: &str, value: &'a str) -> Result<Vec<&'a str>, ValidationError> {
    let parts: Vec<&str> = value.split('.').collect();
    if parts.len() > 2 {
        return Err(ValidationError::new(
            field,
            "must be `table` or `schema.table`",
        ));
    }
    for part in &parts {
        check_identifier(field, part)?;
    }
    Ok(parts)
}

pub fn check_worker_url(value: &str) -> Result<(), ValidationError> {
    let field = "workerUrl";
    if value.len() > MAX_WORKER_URL_LENGTH && value.chars().count() > MAX_WORKER_URL_LENGTH {
        return Err(ValidationError::new(
            field,
            format!("is longer than {MAX_WORKER_URL_LENGTH} characters"),
        ));
    }
    if !(value.starts_with("http://") || value.starts_with("https://")) {
        return Err(ValidationError::new(
            field,
            "must be an http:// or https:// URL",
        ));
    }
    if value.chars().any(|c| c.is_control() || c.is_whitespace()) {
        return Err(ValidationError::new(field, "must not contain whitespace"));
    }
    Ok(())
}

/// Global attribute values: each at most `limits.max_attribute_value_bytes` as JSON text.
pub fn check_global_values(
    field: &str,
    values: &[GlobalAttributeValue],
    limits: &Limits,
) -> Result<(), ValidationError> {
    for (index, attribute) in values.iter().enumerate() {
        check_size(
            || format!("{field}[{index}].value"),
            json_size(&attribute.value),
            limits.max_attribute_value_bytes,
            "limits.max_attribute_value_bytes",
        )?;
    }
    Ok(())
}

/// Local attribute values: each `data` at most `limits.max_attribute_value_bytes`.
pub fn check_local_values(
    field: &str,
    values: &[LocalAttributeValue],
    limits: &Limits,
) -> Result<(), ValidationError> {
    for (index, attribute) in values.iter().enumerate() {
        check_size(
            || format!("{field}[{index}].value.data"),
            attribute.value.data.len(),
            limits.max_attribute_value_bytes,
            "limits.max_attribute_value_bytes",
        )?;
    }
    Ok(())
}

/// Local-queue messages: each payload's `data` at most `limits.max_queue_message_bytes`.
pub fn check_queue_payloads(
    field: &str,
    messages: &[LocalQueueMessage],
    limits: &Limits,
) -> Result<(), ValidationError> {
    for (index, message) in messages.iter().enumerate() {
        if let Some(payload) = &message.payload {
            check_size(
                || format!("{field}[{index}].payload.data"),
                payload.data.len(),
                limits.max_queue_message_bytes,
                "limits.max_queue_message_bytes",
            )?;
        }
    }
    Ok(())
}

/// What a worker answer writes and publishes, held to the same limits as a client's
/// requests.
pub fn check_worker_writes(
    writes: &AttributeWrites,
    published: &[LocalQueueMessage],
    limits: &Limits,
) -> Result<(), ValidationError> {
    check_global_values("writes.globalAttributes", &writes.global_attributes, limits)?;
    check_local_values("writes.localAttributes", &writes.local_attributes, limits)?;
    check_queue_payloads("publishToLocalQueue", published, limits)
}

fn check_size(
    field: impl FnOnce() -> String,
    size: usize,
    max: usize,
    key: &str,
) -> Result<(), ValidationError> {
    if size > max {
        return Err(ValidationError::new(
            field(),
            format!("is {size} bytes, more than the limit of {max} ({key})"),
        ));
    }
    Ok(())
}

/// Bytes of `value` as compact JSON text, counted without building the text.
pub fn json_size(value: &serde_json::Value) -> usize {
    struct Counter(usize);
    impl std::io::Write for Counter {
        fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
            self.0 += bytes.len();
            Ok(bytes.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mut counter = Counter(0);
    serde_json::to_writer(&mut counter, value).expect("a JSON value serializes");
    counter.0
}

fn truncate(value: &str, max: usize) -> String {
    value.chars().take(max).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_type_s_priority_is_one_to_five_and_not_a_state_s() {
        let limits = |priority| xdb_protocol::FlowLimits {
            priority: Some(priority),
            ..Default::default()
        };
        assert!(check_flow_limits("flowLimits", &limits(1)).is_ok());
        assert!(check_flow_limits("flowLimits", &limits(5)).is_ok());
        for bad in [0, 6, 9] {
            let refused = check_flow_limits("flowLimits", &limits(bad)).unwrap_err();
            assert_eq!(refused.field, "flowLimits.priority", "{bad}");
        }
        let on_a_state = check_state_flow_limits("states[0].flowLimits", &limits(2)).unwrap_err();
        assert_eq!(on_a_state.field, "states[0].flowLimits.priority");
    }

    #[test]
    fn a_type_s_fairness_is_a_column_and_a_weight_and_not_a_state_s() {
        let limits = |attribute: &str, weight| xdb_protocol::FlowLimits {
            fairness_key_attribute: Some(attribute.into()),
            fairness_weight: Some(weight),
            ..Default::default()
        };
        assert!(check_flow_limits("flowLimits", &limits("tenant_id", 1)).is_ok());
        assert!(check_flow_limits("flowLimits", &limits("tenant_id", 1000)).is_ok());
        for bad in [0, 1001] {
            let refused = check_flow_limits("flowLimits", &limits("tenant_id", bad)).unwrap_err();
            assert_eq!(refused.field, "flowLimits.fairnessWeight", "{bad}");
        }
        let quoted = check_flow_limits("flowLimits", &limits("a\"b", 1)).unwrap_err();
        assert_eq!(quoted.field, "flowLimits.fairnessKeyAttribute");
        let on_a_state =
            check_state_flow_limits("states[0].flowLimits", &limits("tenant_id", 2)).unwrap_err();
        assert_eq!(
            on_a_state.field,
            "states[0].flowLimits.fairnessKeyAttribute"
        );
        let weight_only = xdb_protocol::FlowLimits {
            fairness_weight: Some(2),
            ..Default::default()
        };
        let on_a_state = check_state_flow_limits("s", &weight_only).unwrap_err();
        assert_eq!(on_a_state.field, "s.fairnessWeight");
    }

    #[test]
    fn identifiers_refuse_anything_that_could_escape_quoting() {
        for bad in [
            "",
            "1abc",
            "a b",
            "a\"b",
            "a;drop table x",
            "a-b",
            "ü",
            &"x".repeat(64),
        ] {
            assert!(check_identifier("column", bad).is_err(), "{bad:?} accepted");
        }
        for good in ["user", "user_id", "_x", "Status2"] {
            assert!(check_identifier("column", good).is_ok(), "{good:?} refused");
        }
    }

    #[test]
    fn table_names_may_be_schema_qualified_once() {
        assert_eq!(
            split_table_name("t", "public.user").unwrap(),
            vec!["public", "user"]
        );
        assert!(split_table_name("t", "a.b.c").is_err());
        assert!(split_table_name("t", "a.").is_err());
    }

    #[test]
    fn ids_are_bounded_and_printable() {
        assert!(check_id("processId", "ok-1").is_ok());
        assert!(check_id("processId", "").is_err());
        assert!(check_id("processId", "a\nb").is_err());
        assert!(check_id("processId", &"x".repeat(256)).is_err());
        // Counted in characters, like the columns: 255 two-byte characters fit.
        assert!(check_id("processId", &"ü".repeat(255)).is_ok());
        assert!(check_id("processId", &"ü".repeat(256)).is_err());
    }

    #[test]
    fn values_are_held_to_their_limits() {
        let limits = Limits {
            max_attribute_value_bytes: 10,
            max_queue_message_bytes: 5,
            ..Limits::default()
        };
        let global = |value| GlobalAttributeValue {
            column: "c".into(),
            value,
        };
        // `"12345678"` is 10 bytes of JSON.
        assert!(check_global_values("g", &[global("12345678".into())], &limits).is_ok());
        let error = check_global_values("g", &[global("123456789".into())], &limits).unwrap_err();
        assert_eq!(error.field, "g[0].value");
        assert!(error.problem.contains("limits.max_attribute_value_bytes"));
        let message = |data: &str| LocalQueueMessage {
            queue_name: "q".into(),
            dedup_id: None,
            payload: Some(xdb_protocol::EncodedObject {
                encoding: "json".into(),
                data: data.into(),
            }),
        };
        assert!(check_queue_payloads("m", &[message("12345")], &limits).is_ok());
        let error =
            check_queue_payloads("m", &[message("12345"), message("123456")], &limits).unwrap_err();
        assert_eq!(error.field, "m[1].payload.data");
        assert_eq!(
            json_size(&serde_json::json!({"a": [1, "x"]})),
            r#"{"a":[1,"x"]}"#.len()
        );
    }

    #[test]
    fn worker_urls_must_be_http() {
        assert!(check_worker_url("http://127.0.0.1:8803").is_ok());
        assert!(check_worker_url("file:///etc/passwd").is_err());
        assert!(check_worker_url("http://a b").is_err());
    }
}

/// Whether `json` holds the escape `\u0000` (a NUL character in a string). Text with
/// an escaped backslash before `u0000` is not one: only an odd run of backslashes
/// starts an escape.
pub fn json_has_nul_escape(json: &[u8]) -> bool {
    json.windows(5).enumerate().any(|(at, window)| {
        window == b"u0000" && json[..at].iter().rev().take_while(|&&b| b == b'\\').count() % 2 == 1
    })
}

#[cfg(test)]
mod nul_tests {
    use super::json_has_nul_escape;

    #[test]
    fn finds_nul_escapes_but_not_escaped_backslashes() {
        assert!(json_has_nul_escape(br#"{"processId":"a\u0000b"}"#));
        assert!(json_has_nul_escape(br#"{"a":"\\\u0000"}"#));
        assert!(!json_has_nul_escape(br#"{"a":"\\u0000"}"#));
        assert!(!json_has_nul_escape(br#"{"a":"u0000"}"#));
    }
}
