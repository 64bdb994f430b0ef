//! The machine a run happened on.

/// Where the bench ran.
#[derive(Debug, Clone, Default)]
pub struct Machine {
    pub cpu: String,
    pub cpus: usize,
    pub memory_mib: u64,
    pub commit: String,
    /// `/proc/loadavg`'s 1, 5 and 15 minute load averages when the report is written:
    /// other work on a shared machine shows here.
    pub load_average: String,
}

impl Machine {
    /// Reads `/proc` and `git`; unknown parts stay "unknown".
    pub fn detect() -> Machine {
        let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
        let meminfo = std::fs::read_to_string("/proc/meminfo").unwrap_or_default();
        let cpu = cpuinfo
            .lines()
            .find_map(|l| l.strip_prefix("model name"))
            .and_then(|rest| rest.split_once(':'))
            .map_or("unknown".into(), |(_, model)| model.trim().to_string());
        let memory_kib: u64 = meminfo
            .lines()
            .find_map(|l| l.strip_prefix("MemTotal:"))
            .and_then(|rest| rest.split_whitespace().next()?.parse().ok())
            .unwrap_or(0);
        let commit = std::process::Command::new("git")
            .args(["describe", "--always", "--dirty"])
            .output()
            .ok()
            .filter(|out| out.status.success())
            .map_or("unknown".into(), |out| {
                String::from_utf8_lossy(&out.stdout).trim().to_string()
            });
        let load_average = std::fs::read_to_string("/proc/loadavg")
            .map(|l| l.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
            .unwrap_or_else(|_| "unknown".into());
        Machine {
            load_average,
            cpu,
            cpus: std::thread::available_parallelism().map_or(0, |n| n.get()),
            memory_mib: memory_kib / 1024,
            commit,
        }
    }
}
