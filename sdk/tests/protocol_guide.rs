//! `docs/worker-protocol.md` is what SDKs in other languages are written from: its
//! examples must be what this SDK and the services actually do.

use serde_json::json;
use xdb_sdk::encoding::{encode, encode_optional};
use xdb_sdk::protocol::{ErrorSubType, WorkerErrorType};

const GUIDE: &str = include_str!("../../docs/worker-protocol.md");

#[test]
fn the_signature_test_vector_is_what_xdb_signs() {
    let header = xdb_worker_auth::sign(
        b"0123456789abcdef-secret",
        1_700_000_000,
        br#"{"context":{"attempt":1}}"#,
    );
    assert!(GUIDE.contains(&header), "the guide states {header}");
    assert!(GUIDE.contains(xdb_worker_auth::SIGNATURE_HEADER));
    assert!(GUIDE.contains(&format!(
        "> {}` seconds",
        xdb_worker_auth::DEFAULT_MAX_SKEW_SECONDS
    )));
}

#[test]
fn the_payload_examples_are_what_the_sdk_writes() {
    for (value, wire) in [
        (
            json!({"email": "a@b.c"}),
            r#"{"encoding": "json", "data": "{\"email\":\"a@b.c\"}"}"#,
        ),
        (json!("hi"), r#"{"encoding": "json", "data": "\"hi\""}"#),
        (json!(3), r#"{"encoding": "json", "data": "3"}"#),
    ] {
        let encoded = encode("value", &value).unwrap();
        let written: serde_json::Value = serde_json::to_value(&encoded).unwrap();
        let documented: serde_json::Value = serde_json::from_str(wire).unwrap();
        assert_eq!(written, documented, "{value}");
        assert!(GUIDE.contains(wire), "the guide shows {wire}");
    }
    assert_eq!(encode_optional("nothing", &()).unwrap(), None);
    assert!(GUIDE.contains("never `data: \"null\"`"));
}

#[test]
fn the_guide_lists_every_error_sub_type_with_its_status() {
    for sub_type in ErrorSubType::ALL {
        let row = format!("| `{}` | {} |", sub_type.as_str(), sub_type.http_status());
        assert!(GUIDE.contains(&row), "the guide's table has {row}");
    }
}

/// The guide's table of worker answers says, for every `errorType`, its status and
/// whether XDB parks the call at once or retries it, as the protocol decides.
#[test]
fn the_guide_says_which_worker_error_types_are_retried() {
    for kind in WorkerErrorType::ALL {
        let start = format!("| `{}`:", kind.as_str());
        let row = GUIDE
            .lines()
            .find(|line| line.starts_with(&start))
            .unwrap_or_else(|| panic!("the guide's table has a row for {kind}"));
        assert!(row.contains(&format!("| {} |", kind.status())), "{row}");
        assert_eq!(
            row.contains("**parks at once**"),
            !kind.retryable(),
            "{row}"
        );
        assert_eq!(
            row.contains("retried by the policy"),
            kind.retryable(),
            "{row}"
        );
    }
}
