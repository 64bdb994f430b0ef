//! `xdb flow-limits`: how fast the async service may call a process type's worker (calls
//! a second) and how many of its calls may run at once, per type or per state. A
//! definition declares limits at registration; an operator overrides
//! them here (or clears the override, so the declared limits apply again), and every
//! change is kept in an audit history.

use clap::{ArgGroup, Args, Subcommand};
use xdb_protocol::{
    FlowLimitChange, FlowLimits, FlowLimitsEntry, FlowLimitsHistoryRequest, FlowLimitsListRequest,
    FlowLimitsSetRequest,
};
use xdb_sdk::Client;

use crate::args::Output;
use crate::command_args::{next_page_line, PageArgs};
use crate::commands::{print, Outcome};
use crate::exit::Exit;
use crate::format::{key_values, table, timestamp_ms};

#[derive(Debug, Subcommand)]
pub enum FlowLimitsCommand {
    /// Set or clear an operator's override of a type's or a state's limits
    Set(FlowLimitsSetArgs),
    /// The limits declared, overridden and in force, by type and state
    List(FlowLimitsListArgs),
    /// Changes of limits by registrations and operators, newest first
    History(FlowLimitsHistoryArgs),
}

#[derive(Debug, Args)]
#[command(group(
    ArgGroup::new("limit")
        .required(true)
        .multiple(true)
        .args([
            "max_calls_per_second",
            "max_concurrent_calls",
            "max_running_executions",
            "priority",
            "clear",
            "unlimited"
        ])
))]
pub struct FlowLimitsSetArgs {
    #[arg(long = "type", short = 't')]
    pub process_type: String,
    /// One state's limits (default: the whole type's, all its states' calls together)
    #[arg(long)]
    pub state: Option<String>,
    /// At most this many worker calls a second (fractions allowed: 0.5 is one every 2 s)
    #[arg(long)]
    pub max_calls_per_second: Option<f64>,
    /// At most this many worker calls running at once (1 to 100000); with
    /// --max-calls-per-second, both apply
    #[arg(long)]
    pub max_concurrent_calls: Option<u32>,
    /// At most this many executions of the type running at once per concurrency key (1
    /// to 100000; the type's limits only): more starts wait PENDING, in start order
    #[arg(long, conflicts_with = "state")]
    pub max_running_executions: Option<u32>,
    /// With --max-running-executions: the global attribute (business column) whose value
    /// a start writes is its concurrency key when it names none
    #[arg(long, requires = "max_running_executions")]
    pub concurrency_key_attribute: Option<String>,
    /// The priority of the type's starts that name none: 1 (claimed first) to 5 (the
    /// type's limits only)
    #[arg(long, conflicts_with = "state", value_parser = clap::value_parser!(u8).range(1..=5))]
    pub priority: Option<u8>,
    /// Clear the override: the declared limits apply again
    #[arg(long, conflicts_with_all = [
        "max_calls_per_second",
        "max_concurrent_calls",
        "max_running_executions",
        "priority",
        "unlimited"
    ])]
    pub clear: bool,
    /// No limit, whatever the definition declares
    #[arg(long, conflicts_with_all = [
        "max_calls_per_second",
        "max_concurrent_calls",
        "max_running_executions",
        "priority"
    ])]
    pub unlimited: bool,
    /// Why, kept in the audit history
    #[arg(long)]
    pub reason: Option<String>,
}

#[derive(Debug, Args)]
pub struct FlowLimitsListArgs {
    #[arg(long = "type", short = 't')]
    pub process_type: Option<String>,
}

#[derive(Debug, Args)]
pub struct FlowLimitsHistoryArgs {
    #[arg(long = "type", short = 't')]
    pub process_type: Option<String>,
    #[command(flatten)]
    pub page: PageArgs,
}

/// The request the `set` flags describe.
pub fn set_request(a: &FlowLimitsSetArgs) -> FlowLimitsSetRequest {
    let override_limits = if a.clear {
        None
    } else if a.unlimited {
        Some(FlowLimits::default())
    } else {
        Some(FlowLimits {
            max_calls_per_second: a.max_calls_per_second,
            max_concurrent_calls: a.max_concurrent_calls,
            max_running_executions: a.max_running_executions,
            concurrency_key_attribute: a.concurrency_key_attribute.clone(),
            priority: a.priority,
        })
    };
    FlowLimitsSetRequest {
        process_type: a.process_type.clone(),
        state_id: a.state.clone(),
        override_limits,
        reason: a.reason.clone(),
    }
}

pub async fn run(client: &Client, output: Output, command: &FlowLimitsCommand) -> Outcome {
    match command {
        FlowLimitsCommand::Set(a) => {
            let entry = client.flow_limits_set(&set_request(a)).await?;
            print(output, &entry, || entry_view(&entry));
        }
        FlowLimitsCommand::List(a) => {
            let request = FlowLimitsListRequest {
                process_type: a.process_type.clone(),
            };
            let response = client.flow_limits_list(&request).await?;
            print(output, &response, || list_view(&response.limits));
        }
        FlowLimitsCommand::History(a) => {
            let request = FlowLimitsHistoryRequest {
                process_type: a.process_type.clone(),
                page_size: a.page.page_size,
                next_page_token: a.page.page_token.clone(),
            };
            let response = client.flow_limits_history(&request).await?;
            print(output, &response, || {
                history_view(&response.changes)
                    + &next_page_line(response.next_page_token.as_deref())
            });
        }
    }
    Ok(Exit::Ok)
}

/// Limits for people: `2.5/s`, `8 at once`, `2.5/s, 8 at once, priority 1`, `unlimited`
/// for limits that limit nothing, `-` for none.
pub fn limits_text(limits: Option<&FlowLimits>) -> String {
    let Some(limits) = limits else {
        return "-".to_string();
    };
    let parts: Vec<String> = [
        limits.max_calls_per_second.map(|rate| format!("{rate}/s")),
        limits.max_concurrent_calls.map(|n| format!("{n} at once")),
        limits
            .max_running_executions
            .map(|n| match &limits.concurrency_key_attribute {
                Some(attribute) => format!("{n} running per {attribute}"),
                None => format!("{n} running per key"),
            }),
        limits.priority.map(|p| format!("priority {p}")),
    ]
    .into_iter()
    .flatten()
    .collect();
    if parts.is_empty() {
        "unlimited".to_string()
    } else {
        parts.join(", ")
    }
}

/// One field of limits, for a table's column: its value, `unlimited` if the limits do not
/// limit it, `-` for no limits.
fn field_text<T>(limits: Option<&FlowLimits>, field: fn(&FlowLimits) -> Option<T>) -> String
where
    T: std::fmt::Display,
{
    match limits.map(field) {
        None => "-".to_string(),
        Some(None) => "unlimited".to_string(),
        Some(Some(value)) => value.to_string(),
    }
}

/// The rate of limits, for a table's column: `2.5/s`, `unlimited` or `-`.
fn rate_text(limits: Option<&FlowLimits>) -> String {
    match limits.map(|l| l.max_calls_per_second) {
        Some(Some(rate)) => format!("{rate}/s"),
        _ => field_text(limits, |l| l.max_calls_per_second),
    }
}

/// The concurrency of limits, for a table's column: `8`, `unlimited` or `-`.
fn concurrency_text(limits: Option<&FlowLimits>) -> String {
    field_text(limits, |l| l.max_concurrent_calls)
}

/// Which calls an entry or a change limits: the type's, or one of its states'.
fn scope(state_id: Option<&str>) -> String {
    state_id.unwrap_or("(all states)").to_string()
}

/// One entry, as `set` answers it.
pub fn entry_view(entry: &FlowLimitsEntry) -> String {
    key_values(&[
        ("type", entry.process_type.clone()),
        ("state", scope(entry.state_id.as_deref())),
        ("declared", limits_text(entry.declared.as_ref())),
        ("override", limits_text(entry.override_limits.as_ref())),
        ("effective", limits_text(Some(&entry.effective))),
        ("updated", timestamp_ms(entry.updated_timestamp_ms)),
    ])
}

/// The entries, one row each: the rate declared, overridden and in force, then the
/// concurrency (calls at once) likewise, then the running executions per key in force
/// (a type's only).
pub fn list_view(limits: &[FlowLimitsEntry]) -> String {
    let rows: Vec<Vec<String>> = limits
        .iter()
        .map(|e| {
            let declared = e.declared.as_ref();
            let over = e.override_limits.as_ref();
            let effective = Some(&e.effective);
            vec![
                e.process_type.clone(),
                scope(e.state_id.as_deref()),
                rate_text(declared),
                rate_text(over),
                rate_text(effective),
                concurrency_text(declared),
                concurrency_text(over),
                concurrency_text(effective),
                match e.state_id {
                    Some(_) => "-".to_string(),
                    None => field_text(effective, |l| l.max_running_executions),
                },
                match (&e.state_id, e.effective.priority) {
                    (None, Some(priority)) => priority.to_string(),
                    _ => "-".to_string(),
                },
                timestamp_ms(e.updated_timestamp_ms),
            ]
        })
        .collect();
    table(
        &[
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
            "UPDATED",
        ],
        &rows,
    )
}

/// The changes, newest first, one row each.
pub fn history_view(changes: &[FlowLimitChange]) -> String {
    let rows: Vec<Vec<String>> = changes
        .iter()
        .map(|c| {
            vec![
                timestamp_ms(c.changed_timestamp_ms),
                c.process_type.clone(),
                scope(c.state_id.as_deref()),
                c.source.as_str().to_string(),
                format!(
                    "{} → {}",
                    limits_text(c.before.as_ref()),
                    limits_text(c.after.as_ref())
                ),
                c.changed_by.clone(),
                c.reason.clone().unwrap_or_default(),
            ]
        })
        .collect();
    table(
        &[
            "CHANGED", "TYPE", "STATE", "SOURCE", "CHANGE", "BY", "REASON",
        ],
        &rows,
    )
}

#[cfg(test)]
mod tests {
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
            max_running_executions: None,
            concurrency_key_attribute: None,
            priority: None,
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
}
