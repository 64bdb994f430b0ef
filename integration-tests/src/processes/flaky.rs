//! `FlakyProcess`: a state whose execute fails its first attempts, to exercise retry
//! policies and failure recovery.

use std::ops::Deref;
use std::time::{Duration, Instant};

use serde_json::Value;
use xdb_sdk::protocol::{FailureRecoveryPolicy, StateFailureRecoveryOptions};
use xdb_sdk::*;

use super::Recorder;

pub const TABLE: &str = "test_entity";
pub const COL_NOTE: &str = "note";

/// How the flaky state behaves.
#[derive(Debug, Clone)]
pub struct FlakyConfig {
    /// Attempts that fail before one succeeds (`u32::MAX`: never succeeds).
    pub failing_attempts: u32,
    /// The execute retry policy's maximum attempts (0: unlimited).
    pub maximum_attempts: u32,
    /// Delay before the first retry.
    pub initial_interval: Duration,
    /// On giving up, go to [`RecoveryState`] instead of failing the process.
    pub recover: bool,
    /// Start with [`TimedFlakyState`]: the flaky execute comes after a durable timer.
    pub after_timer: Option<Duration>,
}

#[derive(Debug, Clone)]
pub struct FlakyProcess {
    pub config: FlakyConfig,
    /// Every execute call of [`FlakyState`]: its context and when it came.
    pub attempts: Recorder<FlakyCall>,
    /// The inputs [`RecoveryState`] received.
    pub recoveries: Recorder<Value>,
}

/// One execute call of [`FlakyState`]; reads as its [`Context`].
#[derive(Debug, Clone)]
pub struct FlakyCall {
    /// When the worker received the call.
    pub at: Instant,
    pub context: Context,
}

impl Deref for FlakyCall {
    type Target = Context;

    fn deref(&self) -> &Context {
        &self.context
    }
}

impl FlakyProcess {
    pub fn new(config: FlakyConfig) -> Self {
        Self {
            config,
            attempts: Recorder::new(),
            recoveries: Recorder::new(),
        }
    }
}

impl Process for FlakyProcess {
    fn state_schema(&self) -> StateSchema {
        let flaky = FlakyState {
            config: self.config.clone(),
            attempts: self.attempts.clone(),
        };
        let recovery = RecoveryState {
            recoveries: self.recoveries.clone(),
        };
        match self.config.after_timer {
            Some(delay) => StateSchema::with_starting_state(TimedFlakyState { delay, flaky }),
            None => StateSchema::with_starting_state(flaky),
        }
        .state(recovery)
    }

    fn persistence_schema(&self) -> PersistenceSchema {
        PersistenceSchema::with_table(TABLE, "id").global_attribute(COL_NOTE)
    }
}

/// Fails `failing_attempts` times, then writes `note = "flaky done"` and completes.
pub struct FlakyState {
    config: FlakyConfig,
    attempts: Recorder<FlakyCall>,
}

#[async_trait]
impl AsyncState for FlakyState {
    type Input = ();

    fn options(&self) -> AsyncStateConfig {
        AsyncStateConfig {
            execute_api_retry_policy: Some(RetryPolicy {
                initial_interval_seconds: Some(self.config.initial_interval.as_secs_f64()),
                backoff_coefficient: Some(1.0),
                maximum_interval_seconds: None,
                maximum_attempts: Some(self.config.maximum_attempts),
                maximum_attempts_duration_seconds: None,
            }),
            state_failure_recovery_options: self.config.recover.then(|| {
                StateFailureRecoveryOptions {
                    policy: FailureRecoveryPolicy::ProceedToConfiguredState,
                    state_failure_proceed_state_id: Some(RecoveryState::id()),
                    state_failure_proceed_state_config: None,
                }
            }),
            ..Default::default()
        }
    }

    async fn execute(
        &self,
        ctx: &Context,
        _input: (),
        _results: &CommandResults,
        persistence: &mut Persistence,
        _communication: &mut Communication,
    ) -> Result<StateDecision> {
        self.attempts.push(FlakyCall {
            at: Instant::now(),
            context: ctx.clone(),
        });
        // Written on every attempt: only the successful one may reach the table.
        persistence.set_global_attribute(COL_NOTE, format!("attempt {}", ctx.attempt))?;
        if ctx.attempt <= self.config.failing_attempts {
            return Err(format!("flaky failure on attempt {}", ctx.attempt).into());
        }
        persistence.set_global_attribute(COL_NOTE, "flaky done")?;
        Ok(StateDecision::graceful_complete_process("ok"))
    }
}

/// [`FlakyState`] behind a durable timer: its execute is the one the timer's firing
/// starts.
pub struct TimedFlakyState {
    delay: Duration,
    flaky: FlakyState,
}

#[async_trait]
impl AsyncState for TimedFlakyState {
    type Input = ();
    const HAS_WAIT_UNTIL: bool = true;

    fn options(&self) -> AsyncStateConfig {
        self.flaky.options()
    }

    async fn wait_until(
        &self,
        _ctx: &Context,
        _input: (),
        _persistence: &mut Persistence,
        _communication: &mut Communication,
    ) -> Result<CommandRequest> {
        Ok(CommandRequest::any_of(vec![Command::timer(self.delay)]))
    }

    async fn execute(
        &self,
        ctx: &Context,
        input: (),
        results: &CommandResults,
        persistence: &mut Persistence,
        communication: &mut Communication,
    ) -> Result<StateDecision> {
        self.flaky
            .execute(ctx, input, results, persistence, communication)
            .await
    }
}

/// Receives the failure details as input; writes `note = "recovered"` and completes.
pub struct RecoveryState {
    recoveries: Recorder<Value>,
}

#[async_trait]
impl AsyncState for RecoveryState {
    type Input = Value;

    async fn execute(
        &self,
        _ctx: &Context,
        input: Value,
        _results: &CommandResults,
        persistence: &mut Persistence,
        _communication: &mut Communication,
    ) -> Result<StateDecision> {
        self.recoveries.push(input);
        persistence.set_global_attribute(COL_NOTE, "recovered")?;
        Ok(StateDecision::graceful_complete_process("recovered"))
    }
}
