//! `UpgradeProcess`: waits on a durable timer or a local-queue message, then runs two
//! executes that each add one to its `test_entity` row's counter, so a transition applied
//! twice shows in the business row.

use std::time::Duration;

use serde::{Deserialize, Serialize};
use xdb_sdk::*;

pub const TABLE: &str = "test_entity";
pub const COL_COUNTER: &str = "counter";
pub const QUEUE_GO: &str = "go";
/// The state whose execute the test fails through the worker's fault layer.
pub const AWAIT_STATE: &str = "Await";
/// What the counter reads once both executes are applied.
pub const EXECUTES: i32 = 2;

/// What `Await` waits for.
#[derive(Debug, Clone, Copy, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum Wait {
    /// A durable timer of this many seconds.
    Timer(u64),
    /// One message on local queue [`QUEUE_GO`].
    Queue,
}

#[derive(Debug, Clone, Default)]
pub struct UpgradeProcess;

impl Process for UpgradeProcess {
    fn state_schema(&self) -> StateSchema {
        StateSchema::with_starting_state(Await).state(Finish)
    }

    fn persistence_schema(&self) -> PersistenceSchema {
        PersistenceSchema::with_table(TABLE, "id").global_attribute(COL_COUNTER)
    }

    fn communication_schema(&self) -> CommunicationSchema {
        CommunicationSchema::new().local_queue(QUEUE_GO)
    }
}

/// Adds one to the loaded counter.
fn count(persistence: &mut Persistence) -> Result<()> {
    let counter: i32 = persistence.get_global_attribute(COL_COUNTER)?.unwrap_or(0);
    persistence.set_global_attribute(COL_COUNTER, counter + 1)?;
    Ok(())
}

pub struct Await;

#[async_trait]
impl AsyncState for Await {
    type Input = Wait;
    const HAS_WAIT_UNTIL: bool = true;

    fn options(&self) -> AsyncStateConfig {
        // Failed executes come back every half second, unlimited, so the retries span
        // the whole rollout.
        AsyncStateConfig {
            execute_api_retry_policy: Some(RetryPolicy {
                initial_interval_seconds: Some(0.5),
                backoff_coefficient: Some(1.0),
                maximum_interval_seconds: None,
                maximum_attempts: Some(0),
                maximum_attempts_duration_seconds: None,
            }),
            ..Default::default()
        }
    }

    async fn wait_until(
        &self,
        _ctx: &Context,
        wait: Wait,
        _persistence: &mut Persistence,
        _communication: &mut Communication,
    ) -> Result<CommandRequest> {
        Ok(CommandRequest::any_of(vec![match wait {
            Wait::Timer(seconds) => Command::timer(Duration::from_secs(seconds)),
            Wait::Queue => Command::local_queue(QUEUE_GO),
        }]))
    }

    async fn execute(
        &self,
        _ctx: &Context,
        _wait: Wait,
        _results: &CommandResults,
        persistence: &mut Persistence,
        _communication: &mut Communication,
    ) -> Result<StateDecision> {
        count(persistence)?;
        Ok(StateDecision::single_next_state::<Finish>(()))
    }
}

pub struct Finish;

#[async_trait]
impl AsyncState for Finish {
    type Input = ();

    async fn execute(
        &self,
        _ctx: &Context,
        _input: (),
        _results: &CommandResults,
        persistence: &mut Persistence,
        _communication: &mut Communication,
    ) -> Result<StateDecision> {
        count(persistence)?;
        Ok(StateDecision::graceful_complete_process("done"))
    }
}
