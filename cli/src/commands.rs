//! One function per subcommand: build the request, call the service, print the answer.

use serde::Serialize;
use xdb_protocol::*;
use xdb_sdk::{Client, ClientError};

use crate::args::*;
use crate::exit::Exit;
use crate::operate::Control;
use crate::requests::*;
use crate::views;

/// Why a command did not run to its answer.
pub enum Failure {
    /// A bad argument the parser could not see (JSON, NAME=VALUE).
    Usage(String),
    /// The service call failed.
    Call(ClientError),
}

impl From<ClientError> for Failure {
    fn from(e: ClientError) -> Self {
        Failure::Call(e)
    }
}

impl From<String> for Failure {
    fn from(e: String) -> Self {
        Failure::Usage(e)
    }
}

pub type Outcome = Result<Exit, Failure>;

pub fn now_ms() -> i64 {
    chrono::Utc::now().timestamp_millis()
}

/// Prints `value` as pretty JSON (the API's answer) or `human` for people.
pub fn print(output: Output, value: &impl Serialize, human: impl FnOnce() -> String) {
    match output {
        Output::Json => println!(
            "{}",
            serde_json::to_string_pretty(value).expect("answers serialize")
        ),
        Output::Table => print!("{}", human()),
    }
}

pub async fn start(client: &Client, output: Output, a: &StartArgs) -> Outcome {
    let request = start_request(a)?;
    let response = client.start(&request).await?;
    print(output, &response, || {
        format!("{}\n", response.process_execution_id)
    });
    Ok(Exit::Ok)
}

pub async fn describe(client: &Client, output: Output, a: &DescribeArgs) -> Outcome {
    let response = client
        .describe(&ProcessExecutionDescribeRequest {
            process_id: a.process_id.clone(),
            process_execution_id: a.execution.clone(),
        })
        .await?;
    print(output, &response, || views::describe(&response, now_ms()));
    Ok(Exit::Ok)
}

pub async fn list(client: &Client, output: Output, a: &ListArgs) -> Outcome {
    let mut request = list_request(a);
    let mut response = client.list(&request).await?;
    if let Some(plan) = &response.plan {
        print(output, &response, || views::plan(plan));
        return Ok(Exit::Ok);
    }
    while a.all && response.next_page_token.is_some() {
        let token = response.next_page_token.take();
        request.next_page_token = token;
        let page = client.list(&request).await?;
        response.executions.extend(page.executions);
        response.next_page_token = page.next_page_token;
    }
    print(output, &response, || {
        views::list(&response.executions, now_ms())
    });
    if let (Output::Table, Some(token)) = (output, &response.next_page_token) {
        eprintln!("more executions: --page-token {token}");
    }
    Ok(Exit::Ok)
}

pub async fn count(client: &Client, output: Output, a: &CountArgs) -> Outcome {
    let response = client.count(&count_request(a)).await?;
    if let Some(plan) = &response.plan {
        print(output, &response, || views::plan(plan));
        return Ok(Exit::Ok);
    }
    print(output, &response, || views::count(&response));
    Ok(Exit::Ok)
}

/// The details column's width in the history table (the rest of a line).
const HISTORY_DETAILS_WIDTH: usize = 80;

pub async fn history(client: &Client, output: Output, a: &HistoryArgs) -> Outcome {
    if a.follow {
        return follow_history(client, output, a).await;
    }
    let mut request = history_request(a);
    let mut response = client.history(&request).await?;
    while a.all && response.next_after_event_id.is_some() {
        request.after_event_id = response.next_after_event_id.take();
        // Later pages stay on the execution of the first, even if a new one starts.
        request.process_execution_id = Some(response.process_execution_id.clone());
        let page = client.history(&request).await?;
        response.events.extend(page.events);
        response.next_after_event_id = page.next_after_event_id;
    }
    let width = (!a.wide).then_some(HISTORY_DETAILS_WIDTH);
    print(output, &response, || views::history(&response, width));
    if let (Output::Table, Some(after)) = (output, response.next_after_event_id) {
        eprintln!("more events: --after {after}");
    }
    Ok(Exit::Ok)
}

/// How often `--follow` asks for new events.
const FOLLOW_EVERY: std::time::Duration = std::time::Duration::from_secs(1);

/// Prints the history, then new events as they come (a JSON line per event with
/// `--output json`), until the execution's `PROCESS_CLOSED`.
async fn follow_history(client: &Client, output: Output, a: &HistoryArgs) -> Outcome {
    let mut request = history_request(a);
    let width = (!a.wide).then_some(HISTORY_DETAILS_WIDTH);
    let mut shown = 0;
    loop {
        let page = client.history(&request).await?;
        if shown == 0 && output == Output::Table {
            println!("Execution {}", page.process_execution_id);
            println!("{}", views::history_header());
        }
        for event in &page.events {
            shown += 1;
            match output {
                Output::Table => println!("{}", views::history_line(shown, event, width)),
                Output::Json => println!("{}", serde_json::to_string(event).unwrap_or_default()),
            }
        }
        // Stay on this execution, even if a new one of the process id starts.
        request.process_execution_id = Some(page.process_execution_id.clone());
        if let Some(last) = page.events.last() {
            request.after_event_id = Some(last.event_id);
        }
        if page.events.iter().any(|e| e.event_type == "PROCESS_CLOSED") {
            return Ok(Exit::Ok);
        }
        if page.next_after_event_id.is_none() {
            tokio::time::sleep(FOLLOW_EVERY).await;
        }
    }
}

pub async fn stop(client: &Client, output: Output, a: &StopArgs) -> Outcome {
    client.stop(&stop_request(a)).await?;
    print(output, &EmptyResponse {}, || {
        let closed = if a.fail { "FAILED" } else { "TERMINATED" };
        format!("stopped {} ({closed})\n", a.process_id)
    });
    Ok(Exit::Ok)
}

pub async fn publish(client: &Client, output: Output, a: &PublishArgs) -> Outcome {
    let request = publish_request(a)?;
    client.publish_to_local_queue_raw(&request).await?;
    print(output, &EmptyResponse {}, || {
        let n = request.messages.len();
        let s = if n == 1 { "" } else { "s" };
        format!(
            "published {n} message{s} to {} of {}\n",
            a.queue, a.process_id
        )
    });
    Ok(Exit::Ok)
}

pub async fn rpc(client: &Client, output: Output, a: &RpcArgs) -> Outcome {
    let response = client.rpc(&rpc_request(a)?).await?;
    print(output, &response, || {
        format!(
            "{}\n",
            crate::payload::show_payload(response.output.as_ref())
        )
    });
    Ok(Exit::Ok)
}

pub async fn states(client: &Client, output: Output, a: &StatesArgs) -> Outcome {
    let response = client.states(&states_request(a)).await?;
    print(output, &response, || {
        views::states(&a.process_id, &response, now_ms())
    });
    Ok(Exit::Ok)
}

pub async fn control(
    client: &Client,
    output: Output,
    control: Control,
    process_id: &str,
    state: Option<&str>,
    opts: &ControlOpts,
) -> Outcome {
    let request = control_request(&control, process_id, state, opts);
    let response = control.send(client, &request).await?;
    print(output, &response, || {
        views::control_result(&control, process_id, &response.state_execution_ids)
    });
    Ok(Exit::Ok)
}

pub async fn reset(client: &Client, output: Output, a: &ResetArgs) -> Outcome {
    let response = client.reset(&reset_request(a)?).await?;
    print(output, &response, || {
        let how = if response.new_execution {
            "as new execution"
        } else {
            "execution"
        };
        format!(
            "reset {} to {} ({how} {})\n",
            a.process_id, response.state_execution_id, response.process_execution_id
        )
    });
    Ok(Exit::Ok)
}
