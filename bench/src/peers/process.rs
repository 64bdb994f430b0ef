//! A peer's programs as child processes in a process group of their own, always stopped
//! (the whole group), and the process trees the bench measures.

use std::fs::File;
use std::os::unix::process::CommandExt as _;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::Context as _;

use crate::cpu::Task;
use crate::rss::Memory;

/// How long a peer's program gets to exit after SIGINT before its group is killed.
const STOP_GRACE: Duration = Duration::from_secs(10);

/// A running program of a peer; its process group is stopped when dropped.
pub struct PeerProcess {
    name: String,
    child: Child,
    log: PathBuf,
}

impl PeerProcess {
    /// Starts `command` in a new process group, its output in `<log_dir>/<name>.log`.
    pub fn spawn(name: &str, mut command: Command, log_dir: &Path) -> anyhow::Result<PeerProcess> {
        let log = log_dir.join(format!("{name}.log"));
        let out = File::create(&log).with_context(|| format!("creating {}", log.display()))?;
        let child = command
            .stdin(Stdio::null())
            .stdout(out.try_clone()?)
            .stderr(out)
            // Its own group: stopping it stops whatever it started, and nothing else.
            .process_group(0)
            .spawn()
            .with_context(|| format!("starting {name}: {command:?}"))?;
        Ok(PeerProcess {
            name: name.to_string(),
            child,
            log,
        })
    }

    pub fn name(&self) -> &str {
        &self.name
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Fails, with the end of its log, if it has exited.
    pub fn ensure_running(&mut self) -> anyhow::Result<()> {
        if let Some(status) = self.child.try_wait()? {
            anyhow::bail!(
                "{} exited ({status}); its log ({}) ends with:\n{}",
                self.name,
                self.log.display(),
                self.log_tail()
            );
        }
        Ok(())
    }

    /// The last lines of its log.
    pub fn log_tail(&self) -> String {
        let text = std::fs::read_to_string(&self.log).unwrap_or_default();
        let lines: Vec<&str> = text.lines().collect();
        lines[lines.len().saturating_sub(20)..].join("\n")
    }

    /// SIGINT to its group, then SIGKILL to the group after the grace period.
    pub fn stop(&mut self) {
        let Ok(group) = libc::pid_t::try_from(self.child.id()) else {
            return;
        };
        if self.child.try_wait().ok().flatten().is_none() {
            // SAFETY: kill(2) only sends a signal, to the group this child leads.
            unsafe { libc::kill(-group, libc::SIGINT) };
            let deadline = Instant::now() + STOP_GRACE;
            while Instant::now() < deadline && self.child.try_wait().ok().flatten().is_none() {
                std::thread::sleep(Duration::from_millis(20));
            }
        }
        // SAFETY: as above; whatever of the group is left (the leader may be gone).
        unsafe { libc::kill(-group, libc::SIGKILL) };
        let _ = self.child.wait();
    }
}

impl Drop for PeerProcess {
    fn drop(&mut self) {
        self.stop();
    }
}

/// `(pid, parent pid)` of a `/proc/<pid>/stat` line.
pub fn parse_stat_parent(stat: &str) -> Option<(u32, u32)> {
    let pid = stat.split_whitespace().next()?.parse().ok()?;
    // The command name is in parentheses and may hold spaces: fields resume after ')'.
    let rest = &stat[stat.rfind(')')? + 1..];
    let parent = rest.split_whitespace().nth(1)?.parse().ok()?;
    Some((pid, parent))
}

/// `root` and every process descended from it, from `(pid, parent)` pairs.
pub fn descendants(root: u32, pairs: &[(u32, u32)]) -> Vec<u32> {
    let mut tree = vec![root];
    let mut next = 0;
    while next < tree.len() {
        let parent = tree[next];
        tree.extend(
            pairs
                .iter()
                .filter(|(_, p)| *p == parent)
                .map(|(pid, _)| *pid),
        );
        next += 1;
    }
    tree
}

/// The running process tree of `root` (empty when `root` is gone).
pub fn tree(root: u32) -> Vec<u32> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    let pairs: Vec<(u32, u32)> = entries
        .flatten()
        .filter(|e| {
            e.file_name()
                .to_string_lossy()
                .bytes()
                .all(|b| b.is_ascii_digit())
        })
        .filter_map(|e| std::fs::read_to_string(e.path().join("stat")).ok())
        .filter_map(|stat| parse_stat_parent(&stat))
        .collect();
    if !pairs.iter().any(|(pid, _)| *pid == root) {
        return Vec::new();
    }
    descendants(root, &pairs)
}

/// The tree of `root` as CPU accounting tasks.
pub fn tree_tasks(root: u32) -> Vec<Task> {
    tree(root).into_iter().map(Task::Process).collect()
}

/// The summed resident size of the tree of `root`; `None` when it is gone.
pub fn tree_memory(root: u32) -> Option<Memory> {
    let sizes: Vec<u64> = tree(root)
        .into_iter()
        .filter_map(crate::rss::read)
        .map(|m| m.rss_kib)
        .collect();
    (!sizes.is_empty()).then(|| Memory {
        rss_kib: sizes.iter().sum(),
        hwm_kib: 0,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_parent_follows_a_command_name_with_spaces_and_parentheses() {
        let stat = "4242 (node (main) x) S 17 4242 4242 0 -1 4194560";
        assert_eq!(parse_stat_parent(stat), Some((4242, 17)));
        assert_eq!(parse_stat_parent("garbage"), None);
    }

    #[test]
    fn descendants_are_the_whole_subtree_and_nothing_else() {
        let pairs = [(1, 0), (10, 1), (11, 10), (12, 11), (20, 1), (13, 10)];
        let mut tree = descendants(10, &pairs);
        tree.sort_unstable();
        assert_eq!(tree, vec![10, 11, 12, 13]);
        assert_eq!(descendants(12, &pairs), vec![12]);
    }

    #[test]
    fn measures_its_own_tree() {
        let me = std::process::id();
        assert!(tree(me).contains(&me));
        assert!(tree_memory(me).is_some_and(|m| m.rss_kib > 0));
        assert!(tree(u32::MAX).is_empty());
    }
}
