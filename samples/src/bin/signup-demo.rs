//! Walks one user through the sign-up process against a running XDB and worker:
//! start, a reminder timer firing, verification by RPC, completion.
//!
//! `scripts/demo.sh` starts XDB and the sample worker and then runs this.

use std::time::{Duration, Instant};

use anyhow::{bail, Context as _};
use clap::Parser;
use xdb_samples::user_signup::{process_id, start_user_signup, verify_by_rpc, Form};
use xdb_sdk::protocol::{ProcessExecutionHistoryRequest, ProcessStatus};
use xdb_sdk::Client;

#[derive(Parser)]
#[command(name = "xdb-signup-demo", about = "Run one sign-up process end to end")]
struct Args {
    #[arg(long, env = "XDB_SERVICE_URL", default_value = "http://127.0.0.1:8801")]
    service_url: String,
    #[arg(long, env = "XDB_WORKER_URL", default_value = "http://127.0.0.1:8803")]
    worker_url: String,
    /// The user to sign up (default: a fresh one).
    #[arg(long)]
    user_id: Option<String>,
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    let client = Client::new(&args.service_url).with_worker_url(&args.worker_url);
    let user_id = args
        .user_id
        .unwrap_or_else(|| format!("demo-{}", std::process::id()));
    let form = Form {
        email: format!("{user_id}@example.com"),
        name: Some("Demo User".into()),
    };

    let execution = start_user_signup(&client, None, &user_id, &form)
        .await
        .context("starting the sign-up process")?;
    println!("1. started sign-up of {user_id}: process execution {execution}");

    println!("2. waiting for the verify state's reminder timer to fire ...");
    wait_for_event(&client, &user_id, "TIMER_FIRED", Duration::from_secs(60)).await?;
    println!("   a reminder timer fired (the worker logged the reminder email)");

    let answer = verify_by_rpc(&client, &user_id, "email-link")
        .await
        .context("calling the verify RPC")?;
    println!("3. verify RPC answered {answer:?}");

    let done = client
        .wait_for_process_completion(&process_id(&user_id), Duration::from_secs(30))
        .await?;
    println!(
        "4. process closed: {:?}, result {}",
        done.status,
        done.result.map(|r| r.data).unwrap_or_default()
    );
    if done.status != ProcessStatus::Completed {
        bail!("expected COMPLETED, got {:?}", done.status);
    }

    let history = client
        .history(&ProcessExecutionHistoryRequest {
            process_id: process_id(&user_id),
            process_execution_id: None,
            ..Default::default()
        })
        .await?;
    println!("5. history:");
    for event in history.events {
        println!("   {:>4} {}", event.event_id, event.event_type);
    }
    Ok(())
}

async fn wait_for_event(
    client: &Client,
    user_id: &str,
    event_type: &str,
    timeout: Duration,
) -> anyhow::Result<()> {
    let deadline = Instant::now() + timeout;
    let request = ProcessExecutionHistoryRequest {
        process_id: process_id(user_id),
        process_execution_id: None,
        ..Default::default()
    };
    while Instant::now() < deadline {
        let history = client.history(&request).await?;
        if history.events.iter().any(|e| e.event_type == event_type) {
            return Ok(());
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    bail!("no {event_type} event within {timeout:?}")
}
