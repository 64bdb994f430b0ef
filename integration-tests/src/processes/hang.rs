//! `HangProcess`: its state's first execute call hangs (as if the async service died
//! mid-call); later calls write `note = "done"` and complete.

use std::time::Duration;

use xdb_sdk::*;

use super::Recorder;

#[derive(Debug, Clone, Default)]
pub struct HangProcess {
    /// The context of every execute call.
    pub calls: Recorder<Context>,
}

impl Process for HangProcess {
    fn state_schema(&self) -> StateSchema {
        StateSchema::with_starting_state(HangState {
            calls: self.calls.clone(),
        })
    }

    fn persistence_schema(&self) -> PersistenceSchema {
        PersistenceSchema::with_table("test_entity", "id").global_attribute("note")
    }
}

pub struct HangState {
    calls: Recorder<Context>,
}

#[async_trait]
impl AsyncState for HangState {
    type Input = ();

    fn options(&self) -> AsyncStateConfig {
        AsyncStateConfig {
            execute_api_timeout_seconds: Some(60),
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
        self.calls.push(ctx.clone());
        if self.calls.len() == 1 {
            // Held until the caller goes away (the test kills it).
            tokio::time::sleep(Duration::from_secs(60)).await;
        }
        persistence.set_global_attribute("note", "done")?;
        Ok(StateDecision::graceful_complete_process("done"))
    }
}
