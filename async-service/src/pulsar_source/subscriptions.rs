//! The source's three subscriptions: made at start-up, and made again when the client
//! gives up on a consumer. After a broker restart the `pulsar` client reconnects by
//! itself, but a consumer whose own re-subscription meets the broker still starting
//! ("Not enough non-faulty bookies", or the broker gone again) ends its stream for good.
//! The instance then subscribes afresh, with growing pauses, for as long as it runs:
//! no process restart is needed, and the probes say not ready meanwhile.

use pulsar::consumer::{ConsumerOptions, DeadLetterPolicy, InitialPosition};
use pulsar::{Consumer, Pulsar, SubType, TokioExecutor};
use tokio::sync::watch;

use super::topics::Topics;
use super::Source;
use crate::health::ConsumerHealth;
use crate::scheduling;

/// What subscribing to each of the source's topics takes.
pub(super) struct Subscriber {
    pub client: Pulsar<TokioExecutor>,
    pub topics: Topics,
    /// `pulsar.subscription`: one subscription shared by every instance.
    pub subscription: String,
    pub sub_type: SubType,
    /// This instance's id, which the broker shows for the consumer.
    pub consumer_name: String,
    /// Where the broker moves a message delivered `pulsar.max_deliveries` times.
    pub dead_letter_policy: DeadLetterPolicy,
}

impl Subscriber {
    /// The topic `source` reads.
    pub fn topic(&self, source: Source) -> &str {
        match source {
            Source::ChangeEvents => &self.topics.tasks,
            Source::Timers => &self.topics.timers,
            Source::DeadLetters => &self.topics.dead_letters,
        }
    }

    /// A consumer of `source`'s topic on the shared subscription.
    pub async fn subscribe(
        &self,
        source: Source,
    ) -> Result<Consumer<Vec<u8>, TokioExecutor>, pulsar::Error> {
        let builder = self
            .client
            .consumer()
            .with_topic(self.topic(source))
            .with_subscription(&self.subscription)
            .with_subscription_type(self.sub_type)
            .with_consumer_name(&self.consumer_name)
            .with_options(ConsumerOptions {
                // A new subscription must see the changes made before it existed.
                initial_position: InitialPosition::Earliest,
                ..ConsumerOptions::default()
            });
        match source {
            // Dead letters stay on their own subscription until handled: no further
            // topic.
            Source::DeadLetters => builder,
            _ => builder.with_dead_letter_policy(self.dead_letter_policy.clone()),
        }
        .build::<Vec<u8>>()
        .await
    }

    /// Subscribes to `source` again, pausing longer after each failure, until it
    /// succeeds (`None`: the instance began shutting down first). `health` shows the
    /// consumer as re-subscribing meanwhile.
    pub async fn resubscribe(
        &self,
        source: Source,
        health: &ConsumerHealth,
        mut shutdown: watch::Receiver<bool>,
    ) -> Option<Consumer<Vec<u8>, TokioExecutor>> {
        let mut failures = 0;
        loop {
            if *shutdown.borrow() {
                return None;
            }
            match self.subscribe(source).await {
                Ok(consumer) => {
                    tracing::info!(
                        consumer = source.name(),
                        failures,
                        "the Pulsar consumer subscribed again"
                    );
                    health.subscribed(source.name());
                    return Some(consumer);
                }
                Err(error) => {
                    failures += 1;
                    let pause = scheduling::resubscribe_pause(failures);
                    tracing::warn!(
                        consumer = source.name(),
                        topic = self.topic(source),
                        %error,
                        failures,
                        ?pause,
                        "subscribing to Pulsar again failed; trying again"
                    );
                    health.resubscribing(source.name(), &error.to_string());
                    tokio::select! {
                        _ = tokio::time::sleep(pause) => {}
                        _ = shutdown.changed() => {}
                    }
                }
            }
        }
    }
}
