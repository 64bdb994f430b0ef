//! A stand-in for an email API: sent emails are recorded, and logged.

use std::sync::{Arc, Mutex};

use serde::Serialize;

/// What an email is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum EmailKind {
    Verification,
    Reminder,
    Welcome,
}

/// One sent email.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Email {
    pub to: String,
    pub kind: EmailKind,
    /// The worker call that sent it; see [`EmailOutbox::send`].
    pub idempotency_key: String,
}

/// Every email the samples "send", shared between clones.
#[derive(Debug, Clone, Default)]
pub struct EmailOutbox {
    sent: Arc<Mutex<Vec<Email>>>,
}

impl EmailOutbox {
    pub fn new() -> Self {
        Self::default()
    }

    /// Sends (records and logs) an email, once per `idempotency_key`.
    ///
    /// XDB calls workers at least once, so a retried call must not email twice: passing
    /// the call's idempotency key makes a repeat a no-op, as a real email API with
    /// idempotency keys would. Returns whether the email was sent now.
    pub fn send(&self, to: &str, kind: EmailKind, idempotency_key: &str) -> bool {
        let mut sent = self.sent.lock().unwrap_or_else(|e| e.into_inner());
        if sent
            .iter()
            .any(|e| e.idempotency_key == idempotency_key && e.kind == kind)
        {
            tracing::info!(
                to,
                ?kind,
                idempotency_key,
                "email already sent by an earlier attempt"
            );
            return false;
        }
        tracing::info!(to, ?kind, idempotency_key, "sending email");
        sent.push(Email {
            to: to.to_string(),
            kind,
            idempotency_key: idempotency_key.to_string(),
        });
        true
    }

    /// All emails sent so far, oldest first.
    pub fn sent(&self) -> Vec<Email> {
        self.sent.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// The kinds of email sent to `to`, oldest first.
    pub fn kinds_sent_to(&self, to: &str) -> Vec<EmailKind> {
        self.sent()
            .into_iter()
            .filter(|e| e.to == to)
            .map(|e| e.kind)
            .collect()
    }

    /// How many emails of `kind` were sent to `to`.
    pub fn count(&self, to: &str, kind: EmailKind) -> usize {
        self.kinds_sent_to(to)
            .into_iter()
            .filter(|k| *k == kind)
            .count()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn repeats_of_one_call_send_once() {
        let outbox = EmailOutbox::new();
        assert!(outbox.send("a@x", EmailKind::Verification, "k1"));
        assert!(!outbox.send("a@x", EmailKind::Verification, "k1"));
        assert!(outbox.send("a@x", EmailKind::Reminder, "k2"));
        assert!(outbox.send("b@x", EmailKind::Reminder, "k3"));
        assert_eq!(
            outbox.kinds_sent_to("a@x"),
            vec![EmailKind::Verification, EmailKind::Reminder]
        );
        assert_eq!(outbox.count("b@x", EmailKind::Reminder), 1);
        assert_eq!(outbox.clone().sent().len(), 3, "clones share the outbox");
    }
}
