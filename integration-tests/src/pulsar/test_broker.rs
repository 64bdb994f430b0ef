//! A Pulsar standalone of one test's own, which the test may kill and restart.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

/// An Apache Pulsar standalone of one test's own, on free ports, so the test may kill
/// and restart it without disturbing the shared broker (scripts/pulsar-standalone.sh,
/// with the artefacts of scripts/ensure-pulsar.sh). Killed when dropped; a test that
/// panics keeps its state and prints how each start went.
pub struct TestBroker {
    child: Option<Child>,
    state: PathBuf,
    broker_port: u16,
    web_port: u16,
    bookie_port: u16,
    functions: bool,
    /// A pulsar+ssl:// listener's port and the directory of its certificate files.
    tls: Option<(u16, PathBuf)>,
    /// How each start went, oldest first ("up after 12.3s", "exited (…) after …").
    starts: Vec<String>,
}

/// A free port below the kernel's ephemeral range, for the broker to listen on.
///
/// A port the kernel hands out to outgoing connections may be taken by one while the
/// broker is down between a kill and its restart; the restarted JVM then cannot bind it
/// ("Address already in use", even with SO_REUSEADDR) and exits, at every attempt while
/// that connection lives. Ports below the range are never handed out that way.
fn free_port() -> u16 {
    let ephemeral_from = std::fs::read_to_string("/proc/sys/net/ipv4/ip_local_port_range")
        .ok()
        .and_then(|range| range.split_whitespace().next()?.parse::<u16>().ok())
        .unwrap_or(32768);
    // Above the ports of the services the tests run (PostgreSQL, MariaDB, Pulsar).
    const FROM: u16 = 20000;
    assert!(
        ephemeral_from > FROM + 1000,
        "the ephemeral port range starts at {ephemeral_from}: no room below it for test brokers"
    );
    for _ in 0..1000 {
        let port = rand::Rng::gen_range(&mut rand::thread_rng(), FROM..ephemeral_from);
        if std::net::TcpListener::bind(("127.0.0.1", port)).is_ok() {
            return port;
        }
    }
    panic!("no free port in {FROM}..{ephemeral_from}")
}

/// The body of a GET, or nothing when the broker does not answer.
async fn body(http: &reqwest::Client, url: &str) -> String {
    match http.get(url).send().await {
        Ok(response) => response.text().await.unwrap_or_default(),
        Err(_) => String::new(),
    }
}

/// How long a standalone may take to start before the attempt is given up (killed and
/// started again): about 10 s on an idle 2-core machine, 20–40 s beside a busy suite.
const BROKER_START: Duration = Duration::from_secs(150);

/// Starts of a standalone that fails during start-up before the test fails.
///
/// scripts/pulsar-standalone.sh clears what made most restarts fail: the ephemeral
/// nodes a killed standalone leaves in its metadata store, which made the restarted
/// bookie's registration flap until the JVM exited (pulsar-io/standalone/
/// ClearStaleEphemerals.java says how). A start may still exit, or hang, for reasons of
/// its own on a loaded machine; whatever runs a broker starts it again then, and so do
/// the tests.
const START_ATTEMPTS: usize = 3;

/// Why one start did not come up.
enum StartFailure {
    Exited(ExitStatus),
    NotHealthy,
}

/// The last `count` lines of the log at `path` that `keep` selects, each cut to 300
/// characters: to show why a start failed without burying the panic.
fn log_lines(path: &Path, count: usize, keep: impl Fn(&str) -> bool) -> String {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let lines: Vec<&str> = text.lines().filter(|line| keep(line)).collect();
    lines[lines.len().saturating_sub(count)..]
        .iter()
        .map(|line| line.chars().take(300).collect::<String>())
        .collect::<Vec<_>>()
        .join("\n")
}

impl TestBroker {
    /// A broker without Pulsar IO.
    pub async fn start() -> Self {
        Self::launch(false).await
    }

    /// A broker whose functions worker runs Debezium sources
    /// ([`CdcCapture::start_on`](super::CdcCapture::start_on)).
    pub async fn start_with_pulsar_io() -> Self {
        Self::launch(true).await
    }

    /// A broker without Pulsar IO that also listens for `pulsar+ssl://` with `server`'s
    /// certificate (signed by `ca`): [`TestBroker::tls_url`].
    pub async fn start_with_tls(ca: &crate::tls::TestCa, server: &crate::tls::Issued) -> Self {
        Self::launch_with(false, Some((ca, server))).await
    }

    async fn launch(functions: bool) -> Self {
        Self::launch_with(functions, None).await
    }

    async fn launch_with(
        functions: bool,
        tls: Option<(&crate::tls::TestCa, &crate::tls::Issued)>,
    ) -> Self {
        let broker_port = free_port();
        let state = std::env::temp_dir().join(format!(
            "xdb-test-pulsar-{broker_port}-{}",
            std::process::id()
        ));
        let mut broker = Self {
            child: None,
            state,
            broker_port,
            web_port: free_port(),
            bookie_port: free_port(),
            functions,
            tls: None,
            starts: Vec::new(),
        };
        if let Some((ca, server)) = tls {
            let dir = broker.state.join("tls");
            std::fs::create_dir_all(&dir).expect("the broker's TLS directory");
            std::fs::write(dir.join("server.pem"), &server.cert_pem).expect("the certificate");
            std::fs::write(dir.join("server.key"), &server.key_pem).expect("the key");
            std::fs::copy(ca.ca_file(), dir.join("ca.pem")).expect("the CA certificate");
            broker.tls = Some((free_port(), dir));
        }
        broker.start_again_until_up().await;
        broker
    }

    fn log(&self) -> PathBuf {
        self.state.join("standalone.log")
    }

    /// Starts the standalone, again when a start fails (see [`START_ATTEMPTS`]); the
    /// attempts it took.
    async fn start_again_until_up(&mut self) -> usize {
        for attempt in 1..=START_ATTEMPTS {
            let began = Instant::now();
            let failure = match self.spawn_and_wait().await {
                Ok(()) => {
                    self.starts
                        .push(format!("up after {:.1?}", began.elapsed()));
                    return attempt;
                }
                Err(StartFailure::Exited(status)) => format!("exited ({status})"),
                Err(StartFailure::NotHealthy) => {
                    self.kill();
                    "not healthy, killed".to_string()
                }
            };
            self.starts
                .push(format!("{failure} after {:.1?}", began.elapsed()));
            assert!(
                attempt < START_ATTEMPTS,
                "the test broker failed to start {START_ATTEMPTS} times ({}); {} ends with \
                 (its artefacts come from scripts/ensure-pulsar.sh):\n{}",
                self.starts.join("; "),
                self.log().display(),
                log_lines(&self.log(), 30, |_| true)
            );
            eprintln!(
                "the test broker {failure}; starting it again. {} ends with:\n{}",
                self.log().display(),
                log_lines(&self.log(), 30, |_| true)
            );
        }
        unreachable!("the last attempt returns or panics")
    }

    /// Starts the standalone and waits until it is healthy.
    async fn spawn_and_wait(&mut self) -> Result<(), StartFailure> {
        let script = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../scripts/pulsar-standalone.sh"
        );
        let mut command = Command::new(script);
        command
            .arg(&self.state)
            .args(["--broker-port", &self.broker_port.to_string()])
            .args(["--web-port", &self.web_port.to_string()])
            .args(["--bookie-port", &self.bookie_port.to_string()])
            .env("XDB_STANDALONE_PULSAR_HEAP", "512m");
        if !self.functions {
            command.arg("--no-functions-worker");
        }
        if let Some((port, dir)) = &self.tls {
            command
                .args(["--tls-port", &port.to_string()])
                .arg("--tls-dir")
                .arg(dir);
        }
        std::fs::create_dir_all(&self.state).expect("the broker's state directory");
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(self.log())
            .expect("the broker's log");
        let child = command
            .stdin(Stdio::null())
            .stdout(log.try_clone().expect("log"))
            .stderr(log)
            .spawn()
            .unwrap_or_else(|e| panic!("cannot run {script}: {e}"));
        self.child = Some(child);
        let health = format!("{}/admin/v2/brokers/health", self.admin_url());
        let workers = format!("{}/admin/v3/sources/builtinsources", self.admin_url());
        let leader = format!("{}/admin/v2/worker/cluster/leader/ready", self.admin_url());
        let namespaces = format!("{}/admin/v2/namespaces/public", self.admin_url());
        let http = reqwest::Client::new();
        let deadline = Instant::now() + BROKER_START;
        loop {
            // A standalone answers its health check before it has created its default
            // namespace: topics and sources there are refused ("Namespace does not exist")
            // until it has.
            let healthy = body(&http, &health).await == "ok"
                && body(&http, &namespaces)
                    .await
                    .contains("\"public/default\"");
            // Until its functions worker leads, Pulsar IO refuses new sources ("Leader
            // not yet ready").
            let worker_ready = !self.functions
                || (body(&http, &workers).await.contains("debezium-postgres")
                    && body(&http, &leader).await == "true");
            if healthy && worker_ready {
                return Ok(());
            }
            if let Some(status) = self
                .child
                .as_mut()
                .and_then(|c| c.try_wait().ok().flatten())
            {
                self.child = None;
                return Err(StartFailure::Exited(status));
            }
            if Instant::now() >= deadline {
                return Err(StartFailure::NotHealthy);
            }
            tokio::time::sleep(Duration::from_millis(250)).await;
        }
    }

    /// `pulsar://127.0.0.1:<port>`.
    pub fn url(&self) -> String {
        format!("pulsar://127.0.0.1:{}", self.broker_port)
    }

    /// `pulsar+ssl://127.0.0.1:<port>` of a broker started with TLS.
    pub fn tls_url(&self) -> String {
        let (port, _) = self.tls.as_ref().expect("a broker started with TLS");
        format!("pulsar+ssl://127.0.0.1:{port}")
    }

    /// `http://127.0.0.1:<port>`.
    pub fn admin_url(&self) -> String {
        format!("http://127.0.0.1:{}", self.web_port)
    }

    /// Kills the broker at once (SIGKILL), as a crash or a lost host would.
    pub fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// Kills the broker and starts it again on the same ports and data (topics,
    /// subscriptions, registered sources and their offsets survive); the starts it took
    /// (see [`START_ATTEMPTS`]).
    pub async fn restart(&mut self) -> usize {
        self.kill();
        self.start_again_until_up().await
    }

    /// Whether the broker's JVM still runs, and if not how it ended.
    fn running_or_exit(&mut self) -> String {
        match self.child.as_mut().map(|c| c.try_wait()) {
            None => "not running (killed, or it never came up)".to_string(),
            Some(Ok(None)) => "still running".to_string(),
            Some(Ok(Some(status))) => format!("exited by itself ({status})"),
            Some(Err(e)) => format!("unknown: {e}"),
        }
    }
}

impl Drop for TestBroker {
    fn drop(&mut self) {
        // A failing test keeps the broker's log and data to look at, and says how the
        // broker fared: the end of a test's output is what a CI log keeps.
        if std::thread::panicking() {
            let fate = self.running_or_exit();
            eprintln!(
                "kept the test broker's state: {}\nthe test broker's starts: {}; at the \
                 panic it was {}; the last errors of its log:\n{}",
                self.state.display(),
                self.starts.join("; "),
                fate,
                log_lines(&self.log(), 8, |line| line.contains(" ERROR "))
            );
            self.kill();
        } else {
            self.kill();
            let _ = std::fs::remove_dir_all(&self.state);
        }
    }
}
