//! `xdb deployments`: which worker deployment serves each process type, making one
//! current again, and moving running executions between them.

use clap::{Args, Subcommand};
use xdb_protocol::{DeploymentRef, DeploymentSetCurrentRequest, ExecutionsMoveRequest};
use xdb_sdk::Client;

use crate::args::Output;
use crate::commands::{print, Outcome};
use crate::exit::Exit;
use crate::format::table;

#[derive(Debug, Subcommand)]
pub enum DeploymentsCommand {
    /// Every deployment: its types, those it is current for, its running executions
    List,
    /// Make a deployment current again for every type it registered (a rollback)
    SetCurrent(SetCurrentArgs),
    /// Move running executions of a type to another deployment; each runs its next call
    /// there
    Move(MoveArgs),
}

#[derive(Debug, Args)]
pub struct SetCurrentArgs {
    /// NAME@VERSION
    #[arg(value_parser = parse_deployment)]
    pub deployment: DeploymentRef,
    /// Even when running executions wait in states its definitions lack
    #[arg(long)]
    pub force: bool,
}

#[derive(Debug, Args)]
pub struct MoveArgs {
    #[arg(long = "type", short = 't')]
    pub process_type: String,
    /// NAME@VERSION to move to
    #[arg(long, value_parser = parse_deployment)]
    pub to: DeploymentRef,
    /// NAME@VERSION to move from (default: any other)
    #[arg(long, value_parser = parse_deployment)]
    pub from: Option<DeploymentRef>,
    /// Only these process ids (repeatable)
    #[arg(long = "process-id")]
    pub process_ids: Vec<String>,
}

/// `name@version`.
pub fn parse_deployment(text: &str) -> Result<DeploymentRef, String> {
    match text.rsplit_once('@') {
        Some((name, version)) if !name.is_empty() && !version.is_empty() => Ok(DeploymentRef {
            name: name.to_string(),
            version: version.to_string(),
        }),
        _ => Err(format!("expected NAME@VERSION, got {text:?}")),
    }
}

pub async fn run(client: &Client, output: Output, command: &DeploymentsCommand) -> Outcome {
    match command {
        DeploymentsCommand::List => {
            let response = client.list_deployments().await?;
            print(output, &response, || {
                let rows: Vec<Vec<String>> = response
                    .deployments
                    .iter()
                    .map(|d| {
                        vec![
                            format!("{}@{}", d.deployment.name, d.deployment.version),
                            d.deployment.worker_url.clone(),
                            d.process_types.join(","),
                            d.current_for.join(","),
                            d.running_executions.to_string(),
                            if d.drained { "drained" } else { "" }.to_string(),
                        ]
                    })
                    .collect();
                table(
                    &[
                        "DEPLOYMENT",
                        "WORKER URL",
                        "TYPES",
                        "CURRENT FOR",
                        "RUNNING",
                        "",
                    ],
                    &rows,
                )
            });
        }
        DeploymentsCommand::SetCurrent(a) => {
            let response = client
                .set_current_deployment(&DeploymentSetCurrentRequest {
                    deployment: a.deployment.clone(),
                    force: a.force,
                })
                .await?;
            print(output, &response, || {
                let rows: Vec<Vec<String>> = response
                    .registered
                    .iter()
                    .map(|r| {
                        vec![
                            r.revision.process_type.clone(),
                            r.revision.revision.to_string(),
                            if r.changed {
                                "now current"
                            } else {
                                "current already"
                            }
                            .to_string(),
                        ]
                    })
                    .collect();
                table(&["TYPE", "REVISION", "RESULT"], &rows)
            });
        }
        DeploymentsCommand::Move(a) => {
            let response = client
                .move_executions(&ExecutionsMoveRequest {
                    process_type: a.process_type.clone(),
                    to: a.to.clone(),
                    from: a.from.clone(),
                    process_ids: a.process_ids.clone(),
                })
                .await?;
            print(output, &response, || format!("moved {}\n", response.moved));
        }
    }
    Ok(Exit::Ok)
}

#[cfg(test)]
mod tests {
    use super::parse_deployment;

    #[test]
    fn deployments_are_named_name_at_version() {
        let parsed = parse_deployment("orders@2.1.0").unwrap();
        assert_eq!(
            (parsed.name.as_str(), parsed.version.as_str()),
            ("orders", "2.1.0")
        );
        assert!(parse_deployment("orders").is_err());
        assert!(parse_deployment("@v1").is_err());
    }
}
