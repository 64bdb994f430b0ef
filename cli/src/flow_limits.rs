//! `xdb flow-limits`: how fast the async service may call a process type's worker, per
//! type or per state. A definition declares limits at registration; an operator overrides
//! them here (or clears the override, so the declared limits apply again), and every
//! change is kept in an audit history.

use clap::{ArgGroup, Args, Subcommand};
use xdb_protocol::{
    FlowLimitChange, FlowLimits, FlowLimitsEntry, FlowLimitsHistoryRequest, FlowLimitsListRequest,
    FlowLimitsSetRequest,
};
use xdb_sdk::Client;

use crate::args::Output;
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
#[command(group(ArgGroup::new("limit").required(true).args(["max_calls_per_second", "clear", "unlimited"])))]
pub struct FlowLimitsSetArgs {
    #[arg(long = "type", short = 't')]
    pub process_type: String,
    /// One state's limits (default: the whole type's, all its states' calls together)
    #[arg(long)]
    pub state: Option<String>,
    /// At most this many worker calls a second (fractions allowed: 0.5 is one every 2 s)
    #[arg(long)]
    pub max_calls_per_second: Option<f64>,
    /// Clear the override: the declared limits apply again
    #[arg(long)]
    pub clear: bool,
    /// No limit, whatever the definition declares
    #[arg(long)]
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
    #[arg(long)]
    pub page_size: Option<u32>,
    #[arg(long)]
    pub page_token: Option<String>,
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
            ..Default::default()
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
                page_size: a.page_size,
                next_page_token: a.page_token.clone(),
            };
            let response = client.flow_limits_history(&request).await?;
            print(output, &response, || {
                let mut out = history_view(&response.changes);
                if let Some(token) = &response.next_page_token {
                    out.push_str(&format!("next page: --page-token {token}\n"));
                }
                out
            });
        }
    }
    Ok(Exit::Ok)
}

/// Limits for people: `2.5/s`, `unlimited` for limits that limit nothing, `-` for none.
pub fn limits_text(limits: Option<&FlowLimits>) -> String {
    match limits.map(|l| l.max_calls_per_second) {
        None => "-".to_string(),
        Some(None) => "unlimited".to_string(),
        Some(Some(rate)) => format!("{rate}/s"),
    }
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

/// The entries, one row each.
pub fn list_view(limits: &[FlowLimitsEntry]) -> String {
    let rows: Vec<Vec<String>> = limits
        .iter()
        .map(|e| {
            vec![
                e.process_type.clone(),
                scope(e.state_id.as_deref()),
                limits_text(e.declared.as_ref()),
                limits_text(e.override_limits.as_ref()),
                limits_text(Some(&e.effective)),
                timestamp_ms(e.updated_timestamp_ms),
            ]
        })
        .collect();
    table(
        &[
            "TYPE",
            "STATE",
            "DECLARED",
            "OVERRIDE",
            "EFFECTIVE",
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

    #[test]
    fn set_flags_become_an_override_a_clearing_or_no_limit() {
        let rate = set(&["--state", "Charge", "--max-calls-per-second", "0.5"]);
        assert_eq!(rate.state_id.as_deref(), Some("Charge"));
        assert_eq!(
            rate.override_limits.unwrap().max_calls_per_second,
            Some(0.5)
        );
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
    fn set_needs_exactly_one_of_a_rate_clear_and_unlimited() {
        assert!(parse(&["flow-limits", "set", "-t", "Order"]).is_err());
        let both = ["flow-limits", "set", "-t", "O", "--clear", "--unlimited"];
        assert!(parse(&both).is_err());
        let rate_and_clear = [
            "flow-limits",
            "set",
            "-t",
            "O",
            "--max-calls-per-second",
            "3",
            "--clear",
        ];
        assert!(parse(&rate_and_clear).is_err());
    }

    #[test]
    fn the_list_shows_declared_override_and_effective_per_type_and_state() {
        let entry =
            |state: Option<&str>, declared, over: Option<FlowLimits>, effective| FlowLimitsEntry {
                process_type: "Order".into(),
                state_id: state.map(str::to_string),
                declared: Some(FlowLimits {
                    max_calls_per_second: declared,
                    ..Default::default()
                }),
                override_limits: over,
                effective: FlowLimits {
                    max_calls_per_second: effective,
                    ..Default::default()
                },
                updated_timestamp_ms: 0,
            };
        let text = list_view(&[
            entry(None, Some(10.0), None, Some(10.0)),
            entry(Some("Charge"), Some(2.0), Some(FlowLimits::default()), None),
        ]);
        let lines: Vec<&str> = text.lines().collect();
        assert!(lines[0].starts_with("TYPE"), "{text}");
        assert!(lines[1].contains("(all states)"), "{text}");
        let type_row: Vec<&str> = lines[1].split_whitespace().collect();
        assert_eq!(&type_row[3..6], ["10/s", "-", "10/s"], "{text}");
        let state_row: Vec<&str> = lines[2].split_whitespace().collect();
        assert_eq!(
            &state_row[1..5],
            ["Charge", "2/s", "unlimited", "unlimited"]
        );
    }

    #[test]
    fn the_history_shows_each_change_before_and_after() {
        let change = FlowLimitChange {
            change_id: 1,
            process_type: "Order".into(),
            state_id: None,
            source: FlowLimitSource::Operator,
            before: None,
            after: Some(FlowLimits {
                max_calls_per_second: Some(0.5),
                ..Default::default()
            }),
            changed_by: "ops".into(),
            reason: Some("payments slow".into()),
            changed_timestamp_ms: 0,
        };
        let text = history_view(&[change]);
        let row = text.lines().nth(1).unwrap();
        assert!(row.contains("OPERATOR"), "{text}");
        assert!(row.contains("- → 0.5/s"), "{text}");
        assert!(row.ends_with("ops  payments slow"), "{text}");
    }
}
