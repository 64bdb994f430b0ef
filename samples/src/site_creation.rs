//! The site-creation process of seed 004: a status-driven, task-based workflow.
//!
//! A site is created in four steps: save its metadata, then create its file system and
//! its database in parallel, then bootstrap WordPress into the database. The site's row in
//! table `site` is the seed's "site status object": `status` moves from `creating` to
//! `created`, and each step records itself in its own `*_status` column. Every state
//! reads `status` first, so a deletion (`status = deleting`) aborts a creation in flight.
//!
//! ```text
//! start ──► SaveMetadata ─┬─► CreateFs ── publishes "fs-ready", dead end
//!                         └─► CreateDb ──► Bootstrap ──► MarkCreated (waits for "fs-ready")
//!                                                        └─ status = created, complete
//! RPC delete: status = deleting, starts DeleteSite ──► (grace timer) clean up,
//!             status = deleted, force complete
//! ```
//!
//! The two branches join on local queue `fs-ready`, not by each branch checking whether
//! the other is done: XDB loads attributes without holding a row lock through the worker
//! call, so two branches finishing together could each see the other unfinished, and
//! nobody would write `created`. A queue message is committed with the transition that
//! sends it, so the join sees every branch exactly once.
//!
//! A state that finds the site being deleted ends its thread (dead end) instead of failing
//! the process: force-fail would also end the `DeleteSite` thread and the cleanup would
//! never run. `DeleteSite` ends the process by force-completing it, which stops whatever
//! creation thread is still waiting or retrying.
//!
//! External calls go to [`ExternalServices`], which fail at random; a failing call fails
//! the state API and XDB retries it (see [`SiteCreationOptions::retry_policy`]). Calls pass
//! the worker call's idempotency key, which is the same for every attempt, so a retry does
//! not create a resource twice.

use std::time::Duration;

use serde::{Deserialize, Serialize};
use xdb_sdk::protocol::{GlobalAttributeLoading, LockType};
use xdb_sdk::*;

use crate::site_services::{ExternalServices, Operation};

pub const TABLE: &str = "site";
pub const COL_SITE_ID: &str = "site_id";
pub const COL_NAME: &str = "name";
pub const COL_STATUS: &str = "status";
pub const COL_METADATA_STATUS: &str = "metadata_status";
pub const COL_FS_STATUS: &str = "fs_status";
pub const COL_DB_STATUS: &str = "db_status";
pub const COL_BOOTSTRAP_STATUS: &str = "bootstrap_status";
/// Every global-attribute column, in declaration order.
pub const COLUMNS: [&str; 7] = [
    COL_SITE_ID,
    COL_NAME,
    COL_STATUS,
    COL_METADATA_STATUS,
    COL_FS_STATUS,
    COL_DB_STATUS,
    COL_BOOTSTRAP_STATUS,
];

pub const STATUS_CREATING: &str = "creating";
pub const STATUS_CREATED: &str = "created";
pub const STATUS_DELETING: &str = "deleting";
pub const STATUS_DELETED: &str = "deleted";
/// The value of a step's `*_status` column once the step is done.
pub const STEP_DONE: &str = "done";

/// The file-system branch tells the database branch it is done.
pub const QUEUE_FS_READY: &str = "fs-ready";
pub const RPC_DELETE: &str = "delete";

/// How long `DeleteSite` waits before cleaning up, unless configured otherwise: the seed's
/// three seconds, for creation calls already in flight to finish.
pub const DEFAULT_DELETION_GRACE: Duration = Duration::from_secs(3);

/// The input of the starting state: the seed's "site metadata" task payload.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SiteMetadata {
    pub name: String,
}

/// The answer of RPC `delete`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DeleteOutcome {
    /// The site is now `deleting` and `DeleteSite` was started.
    Deleting,
    /// An earlier call already started the deletion; nothing changed.
    AlreadyDeleting,
}

/// The process id of `site_id`'s creation.
pub fn process_id(site_id: &str) -> String {
    format!("site-creation-{site_id}")
}

/// Retries every 0.05 s, doubling up to 0.5 s, forever: the seed's "retry until success",
/// with intervals short enough for tests.
pub fn default_retry_policy() -> RetryPolicy {
    RetryPolicy {
        initial_interval_seconds: Some(0.05),
        backoff_coefficient: Some(2.0),
        maximum_interval_seconds: Some(0.5),
        maximum_attempts: None,
        maximum_attempts_duration_seconds: None,
    }
}

/// Tunables of [`SiteCreationProcess`].
#[derive(Debug, Clone, PartialEq)]
pub struct SiteCreationOptions {
    /// Retry policy of every state API call.
    pub retry_policy: RetryPolicy,
    /// `DeleteSite` waits this long (a durable timer, whole seconds) before cleaning up;
    /// zero cleans up at once.
    pub deletion_grace: Duration,
}

impl SiteCreationOptions {
    /// The options of a state that retries both of its APIs with [`Self::retry_policy`].
    pub fn state_config(&self) -> AsyncStateConfig {
        AsyncStateConfig {
            wait_until_api_retry_policy: Some(self.retry_policy.clone()),
            execute_api_retry_policy: Some(self.retry_policy.clone()),
            ..Default::default()
        }
    }
}

impl Default for SiteCreationOptions {
    fn default() -> Self {
        Self {
            retry_policy: default_retry_policy(),
            deletion_grace: DEFAULT_DELETION_GRACE,
        }
    }
}

/// The site-creation process; clones share the services.
#[derive(Debug, Clone, Default)]
pub struct SiteCreationProcess {
    deps: Deps,
}

/// What every state needs.
#[derive(Debug, Clone, Default)]
struct Deps {
    services: ExternalServices,
    options: SiteCreationOptions,
}

impl Deps {
    fn config(&self) -> AsyncStateConfig {
        self.options.state_config()
    }
}

impl SiteCreationProcess {
    pub fn new(services: ExternalServices, options: SiteCreationOptions) -> Self {
        Self {
            deps: Deps { services, options },
        }
    }

    pub fn services(&self) -> &ExternalServices {
        &self.deps.services
    }

    pub fn options(&self) -> &SiteCreationOptions {
        &self.deps.options
    }

    /// RPC `delete`: marks the site `deleting` and starts `DeleteSite`.
    async fn delete(
        &self,
        ctx: &Context,
        _input: (),
        persistence: &mut Persistence,
        communication: &mut Communication,
    ) -> Result<DeleteOutcome> {
        let status: Option<String> = persistence.get_global_attribute(COL_STATUS)?;
        if matches!(status.as_deref(), Some(STATUS_DELETING | STATUS_DELETED)) {
            return Ok(DeleteOutcome::AlreadyDeleting);
        }
        tracing::info!(process_id = %ctx.process_id, ?status, "deleting site");
        persistence.set_global_attribute(COL_STATUS, STATUS_DELETING)?;
        communication.trigger_state_movement::<DeleteSite>(())?;
        Ok(DeleteOutcome::Deleting)
    }
}

impl Process for SiteCreationProcess {
    fn state_schema(&self) -> StateSchema {
        let deps = || self.deps.clone();
        StateSchema::with_starting_state(SaveMetadata { deps: deps() })
            .state(CreateFs { deps: deps() })
            .state(CreateDb { deps: deps() })
            .state(Bootstrap { deps: deps() })
            .state(MarkCreated { deps: deps() })
            .state(DeleteSite { deps: deps() })
    }

    fn persistence_schema(&self) -> PersistenceSchema {
        // site_id is declared only so states can read which site they work on.
        COLUMNS
            .iter()
            .fold(PersistenceSchema::with_table(TABLE, COL_SITE_ID), |s, c| {
                s.global_attribute(*c)
            })
    }

    fn communication_schema(&self) -> CommunicationSchema {
        CommunicationSchema::new().local_queue(QUEUE_FS_READY)
    }

    fn rpc_schema(&self) -> RpcSchema<Self> {
        // Locked, so two concurrent deletions cannot both see "creating" and start two
        // DeleteSite threads.
        let options = RpcOptions {
            global_attribute_loading: Some(GlobalAttributeLoading {
                columns: vec![COL_SITE_ID.into(), COL_STATUS.into()],
                lock_type: LockType::ExclusiveLock,
            }),
            ..Default::default()
        };
        RpcSchema::new().rpc_with_options(RPC_DELETE, Self::delete, options)
    }
}

/// What a creation state does given the site's `status`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Gate {
    /// `creating`: do the step.
    Proceed,
    /// `deleting`: stop; `DeleteSite` owns the end of the process.
    Deleting,
    /// Anything else: a bug or a hand-edited row; the seed aborts the workflow and alerts.
    Unexpected(Option<String>),
}

impl Gate {
    pub fn of(status: Option<&str>) -> Self {
        match status {
            Some(STATUS_CREATING) => Gate::Proceed,
            Some(STATUS_DELETING) => Gate::Deleting,
            other => Gate::Unexpected(other.map(str::to_string)),
        }
    }

    /// The decision of a state that must not proceed; `None` for [`Gate::Proceed`].
    pub fn stop_decision(&self, state: &str, site_id: &str) -> Option<StateDecision> {
        match self {
            Gate::Proceed => None,
            Gate::Deleting => {
                tracing::info!(state, site_id, "site is being deleted: step aborted");
                Some(StateDecision::dead_end())
            }
            Gate::Unexpected(status) => {
                tracing::error!(
                    state,
                    site_id,
                    ?status,
                    "unexpected site status: creation aborted"
                );
                Some(StateDecision::force_fail_process(format!(
                    "{state}: site {site_id} has unexpected status {status:?}"
                )))
            }
        }
    }
}

/// The site this call works on, and the decision to stop with if it must not proceed.
fn check_site(state: &str, persistence: &Persistence) -> Result<(String, Option<StateDecision>)> {
    let site_id: String = persistence
        .get_global_attribute(COL_SITE_ID)?
        .ok_or("the site row is missing or has no site_id")?;
    let status: Option<String> = persistence.get_global_attribute(COL_STATUS)?;
    let stop = Gate::of(status.as_deref()).stop_decision(state, &site_id);
    Ok((site_id, stop))
}

/// Calls an external service; its failure fails the state API, so XDB retries it.
fn call(deps: &Deps, operation: Operation, site_id: &str, ctx: &Context) -> Result<()> {
    deps.services
        .call(operation, site_id, &ctx.idempotency_key)
        .map_err(|e| {
            tracing::warn!(site_id, attempt = ctx.attempt, error = %e, "external call failed; XDB will retry");
            e
        })?;
    Ok(())
}

/// Records the site's metadata, then starts both creation branches.
///
/// `status` was set to `creating` by the start transaction (the seed's synchronous part);
/// this state does not write it again, as that would undo a deletion that committed after
/// this call loaded the row.
pub struct SaveMetadata {
    deps: Deps,
}

#[async_trait]
impl AsyncState for SaveMetadata {
    type Input = SiteMetadata;

    fn options(&self) -> AsyncStateConfig {
        self.deps.config()
    }

    async fn execute(
        &self,
        _ctx: &Context,
        input: SiteMetadata,
        _results: &CommandResults,
        persistence: &mut Persistence,
        _communication: &mut Communication,
    ) -> Result<StateDecision> {
        let (site_id, stop) = check_site("SaveMetadata", persistence)?;
        if let Some(stop) = stop {
            return Ok(stop);
        }
        tracing::info!(site_id, name = input.name, "saving site metadata");
        persistence.set_global_attribute(COL_NAME, &input.name)?;
        persistence.set_global_attribute(COL_METADATA_STATUS, STEP_DONE)?;
        Ok(StateDecision::multiple_next_states(vec![
            NextState::of::<CreateFs>(()),
            NextState::of::<CreateDb>(()),
        ]))
    }
}

/// Creates the site's file system; then tells `MarkCreated` and ends its thread.
pub struct CreateFs {
    deps: Deps,
}

#[async_trait]
impl AsyncState for CreateFs {
    type Input = ();

    fn options(&self) -> AsyncStateConfig {
        self.deps.config()
    }

    async fn execute(
        &self,
        ctx: &Context,
        _input: (),
        _results: &CommandResults,
        persistence: &mut Persistence,
        communication: &mut Communication,
    ) -> Result<StateDecision> {
        let (site_id, stop) = check_site("CreateFs", persistence)?;
        if let Some(stop) = stop {
            return Ok(stop);
        }
        call(&self.deps, Operation::CreateFileSystem, &site_id, ctx)?;
        persistence.set_global_attribute(COL_FS_STATUS, STEP_DONE)?;
        communication.publish_to_local_queue(QUEUE_FS_READY, ())?;
        Ok(StateDecision::dead_end())
    }
}

/// Creates the site's database, then bootstraps it.
pub struct CreateDb {
    deps: Deps,
}

#[async_trait]
impl AsyncState for CreateDb {
    type Input = ();

    fn options(&self) -> AsyncStateConfig {
        self.deps.config()
    }

    async fn execute(
        &self,
        ctx: &Context,
        _input: (),
        _results: &CommandResults,
        persistence: &mut Persistence,
        _communication: &mut Communication,
    ) -> Result<StateDecision> {
        let (site_id, stop) = check_site("CreateDb", persistence)?;
        if let Some(stop) = stop {
            return Ok(stop);
        }
        call(&self.deps, Operation::CreateDatabase, &site_id, ctx)?;
        persistence.set_global_attribute(COL_DB_STATUS, STEP_DONE)?;
        Ok(StateDecision::single_next_state::<Bootstrap>(()))
    }
}

/// Bootstraps WordPress into the site's database (which `CreateDb` made first).
pub struct Bootstrap {
    deps: Deps,
}

#[async_trait]
impl AsyncState for Bootstrap {
    type Input = ();

    fn options(&self) -> AsyncStateConfig {
        self.deps.config()
    }

    async fn execute(
        &self,
        ctx: &Context,
        _input: (),
        _results: &CommandResults,
        persistence: &mut Persistence,
        _communication: &mut Communication,
    ) -> Result<StateDecision> {
        let (site_id, stop) = check_site("Bootstrap", persistence)?;
        if let Some(stop) = stop {
            return Ok(stop);
        }
        call(&self.deps, Operation::Bootstrap, &site_id, ctx)?;
        persistence.set_global_attribute(COL_BOOTSTRAP_STATUS, STEP_DONE)?;
        Ok(StateDecision::single_next_state::<MarkCreated>(()))
    }
}

/// Waits for the file-system branch, then moves the site to `created` and completes.
pub struct MarkCreated {
    deps: Deps,
}

/// The step columns that must read `done` before a site is `created`.
pub const STEP_COLUMNS: [&str; 4] = [
    COL_METADATA_STATUS,
    COL_FS_STATUS,
    COL_DB_STATUS,
    COL_BOOTSTRAP_STATUS,
];

/// The steps of `persistence`'s row that are not done, for the final check.
pub fn unfinished_steps(persistence: &Persistence) -> Result<Vec<&'static str>> {
    let mut missing = Vec::new();
    for column in STEP_COLUMNS {
        let value: Option<String> = persistence.get_global_attribute(column)?;
        if value.as_deref() != Some(STEP_DONE) {
            missing.push(column);
        }
    }
    Ok(missing)
}

#[async_trait]
impl AsyncState for MarkCreated {
    type Input = ();
    const HAS_WAIT_UNTIL: bool = true;

    fn options(&self) -> AsyncStateConfig {
        self.deps.config()
    }

    async fn wait_until(
        &self,
        _ctx: &Context,
        _input: (),
        _persistence: &mut Persistence,
        _communication: &mut Communication,
    ) -> Result<CommandRequest> {
        Ok(CommandRequest::all_of(vec![Command::local_queue(
            QUEUE_FS_READY,
        )]))
    }

    async fn execute(
        &self,
        _ctx: &Context,
        _input: (),
        _results: &CommandResults,
        persistence: &mut Persistence,
        _communication: &mut Communication,
    ) -> Result<StateDecision> {
        let (site_id, stop) = check_site("MarkCreated", persistence)?;
        if let Some(stop) = stop {
            return Ok(stop);
        }
        let missing = unfinished_steps(persistence)?;
        if !missing.is_empty() {
            // Every branch writes its column in the transaction that leads here, so this
            // is a bug, not a race; retrying would not fix it.
            tracing::error!(site_id, ?missing, "site steps unfinished at the join");
            return Ok(StateDecision::force_fail_process(format!(
                "site {site_id}: steps {missing:?} are not done"
            )));
        }
        tracing::info!(site_id, "site created");
        persistence.set_global_attribute(COL_STATUS, STATUS_CREATED)?;
        Ok(StateDecision::graceful_complete_process(STATUS_CREATED))
    }
}

/// Started by RPC `delete`: after a grace period, removes whatever the creation made and
/// ends the process as `deleted`.
///
/// The grace period is the seed's mitigation for creation calls already in flight when
/// the deletion began: XDB rejects their outcome once the process is complete, but their
/// external effect may still land. A call slower than the grace leaves garbage behind,
/// as in the seed.
pub struct DeleteSite {
    deps: Deps,
}

#[async_trait]
impl AsyncState for DeleteSite {
    type Input = ();
    const HAS_WAIT_UNTIL: bool = true;

    fn options(&self) -> AsyncStateConfig {
        self.deps.config()
    }

    async fn wait_until(
        &self,
        _ctx: &Context,
        _input: (),
        _persistence: &mut Persistence,
        _communication: &mut Communication,
    ) -> Result<CommandRequest> {
        let grace = self.deps.options.deletion_grace;
        Ok(if grace.is_zero() {
            CommandRequest::empty()
        } else {
            CommandRequest::all_of(vec![Command::timer(grace)])
        })
    }

    async fn execute(
        &self,
        ctx: &Context,
        _input: (),
        _results: &CommandResults,
        persistence: &mut Persistence,
        _communication: &mut Communication,
    ) -> Result<StateDecision> {
        let site_id: String = persistence
            .get_global_attribute(COL_SITE_ID)?
            .ok_or("the site row is missing or has no site_id")?;
        // Both deletions run in every attempt; one idempotency key covers both, and the
        // services dedupe per operation, so a retry redoes only what failed.
        call(&self.deps, Operation::DeleteFileSystem, &site_id, ctx)?;
        call(&self.deps, Operation::DropDatabase, &site_id, ctx)?;
        tracing::info!(site_id, "site deleted");
        persistence.set_global_attribute(COL_STATUS, STATUS_DELETED)?;
        Ok(StateDecision::force_complete_process(STATUS_DELETED))
    }
}

/// Starts creating `site_id`: the start transaction inserts (or resets) its row with
/// status `creating`, and `SaveMetadata` records `name`. Returns the execution id.
pub async fn start_site_creation(
    client: &Client,
    worker_url: Option<&str>,
    site_id: &str,
    name: &str,
) -> std::result::Result<String, ClientError> {
    client
        .start_process::<SiteCreationProcess>(
            &process_id(site_id),
            worker_url,
            SiteMetadata {
                name: name.to_string(),
            },
            ProcessStartOptions::new()
                .global_attribute_pk_value(site_id)
                .initial_global_attribute(COL_STATUS, STATUS_CREATING),
        )
        .await
}

/// Deletes `site_id` while its creation runs, through RPC `delete`.
///
/// Once the creation has completed the process is closed and XDB refuses the RPC; deleting
/// a created site is a separate workflow this sample does not include.
pub async fn delete_site(
    client: &Client,
    site_id: &str,
) -> std::result::Result<DeleteOutcome, ClientError> {
    client
        .invoke_rpc::<SiteCreationProcess, _, _>(&process_id(site_id), RPC_DELETE, &())
        .await
}

#[cfg(test)]
mod tests {
    use super::*;
    use xdb_sdk::protocol::ThreadCloseType;

    #[test]
    fn gate_follows_status() {
        assert_eq!(Gate::of(Some(STATUS_CREATING)), Gate::Proceed);
        assert_eq!(Gate::of(Some(STATUS_DELETING)), Gate::Deleting);
        assert_eq!(Gate::of(None), Gate::Unexpected(None));
        assert_eq!(
            Gate::of(Some(STATUS_CREATED)),
            Gate::Unexpected(Some(STATUS_CREATED.into()))
        );
        assert!(Gate::Proceed.stop_decision("S", "s").is_none());
        assert_eq!(
            Gate::Deleting.stop_decision("S", "s").unwrap().close_type(),
            Some(ThreadCloseType::DeadEnd)
        );
        assert_eq!(
            Gate::of(Some("bogus"))
                .stop_decision("S", "s")
                .unwrap()
                .close_type(),
            Some(ThreadCloseType::ForceFailProcess)
        );
    }

    #[test]
    fn every_state_retries_with_the_configured_policy() {
        let options = SiteCreationOptions {
            retry_policy: RetryPolicy {
                maximum_attempts: Some(3),
                ..default_retry_policy()
            },
            deletion_grace: Duration::ZERO,
        };
        let def = ProcessDefinition::new(SiteCreationProcess::new(
            ExternalServices::reliable(),
            options.clone(),
        ));
        assert_eq!(def.starting_state_id(), Some("SaveMetadata"));
        for id in def.state_ids() {
            let config = def.state_config(id).unwrap();
            assert_eq!(
                config.execute_api_retry_policy,
                Some(options.retry_policy.clone())
            );
            assert_eq!(
                config.global_attribute_loading.unwrap().columns,
                COLUMNS.to_vec()
            );
        }
        let policy = default_retry_policy();
        assert_eq!(policy.initial_interval_seconds, Some(0.05));
        assert_eq!(policy.maximum_interval_seconds, Some(0.5));
        assert_eq!(policy.maximum_attempts, None, "unlimited");
    }
}
