//! Handling one message: which task it names and at what priority, and the claim of
//! that task by id, its handling, and what becomes of the message (see the module
//! above for the rules).

use tokio::sync::watch;
use xdb_engine::Task;
use xdb_persistence::{StateCall, TaskClaim};
use xdb_protocol::priority;

use super::permits::PlaceRequest;
use super::{dead_letters, events, timer, Shared, Source, Verdict};
use crate::db_queue::handle_with_retries;
use crate::scheduling::{self, Gone, NotClaimed, OnFailure, Refused};
use events::TaskChange;

pub(super) async fn on_message(
    shared: &Shared,
    source: Source,
    payload: &[u8],
    shutdown: watch::Receiver<bool>,
) -> Verdict {
    let (task_id, execution, place) = match source {
        Source::ChangeEvents => match events::classify(payload) {
            Ok(TaskChange::Look {
                task_id,
                execution,
                place,
            }) => (task_id, execution, place),
            Ok(TaskChange::Ignore) => return Verdict::Ack,
            Err(error) => {
                // Redelivering it would not help: it can never be read.
                tracing::error!(%error, "dropping a change event that is not a task change");
                return Verdict::Ack;
            }
        },
        Source::Timers => match timer::decode(payload) {
            Ok(timer) => (
                timer.task_id,
                timer.process_execution_id.clone(),
                timer.place(),
            ),
            Err(error) => {
                tracing::error!(%error, "dropping a timer message that does not decode");
                return Verdict::Ack;
            }
        },
        Source::DeadLetters => match dead_letters::task_of(payload) {
            // A dead letter's event is read as is; its priority is not looked for.
            Ok(Some((task_id, execution))) => {
                (task_id, execution, PlaceRequest::keyless(priority::DEFAULT))
            }
            Ok(None) => return Verdict::Ack,
            Err(error) => {
                tracing::error!(%error, "dropping a dead letter that names no task");
                return Verdict::Ack;
            }
        },
    };
    let message = Named {
        task_id,
        execution: &execution,
        place: &place,
    };
    let mut verdict = run_task(shared, &message, source, shutdown).await;
    if matches!(verdict, Verdict::DeadLetter) {
        verdict = match shared.dead_letters.publish(payload, &execution).await {
            Ok(()) => Verdict::Ack,
            Err(error) => {
                tracing::warn!(task = task_id, %error, "publishing a dead letter failed");
                Verdict::Nack
            }
        };
    }
    if matches!(verdict, Verdict::Nack) {
        tokio::time::sleep(shared.nack_delay).await;
    }
    verdict
}

/// The task a message names.
#[derive(Debug, Clone, Copy)]
struct Named<'a> {
    task_id: i64,
    /// Its execution: the key of the messages published about it.
    execution: &'a str,
    /// What its message waits for a place with (see [`permits`]).
    place: &'a PlaceRequest,
}

/// Claims the task a message names when it is due and free, handles it and the
/// continuations after it ([`continue_with`]), and says what to do with the message.
///
/// A transition the database refuses is handled again here, every `pulsar.nack_delay_ms`,
/// while the task stays leased to this instance (a redelivered message would only find
/// that lease), `pulsar.max_deliveries` times in all; then the message goes to the
/// dead-letter topic. There, on the last run, a failure parks the task
/// ([`dead_letters::park`]) until an operator's retry-now or give-up.
async fn run_task(
    shared: &Shared,
    message: &Named<'_>,
    source: Source,
    mut shutdown: watch::Receiver<bool>,
) -> Verdict {
    let Named {
        task_id,
        execution,
        place,
    } = *message;
    // A timer message may come early (brokers that ignore deliverAt): it is held a while
    // before it is re-published, or it would go round at once, and again. A dead letter
    // is never turned into a timer: it waits here until its task can run.
    let mut publish_at_once = matches!(source, Source::ChangeEvents);
    let may_publish = !matches!(source, Source::DeadLetters);
    let last_run = matches!(source, Source::DeadLetters);
    let context = &shared.context;
    let mut gone_checks = 0;
    loop {
        let permit = shared.permits.acquire(place).await;
        let claim = shared.claims.claim(task_id).await;
        let wait = match claim {
            Ok(TaskClaim::Gone) => match scheduling::on_gone(gone_checks) {
                Gone::LookAgainIn(pause) => {
                    gone_checks += 1;
                    drop(permit);
                    tokio::select! {
                        _ = tokio::time::sleep(pause) => continue,
                        _ = shutdown.changed() => return Verdict::Abandon,
                    }
                }
                Gone::Drop => {
                    tracing::debug!(task = task_id, "task gone; message dropped");
                    return Verdict::Ack;
                }
            },
            Ok(TaskClaim::Claimed(task)) => {
                context.metrics.claimed(&task, shared.clock.now());
                let handled = handle_claimed(shared, &task, None, last_run, &mut shutdown).await;
                continue_with(shared, handled.continuation, place, &mut shutdown).await;
                return handled.verdict;
            }
            Ok(TaskClaim::NotDue(wait) | TaskClaim::Leased(wait)) => wait,
            Err(error) => {
                tracing::warn!(task = task_id, %error, "claiming a task failed");
                return Verdict::Nack;
            }
        };
        drop(permit);
        let may_republish = publish_at_once && may_publish;
        match scheduling::on_not_claimed(
            wait,
            may_republish,
            shared.hold_at_most,
            shared.clock.now(),
        ) {
            NotClaimed::Republish { deliver_at } => {
                return match shared
                    .timers
                    .publish(task_id, execution, deliver_at, place)
                    .await
                {
                    Ok(()) => Verdict::Ack,
                    Err(error) => {
                        tracing::warn!(task = task_id, %error, "publishing a timer failed");
                        Verdict::Nack
                    }
                };
            }
            NotClaimed::Hold(hold) => tokio::select! {
                _ = tokio::time::sleep(hold) => {}
                _ = shutdown.changed() => return Verdict::Abandon,
            },
        }
        publish_at_once = true;
    }
}

/// What handling a claimed task came to.
struct Handled {
    /// What becomes of the message that named it.
    verdict: Verdict,
    /// The next task, leased to this instance by the transition, and its call when the
    /// transition read it.
    continuation: Option<(Task, Option<StateCall>)>,
}

impl Handled {
    fn ended(verdict: Verdict) -> Self {
        Self {
            verdict,
            continuation: None,
        }
    }
}

/// Handles a task this instance holds the lease of (see [`run_task`] for the retries).
async fn handle_claimed(
    shared: &Shared,
    task: &Task,
    mut preloaded: Option<StateCall>,
    last_run: bool,
    shutdown: &mut watch::Receiver<bool>,
) -> Handled {
    let context = &shared.context;
    let hold = shared.leased.hold(task.id);
    let mut failures = 0;
    let handled = loop {
        match handle_with_retries(context, task, preloaded.take()).await {
            Ok(applied) => {
                if applied.closed_process {
                    shared.api_peers.process_closed(
                        task.process_execution_id.to_string(),
                        applied.closed_outcome,
                    );
                }
                let call = applied.continuation_call.map(|call| *call);
                break Handled {
                    verdict: Verdict::Ack,
                    continuation: applied.continuation.map(|next| (next, call)),
                };
            }
            Err(error) if last_run => {
                // Its deliveries ran out before it came here.
                let failures = shared.max_deliveries.max(failures + 1);
                break Handled::ended(dead_letters::park(shared, task, &error, failures).await);
            }
            Err(error) if scheduling::on_failure(error.class()) != OnFailure::RetryLater => {
                // The one policy of both sources: a failure that would come back the
                // same is parked now, not after every delivery and the dead-letter topic.
                break Handled::ended(match scheduling::on_failure(error.class()) {
                    OnFailure::Drop => Verdict::Ack,
                    _ => dead_letters::park(shared, task, &error, failures + 1).await,
                });
            }
            Err(error) => {
                failures += 1;
                match scheduling::on_refused(failures, shared.max_deliveries, shared.nack_delay) {
                    Refused::DeadLetter => {
                        tracing::warn!(task = task.id, %error, failures, "task failed every time; it goes to the dead-letter topic");
                        break Handled::ended(Verdict::DeadLetter);
                    }
                    Refused::RetryIn(pause) => {
                        tracing::warn!(task = task.id, %error, failures, "task failed; handling it again");
                        tokio::select! {
                            _ = tokio::time::sleep(pause) => {}
                            _ = shutdown.changed() => break Handled::ended(Verdict::Abandon),
                        }
                    }
                }
            }
        }
    };
    drop(hold);
    handled
}

/// Runs a continuation and the continuations after it, one transition after the other,
/// as the database queue runs a chain of states: only the hand-offs to other instances
/// (new processes, timers, parallel threads, retries) travel the change-event pipeline.
/// Their change events are passed over ([`events::classify`]): they are created leased.
///
/// Once draining, a continuation is left leased: shutdown releases it, and the release's
/// change event brings it to another instance.
pub(super) async fn continue_with(
    shared: &Shared,
    mut next: Option<(Task, Option<StateCall>)>,
    place: &PlaceRequest,
    shutdown: &mut watch::Receiver<bool>,
) {
    while let Some((task, call)) = next.take() {
        if *shutdown.borrow() {
            return;
        }
        shared.context.metrics.continued(&task, shared.clock.now());
        next = handle_held(shared, &task, call, place, shutdown).await;
    }
}

/// Handles a task this instance holds with no message to answer for it (a continuation,
/// or a task the sweep claimed), and returns its continuation. Where a message would be
/// delivered again or dead-lettered, a [`timer::TaskTimer`] naming the task goes to the
/// dead-letter topic instead, whose consumer runs it once more when its lease has run
/// out, and otherwise parks it.
pub(super) async fn handle_held(
    shared: &Shared,
    task: &Task,
    call: Option<StateCall>,
    place: &PlaceRequest,
    shutdown: &mut watch::Receiver<bool>,
) -> Option<(Task, Option<StateCall>)> {
    let handled = handle_claimed(shared, task, call, false, shutdown).await;
    if matches!(handled.verdict, Verdict::Nack | Verdict::DeadLetter) {
        if let Err(error) = shared.dead_letters.publish_task(task, place).await {
            tracing::warn!(task = task.id, %error, "publishing a dead letter failed; the sweep takes the task once its lease runs out");
        }
    }
    handled.continuation
}
