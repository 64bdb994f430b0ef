//! Whether this release's services may run on the schema a database records: the pure
//! decision services make at start-up, and the errors that tell an operator what to run.
//!
//! A schema records, from version [`COMPATIBILITY_RECORDED_FROM`] on, the oldest schema
//! version whose services still work on it (the `oldest_compatible` of the migration that
//! brought it there). During a rolling upgrade the new release's installer runs first, so
//! services of the previous release meet a newer schema: they run on it when it says they
//! may, and refuse it otherwise (docs/upgrades.md has the rule migrations follow).

use std::fmt;

use crate::{Dialect, SchemaError};

/// First schema version whose version row records its oldest compatible version and the
/// release that installed it (migration v006 adds the columns).
pub const COMPATIBILITY_RECORDED_FROM: i32 = 6;

/// How an installed schema compares to this binary.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SchemaState {
    /// No `xdb_sys_schema_version` table or row: run the installer.
    NotInstalled,
    /// Older than this binary: run the installer.
    Outdated,
    /// Exactly the version this binary expects.
    Current,
    /// Newer than this binary, and it records that this binary's services still work on
    /// it (a rolling upgrade is under way); the installer of this binary refuses it.
    NewerCompatible,
    /// Newer than this binary, and it needs services newer than this binary's.
    NewerIncompatible,
}

/// What the version row of one database says, against this binary's latest version.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SchemaStatus {
    /// Dialect of the database.
    pub dialect: Dialect,
    /// Recorded version (0: not installed).
    pub installed: i32,
    /// Recorded oldest schema version whose services work on `installed`; `None` below
    /// [`COMPATIBILITY_RECORDED_FROM`], where only services of exactly `installed` do.
    pub oldest_compatible: Option<i32>,
    /// The release whose installer recorded `installed` (e.g. `XDB 0.2.0`), when known.
    pub installed_by: Option<String>,
    /// Version this binary expects ([`crate::LATEST_VERSION`]).
    pub latest: i32,
}

/// The decision: how a schema at `installed`, whose services of `oldest_compatible` and
/// newer work on it, relates to a binary of schema version `latest`.
pub fn schema_state(installed: i32, oldest_compatible: Option<i32>, latest: i32) -> SchemaState {
    if installed <= 0 {
        SchemaState::NotInstalled
    } else if installed < latest {
        SchemaState::Outdated
    } else if installed == latest {
        SchemaState::Current
    } else if oldest_compatible.unwrap_or(installed) <= latest {
        SchemaState::NewerCompatible
    } else {
        SchemaState::NewerIncompatible
    }
}

impl SchemaStatus {
    /// Classifies the installed schema against this binary; see [`schema_state`].
    pub fn state(&self) -> SchemaState {
        schema_state(self.installed, self.oldest_compatible, self.latest)
    }

    /// The oldest services' schema version that runs on the installed schema.
    pub fn needs(&self) -> i32 {
        self.oldest_compatible.unwrap_or(self.installed)
    }

    /// `Ok` when this binary's services may run on the installed schema: exactly its
    /// version, or a newer one that records them as compatible (logged as a warning, as
    /// the rollout of the release that installed it is still to finish). Services call
    /// this at start-up so they never run against tables they do not understand.
    pub fn ensure_current(&self) -> Result<(), SchemaError> {
        match self.state() {
            SchemaState::Current => Ok(()),
            SchemaState::NewerCompatible => {
                tracing::warn!(
                    installed = self.installed,
                    oldest_compatible = self.needs(),
                    latest = self.latest,
                    installed_by = self.installed_by.as_deref().unwrap_or("unknown"),
                    "a newer XDB schema is installed; this release's services still work on \
                     it: finish rolling out the release that installed it"
                );
                Ok(())
            }
            SchemaState::NotInstalled | SchemaState::Outdated => {
                Err(SchemaError::DatabaseOutdated {
                    installed: self.installed,
                    latest: self.latest,
                })
            }
            SchemaState::NewerIncompatible => Err(SchemaError::ReleaseTooOld {
                installed: self.installed,
                needs: self.needs(),
                latest: self.latest,
                release: self.release_to_run(),
            }),
        }
    }

    /// Names the release to run for a schema that needs newer services.
    fn release_to_run(&self) -> String {
        match &self.installed_by {
            Some(release) => format!("{release} (which installed it) or newer"),
            None => format!(
                "a release whose schema version is {} or newer",
                self.needs()
            ),
        }
    }
}

impl fmt::Display for SchemaStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (installed, latest) = (self.installed, self.latest);
        match self.state() {
            SchemaState::NotInstalled => write!(
                f,
                "XDB schema not installed (latest: {latest}); run `xdb-sys-schema install`"
            ),
            SchemaState::Outdated => write!(
                f,
                "XDB schema at version {installed}, older than latest {latest}; run `xdb-sys-schema install`"
            ),
            SchemaState::Current => write!(f, "XDB schema at version {installed} (up to date)"),
            SchemaState::NewerCompatible => write!(
                f,
                "XDB schema at version {installed}, newer than this binary's latest {latest}; \
                 services of schema version {} and newer run on it, so this release's do \
                 (finish the rollout of {})",
                self.needs(),
                self.release_to_run()
            ),
            SchemaState::NewerIncompatible => write!(
                f,
                "XDB schema at version {installed}, which needs services of schema version {} \
                 or newer; this binary's latest is {latest}: run {}",
                self.needs(),
                self.release_to_run()
            ),
        }
    }
}

/// The one place the release name written to the version row is formed.
pub(crate) const THIS_RELEASE: &str = concat!("XDB ", env!("CARGO_PKG_VERSION"));

#[cfg(test)]
mod tests {
    use super::*;

    fn status(installed: i32, oldest_compatible: Option<i32>) -> SchemaStatus {
        SchemaStatus {
            dialect: Dialect::Postgres,
            installed,
            oldest_compatible,
            installed_by: Some("XDB 9.9.9".into()),
            latest: 6,
        }
    }

    #[test]
    fn the_decision() {
        use SchemaState::*;
        let cases = [
            // (installed, oldest compatible, state)
            (0, None, NotInstalled),
            (5, None, Outdated),
            // An older schema is never enough, whatever it records.
            (5, Some(5), Outdated),
            (6, None, Current),
            (6, Some(5), Current),
            (7, Some(6), NewerCompatible),
            (7, Some(5), NewerCompatible),
            (7, Some(7), NewerIncompatible),
            (8, Some(7), NewerIncompatible),
            // A newer schema that records nothing needs services of exactly its version.
            (7, None, NewerIncompatible),
        ];
        for (installed, oldest, expected) in cases {
            assert_eq!(
                schema_state(installed, oldest, 6),
                expected,
                "installed {installed}, oldest compatible {oldest:?}"
            );
        }
    }

    #[test]
    fn services_accept_their_version_and_a_compatible_newer_one() {
        status(6, Some(5)).ensure_current().unwrap();
        status(7, Some(6)).ensure_current().unwrap();
    }

    #[test]
    fn an_older_schema_asks_for_the_installer() {
        let error = status(5, None).ensure_current().unwrap_err();
        assert!(
            matches!(
                error,
                SchemaError::DatabaseOutdated {
                    installed: 5,
                    latest: 6
                }
            ),
            "{error:?}"
        );
        assert!(
            error.to_string().contains("xdb-sys-schema install"),
            "{error}"
        );
    }

    #[test]
    fn an_incompatible_newer_schema_names_the_version_and_release_needed() {
        let error = status(8, Some(7)).ensure_current().unwrap_err();
        assert!(
            matches!(
                error,
                SchemaError::ReleaseTooOld {
                    installed: 8,
                    needs: 7,
                    latest: 6,
                    ..
                }
            ),
            "{error:?}"
        );
        assert_eq!(
            error.to_string(),
            "the database's XDB schema is version 8, which needs services of schema version \
             7 or newer; this release's services are for version 6: run XDB 9.9.9 (which \
             installed it) or newer"
        );
        let unknown = SchemaStatus {
            installed_by: None,
            ..status(7, None)
        };
        let message = unknown.ensure_current().unwrap_err().to_string();
        assert!(
            message.ends_with("run a release whose schema version is 7 or newer"),
            "{message}"
        );
    }

    #[test]
    fn display_says_what_to_do() {
        assert!(status(0, None).to_string().contains("not installed"));
        assert!(status(7, Some(5)).to_string().contains("run on it"));
        let refused = status(8, Some(7)).to_string();
        assert!(
            refused.contains("needs services of schema version 7"),
            "{refused}"
        );
        assert!(refused.contains("run XDB 9.9.9"), "{refused}");
    }
}
