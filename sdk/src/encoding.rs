//! JSON payload encoding: the `{encoding: "json", data}` objects of the protocol.
//!
//! This is the rule every XDB SDK follows (stated on `EncodedObject` in the OpenAPI
//! document and in `docs/worker-protocol.md`): `data` is the value as compact JSON text,
//! "no value" is an absent payload rather than `"null"`, and an absent payload reads as
//! JSON `null`; `encoding` is written as `"json"` and read case-insensitively.

use serde::de::DeserializeOwned;
use serde::Serialize;
use xdb_protocol::EncodedObject;

use crate::error::XdbError;

/// The only encoding this SDK writes and reads.
pub const JSON_ENCODING: &str = "json";

/// Encodes `value` as a JSON [`EncodedObject`]; `what` names it in the error.
pub fn encode<T: Serialize + ?Sized>(what: &str, value: &T) -> Result<EncodedObject, XdbError> {
    let data = serde_json::to_string(value).map_err(|e| XdbError::Encode {
        what: what.to_string(),
        message: e.to_string(),
    })?;
    Ok(EncodedObject {
        encoding: JSON_ENCODING.to_string(),
        data,
    })
}

/// Encodes `value`, but returns `None` when it is JSON `null`, so "no input" (`()`,
/// `None`) goes over the wire as an absent field rather than as `"null"`.
pub fn encode_optional<T: Serialize + ?Sized>(
    what: &str,
    value: &T,
) -> Result<Option<EncodedObject>, XdbError> {
    let encoded = encode(what, value)?;
    Ok((encoded.data != "null").then_some(encoded))
}

/// Decodes an optional payload; an absent payload decodes as JSON `null`, so it reads
/// as `()` or `None` and fails for types that need a value.
pub fn decode<T: DeserializeOwned>(
    what: &str,
    value: Option<&EncodedObject>,
) -> Result<T, XdbError> {
    let data = match value {
        None => "null",
        Some(obj) if obj.encoding.eq_ignore_ascii_case(JSON_ENCODING) => obj.data.as_str(),
        Some(obj) => {
            return Err(XdbError::UnsupportedEncoding {
                what: what.to_string(),
                encoding: obj.encoding.clone(),
            })
        }
    };
    serde_json::from_str(data).map_err(|e| XdbError::Decode {
        what: what.to_string(),
        message: e.to_string(),
    })
}

/// Converts a value to a plain JSON value, as global attributes are sent.
pub fn to_json_value<T: Serialize + ?Sized>(
    what: &str,
    value: &T,
) -> Result<serde_json::Value, XdbError> {
    serde_json::to_value(value).map_err(|e| XdbError::Encode {
        what: what.to_string(),
        message: e.to_string(),
    })
}

/// Reads a plain JSON value (a global attribute) as `T`.
pub fn from_json_value<T: DeserializeOwned>(
    what: &str,
    value: &serde_json::Value,
) -> Result<T, XdbError> {
    T::deserialize(value).map_err(|e| XdbError::Decode {
        what: what.to_string(),
        message: e.to_string(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_json_and_treats_absent_as_null() {
        let obj = encode("x", &vec![1, 2]).unwrap();
        assert_eq!(obj.encoding, "json");
        assert_eq!(obj.data, "[1,2]");
        let back: Vec<i32> = decode("x", Some(&obj)).unwrap();
        assert_eq!(back, vec![1, 2]);

        let unit: () = decode("x", None).unwrap();
        assert_eq!(unit, ());
        let none: Option<String> = decode("x", None).unwrap();
        assert_eq!(none, None);
        assert!(matches!(
            decode::<String>("x", None),
            Err(XdbError::Decode { .. })
        ));
    }

    #[test]
    fn null_values_are_sent_as_absent() {
        assert_eq!(encode_optional("x", &()).unwrap(), None);
        assert_eq!(encode_optional("x", &None::<u8>).unwrap(), None);
        assert_eq!(encode_optional("x", &"a").unwrap().unwrap().data, "\"a\"");
    }

    #[test]
    fn rejects_foreign_encodings() {
        let obj = EncodedObject {
            encoding: "protobuf".into(),
            data: "??".into(),
        };
        let err = decode::<String>("input", Some(&obj)).unwrap_err();
        assert!(
            matches!(err, XdbError::UnsupportedEncoding { ref encoding, .. } if encoding == "protobuf")
        );
    }
}
