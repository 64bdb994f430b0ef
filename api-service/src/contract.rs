//! The OpenAPI document this instance serves, and the request-body validators compiled
//! from it once at start-up: what the document says is invalid (a wrong type, an unknown
//! field, an id over its limit) is refused with 400 before a handler runs.

use std::collections::HashMap;

use jsonschema::error::ValidationErrorKind;
use jsonschema::paths::LocationSegment;
use jsonschema::{ValidationError, Validator};
use serde_json::{json, Value};
use xdb_protocol::Limits;

use crate::ApiError;

/// The served document and a validator per request schema.
pub struct Contract {
    /// `openapi.json` as served, stating the configured limits.
    pub document: String,
    validators: HashMap<String, Validator>,
}

impl Contract {
    /// Builds the document for `limits` and compiles a validator for each request body
    /// of the service and internal paths.
    pub fn new(limits: &Limits) -> anyhow::Result<Self> {
        let document = xdb_protocol::openapi::document_json(limits);
        let parsed: Value = serde_json::from_str(&document)?;
        let mut validators = HashMap::new();
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
            // The whole components section comes along, so nested `$ref`s resolve.
            let schema = json!({ "$ref": reference, "components": parsed["components"] });
            let validator = jsonschema::draft202012::options()
                .should_validate_formats(false)
                .build(&schema)
                .map_err(|e| anyhow::anyhow!("request schema {name}: {e}"))?;
            validators.insert(name.to_string(), validator);
        }
        Ok(Self {
            document,
            validators,
        })
    }

    /// Checks `body` against the request schema `name`; a type without a schema passes.
    pub fn validate(&self, name: &str, body: &Value) -> Result<(), ApiError> {
        let Some(validator) = self.validators.get(name) else {
            return Ok(());
        };
        match validator.validate(body) {
            Ok(()) => Ok(()),
            Err(error) => Err(ApiError::invalid(describe(most_specific(&error)))),
        }
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
fn describe(error: &ValidationError<'_>) -> String {
    let mut field = String::new();
    for segment in error.instance_path().segments() {
        match segment {
            LocationSegment::Property(name) => {
                if !field.is_empty() {
                    field.push('.');
                }
                field.push_str(&name);
            }
            LocationSegment::Index(index) => field.push_str(&format!("[{index}]")),
        }
    }
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
                HTTP_URL => "must be an http:// or https:// URL without whitespace",
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
        Contract::new(&Limits {
            max_id_chars: 10,
            ..Limits::default()
        })
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
