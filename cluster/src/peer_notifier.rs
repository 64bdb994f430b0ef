//! Sends wake-ups to the live instances of the other service, batched.
//!
//! Calls return at once; a background task sends what accumulated since its last round,
//! so a burst of starts costs one request per peer per round, not one per start.
//!
//! A close goes with its outcome when that is small, so that the API's waiters answer
//! from it instead of reading the execution back (a statement per close on MySQL).

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use reqwest::StatusCode;
use tokio::sync::Notify;
use tokio::time::Instant;
use xdb_persistence::{InstanceRegistry, ServiceKind};
use xdb_protocol::limits::MAX_NOTIFY_IDS;
use xdb_protocol::{paths, InternalNotifyRequest, ProcessExecutionWaitForCompletionResponse};

use xdb_worker_auth::SIGNATURE_HEADER;

use crate::{InternalAuth, LIVENESS_WINDOW};

/// Re-read the registry at most this often.
const PEER_CACHE_TTL: Duration = Duration::from_secs(1);
const NOTIFY_TIMEOUT: Duration = Duration::from_secs(1);
/// The largest outcome sent along, in bytes of JSON: a larger one (a big result) is
/// announced by id, and its waiters read it, rather than swell every request.
const MAX_OUTCOME_BYTES: usize = 4 * 1024;
/// Outcome bytes one request carries at most, well below the API's smallest sensible
/// `api.max_request_bytes`; closes past it go by id.
const MAX_OUTCOME_BYTES_PER_REQUEST: usize = 256 * 1024;
/// How long a peer that refused outcomes (one from before them) gets ids only, before
/// it is tried again (it may have been upgraded at the same address).
const IDS_ONLY_FOR: Duration = Duration::from_secs(60);

#[derive(Default)]
struct Pending {
    /// Tasks were committed that `new_task_executions` may not cover: receivers search.
    new_tasks: bool,
    /// Executions with new tasks, each named: receivers may claim theirs by execution.
    new_task_executions: BTreeSet<String>,
    /// A batch was created: receivers' batch drivers look now.
    new_batches: bool,
    /// Closed executions, with their outcome when small enough to send.
    closed: BTreeMap<String, Option<Box<ProcessExecutionWaitForCompletionResponse>>>,
}

/// Wakes instances of one service kind; a disabled notifier does nothing.
#[derive(Clone)]
pub struct PeerNotifier {
    inner: Option<Arc<Inner>>,
}

struct Inner {
    pending: Mutex<Pending>,
    wake: Notify,
}

impl PeerNotifier {
    /// For databases that push notifications themselves.
    pub fn disabled() -> Self {
        Self { inner: None }
    }

    /// Notifies live instances of `target`, found in `registry`, each call signed by
    /// `auth`.
    pub fn start(
        registry: Arc<dyn InstanceRegistry>,
        target: ServiceKind,
        auth: InternalAuth,
    ) -> Self {
        let inner = Arc::new(Inner {
            pending: Mutex::new(Pending::default()),
            wake: Notify::new(),
        });
        tokio::spawn(send_rounds(Arc::downgrade(&inner), registry, target, auth));
        Self { inner: Some(inner) }
    }

    pub fn is_enabled(&self) -> bool {
        self.inner.is_some()
    }

    /// New tasks were committed.
    pub fn new_tasks(&self) {
        self.update(|pending| pending.new_tasks = true);
    }

    /// New tasks of execution `process_execution_id` only were committed: a receiver
    /// may claim them by their execution, without searching the queue (on MariaDB the
    /// search is most of a claim's time).
    pub fn new_tasks_of(&self, process_execution_id: String) {
        self.update(|pending| {
            if pending.new_tasks {
                return;
            }
            if pending.new_task_executions.len() < MAX_NOTIFY_IDS {
                pending.new_task_executions.insert(process_execution_id);
            } else {
                // Past what one request names: a search finds them all.
                pending.new_task_executions.clear();
                pending.new_tasks = true;
            }
        });
    }

    /// A batch was created.
    pub fn new_batches(&self) {
        self.update(|pending| pending.new_batches = true);
    }

    /// An execution closed, with `outcome`, its waiters' answer, when known.
    pub fn process_closed(
        &self,
        process_execution_id: String,
        outcome: Option<Box<ProcessExecutionWaitForCompletionResponse>>,
    ) {
        if self.inner.is_none() {
            return;
        }
        let outcome = outcome.filter(|outcome| json_len(outcome) <= MAX_OUTCOME_BYTES);
        self.update(|pending| {
            pending.closed.insert(process_execution_id, outcome);
        });
    }

    fn update(&self, change: impl FnOnce(&mut Pending)) {
        if let Some(inner) = &self.inner {
            change(&mut inner.pending.lock().expect("never poisoned"));
            inner.wake.notify_one();
        }
    }
}

/// The length of `value` as JSON, without keeping the text.
fn json_len(value: &ProcessExecutionWaitForCompletionResponse) -> usize {
    struct Count(usize);
    impl std::io::Write for Count {
        fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
            self.0 += bytes.len();
            Ok(bytes.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mut count = Count(0);
    match serde_json::to_writer(&mut count, value) {
        Ok(()) => count.0,
        Err(_) => usize::MAX,
    }
}

/// `pending` as requests within the limits: at most `MAX_NOTIFY_IDS` ids (and so
/// outcomes) each, and at most [`MAX_OUTCOME_BYTES_PER_REQUEST`] of outcomes. Every
/// closed id is listed, also those sent with an outcome, for receivers that read ids
/// only.
fn requests(pending: Pending) -> Vec<InternalNotifyRequest> {
    let mut requests = Vec::new();
    let mut closed = pending.closed.into_iter().peekable();
    let new_tasks = pending.new_tasks || !pending.new_task_executions.is_empty();
    let mut named = if pending.new_tasks {
        Vec::new()
    } else {
        pending.new_task_executions.into_iter().collect()
    };
    loop {
        let mut request = InternalNotifyRequest {
            new_tasks: new_tasks && requests.is_empty(),
            new_task_executions: std::mem::take(&mut named),
            new_batches: pending.new_batches && requests.is_empty(),
            ..Default::default()
        };
        let mut outcome_bytes = 0;
        for (id, outcome) in closed.by_ref().take(MAX_NOTIFY_IDS) {
            if let Some(outcome) = outcome {
                let len = json_len(&outcome);
                if outcome_bytes + len <= MAX_OUTCOME_BYTES_PER_REQUEST {
                    outcome_bytes += len;
                    request.closed_outcomes.push(*outcome);
                }
            }
            request.closed_process_execution_ids.push(id);
        }
        requests.push(request);
        if closed.peek().is_none() {
            return requests;
        }
    }
}

async fn send_rounds(
    inner: std::sync::Weak<Inner>,
    registry: Arc<dyn InstanceRegistry>,
    target: ServiceKind,
    auth: InternalAuth,
) {
    let http = reqwest::Client::builder()
        .timeout(NOTIFY_TIMEOUT)
        .tcp_nodelay(true)
        .build()
        .expect("the HTTP client builds");
    let mut peers: Vec<String> = Vec::new();
    let mut peers_read_at: Option<Instant> = None;
    let ids_only = Mutex::new(HashMap::<String, Instant>::new());
    loop {
        let Some(strong) = inner.upgrade() else {
            return;
        };
        strong.wake.notified().await;
        let pending = std::mem::take(&mut *strong.pending.lock().expect("never poisoned"));
        drop(strong);
        if !pending.new_tasks
            && pending.new_task_executions.is_empty()
            && !pending.new_batches
            && pending.closed.is_empty()
        {
            continue;
        }
        if peers_read_at.is_none_or(|at| at.elapsed() > PEER_CACHE_TTL) {
            match registry.live_instances(target, LIVENESS_WINDOW).await {
                Ok(instances) => {
                    peers = instances.into_iter().map(|i| i.notify_url).collect();
                    peers_read_at = Some(Instant::now());
                    ids_only
                        .lock()
                        .expect("never poisoned")
                        .retain(|_, since| since.elapsed() < IDS_ONLY_FOR);
                }
                Err(error) => tracing::warn!(%error, "reading the service registry failed"),
            }
        }
        for request in requests(pending) {
            let sends = peers.iter().map(|base| {
                let url = format!("{}{}", base.trim_end_matches('/'), paths::INTERNAL_NOTIFY);
                send(&http, &auth, url, &request, &ids_only)
            });
            futures::future::join_all(sends).await;
        }
    }
}

/// `request` to `url`, signed.
fn post(
    http: &reqwest::Client,
    auth: &InternalAuth,
    url: &str,
    request: &InternalNotifyRequest,
) -> reqwest::RequestBuilder {
    let body = serde_json::to_vec(request).expect("a notify request serializes");
    http.post(url)
        .header(reqwest::header::CONTENT_TYPE, "application/json")
        .header(SIGNATURE_HEADER, auth.sign(&body))
        .body(body)
}

/// Sends `request` to `url`; to a peer that refuses outcomes (one from before them),
/// again without them, and only ids for a while after.
async fn send(
    http: &reqwest::Client,
    auth: &InternalAuth,
    url: String,
    request: &InternalNotifyRequest,
    ids_only: &Mutex<HashMap<String, Instant>>,
) {
    let without_outcomes = || InternalNotifyRequest {
        closed_outcomes: Vec::new(),
        ..request.clone()
    };
    let old_peer = ids_only
        .lock()
        .expect("never poisoned")
        .get(&url)
        .is_some_and(|since| since.elapsed() < IDS_ONLY_FOR);
    let first = if old_peer && !request.closed_outcomes.is_empty() {
        post(http, auth, &url, &without_outcomes()).send().await
    } else {
        post(http, auth, &url, request).send().await
    };
    let refused = match first {
        Ok(response) if response.status() == StatusCode::UNAUTHORIZED => {
            tracing::warn!(
                %url,
                "a peer refused this instance's signature: do all instances share \
                 security.internal_secret (or none sets it)? It will poll"
            );
            return;
        }
        Ok(response) => {
            response.status() == StatusCode::BAD_REQUEST && !request.closed_outcomes.is_empty()
        }
        Err(error) => {
            tracing::debug!(%url, %error, "waking a peer failed; it will poll");
            return;
        }
    };
    if refused && !old_peer {
        tracing::info!(%url, "a peer refused closes' outcomes; sending it ids only");
        ids_only
            .lock()
            .expect("never poisoned")
            .insert(url.clone(), Instant::now());
        if let Err(error) = post(http, auth, &url, &without_outcomes()).send().await {
            tracing::debug!(%url, %error, "waking a peer failed; it will poll");
        }
    }
}

#[cfg(test)]
mod tests {
    use xdb_protocol::{EncodedObject, ProcessStatus};

    use super::*;

    fn outcome(id: &str, data_bytes: usize) -> ProcessExecutionWaitForCompletionResponse {
        ProcessExecutionWaitForCompletionResponse {
            process_execution_id: id.into(),
            status: ProcessStatus::Completed,
            timed_out: false,
            result: Some(EncodedObject {
                encoding: "json".into(),
                data: "x".repeat(data_bytes),
            }),
            failure: None,
        }
    }

    fn pending(closed: impl IntoIterator<Item = (String, Option<usize>)>) -> Pending {
        Pending {
            new_tasks: true,
            new_task_executions: BTreeSet::new(),
            new_batches: false,
            closed: closed
                .into_iter()
                .map(|(id, bytes)| {
                    let outcome = bytes.map(|bytes| Box::new(outcome(&id, bytes)));
                    (id, outcome)
                })
                .collect(),
        }
    }

    #[test]
    fn json_len_is_the_serialized_length() {
        let value = outcome("a", 100);
        assert_eq!(json_len(&value), serde_json::to_vec(&value).unwrap().len());
    }

    #[test]
    fn every_close_is_listed_by_id_and_small_outcomes_go_along() {
        let sent = requests(pending([("a".into(), Some(10)), ("b".into(), None)]));
        assert_eq!(sent.len(), 1);
        assert!(sent[0].new_tasks);
        assert_eq!(sent[0].closed_process_execution_ids, ["a", "b"]);
        assert_eq!(sent[0].closed_outcomes, [outcome("a", 10)]);
    }

    #[test]
    fn a_new_batch_is_said_once() {
        let alone = requests(Pending {
            new_batches: true,
            ..Pending::default()
        });
        assert_eq!(alone.len(), 1);
        assert!(alone[0].new_batches && !alone[0].new_tasks);
        let closes = (0..MAX_NOTIFY_IDS + 1).map(|i| (format!("{i:06}"), None));
        let sent = requests(Pending {
            new_batches: true,
            ..pending(closes)
        });
        assert_eq!(sent.len(), 2);
        assert!(sent[0].new_batches && !sent[1].new_batches, "said once");
    }

    #[test]
    fn a_large_outcome_is_not_kept() {
        let notifier = notifier();
        let closed = |id: &str, bytes| {
            notifier.process_closed(id.into(), Some(Box::new(outcome(id, bytes))))
        };
        closed("small", 10);
        closed("large", MAX_OUTCOME_BYTES);
        let inner = notifier.inner.as_ref().unwrap();
        let pending = inner.pending.lock().unwrap();
        assert!(pending.closed["small"].is_some());
        assert!(pending.closed["large"].is_none(), "announced by id only");
    }

    #[test]
    fn many_closes_are_split_within_the_limits() {
        let closes = (0..MAX_NOTIFY_IDS + 1).map(|i| (format!("{i:06}"), Some(1000)));
        let sent = requests(pending(closes));
        assert_eq!(sent.len(), 2);
        assert_eq!(sent[0].closed_process_execution_ids.len(), MAX_NOTIFY_IDS);
        assert_eq!(sent[1].closed_process_execution_ids.len(), 1);
        assert!(sent[0].new_tasks && !sent[1].new_tasks, "said once");
        let bytes: usize = sent[0].closed_outcomes.iter().map(json_len).sum();
        assert!(bytes <= MAX_OUTCOME_BYTES_PER_REQUEST);
        assert!(bytes > MAX_OUTCOME_BYTES_PER_REQUEST - 2 * MAX_OUTCOME_BYTES);
        assert_eq!(
            sent[1].closed_outcomes.len(),
            1,
            "a new request, a new budget"
        );
    }

    /// A peer from before `closedOutcomes`: its document refuses them (400); it
    /// records the bodies it was sent.
    async fn old_peer() -> (String, Arc<Mutex<Vec<String>>>) {
        use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};

        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let bodies = Arc::new(Mutex::new(Vec::new()));
        let seen = bodies.clone();
        tokio::spawn(async move {
            loop {
                let (stream, _) = listener.accept().await.unwrap();
                let seen = seen.clone();
                tokio::spawn(async move {
                    let mut stream = BufReader::new(stream);
                    loop {
                        let mut length = 0;
                        loop {
                            let mut line = String::new();
                            if stream.read_line(&mut line).await.unwrap_or(0) == 0 {
                                return;
                            }
                            let lower = line.to_ascii_lowercase();
                            if let Some(value) = lower.strip_prefix("content-length:") {
                                length = value.trim().parse().unwrap();
                            }
                            if line == "\r\n" {
                                break;
                            }
                        }
                        let mut body = vec![0; length];
                        stream.read_exact(&mut body).await.unwrap();
                        let body = String::from_utf8(body).unwrap();
                        let status = if body.contains("closedOutcomes") {
                            "400 Bad Request"
                        } else {
                            "200 OK"
                        };
                        seen.lock().unwrap().push(body);
                        let answer = format!("HTTP/1.1 {status}\r\ncontent-length: 0\r\n\r\n");
                        stream.write_all(answer.as_bytes()).await.unwrap();
                    }
                });
            }
        });
        (url, bodies)
    }

    #[tokio::test]
    async fn a_peer_that_refuses_outcomes_gets_ids_only() {
        let (url, bodies) = old_peer().await;
        let http = reqwest::Client::new();
        let auth = InternalAuth::new(
            b"0123456789abcdef".to_vec(),
            xdb_persistence::DatabaseClock::with_offset(chrono::TimeDelta::zero()),
            false,
        );
        let ids_only = Mutex::new(HashMap::new());
        let request = requests(pending([("a".into(), Some(10))])).remove(0);
        send(&http, &auth, url.clone(), &request, &ids_only).await;
        send(&http, &auth, url, &request, &ids_only).await;
        let bodies = bodies.lock().unwrap().clone();
        let sent: Vec<InternalNotifyRequest> = bodies
            .iter()
            .map(|body| serde_json::from_str(body).unwrap())
            .collect();
        let ids_only_request = InternalNotifyRequest {
            closed_outcomes: Vec::new(),
            ..request.clone()
        };
        assert_eq!(
            sent,
            [request, ids_only_request.clone(), ids_only_request],
            "refused once, then sent again and afterwards without outcomes"
        );
    }

    fn notifier() -> PeerNotifier {
        PeerNotifier {
            inner: Some(Arc::new(Inner {
                pending: Mutex::new(Pending::default()),
                wake: Notify::new(),
            })),
        }
    }

    fn sent_by(notifier: PeerNotifier) -> Vec<InternalNotifyRequest> {
        let inner = notifier.inner.unwrap();
        let pending = std::mem::take(&mut *inner.pending.lock().unwrap());
        requests(pending)
    }

    #[test]
    fn new_tasks_of_named_executions_go_with_their_names() {
        let notifier = notifier();
        notifier.new_tasks_of("e2".into());
        notifier.new_tasks_of("e1".into());
        notifier.new_tasks_of("e2".into());
        let sent = sent_by(notifier);
        assert_eq!(sent.len(), 1);
        assert!(
            sent[0].new_tasks,
            "a receiver that reads no names still wakes"
        );
        assert_eq!(sent[0].new_task_executions, ["e1", "e2"]);
    }

    #[test]
    fn an_unnamed_new_task_drops_the_names() {
        for unnamed_first in [false, true] {
            let notifier = notifier();
            if unnamed_first {
                notifier.new_tasks();
            }
            notifier.new_tasks_of("e".into());
            if !unnamed_first {
                notifier.new_tasks();
            }
            let sent = sent_by(notifier);
            assert!(sent[0].new_tasks);
            assert!(
                sent[0].new_task_executions.is_empty(),
                "receivers must search for the unnamed one"
            );
        }
    }

    #[test]
    fn too_many_names_become_a_search() {
        let notifier = notifier();
        for i in 0..=MAX_NOTIFY_IDS {
            notifier.new_tasks_of(format!("e{i}"));
        }
        let sent = sent_by(notifier);
        assert!(sent[0].new_tasks);
        assert!(sent[0].new_task_executions.is_empty());
    }

    #[test]
    fn nothing_closed_is_one_request() {
        let sent = requests(pending([]));
        assert_eq!(sent.len(), 1);
        assert!(sent[0].closed_process_execution_ids.is_empty());
    }
}
