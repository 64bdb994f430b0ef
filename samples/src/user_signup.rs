//! The user sign-up process of the XDB design (seed 003).
//!
//! A user submits a form; the process emails a verification link, reminds the user every
//! reminder interval until they verify, then sends a welcome email. The user's row in
//! table `user` (`user_id`, `form`, `status`, `source`) holds the process's data, so the
//! business table and the process change together.
//!
//! Verification arrives either through the `verify` RPC (which updates the row and
//! publishes to local queue `verify`), or by publishing to local queue `verify` directly
//! (see [`publish_verification`]); then `VerifyState` updates the row itself.

use std::time::Duration;

use serde::{Deserialize, Serialize};
use xdb_sdk::protocol::{GlobalAttributeLoading, LockType};
use xdb_sdk::*;

use crate::email::{EmailKind, EmailOutbox};

pub const TABLE: &str = "user";
pub const COL_USER_ID: &str = "user_id";
pub const COL_FORM: &str = "form";
pub const COL_STATUS: &str = "status";
pub const COL_SOURCE: &str = "source";
pub const QUEUE_VERIFY: &str = "verify";
pub const RPC_VERIFY: &str = "verify";
pub const STATUS_WAITING: &str = "waiting";
pub const STATUS_VERIFIED: &str = "verified";
/// `source` recorded when a verification message names none.
pub const SOURCE_LOCAL_QUEUE: &str = "local-queue";
/// How often an unverified user is reminded, unless configured otherwise.
pub const DEFAULT_REMINDER_INTERVAL: Duration = Duration::from_secs(24 * 60 * 60);

/// The sign-up form, stored in the `form` column.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Form {
    pub email: String,
    #[serde(default)]
    pub name: Option<String>,
}

/// A message on local queue `verify`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
pub struct VerifyMessage {
    #[serde(default)]
    pub source: Option<String>,
}

/// The process id of `user_id`'s sign-up.
pub fn process_id(user_id: &str) -> String {
    format!("user-signup-{user_id}")
}

/// The sign-up process; clones share the outbox.
#[derive(Debug, Clone)]
pub struct UserSignupProcess {
    outbox: EmailOutbox,
    reminder_interval: Duration,
}

impl Default for UserSignupProcess {
    fn default() -> Self {
        Self::new(EmailOutbox::new(), DEFAULT_REMINDER_INTERVAL)
    }
}

impl UserSignupProcess {
    /// Sends emails to `outbox` and reminds every `reminder_interval` (timers have
    /// whole-second resolution, so shorter intervals round up to one second).
    pub fn new(outbox: EmailOutbox, reminder_interval: Duration) -> Self {
        Self {
            outbox,
            reminder_interval,
        }
    }

    pub fn outbox(&self) -> &EmailOutbox {
        &self.outbox
    }

    pub fn reminder_interval(&self) -> Duration {
        self.reminder_interval
    }

    /// RPC `verify`: marks the user verified by `source` and wakes `VerifyState`.
    async fn verify(
        &self,
        _ctx: &Context,
        source: String,
        persistence: &mut Persistence,
        communication: &mut Communication,
    ) -> Result<String> {
        let status: Option<String> = persistence.get_global_attribute(COL_STATUS)?;
        if status.as_deref() == Some(STATUS_VERIFIED) {
            return Ok("already verified".to_string());
        }
        persistence.set_global_attribute(COL_STATUS, STATUS_VERIFIED)?;
        persistence.set_global_attribute(COL_SOURCE, &source)?;
        communication.publish_to_local_queue(
            QUEUE_VERIFY,
            VerifyMessage {
                source: Some(source),
            },
        )?;
        Ok("done".to_string())
    }
}

impl Process for UserSignupProcess {
    fn state_schema(&self) -> StateSchema {
        StateSchema::with_starting_state(SubmitState {
            outbox: self.outbox.clone(),
        })
        .state(VerifyState {
            outbox: self.outbox.clone(),
            reminder_interval: self.reminder_interval,
        })
    }

    fn persistence_schema(&self) -> PersistenceSchema {
        PersistenceSchema::with_table(TABLE, COL_USER_ID)
            .global_attribute(COL_FORM)
            .global_attribute(COL_STATUS)
            .global_attribute(COL_SOURCE)
    }

    fn communication_schema(&self) -> CommunicationSchema {
        CommunicationSchema::new().local_queue(QUEUE_VERIFY)
    }

    fn rpc_schema(&self) -> RpcSchema<Self> {
        // Locked, so two concurrent verifications cannot both see "waiting".
        let options = RpcOptions {
            global_attribute_loading: Some(GlobalAttributeLoading {
                columns: vec![COL_FORM.into(), COL_STATUS.into(), COL_SOURCE.into()],
                lock_type: LockType::ExclusiveLock,
            }),
            ..Default::default()
        };
        RpcSchema::new().rpc_with_options(RPC_VERIFY, Self::verify, options)
    }
}

fn email_of(persistence: &Persistence) -> Result<String> {
    let form: Form = persistence
        .get_global_attribute(COL_FORM)?
        .ok_or("the user row has no sign-up form")?;
    Ok(form.email)
}

/// Sends the verification email, then waits for verification.
pub struct SubmitState {
    outbox: EmailOutbox,
}

#[async_trait]
impl AsyncState for SubmitState {
    type Input = ();

    async fn execute(
        &self,
        ctx: &Context,
        _input: (),
        _results: &CommandResults,
        persistence: &mut Persistence,
        _communication: &mut Communication,
    ) -> Result<StateDecision> {
        let email = email_of(persistence)?;
        self.outbox
            .send(&email, EmailKind::Verification, &ctx.idempotency_key);
        Ok(StateDecision::single_next_state::<VerifyState>(()))
    }
}

/// Waits for verification or the reminder timer; welcomes or reminds.
pub struct VerifyState {
    outbox: EmailOutbox,
    reminder_interval: Duration,
}

#[async_trait]
impl AsyncState for VerifyState {
    type Input = ();
    const HAS_WAIT_UNTIL: bool = true;

    async fn wait_until(
        &self,
        _ctx: &Context,
        _input: (),
        _persistence: &mut Persistence,
        _communication: &mut Communication,
    ) -> Result<CommandRequest> {
        Ok(CommandRequest::any_of(vec![
            Command::timer(self.reminder_interval),
            Command::local_queue(QUEUE_VERIFY),
        ]))
    }

    async fn execute(
        &self,
        ctx: &Context,
        _input: (),
        results: &CommandResults,
        persistence: &mut Persistence,
        _communication: &mut Communication,
    ) -> Result<StateDecision> {
        let email = email_of(persistence)?;
        if !results.received_from_queue(QUEUE_VERIFY) {
            self.outbox
                .send(&email, EmailKind::Reminder, &ctx.idempotency_key);
            return Ok(StateDecision::single_next_state::<VerifyState>(()));
        }
        let status: Option<String> = persistence.get_global_attribute(COL_STATUS)?;
        if status.as_deref() != Some(STATUS_VERIFIED) {
            // Published straight to the queue rather than through the RPC, so nobody
            // has recorded the verification yet.
            let messages: Vec<serde_json::Value> = results.messages_from_queue(QUEUE_VERIFY)?;
            let source = messages
                .iter()
                .find_map(source_of)
                .unwrap_or_else(|| SOURCE_LOCAL_QUEUE.to_string());
            persistence.set_global_attribute(COL_STATUS, STATUS_VERIFIED)?;
            persistence.set_global_attribute(COL_SOURCE, source)?;
        }
        self.outbox
            .send(&email, EmailKind::Welcome, &ctx.idempotency_key);
        Ok(StateDecision::graceful_complete_process("done"))
    }
}

/// The source a verification message names: `{"source": "..."}` or a bare string.
fn source_of(message: &serde_json::Value) -> Option<String> {
    match message {
        serde_json::Value::String(s) => Some(s.clone()),
        other => other.get("source")?.as_str().map(str::to_string),
    }
}

/// Starts the sign-up of `user_id`: the row gets `form` and status `waiting` in the
/// start transaction. Returns the process execution id.
pub async fn start_user_signup(
    client: &Client,
    worker_url: Option<&str>,
    user_id: &str,
    form: &Form,
) -> std::result::Result<String, ClientError> {
    client
        .start_process::<UserSignupProcess>(
            &process_id(user_id),
            worker_url,
            (),
            ProcessStartOptions::new()
                .global_attribute_pk_value(user_id)
                .initial_global_attribute(COL_FORM, form)
                .initial_global_attribute(COL_STATUS, STATUS_WAITING),
        )
        .await
}

/// Verifies `user_id` through the RPC; answers `"done"` or `"already verified"`.
pub async fn verify_by_rpc(
    client: &Client,
    user_id: &str,
    source: &str,
) -> std::result::Result<String, ClientError> {
    client
        .invoke_rpc::<UserSignupProcess, _, _>(&process_id(user_id), RPC_VERIFY, source)
        .await
}

/// Verifies `user_id` by publishing to local queue `verify`; `VerifyState` then records
/// the verification itself.
pub async fn publish_verification(
    client: &Client,
    user_id: &str,
    source: &str,
) -> std::result::Result<(), ClientError> {
    let message = VerifyMessage {
        source: Some(source.to_string()),
    };
    client
        .publish_to_local_queue(&process_id(user_id), QUEUE_VERIFY, message, None)
        .await
}
