//! `xdb-sys-schema`: install and inspect the XDB system tables in a user's database.

use std::error::Error;
use std::io::IsTerminal;
use std::process::ExitCode;

use clap::{Args, Parser, Subcommand};
use xdb_sys_schema::{SchemaState, LATEST_VERSION};

/// Exit code of `status` when the schema is reachable but not at the expected version
/// (distinct from 1, a failure, and 2, a usage error).
const EXIT_NOT_CURRENT: u8 = 3;

#[derive(Parser)]
#[command(
    name = "xdb-sys-schema",
    version,
    about = "Install and inspect the XDB system tables (xdb_sys_*) in your database",
    after_help = "Exit codes: 0 success, 1 error, 2 usage error, 3 (status) schema not up to date."
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Apply pending migrations. Idempotent; refuses a database newer than this binary.
    Install(InstallArgs),
    /// Show the installed and the latest schema version; exits 0 only when up to date.
    Status(DatabaseArgs),
}

#[derive(Args)]
struct DatabaseArgs {
    /// PostgreSQL or MySQL/MariaDB URL of your database, e.g.
    /// postgres://user:password@host:5432/dbname or mysql://user:password@host:3306/dbname
    /// (mariadb:// too; of the MySQL dialect, MariaDB 10.11 is the server tested)
    #[arg(long, env = "XDB_DATABASE_URL", hide_env_values = true)]
    database_url: String,
}

#[derive(Args)]
struct InstallArgs {
    #[command(flatten)]
    database: DatabaseArgs,
    /// PostgreSQL, Pulsar CDC mode: also create this publication (the Debezium source's
    /// publication.name) of only the task changes the async service acts on, unless it
    /// exists. As the tables' owner, before the source is registered.
    #[arg(long, value_name = "NAME")]
    publication: Option<String>,
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> ExitCode {
    let cli = Cli::parse();
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_ansi(std::io::stderr().is_terminal())
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| "xdb_sys_schema=info".into()),
        )
        .init();

    match cli.command {
        Command::Install(args) => install(&args).await,
        Command::Status(args) => match xdb_sys_schema::check(&args.database_url).await {
            Ok(status) => {
                println!("{status}");
                println!(
                    "installed version: {}, latest version: {LATEST_VERSION}",
                    status.installed
                );
                if status.state() == SchemaState::Current {
                    ExitCode::SUCCESS
                } else {
                    ExitCode::from(EXIT_NOT_CURRENT)
                }
            }
            Err(error) => fail("status check failed", &error),
        },
    }
}

async fn install(args: &InstallArgs) -> ExitCode {
    let url = &args.database.database_url;
    // A bad name is refused before anything is installed.
    if let Some(name) = &args.publication {
        if let Err(error) = xdb_sys_schema::check_cdc_publication(url, name) {
            return fail("install refused", &error);
        }
    }
    match xdb_sys_schema::install(url).await {
        Ok(outcome) => println!("{outcome}"),
        Err(error) => return fail("install failed", &error),
    }
    let Some(name) = &args.publication else {
        return ExitCode::SUCCESS;
    };
    match xdb_sys_schema::install_cdc_publication(url, name).await {
        Ok(true) => println!("publication {name} created (Pulsar CDC mode)"),
        Ok(false) => println!("publication {name} exists: left as it is"),
        Err(error) => return fail("creating the publication failed", &error),
    }
    ExitCode::SUCCESS
}

/// Prints the error with its whole cause chain (the database's own message is at the end).
fn fail(context: &str, error: &dyn Error) -> ExitCode {
    let mut message = format!("error: {context}: {error}");
    let mut source = error.source();
    while let Some(cause) = source {
        // Some errors already print their cause in their own message.
        let cause_text = cause.to_string();
        if !message.contains(&cause_text) {
            message.push_str(&format!(": {cause_text}"));
        }
        source = cause.source();
    }
    eprintln!("{message}");
    ExitCode::FAILURE
}
