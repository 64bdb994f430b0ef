//! `xdb schedule`: schedules that start a process type on a cron expression or an
//! interval, fired by the service. Each firing's process id is the schedule id and its
//! nominal time, so `trigger` and `backfill` never start a firing twice.

use clap::{Args, Subcommand, ValueEnum};
use xdb_protocol::{
    CronSpec, IntervalSpec, ScheduleBackfillRequest, ScheduleChange, ScheduleChangeAction,
    ScheduleControlRequest, ScheduleCreateRequest, ScheduleDescribeRequest,
    ScheduleDescribeResponse, ScheduleHistoryRequest, ScheduleInfo, ScheduleListRequest,
    ScheduleOverlapPolicy, ScheduleSpec, ScheduleStartTemplate, ScheduleTriggerRequest,
    ScheduleUpdateRequest,
};
use xdb_sdk::Client;

use crate::args::Output;
use crate::command_args::{next_page_line, PageArgs};
use crate::commands::{print, Outcome};
use crate::exit::Exit;
use crate::format::{key_values, parse_time_ms, table, timestamp_ms};
use crate::payload::encode_payload;

#[derive(Debug, Subcommand)]
pub enum ScheduleCommand {
    /// Create a schedule
    Create(ScheduleSpecArgs),
    /// Replace a schedule's spec, start template and policies (not one a definition
    /// declares: registering the definition changes that)
    Update(ScheduleSpecArgs),
    /// Pause a schedule: nothing fires until it is resumed
    Pause(ScheduleControlArgs),
    /// Resume a paused schedule (missed firings within the catch-up window run)
    Resume(ScheduleControlArgs),
    /// Fire a schedule now
    Trigger(ScheduleTriggerArgs),
    /// Run the firings a schedule's spec had in a past range
    Backfill(ScheduleBackfillArgs),
    /// Delete a schedule (the executions it started run on; not one a definition declares)
    Delete(ScheduleControlArgs),
    /// Schedules by id, each with the process type declaring it (`-`: an operator's)
    List(ScheduleListArgs),
    /// A schedule, its next 10 fire times and its latest firings
    Describe(ScheduleIdArgs),
    /// Changes of schedules, newest first: what, who (an operator, or the registering
    /// deployment of a declared schedule) and why
    History(ScheduleHistoryArgs),
}

/// What a firing does while the previous one still runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum OverlapArg {
    Skip,
    BufferOne,
    AllowAll,
    TerminatePrevious,
}

impl From<OverlapArg> for ScheduleOverlapPolicy {
    fn from(arg: OverlapArg) -> Self {
        match arg {
            OverlapArg::Skip => ScheduleOverlapPolicy::Skip,
            OverlapArg::BufferOne => ScheduleOverlapPolicy::BufferOne,
            OverlapArg::AllowAll => ScheduleOverlapPolicy::AllowAll,
            OverlapArg::TerminatePrevious => ScheduleOverlapPolicy::TerminatePrevious,
        }
    }
}

#[derive(Debug, Args)]
pub struct ScheduleSpecArgs {
    pub schedule_id: String,
    #[arg(long = "type", short = 't')]
    pub process_type: String,
    /// The worker's URL (default: the current deployment's, when the type is registered)
    #[arg(long)]
    pub worker_url: Option<String>,
    /// A cron expression: 5 fields, or 6 with seconds first
    #[arg(long, conflicts_with = "every", required_unless_present = "every")]
    pub cron: Option<String>,
    /// The cron expression's IANA time zone (default UTC)
    #[arg(long = "tz", requires = "cron")]
    pub time_zone: Option<String>,
    /// An interval, in seconds
    #[arg(long)]
    pub every: Option<u32>,
    /// The interval's jitter, in seconds
    #[arg(long, requires = "every")]
    pub jitter: Option<u32>,
    /// The first state
    #[arg(long)]
    pub state: Option<String>,
    /// The first state's input, as JSON
    #[arg(long)]
    pub input: Option<String>,
    #[arg(long, value_enum)]
    pub overlap: Option<OverlapArg>,
    /// Missed firings at most this many seconds old still run (default 60)
    #[arg(long)]
    pub catchup: Option<u32>,
    /// Create it paused
    #[arg(long)]
    pub paused: bool,
    #[arg(long)]
    pub note: Option<String>,
}

#[derive(Debug, Args)]
pub struct ScheduleIdArgs {
    pub schedule_id: String,
}

#[derive(Debug, Args)]
pub struct ScheduleControlArgs {
    pub schedule_id: String,
    #[arg(long)]
    pub reason: Option<String>,
}

#[derive(Debug, Args)]
pub struct ScheduleTriggerArgs {
    pub schedule_id: String,
    /// Instead of the schedule's own
    #[arg(long, value_enum)]
    pub overlap: Option<OverlapArg>,
}

#[derive(Debug, Args)]
pub struct ScheduleBackfillArgs {
    pub schedule_id: String,
    /// Start of the range, inclusive: RFC 3339, a date, epoch ms, or an age (`2d`)
    #[arg(long, value_parser = parse_time_ms)]
    pub from: i64,
    /// End of the range, exclusive (at most now)
    #[arg(long, value_parser = parse_time_ms)]
    pub to: i64,
    /// Instead of the schedule's own (`allow-all` starts them all at once)
    #[arg(long, value_enum)]
    pub overlap: Option<OverlapArg>,
}

#[derive(Debug, Args)]
pub struct ScheduleListArgs {
    #[arg(long = "type", short = 't')]
    pub process_type: Option<String>,
    #[command(flatten)]
    pub page: PageArgs,
}

#[derive(Debug, Args)]
pub struct ScheduleHistoryArgs {
    /// Only this schedule's changes (a deleted schedule's too); absent: every schedule's
    pub schedule_id: Option<String>,
    #[command(flatten)]
    pub page: PageArgs,
}

/// The spec and template the flags describe.
pub fn spec_and_template(
    a: &ScheduleSpecArgs,
) -> Result<(ScheduleSpec, ScheduleStartTemplate), String> {
    let spec = match (&a.cron, a.every) {
        (Some(expression), _) => ScheduleSpec {
            cron: Some(CronSpec {
                expression: expression.clone(),
                time_zone: a.time_zone.clone(),
            }),
            interval: None,
        },
        (None, Some(every)) => ScheduleSpec {
            cron: None,
            interval: Some(IntervalSpec {
                every_seconds: every,
                jitter_seconds: a.jitter,
            }),
        },
        (None, None) => return Err("one of --cron and --every is needed".into()),
    };
    let template = ScheduleStartTemplate {
        process_type: a.process_type.clone(),
        worker_url: a.worker_url.clone().unwrap_or_default(),
        start_state_id: a.state.clone(),
        start_state_input: encode_payload("--input", a.input.as_deref())?,
        start_state_config: None,
        process_start_config: None,
    };
    Ok((spec, template))
}

pub async fn run(client: &Client, output: Output, command: &ScheduleCommand) -> Outcome {
    let control = |a: &ScheduleControlArgs| ScheduleControlRequest {
        schedule_id: a.schedule_id.clone(),
        reason: a.reason.clone(),
    };
    let described = match command {
        ScheduleCommand::Create(a) => {
            let (spec, start) = spec_and_template(a)?;
            let request = ScheduleCreateRequest {
                schedule_id: a.schedule_id.clone(),
                spec,
                start,
                overlap_policy: a.overlap.map(Into::into),
                catchup_window_seconds: a.catchup,
                paused: a.paused,
                note: a.note.clone(),
            };
            client.schedule_create(&request).await?
        }
        ScheduleCommand::Update(a) => {
            let (spec, start) = spec_and_template(a)?;
            let request = ScheduleUpdateRequest {
                schedule_id: a.schedule_id.clone(),
                spec,
                start,
                overlap_policy: a.overlap.map(Into::into),
                catchup_window_seconds: a.catchup,
                note: a.note.clone(),
            };
            client.schedule_update(&request).await?
        }
        ScheduleCommand::Pause(a) => client.schedule_pause(&control(a)).await?,
        ScheduleCommand::Resume(a) => client.schedule_resume(&control(a)).await?,
        ScheduleCommand::Describe(a) => {
            let request = ScheduleDescribeRequest {
                schedule_id: a.schedule_id.clone(),
            };
            client.schedule_describe(&request).await?
        }
        ScheduleCommand::Delete(a) => {
            let response = client.schedule_delete(&control(a)).await?;
            print(output, &response, || format!("deleted {}\n", a.schedule_id));
            return Ok(Exit::Ok);
        }
        ScheduleCommand::Trigger(a) => {
            let request = ScheduleTriggerRequest {
                schedule_id: a.schedule_id.clone(),
                overlap_policy: a.overlap.map(Into::into),
            };
            let response = client.schedule_trigger(&request).await?;
            print(output, &response, || {
                format!("fired {}\n", response.process_id)
            });
            return Ok(Exit::Ok);
        }
        ScheduleCommand::Backfill(a) => {
            let request = ScheduleBackfillRequest {
                schedule_id: a.schedule_id.clone(),
                start_timestamp_ms: a.from,
                end_timestamp_ms: a.to,
                overlap_policy: a.overlap.map(Into::into),
            };
            let response = client.schedule_backfill(&request).await?;
            print(output, &response, || {
                format!("{} firings recorded\n", response.firings)
            });
            return Ok(Exit::Ok);
        }
        ScheduleCommand::List(a) => {
            let request = ScheduleListRequest {
                process_type: a.process_type.clone(),
                page_size: a.page.page_size,
                next_page_token: a.page.page_token.clone(),
            };
            let response = client.schedule_list(&request).await?;
            print(output, &response, || {
                list_view(&response.schedules)
                    + &next_page_line(response.next_page_token.as_deref())
            });
            return Ok(Exit::Ok);
        }
        ScheduleCommand::History(a) => {
            let request = ScheduleHistoryRequest {
                schedule_id: a.schedule_id.clone(),
                page_size: a.page.page_size,
                next_page_token: a.page.page_token.clone(),
            };
            let response = client.schedule_history(&request).await?;
            print(output, &response, || {
                history_view(&response.changes)
                    + &next_page_line(response.next_page_token.as_deref())
            });
            return Ok(Exit::Ok);
        }
    };
    print(output, &described, || describe_view(&described));
    Ok(Exit::Ok)
}

fn spec_text(spec: &ScheduleSpec) -> String {
    match (&spec.cron, &spec.interval) {
        (Some(cron), _) => format!(
            "cron {} {}",
            cron.expression,
            cron.time_zone.as_deref().unwrap_or("UTC")
        ),
        (None, Some(interval)) => match interval.jitter_seconds {
            Some(jitter) => format!("every {}s ±{jitter}s", interval.every_seconds),
            None => format!("every {}s", interval.every_seconds),
        },
        (None, None) => String::new(),
    }
}

/// Who owns a schedule: the process type whose definition declares it (its code owns it:
/// registering the definition changes it, and `update` and `delete` are refused), or `-`
/// for an operator's.
fn declared_by_text(schedule: &ScheduleInfo) -> String {
    schedule
        .declared_by
        .clone()
        .unwrap_or_else(|| "-".to_string())
}

/// Schedules for people, one row each, in the order given.
pub fn list_view(schedules: &[ScheduleInfo]) -> String {
    let rows: Vec<Vec<String>> = schedules
        .iter()
        .map(|s| {
            vec![
                s.schedule_id.clone(),
                s.start.process_type.clone(),
                spec_text(&s.spec),
                if s.paused { "paused" } else { "" }.to_string(),
                s.next_fire_timestamp_ms
                    .map(timestamp_ms)
                    .unwrap_or_default(),
                declared_by_text(s),
            ]
        })
        .collect();
    table(
        &["SCHEDULE", "TYPE", "SPEC", "", "NEXT", "DECLARED BY"],
        &rows,
    )
}

/// A schedule for people: its settings, who owns it, next fire times and latest firings.
pub fn describe_view(described: &ScheduleDescribeResponse) -> String {
    let s = &described.schedule;
    let declared_by = match &s.declared_by {
        Some(process_type) => {
            format!("{process_type} (its code owns it: registering its definition changes it)")
        }
        None => "-".to_string(),
    };
    let mut out = key_values(&[
        ("schedule", s.schedule_id.clone()),
        ("type", s.start.process_type.clone()),
        ("declared by", declared_by),
        ("spec", spec_text(&s.spec)),
        ("overlap", s.overlap_policy.as_str().to_string()),
        ("catch-up", format!("{}s", s.catchup_window_seconds)),
        ("paused", s.paused.to_string()),
        ("note", s.note.clone().unwrap_or_default()),
    ]);
    out.push_str("next fire times:\n");
    for time in &described.next_fire_timestamps_ms {
        out.push_str(&format!("  {}\n", timestamp_ms(*time)));
    }
    let rows: Vec<Vec<String>> = described
        .recent_firings
        .iter()
        .map(|f| {
            vec![
                timestamp_ms(f.nominal_timestamp_ms),
                f.trigger.as_str().to_string(),
                f.outcome.as_str().to_string(),
                f.process_id.clone(),
                f.reason.clone().unwrap_or_default(),
            ]
        })
        .collect();
    out.push_str(&table(
        &["NOMINAL", "BY", "OUTCOME", "PROCESS ID", "REASON"],
        &rows,
    ));
    out
}

/// The top-level settings an update changed, by their JSON names; the timestamps and
/// the next fire time are left out, as every update moves them.
pub fn changed_fields(before: &ScheduleInfo, after: &ScheduleInfo) -> Vec<&'static str> {
    [
        ("spec", before.spec != after.spec),
        ("start", before.start != after.start),
        (
            "overlapPolicy",
            before.overlap_policy != after.overlap_policy,
        ),
        (
            "catchupWindowSeconds",
            before.catchup_window_seconds != after.catchup_window_seconds,
        ),
        ("paused", before.paused != after.paused),
        ("note", before.note != after.note),
    ]
    .into_iter()
    .filter_map(|(name, differs)| differs.then_some(name))
    .collect()
}

/// What a change did beyond its action: an update's changed settings, then the detail
/// the service recorded (what a trigger or a backfill started).
fn change_text(change: &ScheduleChange) -> String {
    let mut parts = Vec::new();
    if let (ScheduleChangeAction::Updated, Some(before), Some(after)) =
        (change.action, &change.before, &change.after)
    {
        let fields = changed_fields(before, after);
        parts.push(if fields.is_empty() {
            "nothing changed".to_string()
        } else {
            format!("changed {}", fields.join(", "))
        });
    }
    parts.extend(change.detail.clone());
    parts.join("; ")
}

/// The changes, newest first as the service answers them, one row each.
pub fn history_view(changes: &[ScheduleChange]) -> String {
    let rows: Vec<Vec<String>> = changes
        .iter()
        .map(|c| {
            vec![
                timestamp_ms(c.changed_timestamp_ms),
                c.action.as_str().to_string(),
                c.schedule_id.clone(),
                c.changed_by.clone(),
                change_text(c),
                c.reason.clone().unwrap_or_default(),
            ]
        })
        .collect();
    table(
        &["CHANGED", "ACTION", "SCHEDULE", "BY", "CHANGE", "REASON"],
        &rows,
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::args::{Cli, Command};
    use clap::Parser;

    fn schedule_command(args: &[&str]) -> Result<ScheduleCommand, clap::Error> {
        let all = ["xdb", "schedule"].into_iter().chain(args.iter().copied());
        match Cli::try_parse_from(all)?.command {
            Command::Schedule { command } => Ok(command),
            other => panic!("parsed as {other:?}"),
        }
    }

    fn nightly() -> ScheduleInfo {
        ScheduleInfo {
            schedule_id: "nightly".into(),
            spec: ScheduleSpec {
                cron: Some(CronSpec {
                    expression: "0 3 * * *".into(),
                    time_zone: None,
                }),
                interval: None,
            },
            start: ScheduleStartTemplate {
                process_type: "Report".into(),
                worker_url: "http://w:8080".into(),
                start_state_id: None,
                start_state_input: None,
                start_state_config: None,
                process_start_config: None,
            },
            overlap_policy: ScheduleOverlapPolicy::Skip,
            catchup_window_seconds: 60,
            paused: false,
            note: None,
            reason: None,
            next_fire_timestamp_ms: Some(1_000),
            created_timestamp_ms: 0,
            updated_timestamp_ms: 0,
            declared_by: None,
        }
    }

    fn change(action: ScheduleChangeAction) -> ScheduleChange {
        ScheduleChange {
            change_id: 1,
            schedule_id: "nightly".into(),
            action,
            before: None,
            after: None,
            detail: None,
            changed_by: "ops".into(),
            reason: None,
            changed_timestamp_ms: 1_714_564_800_123,
        }
    }

    #[test]
    fn history_takes_an_optional_schedule_and_the_page_flags() {
        let args = [
            "history",
            "nightly",
            "--page-size",
            "5",
            "--page-token",
            "t1",
        ];
        match schedule_command(&args).unwrap() {
            ScheduleCommand::History(a) => {
                assert_eq!(a.schedule_id.as_deref(), Some("nightly"));
                assert_eq!(a.page.page_size, Some(5));
                assert_eq!(a.page.page_token.as_deref(), Some("t1"));
            }
            other => panic!("parsed as {other:?}"),
        }
        match schedule_command(&["history"]).unwrap() {
            ScheduleCommand::History(a) => assert_eq!(a.schedule_id, None),
            other => panic!("parsed as {other:?}"),
        }
        assert!(schedule_command(&["history", "--page-size", "-1"]).is_err());
    }

    #[test]
    fn an_update_names_the_settings_it_changed_and_not_its_timestamps() {
        let before = nightly();
        let mut after = nightly();
        after.next_fire_timestamp_ms = Some(2_000);
        after.updated_timestamp_ms = 5;
        assert!(changed_fields(&before, &after).is_empty());
        after.note = Some("hourly".into());
        after.spec.cron = None;
        after.spec.interval = Some(IntervalSpec {
            every_seconds: 3600,
            jitter_seconds: None,
        });
        assert_eq!(changed_fields(&before, &after), ["spec", "note"]);
        after.start.worker_url = "http://w2:8080".into();
        after.overlap_policy = ScheduleOverlapPolicy::AllowAll;
        after.catchup_window_seconds = 0;
        after.paused = true;
        assert_eq!(
            changed_fields(&before, &after),
            [
                "spec",
                "start",
                "overlapPolicy",
                "catchupWindowSeconds",
                "paused",
                "note"
            ]
        );
    }

    #[test]
    fn the_history_shows_each_change_on_a_line_in_the_order_given() {
        let mut updated = change(ScheduleChangeAction::Updated);
        updated.before = Some(nightly());
        let mut after = nightly();
        after.catchup_window_seconds = 0;
        updated.after = Some(after);
        let mut unchanged = change(ScheduleChangeAction::Updated);
        unchanged.before = Some(nightly());
        unchanged.after = Some(nightly());
        let mut triggered = change(ScheduleChangeAction::Triggered);
        triggered.detail = Some("process id nightly-20240501T120000Z".into());
        let mut paused = change(ScheduleChangeAction::Paused);
        paused.reason = Some("maintenance".into());
        paused.changed_by = "anonymous".into();
        let text = history_view(&[triggered, updated, unchanged, paused]);
        assert_eq!(
            words(&text),
            [
                "CHANGED ACTION SCHEDULE BY CHANGE REASON",
                "2024-05-01 12:00:00.123Z TRIGGERED nightly ops process id nightly-20240501T120000Z",
                "2024-05-01 12:00:00.123Z UPDATED nightly ops changed catchupWindowSeconds",
                "2024-05-01 12:00:00.123Z UPDATED nightly ops nothing changed",
                "2024-05-01 12:00:00.123Z PAUSED nightly anonymous maintenance",
            ],
            "{text}"
        );
    }

    /// `text`'s lines with each run of spaces made one: the columns' padding depends on
    /// the widest cell.
    fn words(text: &str) -> Vec<String> {
        text.lines()
            .map(|line| line.split_whitespace().collect::<Vec<_>>().join(" "))
            .collect()
    }

    #[test]
    fn the_list_names_the_type_declaring_a_schedule_and_a_dash_for_an_operators() {
        let mut declared = nightly();
        declared.schedule_id = "hourly".into();
        declared.declared_by = Some("Report".into());
        declared.paused = true;
        declared.next_fire_timestamp_ms = None;
        let text = list_view(&[declared, nightly()]);
        assert_eq!(
            words(&text),
            [
                "SCHEDULE TYPE SPEC NEXT DECLARED BY",
                "hourly Report cron 0 3 * * * UTC paused Report",
                "nightly Report cron 0 3 * * * UTC 1970-01-01 00:00:01.000Z -",
            ],
            "{text}"
        );
        // The column starts where its header does, whatever the cells before it hold.
        let lines: Vec<&str> = text.lines().collect();
        let column = lines[0].find("DECLARED BY").unwrap();
        assert_eq!(&lines[1][column..], "Report", "{text}");
        assert_eq!(&lines[2][column..], "-", "{text}");
    }

    #[test]
    fn describe_says_whether_the_schedules_code_owns_it() {
        let mut described = ScheduleDescribeResponse {
            schedule: nightly(),
            next_fire_timestamps_ms: vec![1_000],
            recent_firings: vec![],
        };
        let declared_by = |text: &str| {
            text.lines()
                .find_map(|line| line.strip_prefix("declared by"))
                .map(str::trim)
                .map(str::to_string)
        };
        let text = describe_view(&described);
        assert_eq!(declared_by(&text).as_deref(), Some("-"), "{text}");
        described.schedule.declared_by = Some("Report".into());
        let text = describe_view(&described);
        assert_eq!(
            declared_by(&text).as_deref(),
            Some("Report (its code owns it: registering its definition changes it)"),
            "{text}"
        );
        // Its line comes after the type's, the keys padded alike.
        assert_eq!(
            text.lines().take(3).collect::<Vec<_>>(),
            [
                "schedule     nightly",
                "type         Report",
                "declared by  Report (its code owns it: registering its definition changes it)",
            ],
            "{text}"
        );
    }

    #[test]
    fn a_page_with_more_after_it_names_the_flag_to_ask_for_it() {
        assert_eq!(next_page_line(None), "");
        assert_eq!(next_page_line(Some("abc")), "next page: --page-token abc\n");
    }
}
