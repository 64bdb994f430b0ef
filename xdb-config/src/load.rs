//! Layering: built-in defaults < the TOML file < `XDB_*` environment variables <
//! command-line overrides.

use std::fmt;
use std::path::{Path, PathBuf};

use figment::providers::{Env, Format, Serialized, Toml};
use figment::value::Value;
use figment::Figment;
use serde::Serialize;

use crate::settings::Settings;
use crate::validate::{self, Service};

/// The environment variable naming the configuration file (when `--config` is not given).
pub const CONFIG_ENV: &str = "XDB_CONFIG";

/// The file's sections; `XDB_<SECTION>_<KEY>` sets `<section>.<key>`
/// (`XDB_ASYNC_POOL_SIZE` → `async.pool_size`). Other `XDB_` variables are not read.
pub const SECTIONS: [&str; 9] = [
    "database",
    "log",
    "queue",
    "pulsar",
    "api",
    "async",
    "security",
    "telemetry",
    "limits",
];

/// Why the configuration cannot be used; the message names every problem and where the
/// offending value came from.
#[derive(Debug)]
pub enum ConfigError {
    /// The named file is missing or unreadable.
    File { path: PathBuf, reason: String },
    /// A value has the wrong type or a key is unknown.
    Parse(Vec<String>),
    /// Values parse but are not usable together.
    Invalid(Vec<String>),
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ConfigError::File { path, reason } => {
                write!(f, "cannot read config file {}: {reason}", path.display())
            }
            ConfigError::Parse(problems) | ConfigError::Invalid(problems) => {
                write!(f, "invalid configuration:")?;
                for problem in problems {
                    write!(f, "\n  - {problem}")?;
                }
                Ok(())
            }
        }
    }
}

impl std::error::Error for ConfigError {}

/// Values given on the command line, by key path (`async.pool_size`); they win over
/// the file and the environment. A binary may also set defaults of its own, which the
/// file and the environment override.
#[derive(Debug, Default, Clone)]
pub struct Overrides {
    values: Vec<(String, Value)>,
    defaults: Vec<(String, Value)>,
}

impl Overrides {
    /// Sets `key` when `value` is `Some`.
    pub fn set<T: Serialize>(&mut self, key: &str, value: Option<T>) -> &mut Self {
        if let Some(value) = value {
            let value = Value::serialize(value).expect("plain values serialize");
            self.values.push((key.to_string(), value));
        }
        self
    }

    /// Adds a `key=value` assignment as parsed by [`parse_assignment`].
    pub fn assign(&mut self, key: String, value: Value) -> &mut Self {
        self.values.push((key, value));
        self
    }

    /// Replaces the built-in default of `key` for this binary; the file, the
    /// environment and the command line still override it.
    pub fn default_value<T: Serialize>(&mut self, key: &str, value: T) -> &mut Self {
        let value = Value::serialize(value).expect("plain values serialize");
        self.defaults.push((key.to_string(), value));
        self
    }
}

/// Parses `section.key=value` (`--set` on the command line); the value is read like an
/// environment variable's (`8` a number, `true` a boolean, anything else a string).
pub fn parse_assignment(text: &str) -> Result<(String, Value), String> {
    let (key, value) = text
        .split_once('=')
        .ok_or_else(|| format!("`{text}` is not KEY=VALUE (e.g. async.pool_size=8)"))?;
    let key = key.trim();
    let section = key.split('.').next().unwrap_or_default();
    if !key.contains('.') || !SECTIONS.contains(&section) {
        return Err(format!(
            "`{key}` is not a section.key path; sections are {}",
            SECTIONS.join(", ")
        ));
    }
    let value = value.parse::<Value>().expect("parsing a value never fails");
    Ok((key.to_string(), value))
}

/// Loads the configuration for `service` from `file` (or the file named by
/// [`CONFIG_ENV`]), the environment and `overrides`, and validates it.
pub fn load(
    service: Service,
    file: Option<&Path>,
    overrides: &Overrides,
) -> Result<Settings, ConfigError> {
    let from_env = std::env::var_os(CONFIG_ENV).map(PathBuf::from);
    let file = file.map(Path::to_path_buf).or(from_env);
    // Serde's defaults fill whatever no layer sets.
    let mut figment = Figment::new();
    // The default profile, as the file's and the environment's values are, so those
    // override these; command-line values go to the global profile, which wins.
    for (key, value) in &overrides.defaults {
        figment = figment.merge(Serialized::default(key, value.clone()));
    }
    if let Some(path) = &file {
        // `Toml::file` quietly yields nothing for a missing file; a named file must exist.
        std::fs::metadata(path).map_err(|error| ConfigError::File {
            path: path.clone(),
            reason: error.to_string(),
        })?;
        figment = figment.merge(Toml::file_exact(path));
    }
    figment = figment.merge(Env::prefixed("XDB_").filter_map(|key| {
        let key = key.as_str().to_ascii_lowercase();
        let (section, rest) = key.split_once('_')?;
        SECTIONS
            .contains(&section)
            .then(|| format!("{section}.{rest}").into())
    }));
    for (key, value) in &overrides.values {
        figment = figment.merge(Serialized::global(key, value.clone()));
    }
    let settings: Settings = figment
        .extract()
        .map_err(|error| ConfigError::Parse(error.into_iter().map(|e| describe(&e)).collect()))?;
    let mut problems = validate::problems(&settings, service);
    problems.extend(crate::tls_files::problems(&settings, service));
    if problems.is_empty() {
        Ok(settings)
    } else {
        Err(ConfigError::Invalid(problems))
    }
}

/// One figment error as `key: what is wrong (from where)`.
fn describe(error: &figment::Error) -> String {
    let mut text = String::new();
    let mut keys = error.path.clone();
    // Name the unknown key itself, whether or not figment's path already ends with it.
    if let figment::error::Kind::UnknownField(field, _) = &error.kind {
        if keys.last() != Some(field) {
            keys.push(field.clone());
        }
    }
    let path = keys.join(".");
    if !path.is_empty() {
        text.push_str(&path);
        text.push_str(": ");
    }
    text.push_str(&error.kind.to_string());
    if let Some(metadata) = &error.metadata {
        if metadata.name.contains("environment") {
            let variable = format!("XDB_{}", keys.join("_").to_ascii_uppercase());
            text.push_str(&format!(" (from environment variable {variable})"));
        } else if let Some(source) = &metadata.source {
            text.push_str(&format!(" (in {source})"));
        } else {
            text.push_str(&format!(" (from {})", metadata.name));
        }
    }
    text
}
