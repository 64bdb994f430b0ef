//! `xdb dev`'s flags.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use clap::Args;

use crate::format::parse_duration;

/// Where the dev services listen and which database they use.
#[derive(Debug, Clone, Args)]
pub struct DevArgs {
    /// Directory of the embedded PostgreSQL's data, kept across starts [default: the
    /// user's data dir, e.g. ~/.local/share/xdb/dev; /var/lib/xdb/dev for root]
    #[arg(long, value_name = "DIR", conflicts_with_all = ["ephemeral", "database_url"])]
    pub data_dir: Option<PathBuf>,
    /// A throwaway embedded database, removed on exit
    #[arg(long, conflicts_with = "database_url")]
    pub ephemeral: bool,
    /// Use this existing PostgreSQL or MySQL/MariaDB database instead of the embedded one
    #[arg(long, value_name = "URL")]
    pub database_url: Option<String>,
    /// The API service's (and console's) address
    #[arg(long, value_name = "ADDR", default_value = "127.0.0.1:8801")]
    pub listen: SocketAddr,
    /// The async service's health and internal API address
    #[arg(long, value_name = "ADDR", default_value = "127.0.0.1:8802")]
    pub async_listen: SocketAddr,
    /// The in-process sample worker's address
    #[arg(long, value_name = "ADDR", default_value = "127.0.0.1:8803")]
    pub worker_listen: SocketAddr,
    /// The embedded PostgreSQL's port on 127.0.0.1 (0: a free port)
    #[arg(long, value_name = "PORT", default_value_t = 0)]
    pub postgres_port: u16,
    /// How often the sign-up sample reminds an unverified user
    #[arg(long, value_name = "DURATION", value_parser = parse_duration, default_value = "24h")]
    pub sample_reminder_interval: Duration,
}
