//! `xdb wait`: long polls until the execution closes or `--timeout` passes, showing
//! progress on stderr between polls.

use std::io::{IsTerminal, Write};
use std::time::{Duration, Instant};

use xdb_protocol::{
    ProcessExecutionDescribeRequest, ProcessExecutionStatesRequest,
    ProcessExecutionWaitForCompletionRequest, ProcessStatus,
};
use xdb_sdk::Client;

use crate::args::{Output, WaitArgs};
use crate::commands::{print, Outcome};
use crate::exit::Exit;
use crate::views;

/// Longest single long poll: below the service's default `api.max_wait_seconds` (300)
/// and its default wait (30), so any sensible configuration accepts it.
const ROUND: Duration = Duration::from_secs(25);
/// At most this many states are named on the progress line.
const PROGRESS_STATES: usize = 3;
/// Long-poll length while showing progress, so the line is refreshed this often.
const PROGRESS_ROUND: Duration = Duration::from_secs(2);

/// The exit code of a wait's last answer.
pub fn exit_for_status(status: ProcessStatus, timed_out: bool) -> Exit {
    match status {
        _ if timed_out => Exit::WaitTimedOut,
        ProcessStatus::Running => Exit::WaitTimedOut,
        ProcessStatus::Completed => Exit::Ok,
        _ => Exit::ClosedNotCompleted,
    }
}

/// The seconds to ask the service for: what is left, within `round`, at least 1.
pub fn poll_seconds(left: Duration, round: Duration) -> u32 {
    let secs = left.min(round).as_secs().max(1);
    u32::try_from(secs).unwrap_or(u32::MAX)
}

/// The progress line on stderr: redrawn in place on a terminal, one line per update
/// otherwise.
struct Progress {
    on: bool,
    terminal: bool,
}

impl Progress {
    fn show(&self, line: &str) {
        if !self.on {
            return;
        }
        let mut err = std::io::stderr().lock();
        let _ = if self.terminal {
            write!(err, "\r\x1b[K{line}")
        } else {
            writeln!(err, "{line}")
        };
        let _ = err.flush();
    }

    fn finish(&self) {
        if self.on && self.terminal {
            eprint!("\r\x1b[K");
        }
    }
}

pub async fn wait(client: &Client, output: Output, a: &WaitArgs) -> Outcome {
    let terminal = std::io::stderr().is_terminal();
    let progress = Progress {
        on: !a.no_progress && (a.progress || terminal),
        terminal,
    };
    let started = Instant::now();
    let deadline = started + a.timeout;
    let round = if progress.on { PROGRESS_ROUND } else { ROUND };
    loop {
        if progress.on {
            let d = client
                .describe(&ProcessExecutionDescribeRequest {
                    process_id: a.process_id.clone(),
                    process_execution_id: None,
                })
                .await;
            let d = d.inspect_err(|_| progress.finish())?;
            // The states name what it is doing; a service without the call shows counts.
            let states = match d.status {
                ProcessStatus::Running => client
                    .states(&ProcessExecutionStatesRequest {
                        process_id: a.process_id.clone(),
                        process_execution_id: Some(d.process_execution_id.clone()),
                    })
                    .await
                    .ok()
                    .map(|s| views::active_states(&s, PROGRESS_STATES)),
                _ => None,
            };
            progress.show(&views::progress_line(
                &a.process_id,
                d.status.as_str(),
                d.paused.is_some(),
                Some(d.running_state_executions),
                states.as_deref(),
                started.elapsed(),
            ));
        }
        let left = deadline.saturating_duration_since(Instant::now());
        let response = client
            .wait_for_completion(&ProcessExecutionWaitForCompletionRequest {
                process_id: a.process_id.clone(),
                timeout_seconds: Some(poll_seconds(left, round)),
            })
            .await
            .inspect_err(|_| progress.finish())?;
        if !response.timed_out || Instant::now() >= deadline {
            progress.finish();
            print(output, &response, || views::wait_result(&response));
            return Ok(exit_for_status(response.status, response.timed_out));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exit_codes_of_a_wait() {
        assert_eq!(exit_for_status(ProcessStatus::Completed, false), Exit::Ok);
        assert_eq!(
            exit_for_status(ProcessStatus::Running, true),
            Exit::WaitTimedOut
        );
        assert_eq!(
            exit_for_status(ProcessStatus::Failed, false),
            Exit::ClosedNotCompleted
        );
        assert_eq!(
            exit_for_status(ProcessStatus::Terminated, false),
            Exit::ClosedNotCompleted
        );
    }

    #[test]
    fn polls_within_the_round_and_never_zero() {
        assert_eq!(poll_seconds(Duration::from_secs(600), ROUND), 25);
        assert_eq!(poll_seconds(Duration::from_secs(7), ROUND), 7);
        assert_eq!(poll_seconds(Duration::from_millis(300), ROUND), 1);
        assert_eq!(poll_seconds(Duration::ZERO, PROGRESS_ROUND), 1);
    }
}
