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

/// Proportional set size of `pid` in KiB (`Pss` of `/proc/<pid>/smaps_rollup`: each
/// shared page divided among the processes that map it, so the sum over processes
/// counts shared memory once); `None` when the process is gone or unreadable.
pub fn pss_kib(pid: u32) -> Option<u64> {
    let rollup = std::fs::read_to_string(format!("/proc/{pid}/smaps_rollup")).ok()?;
    rollup
        .lines()
        .find_map(|line| line.strip_prefix("Pss:"))
        .and_then(|rest| rest.split_whitespace().next())
        .and_then(|kib| kib.parse().ok())
}

/// The summed proportional set size of `pids` (those still readable) as a [`Memory`]
/// (no high-water mark); `None` when none is readable.
pub fn pss_of(pids: &[u32]) -> Option<Memory> {
    let sizes: Vec<u64> = pids.iter().filter_map(|pid| pss_kib(*pid)).collect();
    (!sizes.is_empty()).then(|| Memory {
        rss_kib: sizes.iter().sum(),
        hwm_kib: 0,
    })
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
    /// Samples `pid`'s `VmRSS`, and its `VmHWM` (its whole life's peak): for a process
    /// started for the run.
    pub fn start(pid: u32, interval: Duration) -> Sampler {
        Sampler::watch(interval, move || read(pid))
    }

    /// Samples `pid`'s `VmRSS` alone: for a process that was running before the run
    /// (the bench itself, the Pulsar JVM), whose `VmHWM` tells about earlier work.
    pub fn start_rss(pid: u32, interval: Duration) -> Sampler {
        Sampler::watch(interval, move || {
            read(pid).map(|m| Memory { hwm_kib: 0, ..m })
        })
    }

    /// Samples whatever `read` measures (`None`: gone, which ends the sampling).
    pub fn watch(
        interval: Duration,
        read: impl Fn() -> Option<Memory> + Send + 'static,
    ) -> Sampler {
        let stop = Arc::new(AtomicBool::new(false));
        let peak = Arc::new(AtomicU64::new(0));
        let task = tokio::spawn({
            let (stop, peak) = (stop.clone(), peak.clone());
            async move {
                let mut ticker = tokio::time::interval(interval);
                let (mut first, mut samples) = (None, 0u64);
                while !stop.load(Ordering::Relaxed) {
                    ticker.tick().await;
                    let Some(memory) = read() else { break };
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
        self.finish_sampled().await
    }

    /// Stops sampling: the samples alone.
    pub async fn finish_sampled(mut self) -> MemoryReport {
        self.stop.store(true, Ordering::Relaxed);
        let (start_kib, samples) = (&mut self.task).await.unwrap_or((0, 0));
        MemoryReport {
            start_kib,
            peak_kib: self.peak.load(Ordering::Relaxed),
            samples,
        }
    }
}

impl Drop for Sampler {
    /// A sampler dropped unfinished (a run that failed) stops sampling at its next tick.
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
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
        let pss = pss_kib(std::process::id()).expect("Linux /proc smaps_rollup");
        let after = read(std::process::id()).unwrap();
        assert!(pss > 0 && pss <= after.hwm_kib, "{pss} {after:?}");
        assert_eq!(pss_of(&[u32::MAX]), None);
    }

    #[tokio::test]
    async fn rss_only_sampling_leaves_out_the_high_water_mark() {
        let sampler = Sampler::start_rss(std::process::id(), Duration::from_millis(5));
        tokio::time::sleep(Duration::from_millis(30)).await;
        let report = sampler.finish_sampled().await;
        let now = read(std::process::id()).unwrap();
        assert!(report.samples > 0 && report.start_kib > 0);
        assert!(report.peak_kib <= now.hwm_kib);
    }
}
