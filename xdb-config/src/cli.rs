//! The command-line flags every XDB binary shares; each binary flattens [`ConfigArgs`]
//! into its own `clap` parser and adds the flags of its own sections.

use std::path::PathBuf;

use figment::value::Value;

use crate::load::{load, parse_assignment, ConfigError, Overrides};
use crate::settings::{LogFormat, Settings};
use crate::validate::Service;

/// The config file, the database and logging, and `--set` for any other setting.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct ConfigArgs {
    /// TOML config file shared by both services (see deploy/xdb.example.toml) [env: XDB_CONFIG]
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// PostgreSQL or MySQL/MariaDB URL of your database (database.url):
    /// postgres://user:password@host:5432/db, mysql://… or mariadb://user:password@host:3306/db
    /// (the MySQL dialect is tested on MariaDB 10.11 only) [env: XDB_DATABASE_URL]
    #[arg(long, value_name = "URL")]
    pub database_url: Option<String>,
    /// Log filter such as `info` or `info,xdb_async_service=debug` (log.level; RUST_LOG wins) [env: XDB_LOG_LEVEL]
    #[arg(long, value_name = "FILTER")]
    pub log_level: Option<String>,
    /// Log lines as `text` or `json` (log.format) [env: XDB_LOG_FORMAT]
    #[arg(long, value_name = "FORMAT", value_parser = parse_log_format)]
    pub log_format: Option<LogFormat>,
    /// Any setting as section.key=VALUE, e.g. `--set telemetry.enabled=true` (repeatable)
    #[arg(long = "set", value_name = "KEY=VALUE", value_parser = parse_assignment)]
    pub set: Vec<(String, Value)>,
}

impl ConfigArgs {
    /// These flags as overrides; a binary adds its own flags to them before [`Self::load`].
    pub fn overrides(&self) -> Overrides {
        let mut overrides = Overrides::default();
        overrides
            .set("database.url", self.database_url.clone())
            .set("log.level", self.log_level.clone())
            .set("log.format", self.log_format);
        overrides
    }

    /// Loads and validates the settings for `service`: `overrides` (from
    /// [`Self::overrides`] and the binary's own flags), then `--set` assignments, win
    /// over the environment and the file.
    pub fn load(
        &self,
        service: Service,
        mut overrides: Overrides,
    ) -> Result<Settings, ConfigError> {
        for (key, value) in &self.set {
            overrides.assign(key.clone(), value.clone());
        }
        load(service, self.config.as_deref(), &overrides)
    }
}

fn parse_log_format(text: &str) -> Result<LogFormat, String> {
    match text.to_ascii_lowercase().as_str() {
        "text" => Ok(LogFormat::Text),
        "json" => Ok(LogFormat::Json),
        _ => Err("expected `text` or `json`".into()),
    }
}

#[cfg(test)]
mod tests {
    use clap::Parser;

    use super::*;

    #[derive(Parser)]
    struct Cli {
        #[command(flatten)]
        args: ConfigArgs,
    }

    #[test]
    // Jail's closures must return figment's own (large) error type.
    #[allow(clippy::result_large_err)]
    fn flags_become_overrides_and_set_wins_over_them() {
        // Isolated from the test process's own `XDB_*` variables.
        figment::Jail::expect_with(|_| {
            check_flags();
            Ok(())
        });
    }

    fn check_flags() {
        let cli = Cli::try_parse_from([
            "xdb",
            "--database-url",
            "mysql://root@h:3306/app",
            "--log-level",
            "debug",
            "--log-format",
            "JSON",
            "--set",
            "log.level=warn",
        ])
        .unwrap();
        let mut overrides = cli.args.overrides();
        overrides.set("api.pool_size", Some(2));
        let settings = cli.args.load(Service::Api, overrides).unwrap();
        assert_eq!(
            settings.database.url.as_deref(),
            Some("mysql://root@h:3306/app")
        );
        assert_eq!(settings.log.format, LogFormat::Json);
        assert_eq!(settings.log.level, "warn", "--set wins over a flag");
        assert_eq!(settings.api.pool_size, 2);
        assert!(Cli::try_parse_from(["xdb", "--log-format", "xml"]).is_err());
    }
}
