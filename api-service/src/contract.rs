//! The OpenAPI document this instance serves, and the request-body validators compiled
//! from it once at start-up: what the document says is invalid (a wrong type, an unknown
//! field, an id over its limit) is refused with 400 before a handler runs. A plain value
//! where a payload belongs gets a message showing the payload's shape, since that is the
//! mistake a client in a new language makes first.

use std::collections::HashMap;

use jsonschema::error::ValidationErrorKind;
use jsonschema::paths::LocationSegment;
use jsonschema::{ValidationError, Validator};
use serde_json::{json, Value};
use xdb_protocol::Limits;

use crate::ApiError;

/// Where the request schemas' `$ref`s resolve: the document's components.
const CONTRACT_URI: &str = "urn:xdb:contract";
/// The component schema of payloads.
const PAYLOAD: &str = "EncodedObject";
/// What a payload looks like, for a client that sent something else.
const PAYLOAD_SHAPE: &str = r#"expected a payload {"encoding": "json", "data": "<the value as JSON text>"}, e.g. {"encoding": "json", "data": "{\"email\":\"a@b.c\"}"} for the value {"email": "a@b.c"}"#;

/// The served document and a validator per request schema.
pub struct Contract {
    /// `openapi.json` as served, stating the configured limits.
    pub document: String,
    validators: HashMap<String, Validator>,
    /// The document's component schemas, to tell which fields are payloads.
    schemas: Value,
}

impl Contract {
    /// Builds the document for `limits` and `max_wait_seconds` and compiles a validator
    /// for each request body of the service and internal paths.
    pub fn new(limits: &Limits, max_wait_seconds: u32) -> anyhow::Result<Self> {
        let parsed = xdb_protocol::openapi::document(limits, max_wait_seconds);
        let document = serde_json::to_string_pretty(&parsed)?;
        let mut validators = HashMap::new();
        // One registry of the components for every validator: a validator built from a
        // schema that carried the components itself kept its own copy, ~40 of them
        // about 50 MB of the service's resident memory.
        let components = json!({ "components": parsed["components"] });
        let registry = jsonschema::Registry::new()
            .add(CONTRACT_URI, components)
            .and_then(|registry| registry.prepare())
            .map_err(|e| anyhow::anyhow!("the contract's schemas: {e}"))?;
        let paths = parsed["paths"].as_object().into_iter().flatten();
        for (path, item) in paths {
            if path.contains("/worker/") {
                continue;
            }
            let reference =
                &item["post"]["requestBody"]["content"]["application/json"]["schema"]["$ref"];
            let Some(reference) = reference.as_str() else {
                continue;
            };
            let name = reference.rsplit('/').next().unwrap_or(reference);
            let schema = json!({ "$ref": format!("{CONTRACT_URI}{reference}") });
            let validator = jsonschema::draft202012::options()
                .should_validate_formats(false)
                .with_registry(&registry)
                .build(&schema)
                .map_err(|e| anyhow::anyhow!("request schema {name}: {e}"))?;
            validators.insert(name.to_string(), validator);
        }
        Ok(Self {
            document,
            validators,
            schemas: parsed["components"]["schemas"].clone(),
        })
    }

    /// Checks `body` against the request schema `name`; a type without a schema passes.
    pub fn validate(&self, name: &str, body: &Value) -> Result<(), ApiError> {
        let Some(validator) = self.validators.get(name) else {
            return Ok(());
        };
        let Err(error) = validator.validate(body) else {
            return Ok(());
        };
        let error = most_specific(&error);
        let steps = steps(error);
        let payload = payload_depth(&self.schemas, name, &steps)
            .and_then(|depth| payload_problem(&steps[..depth], body));
        Err(ApiError::invalid(
            payload.unwrap_or_else(|| describe(error, &steps)),
        ))
    }
}

/// One step into a request body: a field of an object or an item of an array.
enum Step {
    Field(String),
    Index(usize),
}

fn steps(error: &ValidationError<'_>) -> Vec<Step> {
    error
        .instance_path()
        .segments()
        .map(|segment| match segment {
            LocationSegment::Property(name) => Step::Field(name.into_owned()),
            LocationSegment::Index(index) => Step::Index(index),
        })
        .collect()
}

/// `processStartConfig.localAttributeInitialWrite[0].value`
fn field_name(steps: &[Step]) -> String {
    let mut field = String::new();
    for step in steps {
        match step {
            Step::Field(name) => {
                if !field.is_empty() {
                    field.push('.');
                }
                field.push_str(name);
            }
            Step::Index(index) => field.push_str(&format!("[{index}]")),
        }
    }
    field
}

/// The component a schema stands for: its `$ref`, or that of an optional's non-null branch.
fn component_of(schema: &Value) -> Option<&str> {
    if let Some(reference) = schema["$ref"].as_str() {
        return reference.rsplit('/').next();
    }
    ["oneOf", "anyOf"]
        .iter()
        .filter_map(|key| schema[key].as_array())
        .flatten()
        .find_map(component_of)
}

/// How many leading `steps` into request `root` lead to a payload, if any do.
fn payload_depth(schemas: &Value, root: &str, steps: &[Step]) -> Option<usize> {
    let mut schema = &schemas[root];
    for (depth, step) in steps.iter().enumerate() {
        let next = match step {
            Step::Field(name) => &schema["properties"][name],
            Step::Index(_) => &schema["items"],
        };
        schema = match component_of(next) {
            Some(PAYLOAD) => return Some(depth + 1),
            Some(name) => &schemas[name],
            None => next,
        };
        if schema.is_null() {
            return None;
        }
    }
    None
}

/// What is wrong with the payload at `steps` of `body`, when it is not a payload at all
/// (a plain value, an object of other fields, `data` that is not text). `None` when it
/// has the payload's shape, and the problem is one the generic message names well.
fn payload_problem(steps: &[Step], body: &Value) -> Option<String> {
    let mut value = body;
    for step in steps {
        value = match step {
            Step::Field(name) => &value[name.as_str()],
            Step::Index(index) => &value[*index],
        };
    }
    let found = match value {
        Value::Object(object) => match (object.get("encoding"), object.get("data")) {
            (Some(Value::String(_)), Some(Value::String(_))) => return None,
            (_, Some(data)) if !data.is_string() => format!(
                "`data` must be a string holding the value as JSON text, found {}",
                kind(data)
            ),
            _ => {
                let mut names: Vec<String> =
                    object.keys().take(5).map(|k| format!("'{k}'")).collect();
                if object.len() > names.len() {
                    names.push("…".into());
                }
                match names.is_empty() {
                    true => "found an empty object".to_string(),
                    false => format!("found an object with fields {}", names.join(", ")),
                }
            }
        },
        other => format!("found {}", kind(other)),
    };
    Some(format!(
        "invalid request body at {}: {PAYLOAD_SHAPE}; {found}",
        field_name(steps)
    ))
}

fn kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// Where a `oneOf` (an optional object: null or the object) failed, the error inside the
/// branch that got furthest into the value says what is wrong; the `oneOf` itself does not.
fn most_specific<'e>(error: &'e ValidationError<'e>) -> &'e ValidationError<'e> {
    let branches = match error.kind() {
        ValidationErrorKind::OneOfNotValid { context } | ValidationErrorKind::AnyOf { context } => {
            context
        }
        _ => return error,
    };
    let deepest = branches.iter().flatten().max_by_key(|e| {
        let not_type = !matches!(e.kind(), ValidationErrorKind::Type { .. });
        (e.instance_path().segments().count(), not_type)
    });
    match deepest {
        Some(inner) => most_specific(inner),
        None => error,
    }
}

/// `invalid request body at <field>: <problem>`, without echoing the value (which may be
/// large).
fn describe(error: &ValidationError<'_>, steps: &[Step]) -> String {
    let field = field_name(steps);
    let at = if field.is_empty() {
        "invalid request body".to_string()
    } else {
        format!("invalid request body at {field}")
    };
    match error.kind() {
        ValidationErrorKind::AdditionalProperties { unexpected } => {
            let names: Vec<String> = unexpected.iter().map(|n| format!("'{n}'")).collect();
            format!("{at}: unknown field {}", names.join(", "))
        }
        ValidationErrorKind::Pattern { pattern } => {
            use xdb_protocol::openapi::{HTTP_URL, SQL_IDENTIFIER, SQL_TABLE_NAME};
            let expected = match pattern.as_str() {
                HTTP_URL => "must be an http:// or https:// URL without whitespace (or empty)",
                SQL_IDENTIFIER => {
                    "must be a SQL identifier (letters, digits and _, not starting with a digit)"
                }
                SQL_TABLE_NAME => "must be `table` or `schema.table` of SQL identifiers",
                _ => "must not contain control characters",
            };
            format!("{at}: {expected}")
        }
        ValidationErrorKind::MinLength { limit: 1 } => format!("{at}: must not be empty"),
        _ => format!("{at}: {}", error.masked_with("value")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn contract() -> Contract {
        Contract::new(
            &Limits {
                max_id_chars: 10,
                ..Limits::default()
            },
            300,
        )
        .unwrap()
    }

    fn refusal(name: &str, body: Value) -> String {
        contract().validate(name, &body).unwrap_err().message
    }

    #[test]
    fn valid_requests_pass() {
        let contract = contract();
        for (name, body) in [
            (
                "ProcessExecutionStartRequest",
                json!({"processId": "p", "processType": "T", "workerUrl": "http://w",
                       "startStateConfig": null,
                       "processStartConfig": {"globalAttributeConfig": {"tableName": "t",
                           "primaryKey": {"column": "id", "value": 1},
                           "initialWrite": [{"column": "c", "value": {"any": ["json"]}}]}}}),
            ),
            ("ProcessExecutionListRequest", json!({})),
            (
                "ProcessExecutionListRequest",
                json!({"filter": {"status": "RUNNING"}, "pageSize": 5}),
            ),
        ] {
            contract.validate(name, &body).unwrap();
        }
    }

    #[test]
    fn unknown_fields_are_named_even_when_nested() {
        let message = refusal(
            "ProcessExecutionStartRequest",
            json!({"processId": "p", "processType": "T", "workerUrl": "http://w",
                   "processStartConfig": {"localAttributes": []}}),
        );
        assert_eq!(
            message,
            "invalid request body at processStartConfig: unknown field 'localAttributes'"
        );
        let message = refusal("ProcessExecutionListRequest", json!({"pageSiz": 1}));
        assert_eq!(message, "invalid request body: unknown field 'pageSiz'");
    }

    #[test]
    fn arrays_for_objects_and_limits_are_refused_without_echoing_the_value() {
        let message = refusal("ProcessExecutionListRequest", json!({"filter": []}));
        assert!(
            message.starts_with("invalid request body at filter:"),
            "{message}"
        );
        let message = refusal(
            "ProcessExecutionDescribeRequest",
            json!({"processId": "x".repeat(11)}),
        );
        assert_eq!(
            message,
            "invalid request body at processId: value is longer than 10 characters"
        );
        let message = refusal("ProcessExecutionListRequest", json!({"pageSize": 1001}));
        assert!(message.contains("pageSize"), "{message}");
        let message = refusal(
            "ProcessExecutionDescribeRequest",
            json!({"processId": "a\nb"}),
        );
        assert!(message.ends_with("processId: must not contain control characters"));
    }
}

#[cfg(test)]
mod payload_tests {
    use super::*;

    fn refusal(name: &str, body: Value) -> String {
        let contract = Contract::new(&Limits::default(), 300).unwrap();
        contract.validate(name, &body).unwrap_err().message
    }

    fn start(extra: Value) -> Value {
        let mut body = json!({"processId": "p", "processType": "T", "workerUrl": "http://w"});
        body.as_object_mut()
            .unwrap()
            .extend(extra.as_object().unwrap().clone());
        body
    }

    #[test]
    fn a_plain_value_where_a_payload_belongs_is_named_with_the_expected_shape() {
        for (input, found) in [
            (json!("hello"), "found a string"),
            (json!(42), "found a number"),
            (json!([1]), "found an array"),
            (
                json!({"email": "a@b.c"}),
                "found an object with fields 'email'",
            ),
            (
                json!({"encoding": "json", "data": {"email": "a@b.c"}}),
                "`data` must be a string holding the value as JSON text, found an object",
            ),
        ] {
            let message = refusal(
                "ProcessExecutionStartRequest",
                start(json!({"startStateInput": input})),
            );
            assert_eq!(
                message,
                format!("invalid request body at startStateInput: {PAYLOAD_SHAPE}; {found}"),
            );
        }
    }

    #[test]
    fn payloads_in_arrays_and_nested_objects_are_named_by_their_path() {
        let message = refusal(
            "PublishToLocalQueueRequest",
            json!({"processId": "p", "messages": [
                {"queueName": "q", "payload": {"encoding": "json", "data": "1"}},
                {"queueName": "q", "payload": {"source": "email"}}
            ]}),
        );
        assert!(
            message.starts_with("invalid request body at messages[1].payload: expected a payload"),
            "{message}"
        );
        let message = refusal(
            "ProcessExecutionStartRequest",
            start(
                json!({"processStartConfig": {"localAttributeInitialWrite": [
                    {"key": "k", "value": true}
                ]}}),
            ),
        );
        assert!(
            message.starts_with(
                "invalid request body at processStartConfig.localAttributeInitialWrite[0]\
                 .value: expected a payload"
            ),
            "{message}"
        );
        assert!(message.ends_with("found a boolean"), "{message}");
    }

    #[test]
    fn a_payload_of_the_right_shape_gets_the_usual_message() {
        let message = refusal(
            "ProcessExecutionRpcRequest",
            json!({"processId": "p", "rpcName": "r",
                   "input": {"encoding": "json", "data": "1", "extra": 1}}),
        );
        assert_eq!(
            message,
            "invalid request body at input: unknown field 'extra'"
        );
        let message = refusal(
            "ProcessExecutionRpcRequest",
            json!({"processId": "p", "rpcName": "r", "input": {"encoding": "", "data": "1"}}),
        );
        assert_eq!(
            message,
            "invalid request body at input.encoding: must not be empty"
        );
        // Global attributes are plain JSON values, not payloads.
        let contract = Contract::new(&Limits::default(), 300).unwrap();
        contract
            .validate(
                "ProcessExecutionStartRequest",
                &start(json!({"processStartConfig": {"globalAttributeConfig": {
                    "tableName": "t", "primaryKey": {"column": "id", "value": "x"},
                    "initialWrite": [{"column": "c", "value": {"plain": "json"}}]}}})),
            )
            .unwrap();
    }

    #[test]
    fn the_served_wait_limit_is_the_configured_one() {
        let contract = Contract::new(&Limits::default(), 5).unwrap();
        let message = contract
            .validate(
                "ProcessExecutionWaitForCompletionRequest",
                &json!({"processId": "p", "timeoutSeconds": 6}),
            )
            .unwrap_err()
            .message;
        assert!(message.starts_with("invalid request body at timeoutSeconds"));
        assert_eq!(
            xdb_config::ApiSettings::default().max_wait_seconds,
            xdb_protocol::limits::DEFAULT_MAX_WAIT_SECONDS,
            "the committed document states the default wait limit"
        );
    }
}
