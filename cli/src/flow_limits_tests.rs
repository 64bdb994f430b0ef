//! `xdb flow-limits` flags and views.

use super::*;
use crate::args::{Cli, Command};
use clap::Parser;
use xdb_protocol::FlowLimitSource;

fn parse(args: &[&str]) -> Result<Cli, clap::Error> {
    Cli::try_parse_from(std::iter::once("xdb").chain(args.iter().copied()))
}

fn set(args: &[&str]) -> FlowLimitsSetRequest {
    let mut all = vec!["flow-limits", "set", "-t", "Order"];
    all.extend_from_slice(args);
    match parse(&all).unwrap().command {
        Command::FlowLimits {
            command: FlowLimitsCommand::Set(a),
        } => set_request(&a),
        other => panic!("parsed as {other:?}"),
    }
}

fn limits(rate: Option<f64>, at_once: Option<u32>) -> FlowLimits {
    FlowLimits {
        max_calls_per_second: rate,
        max_concurrent_calls: at_once,
        ..Default::default()
    }
}

#[test]
fn set_takes_a_type_s_fairness_attribute_and_weight() {
    let fair = set(&[
        "--fairness-key-attribute",
        "tenant_id",
        "--fairness-weight",
        "2",
    ]);
    assert_eq!(
        fair.override_limits,
        Some(FlowLimits {
            fairness_key_attribute: Some("tenant_id".into()),
            fairness_weight: Some(2),
            ..Default::default()
        })
    );
    assert_eq!(
        limits_text(fair.override_limits.as_ref()),
        "fair by tenant_id, fairness weight 2"
    );
    for bad in [
        &["--state", "S", "--fairness-weight", "2"][..],
        &["--fairness-key-attribute", "tenant_id", "--clear"],
        &["--fairness-weight", "x"],
    ] {
        let mut all = vec!["flow-limits", "set", "-t", "Order"];
        all.extend_from_slice(bad);
        assert!(parse(&all).is_err(), "{bad:?} accepted");
    }
}

#[test]
fn set_takes_a_type_s_priority_of_one_to_five() {
    let urgent = set(&["--priority", "1", "--reason", "on call"]);
    assert_eq!(
        urgent.override_limits,
        Some(FlowLimits {
            priority: Some(1),
            ..Default::default()
        })
    );
    assert_eq!(limits_text(urgent.override_limits.as_ref()), "priority 1");
    for bad in [
        &["--priority", "0"][..],
        &["--priority", "6"],
        &["--state", "S", "--priority", "2"],
    ] {
        let mut all = vec!["flow-limits", "set", "-t", "Order"];
        all.extend_from_slice(bad);
        assert!(parse(&all).is_err(), "{bad:?} accepted");
    }
}

#[test]
fn set_flags_become_an_override_a_clearing_or_no_limit() {
    let rate = set(&["--state", "Charge", "--max-calls-per-second", "0.5"]);
    assert_eq!(rate.state_id.as_deref(), Some("Charge"));
    assert_eq!(rate.override_limits, Some(limits(Some(0.5), None)));
    let cleared = set(&["--clear", "--reason", "back to normal"]);
    assert_eq!(cleared.override_limits, None);
    assert_eq!(cleared.reason.as_deref(), Some("back to normal"));
    let unlimited = set(&["--unlimited"]);
    assert_eq!(unlimited.override_limits, Some(FlowLimits::default()));
    let body = serde_json::to_value(&unlimited).unwrap();
    assert_eq!(
        body,
        serde_json::json!({"processType": "Order", "override": {}})
    );
}

#[test]
fn set_takes_a_concurrency_alone_or_with_a_rate() {
    let at_once = set(&["--max-concurrent-calls", "8"]);
    assert_eq!(at_once.override_limits, Some(limits(None, Some(8))));
    let body = serde_json::to_value(&at_once).unwrap();
    assert_eq!(
        body,
        serde_json::json!({"processType": "Order", "override": {"maxConcurrentCalls": 8}})
    );
    let both = set(&[
        "--max-concurrent-calls",
        "3",
        "--max-calls-per-second",
        "2.5",
    ]);
    assert_eq!(both.override_limits, Some(limits(Some(2.5), Some(3))));
    // 0 is the service's to refuse, naming the field.
    let zero = set(&["--max-concurrent-calls", "0"]);
    assert_eq!(zero.override_limits, Some(limits(None, Some(0))));
    let negative = [
        "flow-limits",
        "set",
        "-t",
        "O",
        "--max-concurrent-calls",
        "-1",
    ];
    assert!(parse(&negative).is_err());
    let fraction = [
        "flow-limits",
        "set",
        "-t",
        "O",
        "--max-concurrent-calls",
        "1.5",
    ];
    assert!(parse(&fraction).is_err());
}

#[test]
fn set_needs_limits_or_exactly_one_of_clear_and_unlimited() {
    assert!(parse(&["flow-limits", "set", "-t", "Order"]).is_err());
    let both = ["flow-limits", "set", "-t", "O", "--clear", "--unlimited"];
    assert!(parse(&both).is_err());
    for limit in ["--max-calls-per-second", "--max-concurrent-calls"] {
        for exclusive in ["--clear", "--unlimited"] {
            let args = ["flow-limits", "set", "-t", "O", limit, "3", exclusive];
            let error = parse(&args).expect_err(&format!("{limit} with {exclusive}"));
            assert_eq!(
                error.kind(),
                clap::error::ErrorKind::ArgumentConflict,
                "{error}"
            );
        }
    }
}

#[test]
fn limits_read_as_a_rate_a_concurrency_or_both() {
    assert_eq!(limits_text(None), "-");
    assert_eq!(limits_text(Some(&FlowLimits::default())), "unlimited");
    assert_eq!(limits_text(Some(&limits(Some(2.5), None))), "2.5/s");
    assert_eq!(limits_text(Some(&limits(None, Some(8)))), "8 at once");
    assert_eq!(
        limits_text(Some(&limits(Some(0.5), Some(8)))),
        "0.5/s, 8 at once"
    );
}

#[test]
fn the_list_shows_rate_and_concurrency_declared_overridden_and_effective() {
    let entry =
        |state: Option<&str>, declared, over: Option<FlowLimits>, effective| FlowLimitsEntry {
            process_type: "Order".into(),
            state_id: state.map(str::to_string),
            declared: Some(declared),
            override_limits: over,
            effective,
            updated_timestamp_ms: 0,
        };
    let text = list_view(&[
        entry(
            None,
            limits(Some(10.0), Some(4)),
            None,
            limits(Some(10.0), Some(4)),
        ),
        entry(
            Some("Charge"),
            limits(Some(2.0), None),
            Some(FlowLimits::default()),
            FlowLimits::default(),
        ),
        entry(
            Some("Refund"),
            limits(Some(2.0), None),
            Some(limits(None, Some(8))),
            limits(None, Some(8)),
        ),
    ]);
    let lines: Vec<&str> = text.lines().collect();
    let header: Vec<&str> = lines[0].split("  ").filter(|h| !h.is_empty()).collect();
    let header: Vec<&str> = header.iter().map(|h| h.trim()).collect();
    assert_eq!(
        header,
        [
            "TYPE",
            "STATE",
            "DECLARED RATE",
            "OVERRIDE RATE",
            "EFFECTIVE RATE",
            "DECLARED AT ONCE",
            "OVERRIDE AT ONCE",
            "EFFECTIVE AT ONCE",
            "RUNNING PER KEY",
            "PRIORITY",
            "UPDATED"
        ],
        "{text}"
    );
    assert!(lines[1].contains("(all states)"), "{text}");
    let type_row: Vec<&str> = lines[1].split_whitespace().collect();
    assert_eq!(
        &type_row[3..11],
        ["10/s", "-", "10/s", "4", "-", "4", "unlimited", "-"],
        "{text}"
    );
    let state_row: Vec<&str> = lines[2].split_whitespace().collect();
    assert_eq!(
        &state_row[1..8],
        [
            "Charge",
            "2/s",
            "unlimited",
            "unlimited",
            "unlimited",
            "unlimited",
            "unlimited"
        ],
        "{text}"
    );
    let refund_row: Vec<&str> = lines[3].split_whitespace().collect();
    assert_eq!(
        &refund_row[1..8],
        [
            "Refund",
            "2/s",
            "unlimited",
            "unlimited",
            "unlimited",
            "8",
            "8"
        ],
        "{text}"
    );
}

#[test]
fn an_entry_shows_both_limits() {
    let entry = FlowLimitsEntry {
        process_type: "Order".into(),
        state_id: Some("Charge".into()),
        declared: None,
        override_limits: Some(limits(Some(5.0), Some(8))),
        effective: limits(Some(5.0), Some(8)),
        updated_timestamp_ms: 0,
    };
    let text = entry_view(&entry);
    let line = |key: &str| {
        text.lines()
            .find(|l| l.starts_with(key))
            .unwrap_or_else(|| panic!("no {key}: {text}"))
            .to_string()
    };
    assert!(line("declared").ends_with("  -"), "{text}");
    assert!(line("override").ends_with("  5/s, 8 at once"), "{text}");
    assert!(line("effective").ends_with("  5/s, 8 at once"), "{text}");
}

#[test]
fn the_history_shows_each_change_before_and_after() {
    let change = |before, after| FlowLimitChange {
        change_id: 1,
        process_type: "Order".into(),
        state_id: None,
        source: FlowLimitSource::Operator,
        before,
        after,
        changed_by: "ops".into(),
        reason: Some("payments slow".into()),
        changed_timestamp_ms: 0,
    };
    let text = history_view(&[
        change(
            Some(limits(Some(0.5), None)),
            Some(limits(Some(0.5), Some(8))),
        ),
        change(None, Some(limits(Some(0.5), None))),
    ]);
    let rows: Vec<&str> = text.lines().skip(1).collect();
    assert!(rows[0].contains("OPERATOR"), "{text}");
    assert!(rows[0].contains("0.5/s → 0.5/s, 8 at once"), "{text}");
    assert!(rows[1].contains("- → 0.5/s  "), "{text}");
    assert!(rows[1].ends_with("ops  payments slow"), "{text}");
}
