//! CPU time of processes and of the whole machine, from `/proc` (Linux), to show where
//! the time of a scenario goes.

use std::collections::HashMap;

/// CPU accounting group: the server processes or threads serving the bench database's
/// connections.
pub const DB_SESSIONS: &str = "database sessions";
/// CPU accounting group: the whole database server on this machine (every process or
/// thread; includes [`DB_SESSIONS`], and other databases' work).
pub const DB_SERVER: &str = "database server";
/// CPU accounting group of Pulsar CDC mode: the Pulsar standalone JVM (broker, bookie,
/// metadata store, and the functions worker running the Pulsar IO Debezium source).
pub const PULSAR: &str = "Pulsar standalone JVM (broker + bookie + Pulsar IO Debezium source)";
/// CPU accounting group: the bench process (worker and client).
pub const BENCH: &str = "xdb-bench (worker + client)";

/// A process, or one thread of a process, whose CPU time is counted.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Task {
    /// The whole process, every thread.
    Process(u32),
    /// One thread (`/proc/<tid>/stat` would count the whole process).
    Thread { pid: u32, tid: u32 },
}

impl Task {
    /// CPU seconds (user + system) used so far; `None` when it is gone.
    pub fn seconds(self) -> Option<f64> {
        match self {
            Task::Process(pid) => process_seconds(pid),
            Task::Thread { pid, tid } => stat_seconds(&format!("/proc/{pid}/task/{tid}/stat")),
        }
    }
}

/// CPU seconds (user + system) `pid` has used; `None` when it is gone.
pub fn process_seconds(pid: u32) -> Option<f64> {
    stat_seconds(&format!("/proc/{pid}/stat"))
}

fn stat_seconds(path: &str) -> Option<f64> {
    let stat = std::fs::read_to_string(path).ok()?;
    // Fields after the command name, which is in parentheses and may hold spaces.
    let rest = &stat[stat.rfind(')')? + 2..];
    let fields: Vec<&str> = rest.split_whitespace().collect();
    // utime and stime are fields 14 and 15 of the line, 12 and 13 after the name.
    let ticks: u64 = fields.get(11)?.parse::<u64>().ok()? + fields.get(12)?.parse::<u64>().ok()?;
    Some(ticks as f64 / ticks_per_second())
}

/// `(busy, total)` CPU seconds of the whole machine since boot, over all CPUs.
pub fn machine_seconds() -> Option<(f64, f64)> {
    let stat = std::fs::read_to_string("/proc/stat").ok()?;
    let line = stat.lines().find(|l| l.starts_with("cpu "))?;
    let ticks: Vec<u64> = line
        .split_whitespace()
        .skip(1)
        .filter_map(|v| v.parse().ok())
        .collect();
    // user nice system idle iowait irq softirq steal (guest time is inside user).
    let total: u64 = ticks.iter().take(8).sum();
    let idle = ticks.get(3)? + ticks.get(4).unwrap_or(&0);
    let hz = ticks_per_second();
    Some(((total - idle) as f64 / hz, total as f64 / hz))
}

fn ticks_per_second() -> f64 {
    // SAFETY: sysconf only reads a configuration value.
    let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    if hz > 0 {
        hz as f64
    } else {
        100.0
    }
}

/// CPU seconds of named groups of processes at one moment, plus the machine's.
#[derive(Debug, Clone, Default)]
pub struct CpuSnapshot {
    /// Group name → task → CPU seconds.
    groups: HashMap<String, HashMap<Task, f64>>,
    machine: Option<(f64, f64)>,
}

impl CpuSnapshot {
    /// Reads `groups` (name, tasks) and the machine counters.
    pub fn take(groups: &[(&str, Vec<Task>)]) -> CpuSnapshot {
        let groups = groups
            .iter()
            .map(|(name, tasks)| {
                let times = tasks
                    .iter()
                    .filter_map(|&task| Some((task, task.seconds()?)))
                    .collect();
                (name.to_string(), times)
            })
            .collect();
        CpuSnapshot {
            groups,
            machine: machine_seconds(),
        }
    }

    /// CPU used between `earlier` and `self`: per group in `order`, counting a task
    /// missing from `earlier` from zero; `None` for a group none of whose tasks could be
    /// read (not on this machine).
    pub fn since(&self, earlier: &CpuSnapshot, order: &[&str]) -> CpuUsage {
        let groups = order
            .iter()
            .map(|name| {
                let now = self.groups.get(*name).cloned().unwrap_or_default();
                let before = earlier.groups.get(*name);
                let used = (!now.is_empty()).then(|| {
                    now.iter()
                        .map(|(pid, s)| s - before.and_then(|b| b.get(pid)).unwrap_or(&0.0))
                        .sum()
                });
                (name.to_string(), used)
            })
            .collect();
        let machine = match (self.machine, earlier.machine) {
            (Some((busy, total)), Some((busy0, total0))) => Some((busy - busy0, total - total0)),
            _ => None,
        };
        CpuUsage { groups, machine }
    }
}

/// CPU seconds used over an interval.
#[derive(Debug, Clone, Default)]
pub struct CpuUsage {
    /// (group, CPU seconds), in the requested order; `None` when not measurable.
    pub groups: Vec<(String, Option<f64>)>,
    /// (busy, total) CPU seconds of the machine, every process included.
    pub machine: Option<(f64, f64)>,
}

impl CpuUsage {
    /// Busy share of the machine's CPUs over the interval, 0 to 1.
    pub fn machine_busy(&self) -> Option<f64> {
        self.machine
            .map(|(busy, total)| if total > 0.0 { busy / total } else { 0.0 })
    }

    /// CPU seconds of group `name`, when measured.
    pub fn group(&self, name: &str) -> Option<f64> {
        self.groups.iter().find(|(n, _)| n == name)?.1
    }

    /// Machine CPU seconds not accounted to any group (other work on the machine).
    /// [`DB_SESSIONS`] is part of [`DB_SERVER`] and counts once.
    pub fn unaccounted(&self) -> Option<f64> {
        let server_measured = self.group(DB_SERVER).is_some();
        let ours: f64 = self
            .groups
            .iter()
            .filter(|(name, _)| !(server_measured && name == DB_SESSIONS))
            .filter_map(|(_, s)| *s)
            .sum();
        self.machine.map(|(busy, _)| (busy - ours).max(0.0))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_own_cpu_and_the_machine() {
        let mut x = 0u64;
        for i in 0..5_000_000u64 {
            x = x.wrapping_add(i * i);
        }
        assert!(x > 0);
        assert!(process_seconds(std::process::id()).is_some());
        // SAFETY: gettid(2) has no preconditions.
        let tid = unsafe { libc::gettid() } as u32;
        let thread = Task::Thread {
            pid: std::process::id(),
            tid,
        };
        assert!(thread.seconds().is_some());
        let (busy, total) = machine_seconds().expect("Linux /proc/stat");
        assert!(total >= busy && busy > 0.0);
    }

    #[test]
    fn differences_count_new_pids_from_zero() {
        let me = Task::Process(std::process::id());
        let before = CpuSnapshot::take(&[("me", vec![me])]);
        let mut after = before.clone();
        after.groups.get_mut("me").unwrap().insert(me, 10.0);
        after
            .groups
            .get_mut("me")
            .unwrap()
            .insert(Task::Process(u32::MAX), 1.0);
        let usage = after.since(&before, &["me"]);
        let expected = 10.0 - before.groups["me"][&me] + 1.0;
        assert!((usage.group("me").unwrap() - expected).abs() < 1e-9);
        let gone = CpuSnapshot::take(&[("gone", vec![Task::Process(u32::MAX)])]);
        assert_eq!(gone.since(&gone, &["gone"]).group("gone"), None);
    }
}
