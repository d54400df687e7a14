//! What the control plane's processes use, by systemd unit: CPU time
//! between two snapshots, proportional memory (PSS) and established TCP
//! connections now. Read from `/proc` of the processes in the control
//! plane container's PID namespace; a unit is the last part of a
//! process's `name=systemd` cgroup (`nova-conductor.service`), so forked
//! workers count with their service.

use super::super::procfs;
use serde::Serialize;
use std::collections::{BTreeMap, BTreeSet};
use std::time::Instant;

/// The kernel's clock ticks per second (`getconf CLK_TCK`; 100 on every
/// Linux this runs on).
const TICKS_PER_SECOND: f64 = 100.0;

/// One process at one moment.
#[derive(Debug, Clone, PartialEq)]
struct Process {
    unit: String,
    /// When it started, in ticks since boot: a PID reused in between is
    /// another process.
    started: u64,
    /// User and system CPU time, in ticks.
    cpu_ticks: u64,
}

/// The control plane's processes at one moment.
#[derive(Debug, Clone)]
pub struct Snapshot {
    at: Instant,
    processes: BTreeMap<u32, Process>,
}

/// One unit's use over a window (CPU) and at its end (memory, sockets).
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct UnitUse {
    /// Share of one core over the window, in percent.
    pub cpu_percent: f64,
    pub pss_bytes: u64,
    pub tcp_connections: u64,
    pub processes: u64,
}

impl Snapshot {
    /// Every process in `init_pid`'s PID namespace now.
    pub fn take(init_pid: u32) -> Snapshot {
        let at = Instant::now();
        let want = procfs::link(init_pid, "ns/pid");
        let mut processes = BTreeMap::new();
        for pid in procfs::pids().unwrap_or_default() {
            if want.is_none() || procfs::link(pid, "ns/pid") != want {
                continue;
            }
            let Some(stat) = procfs::read_string(pid, "stat") else {
                continue;
            };
            let Some((cpu_ticks, started)) = parse_stat(&stat) else {
                continue;
            };
            let unit = procfs::read_string(pid, "cgroup")
                .map(|c| unit_of(&c))
                .unwrap_or_default();
            processes.insert(
                pid,
                Process {
                    unit,
                    started,
                    cpu_ticks,
                },
            );
        }
        Snapshot { at, processes }
    }

    /// CPU per unit between `self` and the later `after`; memory and TCP
    /// connections per unit at `after`. A process that started in between
    /// counts from its start; one that ended in between is not counted
    /// (the services measured are long-lived).
    pub fn window(&self, after: &Snapshot) -> BTreeMap<String, UnitUse> {
        let seconds = after.at.duration_since(self.at).as_secs_f64().max(0.001);
        let established = established_sockets(after.processes.keys().next().copied());
        let mut units: BTreeMap<String, UnitUse> = BTreeMap::new();
        for (pid, p) in &after.processes {
            let before = (self.processes.get(pid))
                .filter(|b| b.started == p.started)
                .map_or(0, |b| b.cpu_ticks);
            let u = units.entry(p.unit.clone()).or_default();
            u.processes += 1;
            u.cpu_percent +=
                p.cpu_ticks.saturating_sub(before) as f64 / TICKS_PER_SECOND / seconds * 100.0;
            u.pss_bytes += super::super::memory::pss(*pid);
            u.tcp_connections += tcp_connections(*pid, &established);
        }
        units
    }
}

/// (user + system ticks, start time) from `/proc/PID/stat`; the command
/// name in parentheses may hold spaces, so fields count from its end.
fn parse_stat(stat: &str) -> Option<(u64, u64)> {
    let rest = &stat[stat.rfind(')')? + 2..];
    let fields: Vec<&str> = rest.split(' ').collect();
    // After the name: state is field 3 of the whole line, utime 14,
    // stime 15, starttime 22.
    let field = |n: usize| fields.get(n - 3)?.parse::<u64>().ok();
    Some((field(14)? + field(15)?, field(22)?))
}

/// The systemd unit of a process from its `/proc/PID/cgroup`: the last
/// part of the `name=systemd` (or unified) hierarchy's path.
fn unit_of(cgroup: &str) -> String {
    let path = (cgroup.lines())
        .find_map(|l| {
            l.strip_prefix("1:name=systemd:")
                .or(l.split_once(":name=systemd:").map(|(_, p)| p))
        })
        .or_else(|| cgroup.lines().find_map(|l| l.strip_prefix("0::")))
        .unwrap_or("");
    let last = path.rsplit('/').next().unwrap_or("");
    if last.is_empty() {
        "(none)".into()
    } else {
        last.to_string()
    }
}

/// The socket inodes of established TCP connections in the network
/// namespace of `pid` (IPv4 and IPv6).
fn established_sockets(pid: Option<u32>) -> BTreeSet<u64> {
    let Some(pid) = pid else {
        return BTreeSet::new();
    };
    ["net/tcp", "net/tcp6"]
        .iter()
        .filter_map(|f| procfs::read_string(pid, f))
        .flat_map(|table| established_in(&table))
        .collect()
}

/// The inodes of the rows of a `/proc/net/tcp` table in state 01
/// (established).
fn established_in(table: &str) -> Vec<u64> {
    table
        .lines()
        .skip(1)
        .filter_map(|row| {
            let cols: Vec<&str> = row.split_whitespace().collect();
            (cols.get(3) == Some(&"01")).then(|| cols.get(9)?.parse().ok())?
        })
        .collect()
}

/// How many of `pid`'s open files are established TCP sockets.
fn tcp_connections(pid: u32, established: &BTreeSet<u64>) -> u64 {
    let proc = crate::host::Files::new("/", false);
    let dir = format!("/proc/{pid}/fd");
    let Ok(fds) = proc.list(&dir) else {
        return 0;
    };
    fds.iter()
        .filter_map(|fd| proc.read_link(format!("{dir}/{fd}")).ok().flatten())
        .filter_map(|target| {
            let t = target.to_string_lossy().into_owned();
            t.strip_prefix("socket:[")?.strip_suffix(']')?.parse().ok()
        })
        .filter(|inode| established.contains(inode))
        .count() as u64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stat_fields_count_from_the_end_of_the_name() {
        let stat = "4242 (uwsgi (worker) 1) S 1 4242 4242 0 -1 4194560 1 0 0 0 \
                    150 50 0 0 20 0 4 0 98765 1000 10 18446744073709551615";
        assert_eq!(parse_stat(stat), Some((200, 98765)));
        assert_eq!(parse_stat("garbage"), None);
    }

    #[test]
    fn the_unit_is_the_last_part_of_the_systemd_path() {
        let cg = "9:name=systemd:/payload/system.slice/nova-conductor.service\n0::/\n";
        assert_eq!(unit_of(cg), "nova-conductor.service");
        assert_eq!(
            unit_of("0::/system.slice/mariadb.service\n"),
            "mariadb.service"
        );
        assert_eq!(unit_of(""), "(none)");
    }

    #[test]
    fn only_established_rows_count() {
        let table = "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\n\
   0: 0100007F:1F90 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 1111 1\n\
   1: 0100007F:1F90 0100007F:C350 01 00000000:00000000 00:00000000 00000000     0        0 2222 1\n";
        assert_eq!(established_in(table), vec![2222]);
    }

    #[test]
    fn our_own_namespace_uses_cpu_and_memory() {
        let before = Snapshot::take(std::process::id());
        let mut x = 0u64;
        let t = Instant::now();
        while t.elapsed().as_millis() < 300 {
            x = x.wrapping_mul(31).wrapping_add(7);
        }
        assert!(x != 1);
        let after = Snapshot::take(std::process::id());
        let units = before.window(&after);
        let total: f64 = units.values().map(|u| u.cpu_percent).sum();
        let pss: u64 = units.values().map(|u| u.pss_bytes).sum();
        assert!(total > 10.0, "{units:?}");
        assert!(pss > 0, "{units:?}");
    }
}
