//! Lab containers: systemd-nspawn with systemd as PID 1, each in a network
//! namespace of the lab. Facts from shared/LAB.md: `--register=no` (no
//! machined on the host), never `--console=passive` (PID 1 blocks once its
//! console buffer fills), enter with `nsenter -t <pid of its systemd> -a`.

use crate::host::command::{Cmd, CmdOutput, Runner, SystemRunner, check_output, spawn_daemon};
use crate::host::systemd::Systemd;
use anyhow::{Context, Result, bail};
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

/// Boot a container and wait until its systemd reports running (or
/// degraded). Returns (nspawn PID, container init PID).
pub fn boot(spec: &ContainerSpec, timeout: Duration) -> Result<(u32, u32)> {
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
    let deadline = Instant::now() + timeout;
    let init = loop {
        if !alive(nspawn) {
            bail!(
                "container {} exited while booting; its console log {}:\n{}",
                spec.name,
                spec.log.display(),
                log_tail(&spec.log)
            );
        }
        if let Some(pid) = find_init(nspawn) {
            break pid;
        }
        if Instant::now() >= deadline {
            bail!(
                "container {} did not start systemd within {}s",
                spec.name,
                timeout.as_secs()
            );
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    let inside = ContainerRunner::new(init);
    let systemd = Systemd::new(&inside).timeout(Duration::from_secs(10));
    loop {
        let state = systemd.system_state().unwrap_or_default();
        if state == "running" || state == "degraded" {
            break;
        }
        if Instant::now() >= deadline {
            bail!(
                "container {} is still {state:?} after {}s; its console log {}:\n{}",
                spec.name,
                timeout.as_secs(),
                spec.log.display(),
                log_tail(&spec.log)
            );
        }
        std::thread::sleep(Duration::from_millis(300));
    }
    Ok((nspawn, init))
}

/// Whether a process exists and is not a zombie.
pub fn alive(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => stat_state(&stat).is_some_and(|s| s != 'Z' && s != 'X'),
        Err(_) => false,
    }
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
fn find_init(nspawn: u32) -> Option<u32> {
    let mut parents = vec![nspawn];
    for _ in 0..3 {
        let mut children = Vec::new();
        for entry in std::fs::read_dir("/proc").ok()?.flatten() {
            let Ok(pid) = entry.file_name().to_string_lossy().parse::<u32>() else {
                continue;
            };
            let Ok(stat) = std::fs::read_to_string(entry.path().join("stat")) else {
                continue;
            };
            if let Some((_, ppid)) = stat_fields(&stat)
                && parents.contains(&ppid)
            {
                let comm = std::fs::read_to_string(entry.path().join("comm")).unwrap_or_default();
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

/// Stop a container: `poweroff` inside, wait, then kill it if needed.
///
/// Killing nspawn alone does not end a container: its systemd and whatever
/// it runs (qemu guests in the bare-metal BMC) live on, reparented to PID 1.
/// So after the timeout the container's init is killed first, which ends
/// its whole PID namespace, then nspawn.
pub fn stop(name: &str, nspawn: u32, init: Option<u32>, timeout: Duration) -> Result<()> {
    if !alive(nspawn) {
        reap(nspawn);
        return Ok(());
    }
    let init = init.filter(|p| alive(*p) && is_descendant(*p, nspawn));
    if let Some(init) = init {
        let _ = Systemd::new(&ContainerRunner::new(init))
            .timeout(Duration::from_secs(15))
            .poweroff();
    }
    let deadline = Instant::now() + timeout;
    while alive(nspawn) && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(200));
    }
    if alive(nspawn) {
        tracing::warn!(
            "container {name} did not power off within {}s; killing it",
            timeout.as_secs()
        );
        for pid in kill_order(init, nspawn) {
            if alive(pid) {
                let _ = nix::sys::signal::kill(
                    nix::unistd::Pid::from_raw(pid as i32),
                    nix::sys::signal::Signal::SIGKILL,
                );
            }
        }
        let deadline = Instant::now() + Duration::from_secs(10);
        while (alive(nspawn) || init.is_some_and(alive)) && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(100));
        }
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
        // Still the container's systemd, not a process that took its PID.
        let comm = std::fs::read_to_string(format!("/proc/{init}/comm")).unwrap_or_default();
        if alive(init) && comm.trim() == "systemd" {
            let _ = nix::sys::signal::kill(
                nix::unistd::Pid::from_raw(init as i32),
                nix::sys::signal::Signal::SIGKILL,
            );
            let deadline = Instant::now() + Duration::from_secs(10);
            while alive(init) && Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(100));
            }
        }
        if alive(init) {
            bail!("container {name}: its systemd (PID {init}) is still running after SIGKILL");
        }
    }
    Ok(())
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
        let Some((_, ppid)) = std::fs::read_to_string(format!("/proc/{p}/stat"))
            .ok()
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

fn log_tail(log: &Path) -> String {
    let text = std::fs::read_to_string(log).unwrap_or_default();
    crate::host::command::tail_lines(&text, 30)
}

/// The search path inside containers.
const PATH: &str = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";

/// Runs commands inside a container through `nsenter`, with a clean
/// environment.
pub struct ContainerRunner {
    init_pid: u32,
    inner: SystemRunner,
}

impl ContainerRunner {
    pub fn new(init_pid: u32) -> ContainerRunner {
        ContainerRunner {
            init_pid,
            inner: SystemRunner::new(false),
        }
    }

    /// The `nsenter` command that runs `cmd` inside.
    pub fn wrap(&self, cmd: &Cmd) -> Cmd {
        let mut wrapped = Cmd {
            program: "nsenter".into(),
            args: vec![
                "-t".into(),
                self.init_pid.to_string(),
                "-a".into(),
                "--".into(),
                "/usr/bin/env".into(),
                "-i".into(),
                format!("PATH={PATH}"),
                "HOME=/root".into(),
                "LANG=C.UTF-8".into(),
            ],
            env: Vec::new(),
            ..cmd.clone()
        };
        for (k, v) in &cmd.env {
            wrapped.args.push(format!("{k}={v}"));
        }
        // Secrets cannot go through `env` (argv); pass them to nsenter's
        // environment, which `env -i` would clear, so re-export them by name.
        if !cmd.secret_env.is_empty() {
            wrapped.secret_env = cmd.secret_env.clone();
            wrapped.args.truncate(4);
            wrapped.args.extend([
                "/usr/bin/env".to_string(),
                format!("PATH={PATH}"),
                "HOME=/root".into(),
                "LANG=C.UTF-8".into(),
            ]);
            for (k, v) in &cmd.env {
                wrapped.args.push(format!("{k}={v}"));
            }
        }
        wrapped.args.push(cmd.program.clone());
        wrapped.args.extend(cmd.args.iter().cloned());
        wrapped
    }
}

impl Runner for ContainerRunner {
    fn run(&self, cmd: &Cmd) -> Result<CmdOutput> {
        let mut wrapped = self.wrap(cmd);
        wrapped.check = false;
        let out = self
            .inner
            .run(&wrapped)
            .with_context(|| format!("inside the container (systemd PID {})", self.init_pid))?;
        // Report failures with the inner command line, not nsenter's.
        check_output(cmd, out)
    }
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

    #[test]
    fn wrap_enters_all_namespaces_with_a_clean_environment() {
        let r = ContainerRunner::new(77);
        let w = r.wrap(&Cmd::new("x", "ip").arg("link").env("FOO", "bar"));
        let line = w.command_line();
        assert!(
            line.starts_with("nsenter -t 77 -a -- /usr/bin/env -i PATH="),
            "{line}"
        );
        assert!(line.ends_with("FOO=bar ip link"), "{line}");
        assert!(w.env.is_empty());
    }
}
