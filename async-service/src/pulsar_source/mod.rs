//! The Pulsar CDC task source (`queue.mode = "pulsar"`).
//!
//! Debezium (through Pulsar IO, see pulsar-io/) turns every insert and update of
//! `xdb_sys_tasks` into a message keyed by the process execution (the committed source
//! configs skip deletes, which are done work). All instances consume those messages
//! as one subscription, shared or key-shared (`pulsar.subscription_type`; key-shared
//! keeps one execution's messages on one instance at a time), so instances can come and
//! go at any time. A message is
//! only a hint that a task may have work: the task row decides. It is claimed by id with
//! a lease (nothing happens if it is gone, or leased by a live instance; the claims of
//! messages that come together go in one statement, see [`claims`]), handled by the
//! same handlers as the database queue, and the message is acknowledged only after the
//! handler's transaction committed. Debezium's producers batch events, and the broker
//! acknowledges a batch as a whole: a batch is acknowledged once all its messages are
//! done with ([`batches`]), so one held in memory is never acknowledged with a sibling,
//! and comes to another instance if this one dies. Events are at least once and may be
//! stale; claiming the row makes a duplicate or late one harmless. An event may also be
//! early: it can arrive before its transaction is visible, so a missing row is looked
//! for again a few times ([`scheduling::on_gone`]) before the message is dropped.
//!
//! A task that is not due yet (a timer, a retry's backoff, a lease held by another
//! instance) is held in memory when it is due soon, and otherwise becomes a
//! [`timer::TaskTimer`] on the timer topic with `deliverAt` at its due time. A timer
//! message delivered early (some brokers ignore `deliverAt`) finds the row not due and
//! is held or re-published again: nothing fires before the database clock says so.
//!
//! Retries of failed worker calls are not negative acknowledgements. A failed attempt
//! is recorded in the task row (attempt + 1, due after the state's backoff) in the
//! transaction that records the failure, exactly as on the database queue, and the
//! message is acknowledged; the row's update is itself a change event, which is held or
//! becomes a delayed `TaskTimer` like any task not due yet. The attempt count must live
//! in the row: it is what survives a crash of the instance, decides when the retry policy
//! is exhausted (and the failure recovery applies, in the same transaction), and numbers
//! the worker's idempotency context; the broker's redelivery count is per subscription,
//! is lost when a message is re-published as a timer, and does not commit with the
//! transition. Once the row is rescheduled, a nack as well would only deliver the task
//! twice. (Nor could it carry the backoff: the `pulsar` crate's nack asks for redelivery
//! at once, with no delay of its own, per message or per consumer.) Nacks are kept for
//! what the row cannot record: a transition the database refused or could not be
//! reached for, redelivered after a pause (`pulsar.nack_delay_ms`, 1 s) and, after
//! `pulsar.max_deliveries`, passed to the dead-letter path ([`dead_letters`]), which
//! parks the task until an operator's retry-now or give-up.
//!
//! An instance runs the next state of a process it just advanced at once, as on the
//! database queue (the continuation): the transition creates that task leased to this
//! instance, its change event is passed over, and only hand-offs (new processes, timers,
//! parallel threads, retries, releases) travel the pipeline. If the instance dies
//! holding one, the takeover's release of its leases is a change event like any other;
//! with liveness and the sweep both off no continuation is leased.
//!
//! The database-queue claim loop does not run in this mode. A slow sweep
//! (`pulsar.sweep_after_ms`, 60 s) is the safety net for lost events: it claims tasks
//! that have been due that long without any event running them.

mod batches;
mod claims;
mod dead_letters;
mod events;
mod handling;
mod permits;
mod subscriptions;
mod timer;
mod topics;

use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use std::time::Duration;

use futures::{FutureExt, StreamExt};
use pulsar::consumer::{DeadLetterPolicy, Message};
use pulsar::{Consumer, Pulsar, SubType, TokioExecutor};
use tokio::sync::watch;
use tokio::task::JoinSet;
use xdb_cluster::PeerNotifier;
use xdb_config::{PulsarSettings, SubscriptionType};
use xdb_protocol::priority;

use crate::clock::Clock;
use crate::handlers::HandlerContext;
use crate::health::ConsumerHealth;
use crate::leases::LeasedTasks;
use crate::scheduling::{self, Sweep};
use batches::{BatchAnswers, Part};
use claims::GatheredClaims;
use dead_letters::DeadLetterPublisher;
use handling::on_message;
use permits::PriorityPermits;
use subscriptions::Subscriber;
pub use timer::TaskTimer;
use timer::TimerPublisher;
use topics::Topics;

/// How long start-up waits for the broker.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// A subscription the broker refused: most often a tenant or namespace that does not
/// exist, named by the settings that make up the topic.
fn subscribe_error(topic: &str, error: pulsar::Error) -> anyhow::Error {
    anyhow::anyhow!(
        "cannot subscribe to {topic} (pulsar.tenant, pulsar.namespace, pulsar.topic_prefix): \
         {error}"
    )
}

/// The Pulsar task source, connected and subscribed.
pub(crate) struct PulsarSource {
    shared: Arc<Shared>,
    tasks: Consumer<Vec<u8>, TokioExecutor>,
    timers: Consumer<Vec<u8>, TokioExecutor>,
    dead_letters: Consumer<Vec<u8>, TokioExecutor>,
    /// `pulsar.sweep_after_ms`, when on.
    sweep_after: Option<Duration>,
    /// Told when a consumer is lost and subscribed again, for the health probes.
    health: Arc<ConsumerHealth>,
    /// Subscribes again to a consumer's topic when the client gave up on it; keeps the
    /// client's connections alive as long as the source.
    subscriber: Arc<Subscriber>,
}

/// What every message handler needs.
struct Shared {
    context: Arc<HandlerContext>,
    /// Claims by id, those asked for together sent together.
    claims: GatheredClaims,
    api_peers: PeerNotifier,
    leased: Arc<LeasedTasks>,
    lease: Duration,
    /// `pulsar.hold_ms`: tasks due within this long are held in memory rather than sent
    /// to the timer topic; it also bounds how long a timer delivered early is held
    /// before it is re-published.
    hold_at_most: Duration,
    /// Bounds the tasks handled at once (held messages do not count).
    permits: PriorityPermits,
    timers: TimerPublisher,
    /// `pulsar.max_deliveries`: handlings of a task whose transition is refused before
    /// its message goes to the dead-letter topic.
    max_deliveries: u32,
    /// `pulsar.nack_delay_ms`: the pause before a message whose handling failed (the
    /// database refused or was unreachable) is handled again or negatively
    /// acknowledged, and so delivered again; also the pause after a receive error.
    nack_delay: Duration,
    dead_letters: DeadLetterPublisher,
    /// What timer messages' `deliverAt` is set by.
    clock: Arc<dyn Clock>,
}

/// What became of one message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Verdict {
    /// Done with (handled, not needed, or passed on as a timer).
    Ack,
    /// Failed: deliver it again (after `pulsar.nack_delay_ms`).
    Nack,
    /// Its task's transition was refused `pulsar.max_deliveries` times: pass it to the
    /// dead-letter topic, then acknowledge it.
    DeadLetter,
    /// Left unacknowledged (shutting down while it was held, or its handler panicked),
    /// so the broker gives it to another instance once this consumer closes.
    Abandon,
}

/// Where a message came from, which says how to read it.
#[derive(Clone, Copy, Debug)]
enum Source {
    ChangeEvents,
    Timers,
    DeadLetters,
}

impl Source {
    fn name(self) -> &'static str {
        match self {
            Source::ChangeEvents => "change events",
            Source::Timers => "timers",
            Source::DeadLetters => "dead letters",
        }
    }
}

/// Why a consumer's loop returned.
enum Ended {
    /// The instance is shutting down.
    Shutdown,
    /// The consumer yields nothing more: the client gave up on the broker.
    StreamClosed,
}

impl PulsarSource {
    /// Connects to the broker and subscribes, so a wrong URL or an unreachable broker
    /// stops start-up with a clear error.
    #[allow(clippy::too_many_arguments)]
    pub async fn connect(
        settings: &PulsarSettings,
        database_url: &str,
        context: Arc<HandlerContext>,
        api_peers: PeerNotifier,
        leased: Arc<LeasedTasks>,
        lease: Duration,
        max_in_flight: usize,
        health: Arc<ConsumerHealth>,
        clock: Arc<dyn Clock>,
    ) -> anyhow::Result<Self> {
        let url = settings
            .service_url
            .as_deref()
            .ok_or_else(|| anyhow::anyhow!("pulsar.service_url is required in Pulsar mode"))?;
        let topics = Topics::new(settings, database_url)?;
        // The client retries a lost connection for minutes; at start-up an unreachable
        // broker is a configuration problem to report at once.
        let mut builder = Pulsar::builder(url, TokioExecutor);
        if let Some(ca_file) = &settings.tls_ca_file {
            // Beside the public web roots; the broker's host name is checked too.
            builder = builder.with_certificate_chain_file(ca_file).map_err(|e| {
                anyhow::anyhow!("pulsar.tls_ca_file: cannot read {}: {e}", ca_file.display())
            })?;
        }
        // The client's error does not say why a handshake failed: over TLS, name the
        // setting that decides which certificates it takes too.
        let settings_used = if url.starts_with("pulsar+ssl://") {
            "pulsar.service_url, pulsar.tls_ca_file"
        } else {
            "pulsar.service_url"
        };
        let client = tokio::time::timeout(CONNECT_TIMEOUT, builder.build())
            .await
            .map_err(|_| {
                anyhow::anyhow!(
                    "cannot connect to Pulsar at {url} ({settings_used}): no answer \
                         within {CONNECT_TIMEOUT:?}"
                )
            })?
            .map_err(|e| {
                anyhow::anyhow!("cannot connect to Pulsar at {url} ({settings_used}): {e}")
            })?;
        let consumer_name = context.owner.clone();
        let sub_type = match settings.subscription_type {
            SubscriptionType::Shared => SubType::Shared,
            // One execution's changes (keyed by its id) go to one instance at a time.
            SubscriptionType::KeyShared => SubType::KeyShared,
        };
        let dead_letter_policy = DeadLetterPolicy {
            max_redeliver_count: settings.max_deliveries as usize,
            dead_letter_topic: topics.dead_letters.clone(),
        };
        let subscriber = Subscriber {
            client: client.clone(),
            topics,
            subscription: settings.subscription.clone(),
            sub_type,
            consumer_name: consumer_name.clone(),
            dead_letter_policy,
        };
        let subscriber_ref = &subscriber;
        let subscribe = |source: Source| async move {
            subscriber_ref
                .subscribe(source)
                .await
                .map_err(|e| subscribe_error(subscriber_ref.topic(source), e))
        };
        let tasks = subscribe(Source::ChangeEvents).await?;
        let timers = subscribe(Source::Timers).await?;
        let dead_letters = subscribe(Source::DeadLetters).await?;
        let topics = &subscriber.topics;
        let producer = client
            .producer()
            .with_topic(&topics.timers)
            .with_name(format!("{consumer_name}-timers"))
            .build()
            .await
            .map_err(|e| anyhow::anyhow!("cannot publish to {}: {e}", topics.timers))?;
        let dead_letter_producer = client
            .producer()
            .with_topic(&topics.dead_letters)
            .with_name(format!("{consumer_name}-dead-letters"))
            .build()
            .await
            .map_err(|e| anyhow::anyhow!("cannot publish to {}: {e}", topics.dead_letters))?;
        tracing::info!(tasks = %topics.tasks, timers = %topics.timers, "consuming Pulsar CDC topics");
        Ok(Self {
            shared: Arc::new(Shared {
                claims: GatheredClaims::new(
                    context.tasks.clone(),
                    context.owner.clone(),
                    lease,
                    context.metrics.pulsar_claim_batch_tasks.clone(),
                ),
                context,
                api_peers,
                leased,
                lease,
                hold_at_most: Duration::from_millis(settings.hold_ms),
                permits: PriorityPermits::new(max_in_flight),
                timers: TimerPublisher::new(producer),
                max_deliveries: settings.max_deliveries,
                nack_delay: Duration::from_millis(settings.nack_delay_ms),
                dead_letters: DeadLetterPublisher::new(dead_letter_producer),
                clock,
            }),
            tasks,
            timers,
            dead_letters,
            sweep_after: (settings.sweep_after_ms > 0)
                .then(|| Duration::from_millis(settings.sweep_after_ms)),
            health,
            subscriber: Arc::new(subscriber),
        })
    }

    /// Runs until `shutdown` turns true, then lets in-flight tasks finish. Dropping the
    /// future (the shutdown grace ran out) aborts every task it started.
    pub async fn run(self, shutdown: watch::Receiver<bool>) {
        let mut consumers = JoinSet::new();
        for (consumer, source) in [
            (self.tasks, Source::ChangeEvents),
            (self.timers, Source::Timers),
            (self.dead_letters, Source::DeadLetters),
        ] {
            let shared = self.shared.clone();
            let health = self.health.clone();
            let subscriber = self.subscriber.clone();
            let stopping = shutdown.clone();
            consumers.spawn(async move {
                let mut consumer = consumer;
                loop {
                    // A panic ends the loop as surely as a closed stream does. (Not a
                    // task of its own: dropping `run` must still abort everything it
                    // started.)
                    let consuming = consume(consumer, source, shared.clone(), stopping.clone());
                    let why = match AssertUnwindSafe(consuming).catch_unwind().await {
                        Ok(Ended::Shutdown) => return,
                        Ok(Ended::StreamClosed) => {
                            "its stream ended (the client stopped reconnecting)"
                        }
                        Err(_) => "its loop panicked",
                    };
                    if *stopping.borrow() {
                        return;
                    }
                    health.lost(source.name(), why);
                    shared
                        .context
                        .metrics
                        .pulsar_resubscriptions
                        .with_label_values(&[source.name()])
                        .inc();
                    match subscriber
                        .resubscribe(source, &health, stopping.clone())
                        .await
                    {
                        Some(again) => consumer = again,
                        None => return,
                    }
                }
            });
        }
        if let Some(overdue) = self.sweep_after {
            consumers.spawn(sweep(self.shared, overdue, shutdown));
        }
        while consumers.join_next().await.is_some() {}
    }
}

/// Receives messages, hands each to its own task and acknowledges it when that is done
/// (the messages of a batch once all are, see [`batches`]).
async fn consume(
    mut consumer: Consumer<Vec<u8>, TokioExecutor>,
    source: Source,
    shared: Arc<Shared>,
    mut shutdown: watch::Receiver<bool>,
) -> Ended {
    let mut running: JoinSet<(Message<Vec<u8>>, Part, Verdict)> = JoinSet::new();
    let mut batches = BatchAnswers::default();
    let mut stopping = *shutdown.borrow();
    let mut ended = Ended::Shutdown;
    loop {
        if stopping && running.is_empty() {
            break;
        }
        tokio::select! {
            Some(joined) = running.join_next() => {
                // Handlers' panics are caught (`Abandon`): every task ends with a verdict.
                let Ok((message, part, verdict)) = joined else { continue };
                let result = match batches.answered(part, verdict) {
                    // Its batch waits for the verdicts of the others.
                    None => Ok(()),
                    Some(Verdict::Ack) => consumer.ack(&message).await,
                    Some(Verdict::Nack) => consumer.nack(&message).await,
                    Some(Verdict::Abandon | Verdict::DeadLetter) => Ok(()),
                };
                if let Err(error) = result {
                    // The broker delivers it again; the row check makes that harmless.
                    tracing::warn!(?source, %error, "acknowledging a message failed");
                }
            }
            changed = shutdown.changed(), if !stopping => {
                stopping = changed.is_err() || *shutdown.borrow();
            }
            next = consumer.next(), if !stopping => match next {
                Some(Ok(message)) => {
                    let part = batches.received(
                        message.message_id(),
                        message.payload.metadata.num_messages_in_batch,
                    );
                    let shared = shared.clone();
                    let shutdown = shutdown.clone();
                    running.spawn(async move {
                        let handled = on_message(&shared, source, &message.payload.data, shutdown);
                        // A panic leaves the message unacknowledged, and its batch with it:
                        // the broker delivers them again once this consumer closes.
                        let verdict = AssertUnwindSafe(handled)
                            .catch_unwind()
                            .await
                            .unwrap_or(Verdict::Abandon);
                        (message, part, verdict)
                    });
                }
                Some(Err(error)) => {
                    tracing::warn!(?source, %error, "receiving from Pulsar failed");
                    tokio::time::sleep(shared.nack_delay).await;
                }
                None => {
                    tracing::error!(?source, "the Pulsar consumer ended");
                    stopping = true;
                    ended = Ended::StreamClosed;
                }
            },
        }
    }
    if let Err(error) = consumer.close().await {
        tracing::debug!(?source, %error, "closing the Pulsar consumer failed");
    }
    ended
}

/// The safety net for lost change events: claims tasks due for `overdue` that no
/// event has run, and handles them as the database queue would.
async fn sweep(shared: Arc<Shared>, overdue: Duration, mut shutdown: watch::Receiver<bool>) {
    // The interval runs from the end of one sweep, however long it took.
    let mut last = tokio::time::Instant::now();
    loop {
        if let Sweep::In(wait) = scheduling::next_sweep(last.elapsed(), overdue) {
            tokio::select! {
                _ = tokio::time::sleep(wait) => continue,
                _ = shutdown.changed() => return,
            }
        }
        sweep_once(&shared, overdue, &mut shutdown).await;
        last = tokio::time::Instant::now();
    }
}

/// One sweep: claims up to a batch of overdue tasks and handles them one by one, each
/// with the chain of continuations after it.
async fn sweep_once(shared: &Shared, overdue: Duration, shutdown: &mut watch::Receiver<bool>) {
    let context = &shared.context;
    let claimed = context
        .tasks
        .claim_overdue_tasks(&context.owner, 64, shared.lease, overdue)
        .await;
    let tasks = match claimed {
        Ok(tasks) => tasks,
        Err(error) => {
            tracing::warn!(%error, "sweeping overdue tasks failed");
            return;
        }
    };
    let place = permits::PlaceRequest::keyless(priority::DEFAULT);
    for task in tasks {
        tracing::warn!(
            task = task.id,
            "running a task no change event ran (lost event?)"
        );
        let _permit = shared.permits.acquire(&place).await;
        context.metrics.claimed(&task, shared.clock.now());
        let next = handling::handle_held(shared, &task, None, &place, shutdown).await;
        handling::continue_with(shared, next, &place, shutdown).await;
    }
}
