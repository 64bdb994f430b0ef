//! `xdb definitions`: register a worker deployment's process definitions from a file,
//! list them, show one with its revisions.

use std::path::PathBuf;

use clap::{Args, Subcommand};
use xdb_protocol::{
    DefinitionDescribeRequest, DefinitionDescribeResponse, DefinitionRevision, LockType,
    RegisterDefinitionsRequest,
};
use xdb_sdk::Client;

use crate::args::Output;
use crate::commands::{print, Outcome};
use crate::exit::Exit;
use crate::format::{key_values, table, timestamp_ms};

#[derive(Debug, Subcommand)]
pub enum DefinitionsCommand {
    /// The current definition of every registered process type
    List,
    /// One process type's definition: states, queues, RPCs, table, and its revisions
    Show(ShowArgs),
    /// Register definitions from a JSON file (a `RegisterDefinitionsRequest`: the
    /// deployment and its process definitions), as a worker does at start-up
    Register(RegisterArgs),
}

#[derive(Debug, Args)]
pub struct ShowArgs {
    pub process_type: String,
    /// A revision other than the current one
    #[arg(long)]
    pub revision: Option<i64>,
}

#[derive(Debug, Args)]
pub struct RegisterArgs {
    /// The request as JSON (`-` reads standard input)
    #[arg(long, short = 'f')]
    pub file: PathBuf,
    /// Register even when running executions wait in states the new definition removes
    #[arg(long)]
    pub force: bool,
}

pub async fn run(client: &Client, output: Output, command: &DefinitionsCommand) -> Outcome {
    match command {
        DefinitionsCommand::List => list(client, output).await,
        DefinitionsCommand::Show(a) => show(client, output, a).await,
        DefinitionsCommand::Register(a) => register(client, output, a).await,
    }
}

async fn list(client: &Client, output: Output) -> Outcome {
    let response = client.list_definitions().await?;
    print(output, &response, || {
        if response.definitions.is_empty() {
            return "no process type is registered\n".to_string();
        }
        revisions_table(&response.definitions)
    });
    Ok(Exit::Ok)
}

fn revisions_table(revisions: &[DefinitionRevision]) -> String {
    let rows: Vec<Vec<String>> = revisions
        .iter()
        .map(|r| {
            vec![
                r.process_type.clone(),
                r.revision.to_string(),
                format!("{} {}", r.deployment.name, r.deployment.version),
                r.deployment.worker_url.clone(),
                timestamp_ms(r.registered_at_ms),
                r.content_hash.chars().take(12).collect(),
            ]
        })
        .collect();
    table(
        &[
            "TYPE",
            "REVISION",
            "DEPLOYMENT",
            "WORKER URL",
            "REGISTERED",
            "HASH",
        ],
        &rows,
    )
}

async fn show(client: &Client, output: Output, a: &ShowArgs) -> Outcome {
    let response = client
        .describe_definition(&DefinitionDescribeRequest {
            process_type: a.process_type.clone(),
            revision: a.revision,
        })
        .await?;
    print(output, &response, || describe_text(&response));
    Ok(Exit::Ok)
}

fn describe_text(response: &DefinitionDescribeResponse) -> String {
    let d = &response.definition;
    let r = &response.revision;
    let mut text = key_values(&[
        ("type", d.process_type.clone()),
        ("revision", r.revision.to_string()),
        (
            "deployment",
            format!(
                "{} {} at {}",
                r.deployment.name, r.deployment.version, r.deployment.worker_url
            ),
        ),
        ("queues", joined(d.local_queues.iter().map(String::as_str))),
        (
            "table",
            d.global_attributes.as_ref().map_or("none".into(), |g| {
                let columns: Vec<String> = g
                    .columns
                    .iter()
                    .map(|c| format!("{} {:?}", c.name, c.attribute_type).to_lowercase())
                    .collect();
                format!(
                    "{} by {} ({})",
                    g.table_name,
                    g.primary_key_column,
                    columns.join(", ")
                )
            }),
        ),
    ]);
    let states: Vec<Vec<String>> = d
        .states
        .iter()
        .map(|s| {
            let start = d.start_states.is_empty() || d.start_states.contains(&s.id);
            vec![
                s.id.clone(),
                yes_no(s.has_wait_until),
                yes_no(start),
                yes_no(s.input_schema.is_some()),
            ]
        })
        .collect();
    text.push('\n');
    text.push_str(&table(
        &["STATE", "WAIT UNTIL", "START", "INPUT SCHEMA"],
        &states,
    ));
    if !d.rpcs.is_empty() {
        let rpcs: Vec<Vec<String>> = d
            .rpcs
            .iter()
            .map(|rpc| {
                let loading = rpc.global_attribute_loading.as_ref();
                vec![
                    rpc.name.clone(),
                    loading.map_or("none".into(), |l| l.columns.join(",")),
                    lock_name(loading.map_or(LockType::NoLock, |l| l.lock_type)),
                ]
            })
            .collect();
        text.push('\n');
        text.push_str(&table(&["RPC", "LOADS", "LOCK"], &rpcs));
    }
    text.push_str("\nrevisions:\n");
    text.push_str(&revisions_table(&response.revisions));
    text
}

async fn register(client: &Client, output: Output, a: &RegisterArgs) -> Outcome {
    let text = if a.file.as_os_str() == "-" {
        std::io::read_to_string(std::io::stdin())
    } else {
        std::fs::read_to_string(&a.file)
    }
    .map_err(|e| format!("cannot read {}: {e}", a.file.display()))?;
    let mut request: RegisterDefinitionsRequest = serde_json::from_str(&text).map_err(|e| {
        format!(
            "{}: not a definitions registration (deployment, definitions): {e}",
            a.file.display()
        )
    })?;
    request.force |= a.force;
    let response = client.register_definitions(&request).await?;
    print(output, &response, || {
        let rows: Vec<Vec<String>> = response
            .registered
            .iter()
            .map(|r| {
                vec![
                    r.revision.process_type.clone(),
                    r.revision.revision.to_string(),
                    if r.changed { "registered" } else { "unchanged" }.to_string(),
                ]
            })
            .collect();
        table(&["TYPE", "REVISION", "RESULT"], &rows)
    });
    Ok(Exit::Ok)
}

fn yes_no(value: bool) -> String {
    if value { "yes" } else { "no" }.to_string()
}

fn lock_name(lock: LockType) -> String {
    match lock {
        LockType::NoLock => "none",
        LockType::SharedLock => "shared",
        LockType::ExclusiveLock => "exclusive",
    }
    .to_string()
}

fn joined<'a>(items: impl Iterator<Item = &'a str>) -> String {
    let list: Vec<&str> = items.collect();
    if list.is_empty() {
        "none".to_string()
    } else {
        list.join(", ")
    }
}
