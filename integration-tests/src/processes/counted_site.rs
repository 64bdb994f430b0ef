//! `CountedSiteProcess`: the site-creation sample's shape (seed 004) with a write counter
//! per step, so a test can prove from the database that each step's business write
//! happened exactly once.
//!
//! ```text
//! start ──► SaveMetadata ─┬─► CreateFs ── publishes "fs-ready", dead end
//!                         └─► CreateDb ──► Bootstrap ──► MarkCreated (waits for "fs-ready"
//!                                                        and a one-second timer)
//! ```
//!
//! MarkCreated's two commands settle in either order: when the timer is the last, its
//! firing calls the execute and commits with the answer (the fused path), otherwise
//! the message's delivery settles the state; fault runs exercise both.
//!
//! Every state reads its own counter column (`*_writes`) from the loaded attributes and
//! writes the value plus one. A transition applied twice, or applied by two async
//! instances, would leave a 2. The external calls go to the sample's
//! [`ExternalServices`] (randomly failing, deduplicated by idempotency key), so the
//! services' effect counters check the worker side the same way.

use serde::{Deserialize, Serialize};
use xdb_samples::site_creation::SiteCreationOptions;
use xdb_samples::site_services::{ExternalServices, Operation};
use xdb_sdk::*;

pub const TABLE: &str = "counted_site";
pub const COL_SITE_ID: &str = "site_id";
pub const COL_STATUS: &str = "status";
pub const COL_METADATA_WRITES: &str = "metadata_writes";
pub const COL_FS_WRITES: &str = "fs_writes";
pub const COL_DB_WRITES: &str = "db_writes";
pub const COL_BOOTSTRAP_WRITES: &str = "bootstrap_writes";
pub const COL_CREATED_WRITES: &str = "created_writes";
/// The counter columns, one per state, in flow order.
pub const COUNTERS: [&str; 5] = [
    COL_METADATA_WRITES,
    COL_FS_WRITES,
    COL_DB_WRITES,
    COL_BOOTSTRAP_WRITES,
    COL_CREATED_WRITES,
];
pub const QUEUE_FS_READY: &str = "fs-ready";
/// The state executions one creation runs, each exactly once.
pub const STATE_EXECUTIONS: [&str; 5] = [
    "SaveMetadata-1",
    "CreateFs-1",
    "CreateDb-1",
    "Bootstrap-1",
    "MarkCreated-1",
];

/// The table, created by the test environment (PostgreSQL).
pub const TABLE_SQL: &str = "\
CREATE TABLE counted_site (
    site_id          TEXT PRIMARY KEY,
    status           TEXT NOT NULL,
    metadata_writes  INT  NOT NULL DEFAULT 0,
    fs_writes        INT  NOT NULL DEFAULT 0,
    db_writes        INT  NOT NULL DEFAULT 0,
    bootstrap_writes INT  NOT NULL DEFAULT 0,
    created_writes   INT  NOT NULL DEFAULT 0
);";

/// [`TABLE_SQL`] for MySQL/MariaDB.
pub const MYSQL_TABLE_SQL: &str = "\
CREATE TABLE counted_site (
    site_id          VARCHAR(255) NOT NULL PRIMARY KEY,
    status           VARCHAR(16)  NOT NULL,
    metadata_writes  INT          NOT NULL DEFAULT 0,
    fs_writes        INT          NOT NULL DEFAULT 0,
    db_writes        INT          NOT NULL DEFAULT 0,
    bootstrap_writes INT          NOT NULL DEFAULT 0,
    created_writes   INT          NOT NULL DEFAULT 0
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4;";

/// The process id of `site_id`'s creation.
pub fn process_id(site_id: &str) -> String {
    format!("counted-site-{site_id}")
}

#[derive(Debug, Clone)]
pub struct CountedSiteProcess {
    pub services: ExternalServices,
}

impl CountedSiteProcess {
    pub fn new(services: ExternalServices) -> Self {
        Self { services }
    }
}

impl Default for CountedSiteProcess {
    fn default() -> Self {
        Self::new(ExternalServices::reliable())
    }
}

/// What the starting state gets.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Metadata {
    pub site_id: String,
}

/// The sample's: every state API retried until it succeeds.
fn config() -> AsyncStateConfig {
    SiteCreationOptions::default().state_config()
}

/// Writes `column = loaded value + 1`.
fn count_write(persistence: &mut Persistence, column: &str) -> Result<()> {
    let value: i32 = persistence.get_global_attribute(column)?.unwrap_or(0);
    persistence.set_global_attribute(column, value + 1)?;
    Ok(())
}

fn site_id(persistence: &Persistence) -> Result<String> {
    Ok(persistence
        .get_global_attribute(COL_SITE_ID)?
        .ok_or("the counted_site row has no site_id")?)
}

fn call(
    services: &ExternalServices,
    operation: Operation,
    ctx: &Context,
    p: &Persistence,
) -> Result<()> {
    services.call(operation, &site_id(p)?, &ctx.idempotency_key)?;
    Ok(())
}

impl Process for CountedSiteProcess {
    fn state_schema(&self) -> StateSchema {
        let services = || self.services.clone();
        StateSchema::with_starting_state(SaveMetadata)
            .state(CreateFs {
                services: services(),
            })
            .state(CreateDb {
                services: services(),
            })
            .state(Bootstrap {
                services: services(),
            })
            .state(MarkCreated)
    }

    fn persistence_schema(&self) -> PersistenceSchema {
        [COL_SITE_ID, COL_STATUS]
            .into_iter()
            .chain(COUNTERS)
            .fold(PersistenceSchema::with_table(TABLE, COL_SITE_ID), |s, c| {
                s.global_attribute(c)
            })
    }

    fn communication_schema(&self) -> CommunicationSchema {
        CommunicationSchema::new().local_queue(QUEUE_FS_READY)
    }
}

/// Counts itself and forks the two branches.
pub struct SaveMetadata;

#[async_trait]
impl AsyncState for SaveMetadata {
    type Input = Metadata;

    fn options(&self) -> AsyncStateConfig {
        config()
    }

    async fn execute(
        &self,
        _ctx: &Context,
        _input: Metadata,
        _results: &CommandResults,
        persistence: &mut Persistence,
        _communication: &mut Communication,
    ) -> Result<StateDecision> {
        count_write(persistence, COL_METADATA_WRITES)?;
        Ok(StateDecision::multiple_next_states(vec![
            NextState::of::<CreateFs>(()),
            NextState::of::<CreateDb>(()),
        ]))
    }
}

pub struct CreateFs {
    services: ExternalServices,
}

#[async_trait]
impl AsyncState for CreateFs {
    type Input = ();

    fn options(&self) -> AsyncStateConfig {
        config()
    }

    async fn execute(
        &self,
        ctx: &Context,
        _input: (),
        _results: &CommandResults,
        persistence: &mut Persistence,
        communication: &mut Communication,
    ) -> Result<StateDecision> {
        call(
            &self.services,
            Operation::CreateFileSystem,
            ctx,
            persistence,
        )?;
        count_write(persistence, COL_FS_WRITES)?;
        communication.publish_to_local_queue(QUEUE_FS_READY, ())?;
        Ok(StateDecision::dead_end())
    }
}

pub struct CreateDb {
    services: ExternalServices,
}

#[async_trait]
impl AsyncState for CreateDb {
    type Input = ();

    fn options(&self) -> AsyncStateConfig {
        config()
    }

    async fn execute(
        &self,
        ctx: &Context,
        _input: (),
        _results: &CommandResults,
        persistence: &mut Persistence,
        _communication: &mut Communication,
    ) -> Result<StateDecision> {
        call(&self.services, Operation::CreateDatabase, ctx, persistence)?;
        count_write(persistence, COL_DB_WRITES)?;
        Ok(StateDecision::single_next_state::<Bootstrap>(()))
    }
}

pub struct Bootstrap {
    services: ExternalServices,
}

#[async_trait]
impl AsyncState for Bootstrap {
    type Input = ();

    fn options(&self) -> AsyncStateConfig {
        config()
    }

    async fn execute(
        &self,
        ctx: &Context,
        _input: (),
        _results: &CommandResults,
        persistence: &mut Persistence,
        _communication: &mut Communication,
    ) -> Result<StateDecision> {
        call(&self.services, Operation::Bootstrap, ctx, persistence)?;
        count_write(persistence, COL_BOOTSTRAP_WRITES)?;
        Ok(StateDecision::single_next_state::<MarkCreated>(()))
    }
}

/// Waits for `fs-ready` and a one-second timer, counts itself, writes
/// `status = created` and completes.
pub struct MarkCreated;

#[async_trait]
impl AsyncState for MarkCreated {
    type Input = ();
    const HAS_WAIT_UNTIL: bool = true;

    fn options(&self) -> AsyncStateConfig {
        config()
    }

    async fn wait_until(
        &self,
        _ctx: &Context,
        _input: (),
        _persistence: &mut Persistence,
        _communication: &mut Communication,
    ) -> Result<CommandRequest> {
        Ok(CommandRequest::all_of(vec![
            Command::local_queue(QUEUE_FS_READY),
            Command::timer(std::time::Duration::from_secs(1)),
        ]))
    }

    async fn execute(
        &self,
        _ctx: &Context,
        _input: (),
        _results: &CommandResults,
        persistence: &mut Persistence,
        _communication: &mut Communication,
    ) -> Result<StateDecision> {
        count_write(persistence, COL_CREATED_WRITES)?;
        persistence.set_global_attribute(COL_STATUS, "created")?;
        Ok(StateDecision::graceful_complete_process("created"))
    }
}

/// Starts the creation of `site_id` (its row inserted with status `creating`).
pub async fn start(
    client: &Client,
    worker_url: &str,
    site_id: &str,
) -> std::result::Result<String, ClientError> {
    client
        .start_process::<CountedSiteProcess>(
            &process_id(site_id),
            Some(worker_url),
            Metadata {
                site_id: site_id.to_string(),
            },
            ProcessStartOptions::new()
                .global_attribute_pk_value(site_id)
                .initial_global_attribute(COL_STATUS, "creating"),
        )
        .await
}
