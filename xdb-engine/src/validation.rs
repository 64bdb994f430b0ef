//! Checks on client- and worker-supplied text before it reaches SQL or the queue.
//!
//! Identifiers are validated here *and* quoted by the dialect: a name that passes is safe
//! to quote, and anything else is refused with a message naming the field.

use thiserror::Error;

/// Longest process id, state id, queue name, dedup id or attribute key.
pub const MAX_ID_LENGTH: usize = 255;
/// Longest SQL identifier part (PostgreSQL's limit; MySQL's is 64).
pub const MAX_IDENTIFIER_LENGTH: usize = 63;
pub const MAX_WORKER_URL_LENGTH: usize = 2048;

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

/// An id chosen by a client or worker: non-empty, bounded, printable, no control characters.
pub fn check_id(field: &str, value: &str) -> Result<(), ValidationError> {
    if value.is_empty() {
        return Err(ValidationError::new(field, "must not be empty"));
    }
    if value.len() > MAX_ID_LENGTH {
        return Err(ValidationError::new(
            field,
            format!("is longer than {MAX_ID_LENGTH} bytes"),
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
    if value.len() > MAX_WORKER_URL_LENGTH {
        return Err(ValidationError::new(field, "is too long"));
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

fn truncate(value: &str, max: usize) -> String {
    value.chars().take(max).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

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
