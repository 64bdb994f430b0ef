//! The exit codes scripts can rely on, and how a failed call maps to one.

use xdb_protocol::ErrorSubType;
use xdb_sdk::ClientError;

/// Every exit code of `xdb`; the numbers are part of its interface.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Exit {
    /// The call succeeded (for `wait`: the execution completed).
    Ok = 0,
    /// The service refused the call (an API error other than not-found) or answered
    /// something unreadable.
    ApiError = 1,
    /// The command line is wrong: unknown flag, missing argument, bad JSON in `--input`.
    Usage = 2,
    /// The service could not be reached (connection refused, DNS, timeout, a gateway's
    /// 502/503/504), is at its limit (`OVERLOADED`) or lost its database
    /// (`DATABASE_UNAVAILABLE`: a write may have taken effect): worth retrying later.
    Unreachable = 3,
    /// `wait`: the execution was still running when `--timeout` passed.
    WaitTimedOut = 4,
    /// The service answered `PROCESS_NOT_FOUND`, `BATCH_NOT_FOUND` or
    /// `SCHEDULE_NOT_FOUND`: no such process id, execution, batch or schedule.
    NotFound = 5,
    /// `wait`: the execution closed without completing (FAILED, TIMEOUT, TERMINATED).
    ClosedNotCompleted = 6,
    /// A control (`retry`, `give-up`, `pause`, `resume`) does not apply now: the service
    /// answered `CONTROL_NOT_APPLICABLE` (nothing to retry or give up on, paused already,
    /// not paused).
    NotApplicable = 7,
    /// The token is accepted but its roles do not cover the command (`FORBIDDEN`):
    /// retrying will not help, another token will.
    Forbidden = 8,
    /// `batch start`: the batch closed FAILED or CANCELLED, or failed on some
    /// executions (`failed` > 0); or it was not confirmed, so not started.
    BatchNotDone = 9,
}

impl Exit {
    pub fn code(self) -> u8 {
        self as u8
    }
}

/// The exit-code table as a literal, for `concat!` in the `--help` texts.
macro_rules! exit_codes_text {
    () => {
        "Exit codes:
  0  success (wait: the execution completed)
  1  the service refused the call (API error), or answered something unreadable
  2  usage error: bad flags or arguments, invalid JSON
  3  the service could not be reached (connection, timeout, gateway 502/503/504),
     is overloaded (OVERLOADED) or lost its database (DATABASE_UNAVAILABLE: a write
     may have taken effect): try again later; a write with the same --request-id
     does nothing more than the first
  4  wait: the execution was still running when --timeout passed
  5  not found: no such process id, execution, batch or schedule
     (PROCESS_NOT_FOUND, BATCH_NOT_FOUND, SCHEDULE_NOT_FOUND)
  6  wait: the execution closed without completing (FAILED, TIMEOUT, TERMINATED)
  7  a control does not apply now, e.g. pause when paused (CONTROL_NOT_APPLICABLE)
  8  the token lacks the role the command needs (FORBIDDEN): use another token
  9  batch start: the batch closed FAILED or CANCELLED, or failed on some
     executions; or it was not confirmed"
    };
}

/// The text `--help` shows under "Exit codes".
pub const EXIT_CODES_HELP: &str = exit_codes_text!();

/// The exit code of a failed service call.
pub fn exit_for(error: &ClientError) -> Exit {
    match error {
        ClientError::Api { error, .. }
            if matches!(
                error.sub_type,
                ErrorSubType::ProcessNotFound
                    | ErrorSubType::DefinitionNotFound
                    | ErrorSubType::BatchNotFound
                    | ErrorSubType::ScheduleNotFound
            ) =>
        {
            Exit::NotFound
        }
        ClientError::Api { error, .. } if error.sub_type == ErrorSubType::ControlNotApplicable => {
            Exit::NotApplicable
        }
        ClientError::Api { error, .. } => match error.sub_type {
            ErrorSubType::Forbidden => Exit::Forbidden,
            ErrorSubType::Overloaded | ErrorSubType::DatabaseUnavailable => Exit::Unreachable,
            _ => Exit::ApiError,
        },
        ClientError::Http {
            status: 502..=504, ..
        } => Exit::Unreachable,
        ClientError::Http { .. } | ClientError::InvalidResponse(_) => Exit::ApiError,
        ClientError::Transport(_) => Exit::Unreachable,
        ClientError::Sdk(_) => Exit::Usage,
    }
}

/// One line (or two, with the worker's detail) saying why a call failed, sub-type first.
pub fn describe_error(error: &ClientError) -> String {
    match error {
        ClientError::Api { status, error } => {
            let mut text = format!(
                "error: {} (HTTP {status}): {}",
                error.sub_type.as_str(),
                error.message
            );
            if let Some(worker) = &error.worker_error {
                text.push_str(&format!("\n  worker error: {worker}"));
            }
            text
        }
        ClientError::Http { status, body } => {
            format!("error: the service answered HTTP {status}: {}", body.trim())
        }
        ClientError::Transport(e) => {
            let mut text = format!("error: cannot reach the XDB service: {e}");
            let mut source = std::error::Error::source(e);
            while let Some(cause) = source {
                text.push_str(&format!(": {cause}"));
                source = cause.source();
            }
            text
        }
        ClientError::InvalidResponse(message) => {
            format!("error: unreadable answer from the service: {message}")
        }
        ClientError::Sdk(e) => format!("error: {e}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn api(sub_type: &str, status: u16) -> ClientError {
        let body = format!(r#"{{"subType":"{sub_type}","message":"m","workerError":"boom"}}"#);
        ClientError::from_response(status, body.as_bytes())
    }

    #[test]
    fn maps_errors_to_exit_codes() {
        assert_eq!(exit_for(&api("PROCESS_NOT_FOUND", 404)), Exit::NotFound);
        assert_eq!(exit_for(&api("BATCH_NOT_FOUND", 404)), Exit::NotFound);
        assert_eq!(exit_for(&api("REQUEST_ID_CONFLICT", 409)), Exit::ApiError);
        assert_eq!(exit_for(&api("INVALID_REQUEST", 400)), Exit::ApiError);
        assert_eq!(
            exit_for(&api("CONTROL_NOT_APPLICABLE", 409)),
            Exit::NotApplicable
        );
        assert_eq!(exit_for(&api("PROCESS_NOT_RUNNING", 409)), Exit::ApiError);
        assert_eq!(exit_for(&api("WORKER_API_ERROR", 424)), Exit::ApiError);
        assert_eq!(exit_for(&api("UNAUTHORIZED", 401)), Exit::ApiError);
        assert_eq!(exit_for(&api("FORBIDDEN", 403)), Exit::Forbidden);
        assert_eq!(exit_for(&api("OVERLOADED", 503)), Exit::Unreachable);
        assert_eq!(
            exit_for(&api("DATABASE_UNAVAILABLE", 503)),
            Exit::Unreachable
        );
        assert_eq!(
            exit_for(&ClientError::from_response(503, b"<html>")),
            Exit::Unreachable
        );
        assert_eq!(
            exit_for(&ClientError::from_response(500, b"oops")),
            Exit::ApiError
        );
        assert_eq!(
            exit_for(&ClientError::InvalidResponse("x".into())),
            Exit::ApiError
        );
    }

    #[test]
    fn codes_are_stable_and_documented() {
        let all = [
            Exit::Ok,
            Exit::ApiError,
            Exit::Usage,
            Exit::Unreachable,
            Exit::WaitTimedOut,
            Exit::NotFound,
            Exit::ClosedNotCompleted,
            Exit::NotApplicable,
            Exit::Forbidden,
            Exit::BatchNotDone,
        ];
        for (n, exit) in all.into_iter().enumerate() {
            assert_eq!(usize::from(exit.code()), n);
            assert!(EXIT_CODES_HELP.contains(&format!("\n  {n}  ")));
        }
    }

    #[test]
    fn error_text_names_sub_type_message_and_worker_error() {
        let text = describe_error(&api("WORKER_API_ERROR", 424));
        assert_eq!(
            text,
            "error: WORKER_API_ERROR (HTTP 424): m\n  worker error: boom"
        );
    }
}
