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
            "fairness_key_attribute",
            "fairness_weight",
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
    /// The global attribute (business column) whose value a start writes is its
    /// fairness key when it names none: claims share a priority between keys (the
    /// type's limits only)
    #[arg(long, conflicts_with = "state")]
    pub fairness_key_attribute: Option<String>,
    /// The weight of the type's keyed starts that name none: 1 to 1000 (the type's
    /// limits only)
    #[arg(long, conflicts_with = "state")]
    pub fairness_weight: Option<u32>,
    /// Clear the override: the declared limits apply again
    #[arg(long, conflicts_with_all = [
        "max_calls_per_second",
        "max_concurrent_calls",
        "max_running_executions",
        "priority",
        "fairness_key_attribute",
        "fairness_weight",
        "unlimited"
    ])]
    pub clear: bool,
    /// No limit, whatever the definition declares
    #[arg(long, conflicts_with_all = [
        "max_calls_per_second",
        "max_concurrent_calls",
        "max_running_executions",
        "priority",
        "fairness_key_attribute",
        "fairness_weight"
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
            fairness_key_attribute: a.fairness_key_attribute.clone(),
            fairness_weight: a.fairness_weight,
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

/// Limits for people: `2.5/s`, `8 at once`, `2.5/s, 8 at once, priority 1`, `fair by
/// tenant_id, fairness weight 2`, `unlimited` for limits that limit nothing, `-` for
/// none.
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
        limits
            .fairness_key_attribute
            .as_ref()
            .map(|attribute| format!("fair by {attribute}")),
        limits
            .fairness_weight
            .map(|w| format!("fairness weight {w}")),
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
#[path = "flow_limits_tests.rs"]
mod tests;
