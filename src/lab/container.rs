//! Lab containers: systemd-nspawn with systemd as PID 1, each in a network
//! namespace of the lab. Facts from shared/LAB.md: `--register=no` (no
//! machined on the host), never `--console=passive` (PID 1 blocks once its
//! console buffer fills), enter with `nsenter -t <pid of its systemd> -a`.

use super::nsenter::ContainerRunner;
use super::procfs;
use crate::host::Files;
use crate::host::command::{Cmd, spawn_daemon};
use crate::host::read::ReadSpec;
use crate::host::systemd::Systemd;
use anyhow::{Result, bail};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// How to boot one container.
#[derive(Debug, Clone)]
pub struct ContainerSpec {
    pub name: String,
    pub rootfs: PathBuf,
    pub netns: String,
    /// (host path, container path) bound read-only.
    pub binds_ro: Vec<(PathBuf, String)>,
    /// (host path, container path) bound writable.
    pub binds: Vec<(PathBuf, String)>,
    /// Console output goes here.
    pub log: PathBuf,
}

/// How far a container must come before it counts as up.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Readiness {
    /// Every unit started: systemd says running (or degraded).
    Running,
    /// Its systemd reached basic.target and answers: enough to enter it.
    /// Units that wait for a link that is cut may still be starting.
    Reachable,
}

/// Start a container: its nspawn process, then its systemd, whose PID it
/// returns. `on_nspawn` gets nspawn's PID as soon as it runs, to record it
/// before anything else can fail, so `dcn lab down` can stop it whatever
/// happens next.
pub fn start(
    files: &Files,
    spec: &ContainerSpec,
    timeout: Duration,
    on_nspawn: impl FnOnce(u32) -> Result<()>,
) -> Result<u32> {
    let mut cmd = Cmd::new(format!("booting container {}", spec.name), "systemd-nspawn")
        // /proc/sys/net writable: OVS and the metadata agent set sysctls.
        .env("SYSTEMD_NSPAWN_API_VFS_WRITABLE", "network")
        .args([
            "--quiet",
            "--register=no",
            "--keep-unit",
            "--boot",
            "--console=pipe",
        ])
        .arg(format!("--machine={}", spec.name))
        .arg(format!("--directory={}", spec.rootfs.display()))
        .arg(format!(
            "--network-namespace-path=/run/netns/{}",
            spec.netns
        ))
        // OVS needs to create tap devices and change links.
        .arg("--capability=CAP_NET_ADMIN")
        .arg("--bind=/dev/net/tun");
    for (host, inside) in &spec.binds_ro {
        cmd = cmd.arg(format!("--bind-ro={}:{inside}", host.display()));
    }
    for (host, inside) in &spec.binds {
        cmd = cmd.arg(format!("--bind={}:{inside}", host.display()));
    }
    cmd = cmd.args(["--", "systemd.show_status=false"]);
    let nspawn = spawn_daemon(&cmd, &spec.log)?;
    on_nspawn(nspawn)?;
    let deadline = Instant::now() + timeout;
    loop {
        if !alive(nspawn) {
            reap(nspawn);
            bail!(
                "container {} exited while booting; its console log {}:\n{}",
                spec.name,
                spec.log.display(),
                log_tail(files, &spec.log)
            );
        }
        if let Some(init) = find_init(nspawn) {
            return Ok(init);
        }
        if Instant::now() >= deadline {
            bail!(
                "container {} did not start systemd within {}s",
                spec.name,
                timeout.as_secs()
            );
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// Wait until the container's systemd is as far as `ready` asks.
pub fn wait_ready(
    files: &Files,
    spec: &ContainerSpec,
    init: u32,
    ready: Readiness,
    timeout: Duration,
) -> Result<()> {
    let deadline = Instant::now() + timeout;
    let inside = ContainerRunner::new(init);
    let systemd = Systemd::new(&inside).timeout(Duration::from_secs(10));
    loop {
        let state = systemd.system_state().unwrap_or_default();
        let done = match ready {
            Readiness::Running => state == "running" || state == "degraded",
            Readiness::Reachable => {
                matches!(state.as_str(), "running" | "degraded" | "starting")
                    && systemd.is_active("basic.target").unwrap_or(false)
            }
        };
        if done {
            return Ok(());
        }
        if !alive(init) {
            bail!(
                "container {} stopped while booting; its console log {}:\n{}",
                spec.name,
                spec.log.display(),
                log_tail(files, &spec.log)
            );
        }
        if Instant::now() >= deadline {
            bail!(
                "container {} is still {state:?} after {}s; its console log {}:\n{}",
                spec.name,
                timeout.as_secs(),
                spec.log.display(),
                log_tail(files, &spec.log)
            );
        }
        std::thread::sleep(Duration::from_millis(300));
    }
}

/// Whether a process exists and is not a zombie.
pub fn alive(pid: u32) -> bool {
    procfs::read_string(pid, "stat")
        .as_deref()
        .and_then(stat_state)
        .is_some_and(|s| s != 'Z' && s != 'X')
}

/// (state, ppid) from a /proc/PID/stat line; the command name may contain
/// spaces and parentheses, so parse from the last ')'.
fn stat_fields(stat: &str) -> Option<(char, u32)> {
    let rest = &stat[stat.rfind(')')? + 2..];
    let mut f = rest.split(' ');
    let state = f.next()?.chars().next()?;
    let ppid = f.next()?.parse().ok()?;
    Some((state, ppid))
}

fn stat_state(stat: &str) -> Option<char> {
    stat_fields(stat).map(|(s, _)| s)
}

/// The container's systemd: the descendant of the nspawn process whose
/// command is `systemd`.
pub fn find_init(nspawn: u32) -> Option<u32> {
    let mut parents = vec![nspawn];
    for _ in 0..3 {
        let mut children = Vec::new();
        for pid in procfs::pids().ok()? {
            let Some(stat) = procfs::read_string(pid, "stat") else {
                continue;
            };
            if let Some((_, ppid)) = stat_fields(&stat)
                && parents.contains(&ppid)
            {
                let comm = procfs::read_string(pid, "comm").unwrap_or_default();
                if comm.trim() == "systemd" {
                    return Some(pid);
                }
                children.push(pid);
            }
        }
        parents = children;
    }
    None
}

/// How a container stops.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stop {
    /// `poweroff` inside, and up to this long for it to end; then killed.
    PowerOff(Duration),
    /// A power cut: every process killed at once, nothing told before.
    Cut,
}

/// Stop a container: `poweroff` inside, wait, then kill it if needed; or
/// kill it at once (a power cut).
///
/// Killing nspawn alone does not end a container: its systemd and whatever
/// it runs (qemu guests in the bare-metal BMC) live on, reparented to PID 1.
/// So after the timeout the container's init is killed first, which ends
/// its whole PID namespace, then nspawn.
pub fn stop(name: &str, nspawn: u32, init: Option<u32>, how: Stop) -> Result<()> {
    if !alive(nspawn) {
        reap(nspawn);
        return Ok(());
    }
    let init = init.filter(|p| alive(*p) && is_descendant(*p, nspawn));
    let timeout = match how {
        Stop::PowerOff(timeout) => {
            if let Some(init) = init {
                let _ = Systemd::new(&ContainerRunner::new(init))
                    .timeout(Duration::from_secs(15))
                    .poweroff();
            }
            timeout
        }
        Stop::Cut => Duration::ZERO,
    };
    let deadline = Instant::now() + timeout;
    while alive(nspawn) && Instant::now() < deadline {
        if let Some(init) = init {
            end_nsenters(name, init, true);
        }
        std::thread::sleep(Duration::from_millis(200));
    }
    if alive(nspawn) {
        if how != Stop::Cut {
            tracing::warn!(
                "container {name} did not power off within {}s; killing it",
                timeout.as_secs()
            );
        }
        if let Some(init) = init {
            end_nsenters(name, init, false);
        }
        for pid in kill_order(init, nspawn) {
            if alive(pid) {
                let _ = nix::sys::signal::kill(
                    nix::unistd::Pid::from_raw(pid as i32),
                    nix::sys::signal::Signal::SIGKILL,
                );
            }
        }
        wait_gone(&[Some(nspawn), init], TEARDOWN);
    }
    reap(nspawn);
    if alive(nspawn) {
        bail!("container {name} (nspawn PID {nspawn}) is still running after SIGKILL");
    }
    // nspawn can exit while its init is still ending the PID namespace
    // (every process in it is killed and reaped first): give that time,
    // then kill what is left.
    if let Some(init) = init {
        let deadline = Instant::now() + Duration::from_secs(10);
        while alive(init) && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(100));
        }
        end_nsenters(name, init, false);
        // Still the container's systemd, not a process that took its PID.
        let comm = procfs::read_string(init, "comm").unwrap_or_default();
        if alive(init) && comm.trim() == "systemd" {
            let _ = nix::sys::signal::kill(
                nix::unistd::Pid::from_raw(init as i32),
                nix::sys::signal::Signal::SIGKILL,
            );
            wait_gone(&[Some(init)], TEARDOWN);
        }
        if alive(init) {
            bail!(
                "container {name}: its systemd (PID {init}) is still running {}s after SIGKILL (a process of it stuck in the kernel: `cat /proc/{init}/task/*/stack`)",
                TEARDOWN.as_secs()
            );
        }
    }
    Ok(())
}

/// End the `nsenter`s of the container whose systemd is `init` (only the
/// stopped ones when `stopped_only`). util-linux's nsenter stops itself
/// when its child is stopped, as a container's shutdown does to every
/// process: stopped, it never reaps that child, and the container's PID
/// namespace (its systemd, in `zap_pid_ns_processes`) can never end.
fn end_nsenters(name: &str, init: u32, stopped_only: bool) {
    for pid in super::sweep::nsenters(init) {
        let state = procfs::read_string(pid, "stat")
            .as_deref()
            .and_then(stat_state);
        if stopped_only && state != Some('T') {
            continue;
        }
        tracing::debug!(
            "container {name}: ending nsenter {pid} (state {state:?}), which would keep it from ending"
        );
        let _ = nix::sys::signal::kill(
            nix::unistd::Pid::from_raw(pid as i32),
            nix::sys::signal::Signal::SIGKILL,
        );
    }
}

/// How long a killed container's PID namespace may take to end: its
/// processes die only once they leave the kernel, and one that waits for
/// the disk (a `sync` of a busy machine) takes its time.
const TEARDOWN: Duration = Duration::from_secs(180);

/// Wait until none of `pids` runs, at most `limit`.
fn wait_gone(pids: &[Option<u32>], limit: Duration) {
    let deadline = Instant::now() + limit;
    while pids.iter().flatten().any(|p| alive(*p)) && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// What to SIGKILL when a container will not stop: its init first (that
/// ends its PID namespace, guests included), then nspawn.
fn kill_order(init: Option<u32>, nspawn: u32) -> Vec<u32> {
    init.into_iter().chain([nspawn]).collect()
}

/// Whether `pid` descends from `ancestor` (a recorded init PID may have
/// been reused by an unrelated process after a host reboot).
fn is_descendant(pid: u32, ancestor: u32) -> bool {
    let mut p = pid;
    for _ in 0..16 {
        let Some((_, ppid)) = procfs::read_string(p, "stat")
            .as_deref()
            .and_then(stat_fields)
        else {
            return false;
        };
        if ppid == ancestor {
            return true;
        }
        if ppid <= 1 {
            return false;
        }
        p = ppid;
    }
    false
}

/// Collect the exit status if the process is our child (same `dcn`
/// process started it), so it does not linger as a zombie.
fn reap(pid: u32) {
    let _ = nix::sys::wait::waitpid(
        nix::unistd::Pid::from_raw(pid as i32),
        Some(nix::sys::wait::WaitPidFlag::WNOHANG),
    );
}

/// A console log is appended to at every boot of its container: its tail
/// is read from a log of at most this size.
const LOG_MAX: u64 = 256 * 1024 * 1024;

fn log_tail(files: &Files, log: &Path) -> String {
    let text = files
        .read_string_with(log, &ReadSpec::up_to(LOG_MAX))
        .ok()
        .flatten()
        .unwrap_or_default();
    crate::host::command::tail_lines(&text, 30)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stat_parsing_survives_odd_command_names() {
        let stat = "1234 (my (odd) name) S 42 1234 1234 0 -1 4194560";
        assert_eq!(stat_fields(stat), Some(('S', 42)));
        assert!(alive(std::process::id()));
        assert!(!alive(u32::MAX - 1));
    }

    #[test]
    fn a_stuck_container_loses_its_init_before_nspawn() {
        assert_eq!(kill_order(Some(20), 10), vec![20, 10]);
        assert_eq!(kill_order(None, 10), vec![10]);
    }

    #[test]
    fn descent_is_read_from_proc() {
        let me = std::process::id();
        let parent = nix::unistd::getppid().as_raw() as u32;
        assert!(is_descendant(me, parent));
        assert!(!is_descendant(parent, me));
        assert!(!is_descendant(u32::MAX - 1, me));
    }
}
