//! Stand-ins for the external services of the site-creation sample (seed 004): a file
//! system service, a database service and the WordPress bootstrap API.
//!
//! They fail at random, as the seed's workers do, so the sample shows XDB retrying a
//! state until it succeeds. Failures come from a seeded generator, so a test that calls
//! them in a fixed order sees the same failures on every run.

use std::collections::{BTreeMap, HashSet};
use std::fmt;
use std::sync::{Arc, Mutex};

use serde::{Deserialize, Serialize};

/// A side effect on an external service.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum Operation {
    CreateFileSystem,
    CreateDatabase,
    /// Installs WordPress into the site's database; needs the database.
    Bootstrap,
    DeleteFileSystem,
    /// Drops the site's database, and with it the bootstrap.
    DropDatabase,
}

impl Operation {
    fn service(self) -> &'static str {
        match self {
            Operation::CreateFileSystem | Operation::DeleteFileSystem => "file-system service",
            Operation::CreateDatabase | Operation::DropDatabase => "database service",
            Operation::Bootstrap => "wordpress api",
        }
    }
}

/// What exists for one site in the external services.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SiteResources {
    pub file_system: bool,
    pub database: bool,
    pub bootstrapped: bool,
}

/// One site as the services see it: what exists, and how many times each operation took
/// effect (a call repeated with the same idempotency key counts once).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SiteReport {
    pub site_id: String,
    pub resources: SiteResources,
    pub effects: BTreeMap<Operation, u32>,
}

/// A failed call. `applied` tells whether the effect took place anyway (the reply was
/// lost), which the caller cannot know: that is why calls carry idempotency keys.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServiceError {
    pub operation: Operation,
    pub site_id: String,
    pub applied: bool,
    pub reason: String,
}

impl fmt::Display for ServiceError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} failed {:?} for site {}: {}",
            self.operation.service(),
            self.operation,
            self.site_id,
            self.reason
        )
    }
}

impl std::error::Error for ServiceError {}

/// The simulated external services; clones share their state.
#[derive(Debug, Clone)]
pub struct ExternalServices {
    inner: Arc<Mutex<Inner>>,
}

#[derive(Debug)]
struct Inner {
    failure_rate: f64,
    rng: SplitMix64,
    sites: BTreeMap<String, SiteReport>,
    applied_keys: HashSet<(Operation, String)>,
    injected_failures: u64,
}

impl Default for ExternalServices {
    fn default() -> Self {
        Self::reliable()
    }
}

impl ExternalServices {
    /// Services that never fail.
    pub fn reliable() -> Self {
        Self::faulty(0.0, 0)
    }

    /// Services where each call fails with probability `failure_rate` (clamped to
    /// `0..=1`), drawn from a generator seeded with `seed`. Half the failures happen after
    /// the effect was applied, like a reply lost on the way back.
    pub fn faulty(failure_rate: f64, seed: u64) -> Self {
        Self {
            inner: Arc::new(Mutex::new(Inner {
                failure_rate: failure_rate.clamp(0.0, 1.0),
                rng: SplitMix64(seed),
                sites: BTreeMap::new(),
                applied_keys: HashSet::new(),
                injected_failures: 0,
            })),
        }
    }

    /// Performs `operation` for `site_id`, once per `(operation, idempotency_key)`.
    ///
    /// Returns whether the effect happened now (`false`: an earlier call with this key
    /// already did it). A bootstrap without a database fails without drawing a fault.
    pub fn call(
        &self,
        operation: Operation,
        site_id: &str,
        idempotency_key: &str,
    ) -> Result<bool, ServiceError> {
        let mut inner = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        let key = (operation, idempotency_key.to_string());
        if inner.applied_keys.contains(&key) {
            tracing::info!(
                service = operation.service(),
                ?operation,
                site_id,
                idempotency_key,
                "already done by an earlier attempt"
            );
            return Ok(false);
        }
        let error = |applied: bool, reason: &str| ServiceError {
            operation,
            site_id: site_id.to_string(),
            applied,
            reason: reason.to_string(),
        };
        let site = inner
            .sites
            .get(site_id)
            .map(|s| s.resources)
            .unwrap_or_default();
        if operation == Operation::Bootstrap && !site.database {
            return Err(error(false, "the site has no database to bootstrap"));
        }
        let failure_rate = inner.failure_rate;
        let fault = failure_rate > 0.0 && inner.rng.next_f64() < failure_rate;
        let lose_reply = fault && inner.rng.next_u64() & 1 == 1;
        if fault {
            inner.injected_failures += 1;
        }
        if fault && !lose_reply {
            tracing::warn!(
                service = operation.service(),
                ?operation,
                site_id,
                idempotency_key,
                "injected failure: service unavailable"
            );
            return Err(error(false, "service unavailable (injected)"));
        }
        inner.apply(operation, site_id);
        inner.applied_keys.insert(key);
        if lose_reply {
            tracing::warn!(
                service = operation.service(),
                ?operation,
                site_id,
                idempotency_key,
                "injected failure: done, but the reply was lost"
            );
            return Err(error(true, "timed out waiting for the reply (injected)"));
        }
        tracing::info!(
            service = operation.service(),
            ?operation,
            site_id,
            idempotency_key,
            "done"
        );
        Ok(true)
    }

    /// How many times `operation` took effect for `site_id`.
    pub fn count(&self, site_id: &str, operation: Operation) -> u32 {
        self.report(site_id)
            .and_then(|r| r.effects.get(&operation).copied())
            .unwrap_or(0)
    }

    /// What exists for `site_id`.
    pub fn resources(&self, site_id: &str) -> SiteResources {
        self.report(site_id)
            .map(|r| r.resources)
            .unwrap_or_default()
    }

    /// `site_id` as the services see it, if any call for it took effect.
    pub fn report(&self, site_id: &str) -> Option<SiteReport> {
        let inner = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        inner.sites.get(site_id).cloned()
    }

    /// Every site any call took effect for, by site id.
    pub fn reports(&self) -> Vec<SiteReport> {
        let inner = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        inner.sites.values().cloned().collect()
    }

    /// Failures injected so far (both kinds).
    pub fn injected_failures(&self) -> u64 {
        self.inner
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .injected_failures
    }
}

impl Inner {
    fn apply(&mut self, operation: Operation, site_id: &str) {
        let site = self
            .sites
            .entry(site_id.to_string())
            .or_insert_with(|| SiteReport {
                site_id: site_id.to_string(),
                resources: SiteResources::default(),
                effects: BTreeMap::new(),
            });
        let r = &mut site.resources;
        match operation {
            Operation::CreateFileSystem => r.file_system = true,
            Operation::CreateDatabase => r.database = true,
            Operation::Bootstrap => r.bootstrapped = true,
            Operation::DeleteFileSystem => r.file_system = false,
            Operation::DropDatabase => {
                r.database = false;
                r.bootstrapped = false;
            }
        }
        *site.effects.entry(operation).or_default() += 1;
    }
}

/// SplitMix64: a tiny generator whose sequence is fixed by its seed on every platform and
/// release, which `rand`'s `StdRng` does not promise, and tests replay failures by seed.
#[derive(Debug, Clone)]
struct SplitMix64(u64);

impl SplitMix64 {
    fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in `[0, 1)`, from the top 53 bits.
    fn next_f64(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Calls until success with a fresh key per call, as XDB does for successive states.
    fn outcomes(services: &ExternalServices, n: usize) -> Vec<Result<bool, bool>> {
        (0..n)
            .map(|i| {
                services
                    .call(Operation::CreateFileSystem, "s", &format!("k{i}"))
                    .map_err(|e| e.applied)
            })
            .collect()
    }

    #[test]
    fn failures_are_reproducible_by_seed() {
        let a = outcomes(&ExternalServices::faulty(0.5, 7), 64);
        let b = outcomes(&ExternalServices::faulty(0.5, 7), 64);
        let c = outcomes(&ExternalServices::faulty(0.5, 8), 64);
        assert_eq!(a, b);
        assert_ne!(a, c);
        assert!(a.contains(&Err(true)) && a.contains(&Err(false)) && a.contains(&Ok(true)));
        assert!(outcomes(&ExternalServices::reliable(), 64)
            .iter()
            .all(|o| *o == Ok(true)));
        assert!(outcomes(&ExternalServices::faulty(1.0, 1), 16)
            .iter()
            .all(|o| o.is_err()));
    }

    #[test]
    fn a_retry_after_a_lost_reply_takes_no_second_effect() {
        const KEY: &str = "exec/CreateDb-1/execute";
        // The first seed whose first call applies the effect but loses the reply.
        let services = (0..)
            .map(|seed| ExternalServices::faulty(0.5, seed))
            .find(|s| {
                s.call(Operation::CreateDatabase, "s1", KEY)
                    .is_err_and(|e| e.applied)
            })
            .unwrap();
        assert_eq!(services.count("s1", Operation::CreateDatabase), 1);
        assert!(services.resources("s1").database);
        assert_eq!(services.injected_failures(), 1);

        // The caller saw an error; its retry under the same key is answered as done.
        assert_eq!(
            services.call(Operation::CreateDatabase, "s1", KEY),
            Ok(false)
        );
        assert_eq!(services.count("s1", Operation::CreateDatabase), 1);
        // Another call (another key) is another effect.
        let mut attempts = 0;
        while services
            .call(Operation::CreateDatabase, "s1", "exec/CreateDb-2/execute")
            .is_err()
        {
            attempts += 1;
            assert!(attempts < 100);
        }
        assert_eq!(services.count("s1", Operation::CreateDatabase), 2);
        assert_eq!(services.count("s2", Operation::CreateDatabase), 0);
    }

    #[test]
    fn bootstrap_needs_the_database_and_drop_removes_both() {
        let services = ExternalServices::reliable();
        let err = services.call(Operation::Bootstrap, "s", "k1").unwrap_err();
        assert!(!err.applied);
        assert!(err.to_string().contains("no database"), "{err}");
        services.call(Operation::CreateDatabase, "s", "k2").unwrap();
        services.call(Operation::Bootstrap, "s", "k3").unwrap();
        services
            .call(Operation::CreateFileSystem, "s", "k4")
            .unwrap();
        assert_eq!(
            services.resources("s"),
            SiteResources {
                file_system: true,
                database: true,
                bootstrapped: true
            }
        );
        // One deletion call does both operations under its one key.
        services
            .call(Operation::DeleteFileSystem, "s", "k5")
            .unwrap();
        services.call(Operation::DropDatabase, "s", "k5").unwrap();
        assert_eq!(services.resources("s"), SiteResources::default());
        assert_eq!(services.reports()[0].effects.len(), 5);
        assert_eq!(services.clone().injected_failures(), 0);
    }
}
