//! Answering the broker for the messages of a batch as one.
//!
//! A producer may batch messages: Pulsar IO's Debezium sources do, so several change
//! events share one entry of the topic (one ledger entry, its messages told apart by
//! `batch_index`). The broker acknowledges entries: an acknowledgement that names a
//! message of a batch without the entry's `ack_set` (the `pulsar` crate never sends
//! one, and brokers acknowledge at batch-index level only when configured to) takes the
//! whole entry. Acknowledging each message once done with it therefore acknowledged its
//! siblings still in flight too, such as a change event held in memory until its task
//! is due. If the instance then died, the broker never delivered those again, and their
//! tasks waited for the sweep: after an instance was SIGKILLed, calls given back by a
//! flow limit sat due and unleased for a minute.
//!
//! So, as the Java client does without batch-index acknowledgement, the messages that
//! one delivery of an entry brought are answered together, once each has its verdict:
//! acknowledged when all are done with; negatively acknowledged when one failed (the
//! broker delivers the whole entry again, and the messages done with come again, which
//! their rows make harmless); and left unanswered when one was left (the instance is
//! shutting down, or its handler panicked), so that the broker delivers the entry again
//! once this consumer closes. A message that is not part of a batch is answered alone.

use std::collections::HashMap;

use pulsar::message::proto::MessageIdData;

use super::Verdict;

/// Which delivery of a batch a received message belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Part {
    /// Not batched (or a batch of one): answered alone.
    Alone,
    /// One message of delivery number `n` of a batch.
    Of(u64),
}

/// One entry of a topic.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
struct Entry {
    ledger_id: u64,
    entry_id: u64,
    partition: i32,
}

/// The messages of one delivery of a batch: which came, and what became of them.
struct Delivery {
    /// Which batch indexes came, by index.
    came: Vec<bool>,
    /// How many have their verdict.
    answered: usize,
    /// What the batch's answer is so far.
    verdict: Verdict,
}

/// The deliveries of batches of one consumer whose messages are not all done with.
#[derive(Default)]
pub(super) struct BatchAnswers {
    /// Deliveries some of whose messages have not come yet, by entry.
    arriving: HashMap<Entry, u64>,
    /// Deliveries some of whose messages have no verdict yet.
    open: HashMap<u64, Delivery>,
    next: u64,
}

impl BatchAnswers {
    /// Notes a message received, of id `id`, in a batch of `batch_size` messages (the
    /// entry's `num_messages_in_batch`; `None`: not batched).
    pub fn received(&mut self, id: &MessageIdData, batch_size: Option<i32>) -> Part {
        let (Some(index), Some(size)) = (id.batch_index, batch_size) else {
            return Part::Alone;
        };
        let (Ok(index), Ok(size)) = (usize::try_from(index), usize::try_from(size)) else {
            return Part::Alone;
        };
        if size <= 1 || index >= size {
            return Part::Alone;
        }
        let entry = Entry {
            ledger_id: id.ledger_id,
            entry_id: id.entry_id,
            partition: id.partition.unwrap_or(-1),
        };
        // The entry's messages come one after the other; one that came already starts a
        // delivery of its own (the entry delivered again).
        let arriving = self.arriving.get(&entry).copied().filter(|n| {
            self.open
                .get(n)
                .is_some_and(|d| d.came.get(index) == Some(&false))
        });
        let n = arriving.unwrap_or_else(|| {
            let n = self.next;
            self.next += 1;
            self.open.insert(
                n,
                Delivery {
                    came: vec![false; size],
                    answered: 0,
                    verdict: Verdict::Ack,
                },
            );
            self.arriving.insert(entry, n);
            n
        });
        let delivery = self.open.get_mut(&n).expect("just found or made");
        delivery.came[index] = true;
        if delivery.came.iter().all(|&came| came) {
            self.arriving.remove(&entry);
        }
        Part::Of(n)
    }

    /// Notes the verdict of a message of `part`: what to answer the broker now, if
    /// anything (`None`: its batch waits for others).
    pub fn answered(&mut self, part: Part, verdict: Verdict) -> Option<Verdict> {
        let Part::Of(n) = part else {
            return Some(verdict);
        };
        let delivery = self.open.get_mut(&n)?;
        delivery.answered += 1;
        if verdict.rank() > delivery.verdict.rank() {
            delivery.verdict = verdict;
        }
        if delivery.answered < delivery.came.len() {
            return None;
        }
        self.open.remove(&n).map(|delivery| delivery.verdict)
    }

    /// Deliveries whose messages are not all done with.
    #[cfg(test)]
    fn open(&self) -> usize {
        self.open.len()
    }
}

impl Verdict {
    /// Which verdict of a batch's messages is the batch's: leaving one outranks
    /// delivering it again, which outranks acknowledging it.
    fn rank(&self) -> u8 {
        match self {
            Verdict::Ack => 0,
            Verdict::Nack => 1,
            Verdict::DeadLetter | Verdict::Abandon => 2,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn id(entry_id: u64, batch_index: Option<i32>) -> MessageIdData {
        MessageIdData {
            ledger_id: 55,
            entry_id,
            partition: Some(-1),
            batch_index,
            ..Default::default()
        }
    }

    #[test]
    fn a_message_alone_is_answered_alone() {
        let mut answers = BatchAnswers::default();
        let part = answers.received(&id(1, None), None);
        assert_eq!(part, Part::Alone);
        assert_eq!(answers.answered(part, Verdict::Nack), Some(Verdict::Nack));
        let single = answers.received(&id(2, Some(0)), Some(1));
        assert_eq!(single, Part::Alone);
        assert_eq!(answers.answered(single, Verdict::Ack), Some(Verdict::Ack));
        assert_eq!(answers.open(), 0);
    }

    #[test]
    fn a_batch_is_acknowledged_once_its_last_message_is_done_with() {
        let mut answers = BatchAnswers::default();
        let first = answers.received(&id(342, Some(0)), Some(2));
        let held = answers.received(&id(342, Some(1)), Some(2));
        assert_eq!(first, held);
        // The first is done with; the second is held until its task is due: acknowledging
        // the entry now would acknowledge the held one too.
        assert_eq!(answers.answered(first, Verdict::Ack), None);
        assert_eq!(answers.answered(held, Verdict::Ack), Some(Verdict::Ack));
        assert_eq!(answers.open(), 0);
    }

    #[test]
    fn one_message_left_or_failed_decides_for_its_batch() {
        let mut answers = BatchAnswers::default();
        let parts: Vec<Part> = (0..3)
            .map(|i| answers.received(&id(7, Some(i)), Some(3)))
            .collect();
        assert_eq!(answers.answered(parts[0], Verdict::Nack), None);
        assert_eq!(answers.answered(parts[1], Verdict::Ack), None);
        assert_eq!(
            answers.answered(parts[2], Verdict::Ack),
            Some(Verdict::Nack)
        );
        let parts: Vec<Part> = (0..3)
            .map(|i| answers.received(&id(8, Some(i)), Some(3)))
            .collect();
        assert_eq!(answers.answered(parts[2], Verdict::Ack), None);
        assert_eq!(answers.answered(parts[0], Verdict::Abandon), None);
        assert_eq!(
            answers.answered(parts[1], Verdict::Nack),
            Some(Verdict::Abandon)
        );
        assert_eq!(answers.open(), 0);
    }

    #[test]
    fn an_entry_delivered_again_is_a_delivery_of_its_own() {
        let mut answers = BatchAnswers::default();
        let first = answers.received(&id(9, Some(0)), Some(2));
        let second = answers.received(&id(9, Some(1)), Some(2));
        // Delivered again (a reconnection) while the first delivery is in flight.
        let again_first = answers.received(&id(9, Some(0)), Some(2));
        assert_ne!(again_first, first);
        let again_second = answers.received(&id(9, Some(1)), Some(2));
        assert_eq!(again_second, again_first);
        assert_eq!(answers.answered(first, Verdict::Ack), None);
        assert_eq!(answers.answered(again_first, Verdict::Ack), None);
        assert_eq!(answers.answered(second, Verdict::Ack), Some(Verdict::Ack));
        assert_eq!(
            answers.answered(again_second, Verdict::Ack),
            Some(Verdict::Ack)
        );
        assert_eq!(answers.open(), 0);
    }

    #[test]
    fn batches_of_entries_interleaved_are_told_apart() {
        let mut answers = BatchAnswers::default();
        let a0 = answers.received(&id(1, Some(0)), Some(2));
        let b0 = answers.received(&id(2, Some(0)), Some(2));
        let a1 = answers.received(&id(1, Some(1)), Some(2));
        let b1 = answers.received(&id(2, Some(1)), Some(2));
        assert_eq!((a0 == a1, b0 == b1, a0 == b0), (true, true, false));
        assert_eq!(answers.answered(b1, Verdict::Ack), None);
        assert_eq!(answers.answered(a0, Verdict::Ack), None);
        assert_eq!(answers.answered(b0, Verdict::Ack), Some(Verdict::Ack));
        assert_eq!(answers.answered(a1, Verdict::Ack), Some(Verdict::Ack));
    }
}
