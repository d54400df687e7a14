//! What preflight knows about the host: [`Facts`], read once by [`gather`]
//! and then judged by the pure checks. Files are read through [`Files`]
//! (rooted at `/` on a real host) so tests can point gathering at a
//! prepared tree.
//!
//! Gathering never fails. A fact that cannot be read is a
//! [`Fact::Unknown`] that says why, and the check that needs it reports
//! that instead of guessing.

use super::sources::{self, HostsLine, Listener, OsRelease};
use crate::host::Files;
use anyhow::{Context, Result};
use serde::Serialize;
use std::collections::{HashMap, HashSet};
use std::net::{IpAddr, ToSocketAddrs, UdpSocket};
use std::path::Path;

/// A fact, or why it could not be read. In JSON a known fact is its value
/// and an unknown one is `{"unknown": "<why>"}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(untagged)]
pub enum Fact<T> {
    Known(T),
    Unknown { unknown: String },
}

impl<T> Fact<T> {
    pub fn unknown(why: impl Into<String>) -> Self {
        Fact::Unknown {
            unknown: why.into(),
        }
    }

    pub fn known(&self) -> Option<&T> {
        match self {
            Fact::Known(v) => Some(v),
            Fact::Unknown { .. } => None,
        }
    }

    /// The value, or the reason it is unknown.
    pub fn get(&self) -> Result<&T, &str> {
        match self {
            Fact::Known(v) => Ok(v),
            Fact::Unknown { unknown } => Err(unknown),
        }
    }

    fn from_result(r: Result<T>) -> Self {
        match r {
            Ok(v) => Fact::Known(v),
            Err(e) => Fact::unknown(format!("{e:#}")),
        }
    }
}

/// Whether `/dev/kvm` can be opened for reading and writing, which is what
/// libvirt needs to start kvm guests.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase", tag = "state", content = "reason")]
pub enum KvmDevice {
    Usable,
    Missing,
    Unusable(String),
}

/// What the host's name resolves to.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize)]
pub struct Resolution {
    /// Addresses in resolver order, without duplicates; empty when the name
    /// does not resolve.
    pub addresses: Vec<IpAddr>,
    /// The resolver's error when the name does not resolve.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// Everything preflight checks, as read from the host.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Facts {
    /// Effective user id of this process.
    pub euid: u32,
    /// `/etc/os-release`.
    pub os: Fact<OsRelease>,
    /// Name of PID 1 (`/proc/1/comm`).
    pub pid1: Fact<String>,
    /// `/run/systemd/system` exists: systemd's own test for "booted with
    /// systemd" (`sd_booted(3)`).
    pub systemd_booted: bool,
    /// Logical CPUs.
    pub cpus: Fact<u32>,
    /// `MemTotal` of `/proc/meminfo`: installed memory minus what the
    /// kernel reserves.
    pub memory_bytes: Fact<u64>,
    /// Free space on the filesystem that holds `/var` (packages, databases,
    /// images, instance disks), as `df` shows it under "Avail".
    pub var_free_bytes: Fact<u64>,
    /// `vmx` or `svm` when the CPU exposes hardware virtualization, null
    /// when it does not.
    pub cpu_virt_flag: Fact<Option<String>>,
    pub kvm_device: KvmDevice,
    /// The kernel's host name (what nova, OVN and rabbitmq use).
    pub hostname: Fact<String>,
    pub hostname_resolution: Fact<Resolution>,
    /// The lines of `/etc/hosts` that name this host.
    pub hosts_lines: Vec<HostsLine>,
    /// The source address of the default route: the address other hosts
    /// most likely reach this one on.
    pub primary_address: Fact<IpAddr>,
    /// Listening TCP sockets (IPv4 and IPv6).
    pub listeners: Fact<Vec<Listener>>,
}

/// Read the facts of the system `files` are of. Name resolution and the
/// default route are properties of the running system, not of files, so
/// they are only asked of the live system (the root is `/`); under another
/// root the name is resolved through that root's `/etc/hosts` alone.
pub fn gather(files: &Files) -> Facts {
    let live = files.root() == Path::new("/");
    let read = |p: &str| read(files, p);
    let cpuinfo = read("/proc/cpuinfo").map(|t| sources::parse_cpuinfo(&t));
    let hostname = Fact::from_result(read_hostname(files));
    let hosts_text = read("/etc/hosts").unwrap_or_default();
    let hosts_lines = match &hostname {
        Fact::Known(name) => sources::hosts_lines_naming(&hosts_text, name),
        Fact::Unknown { .. } => Vec::new(),
    };
    let hostname_resolution = match &hostname {
        Fact::Known(name) if live => Fact::Known(resolve(name)),
        Fact::Known(_) => Fact::Known(Resolution {
            addresses: dedup(hosts_lines.iter().map(|l| l.address)),
            error: None,
        }),
        Fact::Unknown { unknown } => Fact::unknown(format!("no host name to resolve: {unknown}")),
    };
    Facts {
        euid: nix::unistd::geteuid().as_raw(),
        os: Fact::from_result(read("/etc/os-release").map(|t| sources::parse_os_release(&t))),
        pid1: Fact::from_result(read("/proc/1/comm").map(|t| t.trim().to_string())),
        systemd_booted: files.is_dir("/run/systemd/system").unwrap_or(false),
        cpus: Fact::from_result(cpuinfo.as_ref().map(|c| c.processors).map_err(clone_err)),
        memory_bytes: Fact::from_result(read("/proc/meminfo").and_then(|t| {
            sources::parse_meminfo_total(&t).context("/proc/meminfo has no MemTotal line")
        })),
        var_free_bytes: Fact::from_result(
            (files.host_path("/var")).and_then(|var| crate::host::space::free_bytes(&var)),
        ),
        cpu_virt_flag: Fact::from_result(
            cpuinfo
                .as_ref()
                .map(|c| c.virt_flag.map(str::to_string))
                .map_err(clone_err),
        ),
        kvm_device: kvm_device(files),
        hostname,
        hostname_resolution,
        hosts_lines,
        primary_address: if live {
            Fact::from_result(primary_address())
        } else {
            Fact::unknown("only measured on the live system")
        },
        listeners: Fact::from_result(listeners(files)),
    }
}

fn read(files: &Files, path: &str) -> Result<String> {
    (files
        .read_string(path)
        .and_then(|t| t.context("No such file or directory")))
    .with_context(|| format!("reading {path}"))
}

fn clone_err(e: &anyhow::Error) -> anyhow::Error {
    anyhow::anyhow!("{e:#}")
}

fn read_hostname(files: &Files) -> Result<String> {
    let name =
        read(files, "/proc/sys/kernel/hostname").or_else(|_| read(files, "/etc/hostname"))?;
    let name = name.trim();
    anyhow::ensure!(!name.is_empty(), "the host name is empty");
    Ok(name.to_string())
}

/// Resolve through the system resolver (getaddrinfo: /etc/hosts, DNS, and
/// whatever else nsswitch.conf lists), as the OpenStack services will.
fn resolve(name: &str) -> Resolution {
    match (name, 0).to_socket_addrs() {
        Ok(addrs) => Resolution {
            addresses: dedup(addrs.map(|a| a.ip())),
            error: None,
        },
        Err(e) => Resolution {
            addresses: Vec::new(),
            error: Some(e.to_string()),
        },
    }
}

fn dedup(addrs: impl Iterator<Item = IpAddr>) -> Vec<IpAddr> {
    let mut out: Vec<IpAddr> = Vec::new();
    for a in addrs {
        if !out.contains(&a) {
            out.push(a);
        }
    }
    out
}

/// The address the kernel picks to reach an outside address. Connecting a
/// UDP socket sends nothing; it only selects the route and source address.
fn primary_address() -> Result<IpAddr> {
    // Documentation addresses (RFC 5737, RFC 3849): never local, so the
    // lookup follows the default route.
    let probes = [
        ("0.0.0.0:0", "203.0.113.1:9"),
        ("[::]:0", "[2001:db8::1]:9"),
    ];
    let mut last = None;
    for (bind, target) in probes {
        let attempt = UdpSocket::bind(bind).and_then(|s| {
            s.connect(target)?;
            s.local_addr()
        });
        match attempt {
            Ok(a) => return Ok(a.ip()),
            Err(e) => last = Some(e),
        }
    }
    let e = last.expect("at least one probe ran");
    Err(e).context("this host has no default route")
}

fn kvm_device(files: &Files) -> KvmDevice {
    let Ok(path) = files.host_path("/dev/kvm") else {
        return KvmDevice::Missing;
    };
    // A character device: opening it is the test libvirt's open will pass.
    match std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(path)
    {
        Ok(_) => KvmDevice::Usable,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => KvmDevice::Missing,
        Err(e) => KvmDevice::Unusable(e.to_string()),
    }
}

/// Listening sockets of `proc/net/tcp` and `tcp6`, with their processes.
/// `tcp6` is absent when IPv6 is disabled, which means no IPv6 listeners.
fn listeners(files: &Files) -> Result<Vec<Listener>> {
    let mut all = sources::parse_proc_net_tcp(&read(files, "/proc/net/tcp")?);
    let tcp6 = "/proc/net/tcp6";
    if files.exists(tcp6)? {
        all.extend(sources::parse_proc_net_tcp(&read(files, tcp6)?));
    }
    let inodes: HashSet<u64> = all.iter().map(|l| l.inode).filter(|&i| i != 0).collect();
    let owners = socket_owners(files, &inodes);
    for l in &mut all {
        l.process = owners.get(&l.inode).cloned();
    }
    Ok(all)
}

/// `name[pid]` of the processes holding the sockets `inodes`, found through
/// their `/proc/<pid>/fd` links (`socket:[<inode>]`). Best effort: without
/// root, other users' processes are not readable.
fn socket_owners(files: &Files, inodes: &HashSet<u64>) -> HashMap<u64, String> {
    let mut owners = HashMap::new();
    if inodes.is_empty() {
        return owners;
    }
    let Ok(entries) = files.list("/proc") else {
        return owners;
    };
    for pid in entries.iter().filter_map(|s| s.parse::<u32>().ok()) {
        let Ok(fds) = files.list(format!("/proc/{pid}/fd")) else {
            continue;
        };
        for fd in fds {
            let Ok(Some(target)) = files.read_link(format!("/proc/{pid}/fd/{fd}")) else {
                continue;
            };
            let inode = target
                .to_str()
                .and_then(|t| t.strip_prefix("socket:["))
                .and_then(|t| t.strip_suffix(']'))
                .and_then(|t| t.parse::<u64>().ok());
            if let Some(inode) = inode.filter(|i| inodes.contains(i)) {
                let comm = files.read_string(format!("/proc/{pid}/comm"));
                let comm = comm.ok().flatten().unwrap_or_default();
                owners
                    .entry(inode)
                    .or_insert(format!("{}[{pid}]", comm.trim()));
            }
        }
        if owners.len() == inodes.len() {
            break;
        }
    }
    owners
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gather_on_this_machine_is_plausible() {
        let f = gather(&Files::new("/", false));
        assert!(*f.cpus.known().unwrap() >= 1);
        assert!(*f.memory_bytes.known().unwrap() > 0);
        assert!(f.var_free_bytes.known().is_some());
        assert!(f.hostname.known().is_some());
        assert!(f.listeners.known().is_some());
        serde_json::to_string(&f).unwrap();
    }

    #[test]
    fn gather_in_a_folder_reads_its_files_and_never_fails() {
        let dir = tempfile::tempdir().unwrap();
        let files = Files::new(dir.path(), false);
        let empty = gather(&files);
        assert!(empty.os.known().is_none());
        assert!(empty.cpus.known().is_none());
        assert_eq!(empty.kvm_device, KvmDevice::Missing);
        assert!(!empty.systemd_booted);
        // The nearest existing parent of var/ is measured.
        assert!(empty.var_free_bytes.known().is_some());

        let w = |p: &str, t: &str| {
            let p = dir.path().join(p);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, t).unwrap();
        };
        w(
            "etc/os-release",
            include_str!("testdata/os-release-debian12"),
        );
        w("proc/1/comm", "systemd\n");
        w(
            "proc/cpuinfo",
            "processor\t: 0\nflags\t: fpu vmx\nprocessor\t: 1\nflags\t: fpu vmx\n",
        );
        w("proc/meminfo", "MemTotal: 8000000 kB\n");
        w("proc/sys/kernel/hostname", "edge1\n");
        w(
            "etc/hosts",
            "127.0.0.1 localhost\n127.0.1.1 edge1\n192.0.2.7 edge1\n",
        );
        w("proc/net/tcp", include_str!("testdata/proc-net-tcp"));
        std::fs::create_dir_all(dir.path().join("run/systemd/system")).unwrap();
        let f = gather(&files);
        assert_eq!(f.os.known().unwrap().version_id, "12");
        assert_eq!(f.pid1, Fact::Known("systemd".to_string()));
        assert!(f.systemd_booted);
        assert_eq!(f.cpus, Fact::Known(2));
        assert_eq!(f.memory_bytes, Fact::Known(8_000_000 * 1024));
        assert_eq!(f.cpu_virt_flag, Fact::Known(Some("vmx".to_string())));
        let addrs: Vec<String> = f
            .hostname_resolution
            .known()
            .unwrap()
            .addresses
            .iter()
            .map(|a| a.to_string())
            .collect();
        assert_eq!(addrs, vec!["127.0.1.1", "192.0.2.7"]);
        assert_eq!(f.listeners.known().unwrap().len(), 3);
    }
}
