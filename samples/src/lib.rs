//! XDB sample processes, and the worker that hosts them.
//!
//! - [`user_signup`]: the user sign-up process of the XDB design (seed 003).
//! - [`site_creation`]: the status-driven site creation of seed 004, calling the
//!   randomly failing services of [`site_services`].
//! - [`timer`]: one durable timer, the process the integration tests and the bench share.

pub mod email;
pub mod site_creation;
pub mod site_services;
pub mod sql;
pub mod timer;
pub mod user_signup;

use std::time::Duration;

use axum::routing::get;
use axum::{Json, Router};
use xdb_sdk::WorkerService;

use crate::email::EmailOutbox;
use crate::site_creation::{SiteCreationOptions, SiteCreationProcess};
use crate::site_services::ExternalServices;
use crate::user_signup::UserSignupProcess;

/// Lists the emails the worker sent, so tests can check a worker in another process.
pub const EMAILS_PATH: &str = "/sample/emails";
/// Lists what the site services hold per site, for the same reason.
pub const SITES_PATH: &str = "/sample/sites";
pub const HEALTH_PATH: &str = "/health";

/// What the sample worker's processes talk to, and their tunables.
#[derive(Debug, Clone)]
pub struct SampleWorkerConfig {
    pub outbox: EmailOutbox,
    pub reminder_interval: Duration,
    pub site_services: ExternalServices,
    pub site_options: SiteCreationOptions,
}

impl SampleWorkerConfig {
    /// Sign-up with `outbox` and `reminder_interval`; site creation with services that
    /// never fail and default options.
    pub fn new(outbox: EmailOutbox, reminder_interval: Duration) -> Self {
        Self {
            outbox,
            reminder_interval,
            site_services: ExternalServices::reliable(),
            site_options: SiteCreationOptions::default(),
        }
    }
}

/// The worker of every sample, sending emails to `outbox`; site creation never fails.
pub fn sample_worker(outbox: EmailOutbox, reminder_interval: Duration) -> WorkerService {
    sample_worker_with(&SampleWorkerConfig::new(outbox, reminder_interval))
}

/// The worker of every sample, configured by `config`.
pub fn sample_worker_with(config: &SampleWorkerConfig) -> WorkerService {
    WorkerService::new()
        .register(UserSignupProcess::new(
            config.outbox.clone(),
            config.reminder_interval,
        ))
        .register(SiteCreationProcess::new(
            config.site_services.clone(),
            config.site_options.clone(),
        ))
}

/// The sample worker's whole app: the worker API, `GET /health` and `GET /sample/emails`
/// (a JSON array of `{to, kind, idempotencyKey}`, oldest first).
pub fn sample_router(outbox: EmailOutbox, reminder_interval: Duration) -> Router {
    sample_router_with(SampleWorkerConfig::new(outbox, reminder_interval))
}

/// [`sample_router`] configured by `config`, with `GET /sample/sites` too: a JSON array
/// of `{siteId, resources: {fileSystem, database, bootstrapped}, effects: {OPERATION: n}}`
/// by site id.
pub fn sample_router_with(config: SampleWorkerConfig) -> Router {
    let emails = config.outbox.clone();
    let sites = config.site_services.clone();
    sample_worker_with(&config)
        .router()
        .route(HEALTH_PATH, get(|| async { "ok" }))
        .route(
            EMAILS_PATH,
            get(move || {
                let emails = emails.clone();
                async move { Json(emails.sent()) }
            }),
        )
        .route(
            SITES_PATH,
            get(move || {
                let sites = sites.clone();
                async move { Json(sites.reports()) }
            }),
        )
}
