//! Pulsar CDC mode for the bench: the real Pulsar IO Debezium source (the committed
//! `pulsar-io/debezium-*-source.yaml`, registered through `xdb-pulsar-io` with the
//! standalone of scripts/ensure-pulsar.sh) captures the bench database, and the async
//! service consumes the change topics instead of claiming rows.

use std::time::Duration;

use anyhow::Context as _;
use xdb_pulsar_io::{start_capture, PulsarIoAdmin, RunningCapture};

use crate::cpu::Task;

/// How long the capture may take to start streaming or to stop.
const CAPTURE_TIMEOUT: Duration = Duration::from_secs(120);

/// Where the broker and its admin API (with the Pulsar IO functions worker) are.
#[derive(Debug, Clone)]
pub struct PulsarTarget {
    /// `pulsar://host:port` of the broker.
    pub broker_url: String,
    /// `http://host:port` of Pulsar's admin API.
    pub admin_url: String,
}

/// A running capture of the bench database; [`Capture::stop`] removes the source (and
/// its replication slot), which must happen before the database is dropped.
pub struct Capture {
    running: RunningCapture,
    /// The async service's `pulsar.topic_prefix`.
    pub topic_prefix: String,
}

impl Capture {
    /// Starts capturing `database_url` (named `name`); returns once Debezium streams.
    pub async fn start(
        target: &PulsarTarget,
        name: &str,
        database_url: &str,
    ) -> anyhow::Result<Self> {
        let topic_prefix = format!("xdbbench-{name}");
        let capture = xdb_pulsar_io::Capture {
            name: name.to_string(),
            database_url: database_url.to_string(),
            topic_prefix: topic_prefix.clone(),
            throwaway: true,
        };
        let running = start_capture(
            &PulsarIoAdmin::new(&target.admin_url),
            &capture,
            CAPTURE_TIMEOUT,
        )
        .await
        .with_context(|| format!("capturing {name} with Pulsar IO"))?;
        Ok(Self {
            running,
            topic_prefix,
        })
    }

    /// The async service's settings for consuming this capture from `target`.
    pub fn async_service_args(&self, target: &PulsarTarget) -> Vec<String> {
        [
            "--set".to_string(),
            "queue.mode=pulsar".into(),
            "--set".into(),
            format!("pulsar.service_url={}", target.broker_url),
            "--set".into(),
            format!("pulsar.topic_prefix={}", self.topic_prefix),
        ]
        .into()
    }

    pub async fn stop(self) -> anyhow::Result<()> {
        self.running
            .stop(CAPTURE_TIMEOUT)
            .await
            .context("stopping the Pulsar IO capture")
    }
}

/// Main class of the Pulsar standalone JVM (broker, bookie, metadata store and the
/// functions worker whose thread runtime runs the Pulsar IO Debezium source).
pub const STANDALONE_MAIN_CLASS: &str = "org.apache.pulsar.PulsarStandaloneStarter";
/// Where scripts/ensure-pulsar.sh keeps its state unless `XDB_STANDALONE_PULSAR_STATE` says
/// otherwise; `standalone.pid` in it is the JVM's pid (the `setsid nohup` wrapper
/// `exec`s scripts/pulsar-standalone.sh, which `exec`s java).
const DEFAULT_PULSAR_STATE: &str = "/tmp/xdb-pulsar";
/// Pulsar's broker port when neither the URL nor the config says otherwise.
const DEFAULT_BROKER_PORT: u16 = 6650;

/// The Pulsar standalone JVM serving the bench's broker: its CPU and memory are a
/// component of Pulsar CDC mode of their own.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Standalone {
    pub pid: u32,
}

impl Standalone {
    /// Finds the JVM serving `target`'s broker on this machine: the pid in
    /// scripts/ensure-pulsar.sh's pid file, else any process whose command line runs
    /// [`STANDALONE_MAIN_CLASS`]; among several (tests start brokers of their own on
    /// other ports), the one whose config sets the broker URL's port. An error naming
    /// scripts/ensure-pulsar.sh when there is none.
    pub fn find(target: &PulsarTarget) -> anyhow::Result<Standalone> {
        let state = std::env::var("XDB_STANDALONE_PULSAR_STATE")
            .unwrap_or_else(|_| DEFAULT_PULSAR_STATE.into());
        let pid_file = std::path::Path::new(&state).join("standalone.pid");
        let from_file = std::fs::read_to_string(&pid_file)
            .ok()
            .and_then(|pid| pid.trim().parse::<u32>().ok());
        let mut candidates: Vec<u32> = from_file.into_iter().collect();
        candidates.extend(
            proc_pids()
                .into_iter()
                .filter(|pid| Some(*pid) != from_file),
        );
        let jvms: Vec<(u32, Option<u16>)> = candidates
            .into_iter()
            .filter_map(|pid| {
                let args = standalone_args(pid)?;
                Some((pid, configured_broker_port(&args)))
            })
            .collect();
        let port = broker_port(&target.broker_url);
        // One JVM whose config cannot be read: it is the broker's.
        let only_unknown = match jvms.as_slice() {
            [only @ (_, None)] => Some(only),
            _ => None,
        };
        let chosen = jvms.iter().find(|(_, p)| *p == Some(port)).or(only_unknown);
        match chosen {
            Some(&(pid, _)) => Ok(Standalone { pid }),
            None => {
                let found = if jvms.is_empty() {
                    String::new()
                } else {
                    let others: Vec<String> = jvms
                        .iter()
                        .map(|(pid, p)| match p {
                            Some(p) => format!("pid {pid} on port {p}"),
                            None => format!("pid {pid} on an unknown port"),
                        })
                        .collect();
                    format!(" (found only {})", others.join(", "))
                };
                anyhow::bail!(
                    "--queue pulsar: no Apache Pulsar standalone JVM ({STANDALONE_MAIN_CLASS}) \
                     serving {} runs on this machine{found}; looked at the pid file {} and \
                     every /proc/<pid>/cmdline. Start it with scripts/ensure-pulsar.sh",
                    target.broker_url,
                    pid_file.display()
                )
            }
        }
    }

    /// The JVM and any process it started (none with the thread runtime the committed
    /// functions_worker.yml sets; a process runtime would run each source in a child
    /// JVM of its own), for CPU accounting.
    pub fn tasks(&self) -> Vec<Task> {
        let mut tree = vec![self.pid];
        let parents: Vec<(u32, u32)> = proc_pids()
            .into_iter()
            .filter_map(|pid| Some((pid, parent_of(pid)?)))
            .collect();
        let mut index = 0;
        while index < tree.len() {
            let parent = tree[index];
            tree.extend(
                parents
                    .iter()
                    .filter(|(_, p)| *p == parent)
                    .map(|(c, _)| *c),
            );
            index += 1;
        }
        tree.into_iter().map(Task::Process).collect()
    }
}

/// Every process id in /proc.
fn proc_pids() -> Vec<u32> {
    std::fs::read_dir("/proc")
        .map(|entries| {
            entries
                .filter_map(|e| e.ok()?.file_name().to_str()?.parse().ok())
                .collect()
        })
        .unwrap_or_default()
}

/// The parent pid from `/proc/<pid>/stat`.
fn parent_of(pid: u32) -> Option<u32> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    stat[stat.rfind(')')? + 2..]
        .split_whitespace()
        .nth(1)?
        .parse()
        .ok()
}

/// The command line of `pid` when it is a java process running
/// [`STANDALONE_MAIN_CLASS`].
fn standalone_args(pid: u32) -> Option<Vec<String>> {
    let comm = std::fs::read_to_string(format!("/proc/{pid}/comm")).ok()?;
    let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).ok()?;
    let args: Vec<String> = cmdline
        .split(|b| *b == 0)
        .filter(|a| !a.is_empty())
        .map(|a| String::from_utf8_lossy(a).into_owned())
        .collect();
    (comm.trim() == "java" && is_standalone(&args)).then_some(args)
}

/// Whether `args` run [`STANDALONE_MAIN_CLASS`] (an argument of its own, not a text
/// that mentions it, as `grep PulsarStandaloneStarter` does).
pub fn is_standalone(args: &[String]) -> bool {
    args.iter().any(|a| a == STANDALONE_MAIN_CLASS)
}

/// The broker port the standalone's `--config` file sets (the last
/// `brokerServicePort=` wins, as in a properties file; Pulsar's default without one).
fn configured_broker_port(args: &[String]) -> Option<u16> {
    let config = args
        .iter()
        .position(|a| a == "--config" || a == "-c")
        .and_then(|i| args.get(i + 1))?;
    let text = std::fs::read_to_string(config).ok()?;
    Some(broker_port_in_config(&text))
}

/// The last `brokerServicePort=` of a properties text; Pulsar's default without one.
pub fn broker_port_in_config(text: &str) -> u16 {
    text.lines()
        .filter_map(|l| l.trim().strip_prefix("brokerServicePort="))
        .filter_map(|v| v.trim().parse().ok())
        .next_back()
        .unwrap_or(DEFAULT_BROKER_PORT)
}

/// The port of a `pulsar://host:port` URL; Pulsar's default without one.
pub fn broker_port(url: &str) -> u16 {
    let rest = url.split_once("://").map_or(url, |(_, rest)| rest);
    let authority = rest.split(['/', ',']).next().unwrap_or(rest);
    authority
        .rsplit_once(':')
        .and_then(|(_, port)| port.parse().ok())
        .unwrap_or(DEFAULT_BROKER_PORT)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn broker_ports_of_urls_and_configs() {
        assert_eq!(broker_port("pulsar://127.0.0.1:6650"), 6650);
        assert_eq!(broker_port("pulsar://localhost:16650/"), 16650);
        assert_eq!(broker_port("pulsar://broker"), 6650);
        let config = "brokerServicePort=6650\n# pulsar-standalone.sh\nbrokerServicePort=7650\n";
        assert_eq!(broker_port_in_config(config), 7650);
        assert_eq!(broker_port_in_config("clusterName=standalone\n"), 6650);
    }

    #[test]
    fn the_main_class_must_be_an_argument_of_its_own() {
        let args = |a: &[&str]| a.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert!(is_standalone(&args(&[
            "java",
            "-cp",
            "lib/*",
            STANDALONE_MAIN_CLASS,
            "--config",
            "x.conf"
        ])));
        assert!(!is_standalone(&args(&["grep", "PulsarStandaloneStarter"])));
    }

    #[test]
    fn a_missing_standalone_names_the_script() {
        // No broker listens on port 1: whatever runs on this machine, none is found.
        let target = PulsarTarget {
            broker_url: "pulsar://127.0.0.1:1".into(),
            admin_url: "http://127.0.0.1:1".into(),
        };
        let error = Standalone::find(&target).unwrap_err().to_string();
        assert!(error.contains("scripts/ensure-pulsar.sh"), "{error}");
        assert!(error.contains(STANDALONE_MAIN_CLASS), "{error}");
    }

    #[test]
    fn the_tree_of_a_process_holds_it_and_its_children() {
        let me = Standalone {
            pid: std::process::id(),
        };
        let mut child = std::process::Command::new("sleep")
            .arg("5")
            .spawn()
            .unwrap();
        let tasks = me.tasks();
        let _ = child.kill();
        let _ = child.wait();
        assert_eq!(tasks[0], Task::Process(std::process::id()));
        assert!(tasks.contains(&Task::Process(child.id())), "{tasks:?}");
    }
}
