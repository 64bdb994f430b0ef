//! Payload and attribute arguments: JSON text on the command line, encoded as the
//! contract's `EncodedObject` rule says (through the Rust SDK's encoding).

use serde_json::Value;
use xdb_protocol::EncodedObject;
use xdb_sdk::encoding;

/// Parses `--input`-style JSON text; `what` names the flag in the error.
pub fn parse_json(what: &str, text: &str) -> Result<Value, String> {
    serde_json::from_str(text).map_err(|e| format!("{what} is not valid JSON ({e}): {text}"))
}

/// JSON text as a payload: `{"encoding":"json","data":<compact JSON>}`; JSON `null`
/// (or no text) is no payload at all, as every SDK sends "no value".
pub fn encode_payload(what: &str, text: Option<&str>) -> Result<Option<EncodedObject>, String> {
    let Some(text) = text else { return Ok(None) };
    let value = parse_json(what, text)?;
    encoding::encode_optional(what, &value).map_err(|e| e.to_string())
}

/// A `NAME=VALUE` argument, VALUE as JSON when it parses as JSON, else as a string
/// (`status=waiting` is the string "waiting", `n=3` the number 3, `f={"a":1}` an object).
pub fn parse_assignment(text: &str) -> Result<(String, Value), String> {
    let (name, value) = text
        .split_once('=')
        .ok_or_else(|| format!("{text:?} is not NAME=VALUE"))?;
    if name.trim().is_empty() {
        return Err(format!("{text:?} has an empty name"));
    }
    let value = serde_json::from_str(value).unwrap_or_else(|_| Value::String(value.to_string()));
    Ok((name.trim().to_string(), value))
}

/// A `KEY=JSON` local attribute: the value encoded as a payload (strictly JSON).
pub fn parse_local_attribute(text: &str) -> Result<(String, EncodedObject), String> {
    let (key, value) = text
        .split_once('=')
        .ok_or_else(|| format!("{text:?} is not KEY=JSON"))?;
    let value = parse_json(&format!("local attribute {key:?}"), value)?;
    let encoded = encoding::encode("local attribute", &value).map_err(|e| e.to_string())?;
    Ok((key.to_string(), encoded))
}

/// A comma-separated list, empty items dropped.
pub fn split_list(items: &[String]) -> Vec<String> {
    items
        .iter()
        .flat_map(|s| s.split(','))
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(str::to_string)
        .collect()
}

/// A payload as people read it: its JSON text (pretty when it is an object or an
/// array), or `-` for none.
pub fn show_payload(payload: Option<&EncodedObject>) -> String {
    match payload {
        None => "-".to_string(),
        Some(p) if p.encoding.eq_ignore_ascii_case(encoding::JSON_ENCODING) => {
            match serde_json::from_str::<Value>(&p.data) {
                Ok(v @ (Value::Object(_) | Value::Array(_))) => {
                    serde_json::to_string_pretty(&v).unwrap_or_else(|_| p.data.clone())
                }
                _ => p.data.clone(),
            }
        }
        Some(p) => format!("({} encoded) {}", p.encoding, p.data),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn encodes_json_text_as_compact_payload() {
        let p = encode_payload("--input", Some(r#"{ "email": "a@b.c" }"#))
            .unwrap()
            .unwrap();
        assert_eq!(p.encoding, "json");
        assert_eq!(p.data, r#"{"email":"a@b.c"}"#);
        assert_eq!(encode_payload("--input", Some("null")).unwrap(), None);
        assert_eq!(encode_payload("--input", None).unwrap(), None);
        let err = encode_payload("--input", Some("{email}")).unwrap_err();
        assert!(err.starts_with("--input is not valid JSON"), "{err}");
    }

    #[test]
    fn assignments_take_json_or_a_string() {
        assert_eq!(
            parse_assignment("status=waiting").unwrap(),
            ("status".into(), json!("waiting"))
        );
        assert_eq!(parse_assignment("n=3").unwrap(), ("n".into(), json!(3)));
        assert_eq!(
            parse_assignment(r#"form={"email":"a=b"}"#).unwrap(),
            ("form".into(), json!({"email": "a=b"}))
        );
        assert!(parse_assignment("novalue").is_err());
        assert!(parse_assignment("=x").is_err());
    }

    #[test]
    fn local_attributes_are_strict_json() {
        let (key, value) = parse_local_attribute(r#"k={"a":1}"#).unwrap();
        assert_eq!((key.as_str(), value.data.as_str()), ("k", r#"{"a":1}"#));
        assert!(parse_local_attribute("k=plain").is_err());
    }

    #[test]
    fn lists_split_on_commas() {
        let items = vec!["a,b".to_string(), " c ,".to_string()];
        assert_eq!(split_list(&items), vec!["a", "b", "c"]);
    }

    #[test]
    fn shows_payloads() {
        assert_eq!(show_payload(None), "-");
        let p = EncodedObject::json(&"done").unwrap();
        assert_eq!(show_payload(Some(&p)), "\"done\"");
        let p = EncodedObject::json(&json!({"a": 1})).unwrap();
        assert_eq!(show_payload(Some(&p)), "{\n  \"a\": 1\n}");
    }
}
