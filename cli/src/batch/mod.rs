//! `xdb batch`: one operation on every execution a selection matches, run by the service
//! at a rate, durably. `start` previews the count, asks, starts and follows the batch
//! until it closes; `list`, `describe` and `cancel` look after batches already started.

use std::io::{BufRead, IsTerminal, Write};

use xdb_protocol::{
    BatchCancelRequest, BatchDescribeRequest, BatchInfo, BatchListRequest, BatchStatus,
};
use xdb_sdk::Client;

use crate::args::Output;
use crate::batch_views as views;
use crate::commands::{now_ms, print, Failure, Outcome};
use crate::exit::Exit;

mod args;
mod progress;
mod request;

use progress::follow;

pub use args::{
    BatchCancelArgs, BatchCommand, BatchIdArgs, BatchListArgs, BatchStartArgs, BatchStatusArg,
    Operation,
};
pub use request::{batch_start_request, preview_request};

/// The exit code of a closed batch: 0 only when it completed with no failed execution.
pub fn exit_for_batch(batch: &BatchInfo) -> Exit {
    if batch.status == BatchStatus::Completed && batch.failed == 0 {
        Exit::Ok
    } else {
        Exit::BatchNotDone
    }
}

/// Whether the answer to a yes/no question is yes.
pub fn is_yes(answer: &str) -> bool {
    matches!(answer.trim().to_ascii_lowercase().as_str(), "y" | "yes")
}

pub async fn run(client: &Client, output: Output, command: &BatchCommand) -> Outcome {
    match command {
        BatchCommand::Start(a) => start(client, output, a).await,
        BatchCommand::List(a) => list(client, output, a).await,
        BatchCommand::Describe(a) => {
            let response = client
                .batch_describe(&BatchDescribeRequest {
                    batch_id: a.batch_id.clone(),
                })
                .await?;
            print(output, &response, || views::describe(&response, now_ms()));
            Ok(Exit::Ok)
        }
        BatchCommand::Cancel(a) => {
            let response = client
                .batch_cancel(&BatchCancelRequest {
                    batch_id: a.batch_id.clone(),
                    reason: a.reason.clone(),
                    identity: Some(a.identity.clone()).filter(|i| !i.trim().is_empty()),
                })
                .await?;
            print(output, &response, || views::describe(&response, now_ms()));
            Ok(Exit::Ok)
        }
    }
}

async fn list(client: &Client, output: Output, a: &BatchListArgs) -> Outcome {
    let mut request = BatchListRequest {
        status: a.status.map(|s| match s {
            BatchStatusArg::Running => BatchStatus::Running,
            BatchStatusArg::Completed => BatchStatus::Completed,
            BatchStatusArg::Cancelled => BatchStatus::Cancelled,
            BatchStatusArg::Failed => BatchStatus::Failed,
        }),
        page_size: a.page_size,
        next_page_token: a.page_token.clone(),
    };
    let mut response = client.batch_list(&request).await?;
    while a.all && response.next_page_token.is_some() {
        request.next_page_token = response.next_page_token.take();
        let page = client.batch_list(&request).await?;
        response.batches.extend(page.batches);
        response.next_page_token = page.next_page_token;
    }
    print(output, &response, || {
        views::list(&response.batches, now_ms())
    });
    if let (Output::Table, Some(token)) = (output, &response.next_page_token) {
        eprintln!("more batches: --page-token {token}");
    }
    Ok(Exit::Ok)
}

async fn start(client: &Client, output: Output, a: &BatchStartArgs) -> Outcome {
    let request = batch_start_request(a)?;
    let preview = client.count(&preview_request(&request)).await?;
    eprint!("{}", views::preview(&request, preview.count));
    if !a.yes {
        if !(std::io::stdin().is_terminal() && std::io::stderr().is_terminal()) {
            return Err(Failure::Usage(
                "not started: stdin is not a terminal to confirm on; add --yes to start \
                 the batch without asking"
                    .to_string(),
            ));
        }
        eprint!("Start this batch? [y/N] ");
        let _ = std::io::stderr().flush();
        let mut answer = String::new();
        let _ = std::io::stdin().lock().read_line(&mut answer);
        if !is_yes(&answer) {
            eprintln!("not started");
            return Ok(Exit::BatchNotDone);
        }
    }
    let started = client.batch_start(&request).await?;
    if a.no_wait {
        print(output, &started, || format!("{}\n", started.batch_id));
        return Ok(Exit::Ok);
    }
    eprintln!(
        "started batch {} ({} expected); Ctrl-C stops following it, not the batch \
         (xdb batch cancel {})",
        started.batch_id, started.expected, started.batch_id
    );
    let last = follow(client, &started, a.interval).await?;
    print(output, &last, || views::describe(&last, now_ms()));
    Ok(exit_for_batch(&last.batch))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_clean_completion_exits_zero() {
        let mut batch = views::tests::info(BatchStatus::Completed);
        assert_eq!(exit_for_batch(&batch), Exit::Ok);
        batch.failed = 1;
        assert_eq!(exit_for_batch(&batch), Exit::BatchNotDone);
        for status in [BatchStatus::Failed, BatchStatus::Cancelled] {
            let batch = views::tests::info(status);
            assert_eq!(exit_for_batch(&batch), Exit::BatchNotDone, "{status:?}");
        }
        assert!(is_yes("y\n") && is_yes(" YES ") && !is_yes("") && !is_yes("no"));
    }
}
