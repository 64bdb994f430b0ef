//! Samples a process's resident memory from `/proc/<pid>/status` (Linux).

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// Resident-memory figures of one process, in KiB.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Memory {
    /// `VmRSS`: resident now.
    pub rss_kib: u64,
    /// `VmHWM`: the kernel's high-water mark of resident memory.
    pub hwm_kib: u64,
}

/// Reads `VmRSS` and `VmHWM` of `pid`; `None` when the process is gone or not on Linux.
pub fn read(pid: u32) -> Option<Memory> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    Some(parse_status(&status))
}

fn parse_status(status: &str) -> Memory {
    let field = |name: &str| {
        status
            .lines()
            .find_map(|line| line.strip_prefix(name))
            .and_then(|rest| rest.split_whitespace().next())
            .and_then(|kib| kib.parse().ok())
            .unwrap_or(0)
    };
    Memory {
        rss_kib: field("VmRSS:"),
        hwm_kib: field("VmHWM:"),
    }
}

/// What a [`Sampler`] saw: the first sample and the peak.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct MemoryReport {
    /// `VmRSS` when sampling began (after start-up).
    pub start_kib: u64,
    /// The largest of every sampled `VmRSS` and the last `VmHWM`.
    pub peak_kib: u64,
    pub samples: u64,
}

/// Samples one process every `interval` on a background task until [`Sampler::finish`].
pub struct Sampler {
    stop: Arc<AtomicBool>,
    peak: Arc<AtomicU64>,
    task: tokio::task::JoinHandle<(u64, u64)>,
}

impl Sampler {
    pub fn start(pid: u32, interval: Duration) -> Sampler {
        let stop = Arc::new(AtomicBool::new(false));
        let peak = Arc::new(AtomicU64::new(0));
        let task = tokio::spawn({
            let (stop, peak) = (stop.clone(), peak.clone());
            async move {
                let mut ticker = tokio::time::interval(interval);
                let (mut first, mut samples) = (None, 0u64);
                while !stop.load(Ordering::Relaxed) {
                    ticker.tick().await;
                    let Some(memory) = read(pid) else { break };
                    first.get_or_insert(memory.rss_kib);
                    samples += 1;
                    peak.fetch_max(memory.rss_kib.max(memory.hwm_kib), Ordering::Relaxed);
                }
                (first.unwrap_or(0), samples)
            }
        });
        Sampler { stop, peak, task }
    }

    /// The largest resident size seen so far, in KiB.
    pub fn peak_kib(&self) -> u64 {
        self.peak.load(Ordering::Relaxed)
    }

    /// Stops sampling; call while the process still runs so its `VmHWM` counts.
    pub async fn finish(self, pid: u32) -> MemoryReport {
        if let Some(memory) = read(pid) {
            self.peak.fetch_max(memory.hwm_kib, Ordering::Relaxed);
        }
        self.stop.store(true, Ordering::Relaxed);
        let (start_kib, samples) = self.task.await.unwrap_or((0, 0));
        MemoryReport {
            start_kib,
            peak_kib: self.peak.load(Ordering::Relaxed),
            samples,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_proc_status() {
        let status = "Name:\tx\nVmHWM:\t   20480 kB\nVmRSS:\t   10240 kB\n";
        let memory = parse_status(status);
        assert_eq!(
            memory,
            Memory {
                rss_kib: 10240,
                hwm_kib: 20480
            }
        );
    }

    #[test]
    fn reads_own_memory() {
        let memory = read(std::process::id()).expect("Linux /proc");
        assert!(memory.rss_kib > 0 && memory.hwm_kib >= memory.rss_kib);
    }
}
