//! Memory use of a lab container: the processes in its PID namespace,
//! summed. RSS counts shared pages once per process (an overestimate for
//! forked API workers); PSS shares them out and is the fairer total.

use super::procfs;
use serde::Serialize;

#[derive(Debug, Clone, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct MemoryUse {
    pub processes: usize,
    pub rss_bytes: u64,
    pub pss_bytes: u64,
}

/// The memory of every process that shares `init_pid`'s PID namespace.
pub fn measure(init_pid: u32) -> MemoryUse {
    let ns = |pid: u32| procfs::link(pid, "ns/pid");
    let Some(want) = ns(init_pid) else {
        return MemoryUse::default();
    };
    let Ok(mut sys) = sysinfo::System::new() else {
        return MemoryUse::default();
    };
    sys.refresh_processes_specifics(
        sysinfo::ProcessesToUpdate::All,
        true,
        sysinfo::ProcessRefreshKind::nothing().with_memory(),
    );
    let mut m = MemoryUse::default();
    for (pid, process) in sys.processes() {
        let pid = pid.as_u32();
        // Threads are listed too; count processes only.
        if process.thread_kind().is_some() || ns(pid).as_ref() != Some(&want) {
            continue;
        }
        m.processes += 1;
        m.rss_bytes += process.memory();
        m.pss_bytes += pss(pid);
    }
    m
}

/// Proportional set size of a process, from smaps_rollup.
pub(super) fn pss(pid: u32) -> u64 {
    procfs::read_string(pid, "smaps_rollup")
        .and_then(|t| {
            t.lines()
                .find_map(|l| l.strip_prefix("Pss:"))
                .and_then(|v| v.split_whitespace().next()?.parse::<u64>().ok())
        })
        .map(|kib| kib * 1024)
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    #[test]
    fn measures_our_own_namespace() {
        let m = super::measure(std::process::id());
        assert!(m.processes >= 1);
        assert!(m.rss_bytes > 0);
    }
}
