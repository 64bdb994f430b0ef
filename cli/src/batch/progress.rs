//! Following a started batch until it closes, its progress on stderr.

use std::io::IsTerminal;
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use xdb_protocol::{
    BatchDescribeRequest, BatchDescribeResponse, BatchInfo, BatchStartResponse, BatchStatus,
};
use xdb_sdk::Client;

use crate::batch_views as views;
use crate::commands::Failure;

/// Reads the batch every `interval` until it closes, showing its progress on stderr.
pub(super) async fn follow(
    client: &Client,
    started: &BatchStartResponse,
    interval: Duration,
) -> Result<BatchDescribeResponse, Failure> {
    let mut progress = Progress::new(std::io::stderr().is_terminal(), started.expected);
    let request = BatchDescribeRequest {
        batch_id: started.batch_id.clone(),
    };
    loop {
        let described = match client.batch_describe(&request).await {
            Ok(described) => described,
            Err(e) => {
                progress.finish();
                return Err(e.into());
            }
        };
        progress.show(&described.batch);
        if described.batch.status.is_closed() {
            progress.finish();
            return Ok(described);
        }
        tokio::time::sleep(interval).await;
    }
}

/// How often a progress line is printed when stderr is not a terminal.
const LINE_EVERY: Duration = Duration::from_secs(5);

/// A batch's progress on stderr: a bar on a terminal, else a line when it moved (at most
/// every [`LINE_EVERY`]) and when it closes.
enum Progress {
    Bar(ProgressBar),
    Lines {
        started: Instant,
        last: Option<(Instant, [u64; 4])>,
    },
}

impl Progress {
    fn new(terminal: bool, expected: u64) -> Self {
        if !terminal {
            return Progress::Lines {
                started: Instant::now(),
                last: None,
            };
        }
        let bar = ProgressBar::with_draw_target(Some(expected), ProgressDrawTarget::stderr());
        // The bar takes what the line leaves, so the line never wraps.
        let style = ProgressStyle::with_template(
            "{spinner} {prefix} [{wide_bar}] {pos}/{len}, eta {eta}: {msg}",
        )
        .expect("a valid template")
        .progress_chars("=> ");
        bar.set_style(style);
        bar.set_prefix(BatchStatus::Running.as_str());
        bar.enable_steady_tick(Duration::from_millis(200));
        Progress::Bar(bar)
    }

    fn show(&mut self, batch: &BatchInfo) {
        match self {
            Progress::Bar(bar) => {
                bar.set_length(batch.expected.max(batch.matched));
                bar.set_position(batch.matched);
                bar.set_message(views::counts(batch));
                bar.set_prefix(batch.status.as_str());
            }
            Progress::Lines { started, last } => {
                let counts = [batch.matched, batch.done, batch.skipped, batch.failed];
                let due = match last {
                    None => true,
                    Some((at, before)) => {
                        batch.status.is_closed()
                            || (*before != counts && at.elapsed() >= LINE_EVERY)
                    }
                };
                if due {
                    eprintln!("{}", views::progress_line(batch, started.elapsed()));
                    *last = Some((Instant::now(), counts));
                }
            }
        }
    }

    fn finish(&self) {
        if let Progress::Bar(bar) = self {
            bar.finish_and_clear();
        }
    }
}
