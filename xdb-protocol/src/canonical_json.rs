//! One canonical text for a JSON value, whatever order its objects' keys came in.

use serde_json::Value;

/// `value` with every object's keys in order, so its text is the same whether or not
/// serde_json keeps insertion order (its `preserve_order` feature, which any crate of a
/// build may turn on) and whatever order a writer put the keys in. Content hashes and the
/// committed OpenAPI document are taken over this form.
pub fn with_sorted_keys(value: Value) -> Value {
    match value {
        Value::Object(map) => {
            let mut entries: Vec<(String, Value)> = map.into_iter().collect();
            entries.sort_by(|a, b| a.0.cmp(&b.0));
            Value::Object(
                entries
                    .into_iter()
                    .map(|(k, v)| (k, with_sorted_keys(v)))
                    .collect(),
            )
        }
        Value::Array(items) => Value::Array(items.into_iter().map(with_sorted_keys).collect()),
        other => other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn key_order_does_not_change_the_text() {
        let a: Value = serde_json::from_str(r#"{"b":1,"a":{"d":[{"f":1,"e":2}],"c":3}}"#).unwrap();
        let b: Value = serde_json::from_str(r#"{"a":{"c":3,"d":[{"e":2,"f":1}]},"b":1}"#).unwrap();
        assert_eq!(
            serde_json::to_string(&with_sorted_keys(a)).unwrap(),
            serde_json::to_string(&with_sorted_keys(b)).unwrap()
        );
        assert_eq!(
            serde_json::to_string(&with_sorted_keys(json!({"z": [2, 1], "y": null}))).unwrap(),
            r#"{"y":null,"z":[2,1]}"#,
            "arrays keep their order"
        );
    }
}
