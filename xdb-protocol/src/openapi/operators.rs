//! Names for the filter operators (`=`, `!=`, `<`…) where generated code needs an
//! identifier per value: `x-enum-varnames`, which the SDKs' generators read, so that
//! Python's `FilterOp.EQ` is not `FilterOp.FIELD_`.

use serde_json::{json, Value};

use crate::FilterOp;

/// Every operator in the order the schema lists it, with its identifier.
const NAMES: [(FilterOp, &str); 12] = [
    (FilterOp::Eq, "EQ"),
    (FilterOp::Ne, "NE"),
    (FilterOp::Lt, "LT"),
    (FilterOp::Le, "LE"),
    (FilterOp::Gt, "GT"),
    (FilterOp::Ge, "GE"),
    (FilterOp::In, "IN"),
    (FilterOp::IsNull, "IS_NULL"),
    (FilterOp::IsNotNull, "IS_NOT_NULL"),
    (FilterOp::Prefix, "PREFIX"),
    (FilterOp::Suffix, "SUFFIX"),
    (FilterOp::Contains, "CONTAINS"),
];

pub(super) fn apply(doc: &mut Value) {
    let schema = &mut doc["components"]["schemas"]["FilterOp"];
    let values: Vec<Value> = schema["enum"].as_array().cloned().unwrap_or_default();
    let names: Vec<&str> = values
        .iter()
        .map(|value| {
            NAMES
                .iter()
                .find(|(op, _)| Some(op.as_str()) == value.as_str())
                .map(|(_, name)| *name)
                .expect("every operator has a name")
        })
        .collect();
    schema["x-enum-varnames"] = json!(names);
}

#[cfg(test)]
mod tests {
    #[test]
    fn every_operator_is_named_in_order() {
        let doc = super::super::document(&crate::Limits::default(), 300);
        let schema = &doc["components"]["schemas"]["FilterOp"];
        let values = schema["enum"].as_array().unwrap();
        let names = schema["x-enum-varnames"].as_array().unwrap();
        assert_eq!(values.len(), names.len());
        assert_eq!((&values[0], &names[0]), (&"=".into(), &"EQ".into()));
    }
}
