//! The checks: pure functions from [`Facts`] to [`CheckResult`]s, so every
//! boundary is tested on constructed facts. Minimums and ports are data
//! ([`limits`], [`required_ports`]); docs/preflight.md explains the numbers.

use super::Role;
use super::facts::{Fact, Facts, KvmDevice};
use crate::recipes::Recipes;
use serde::Serialize;
use std::fmt;
use std::net::IpAddr;

/// Whether a failing check stops the deployment.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    Error,
    Warning,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Status {
    Pass,
    Fail,
    /// Failed, but the operator listed it in `--ignore-preflight-errors`.
    Ignored,
}

/// The outcome of one check.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CheckResult {
    /// Stable kebab-case name, as given to `--ignore-preflight-errors`.
    pub name: &'static str,
    /// How bad a failure is. A passing check carries the severity its
    /// failure would have had.
    pub severity: Severity,
    pub status: Status,
    pub message: String,
    /// One line that says what to do, for failing checks.
    pub fix: Option<String>,
}

impl CheckResult {
    fn pass(name: &'static str, severity: Severity, message: String) -> Self {
        CheckResult {
            name,
            severity,
            status: Status::Pass,
            message,
            fix: None,
        }
    }

    fn fail(name: &'static str, severity: Severity, message: String, fix: String) -> Self {
        CheckResult {
            name,
            severity,
            status: Status::Fail,
            message,
            fix: Some(fix),
        }
    }

    /// A fact the check needs could not be read: a warning, since nothing
    /// is known to be wrong, but the operator should know it was not checked.
    fn unknown(name: &'static str, what: &str, why: &str, fix: &str) -> Self {
        let message = format!("not checked: could not read {what} ({why})");
        CheckResult::fail(name, Severity::Warning, message, fix.to_string())
    }

    /// Failed and not ignored.
    pub fn failed(&self) -> bool {
        self.status == Status::Fail
    }
}

/// Settings the checks depend on (from the operator's config).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Params {
    /// HTTPS port of the join service (`controlPlane.joinPort`).
    pub join_port: u16,
    /// The standalone host also runs nova-compute (role `compute`), so it
    /// needs the edge's ports and can use kvm. Edge hosts always do.
    pub compute: bool,
}

impl Default for Params {
    /// The defaults of `StandaloneConfig`.
    fn default() -> Self {
        Params {
            join_port: 9443,
            compute: true,
        }
    }
}

impl Params {
    pub fn from_config(cfg: &crate::config::StandaloneConfig) -> Params {
        Params {
            join_port: cfg.control_plane.join_port.0,
            compute: cfg.roles.contains(&crate::config::Role::Compute),
        }
    }
}

/// Every check name, in the order the checks run.
pub const CHECK_NAMES: &[&str] = &[
    "root",
    "os",
    "systemd",
    "cpus",
    "memory",
    "disk-var",
    "virtualization",
    "hostname",
    "ports",
];

/// Below `error_below` a check fails with an error, below `warn_below` with
/// a warning.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limit {
    pub error_below: u64,
    pub warn_below: u64,
}

/// Minimum sizes of a role. Memory and disk are in GiB.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    pub cpus: Limit,
    pub memory_gib: Limit,
    pub disk_var_gib: Limit,
}

pub fn limits(role: Role) -> Limits {
    let l = |error_below, warn_below| Limit {
        error_below,
        warn_below,
    };
    match role {
        Role::Standalone => Limits {
            cpus: l(2, 2),
            memory_gib: l(4, 8),
            disk_var_gib: l(10, 20),
        },
        Role::Edge => Limits {
            cpus: l(1, 2),
            memory_gib: l(2, 4),
            disk_var_gib: l(5, 20),
        },
    }
}

/// `MemTotal` is installed memory minus what the kernel reserves at boot,
/// so a machine with 4 GiB reads about 3.8 GiB. A memory limit counts as
/// met within this margin, so the documented sizes pass on real machines.
const MEMTOTAL_MARGIN_PERCENT: u64 = 10;

const GIB: u64 = 1 << 30;

/// The TCP ports a role listens on, and which service: read from the
/// recipes of its roles, plus the join service's configurable port.
pub fn required_ports(role: Role, params: &Params) -> Vec<(u16, String)> {
    required_ports_in(crate::recipes::catalogue::embedded(), role, params)
}

/// [`required_ports`] from the given recipes.
pub fn required_ports_in(recipes: &Recipes, role: Role, params: &Params) -> Vec<(u16, String)> {
    let roles: &[&str] = match (role, params.compute) {
        (Role::Standalone, true) => &["controller", "compute"],
        (Role::Standalone, false) => &["controller"],
        (Role::Edge, _) => &["edge"],
    };
    let mut ports = recipes
        .ports_for_roles(roles)
        .expect("the roles of the embedded recipes exist (cargo test)");
    if role == Role::Standalone {
        ports.push((params.join_port, "join-service".into()));
    }
    ports
}

/// Run every check for `role` on `facts`, in [`CHECK_NAMES`] order.
pub fn evaluate(role: Role, facts: &Facts, params: &Params) -> Vec<CheckResult> {
    let limits = limits(role);
    vec![
        check_root(facts),
        check_os(facts),
        check_systemd(facts),
        check_cpus(role, facts, &limits),
        check_memory(role, facts, &limits),
        check_disk_var(role, facts, &limits),
        check_virtualization(role, facts, params),
        check_hostname(facts),
        check_ports(role, facts, params),
    ]
}

fn check_root(facts: &Facts) -> CheckResult {
    if facts.euid == 0 {
        return CheckResult::pass("root", Severity::Error, "running as root".into());
    }
    CheckResult::fail(
        "root",
        Severity::Error,
        format!(
            "running as uid {}: installing packages, writing /etc and managing services need root",
            facts.euid
        ),
        "run dcn as root, for example with sudo".into(),
    )
}

fn check_os(facts: &Facts) -> CheckResult {
    let fix = "install Debian 12 (bookworm) on this host; dcn supports no other release";
    match &facts.os {
        Fact::Known(os) if os.id == "debian" && os.version_id == "12" => {
            CheckResult::pass("os", Severity::Error, os.pretty_name.clone())
        }
        Fact::Known(os) => {
            let name = if os.pretty_name.is_empty() {
                format!("ID={:?} VERSION_ID={:?}", os.id, os.version_id)
            } else {
                os.pretty_name.clone()
            };
            let message = format!(
                "{name} is not supported: dcn installs the OpenStack Zed packages of Debian 12"
            );
            CheckResult::fail("os", Severity::Error, message, fix.into())
        }
        Fact::Unknown { unknown } => CheckResult::fail(
            "os",
            Severity::Error,
            format!("cannot tell which OS this is ({unknown}); dcn needs Debian 12"),
            fix.into(),
        ),
    }
}

fn check_systemd(facts: &Facts) -> CheckResult {
    let why = "dcn installs and runs the OpenStack services as systemd units";
    let fix = "run dcn on a host booted with systemd, or try it in the local lab: `dcn lab up`";
    let fail = |message: String| CheckResult::fail("systemd", Severity::Error, message, fix.into());
    match (&facts.pid1, facts.systemd_booted) {
        (Fact::Known(p), _) if p == "systemd" => {
            CheckResult::pass("systemd", Severity::Error, "PID 1 is systemd".into())
        }
        (Fact::Known(p), _) => fail(format!("PID 1 is {p}, not systemd: {why}")),
        (Fact::Unknown { .. }, true) => CheckResult::pass(
            "systemd",
            Severity::Error,
            "booted with systemd (/run/systemd/system exists)".into(),
        ),
        (Fact::Unknown { unknown }, false) => fail(format!(
            "not booted with systemd (no /run/systemd/system; PID 1 unreadable: {unknown}): {why}"
        )),
    }
}

/// A measured size, to be judged against a [`Limit`]. Shared by the CPU,
/// memory and disk checks so their messages read alike.
struct Measure<'a> {
    name: &'static str,
    role: Role,
    /// The value as shown, e.g. "23.4 GiB" or "2 CPUs".
    shown: String,
    /// Whether the value reaches a limit (given in the limit's unit).
    meets: &'a dyn Fn(u64) -> bool,
    /// A limit as shown, e.g. "4 GiB".
    unit: &'a dyn Fn(u64) -> String,
    /// The fix when the value is below a limit (given as shown).
    fix: &'a dyn Fn(&str) -> String,
}

impl Measure<'_> {
    fn judge(&self, limit: &Limit) -> CheckResult {
        let (min, rec) = (
            (self.unit)(limit.error_below),
            (self.unit)(limit.warn_below),
        );
        let range = if limit.warn_below > limit.error_below {
            format!("minimum {min}, recommended {rec}")
        } else {
            format!("minimum {min}")
        };
        let host = match self.role {
            Role::Standalone => "a standalone control plane",
            Role::Edge => "an edge compute host",
        };
        if !(self.meets)(limit.error_below) {
            let message = format!("{}, below the minimum of {min} for {host}", self.shown);
            CheckResult::fail(self.name, Severity::Error, message, (self.fix)(&min))
        } else if !(self.meets)(limit.warn_below) {
            let message = format!("{}, below the recommended {rec} for {host}", self.shown);
            CheckResult::fail(self.name, Severity::Warning, message, (self.fix)(&rec))
        } else {
            CheckResult::pass(
                self.name,
                Severity::Error,
                format!("{} ({range})", self.shown),
            )
        }
    }
}

fn check_cpus(role: Role, facts: &Facts, limits: &Limits) -> CheckResult {
    let n = match facts.cpus.get() {
        Ok(n) => u64::from(*n),
        Err(why) => {
            return CheckResult::unknown(
                "cpus",
                "/proc/cpuinfo",
                why,
                "check that /proc is mounted",
            );
        }
    };
    Measure {
        name: "cpus",
        role,
        shown: plural(n, "CPU"),
        meets: &|limit| n >= limit,
        unit: &|v| v.to_string(),
        fix: &|needed| format!("give the host at least {needed} CPUs"),
    }
    .judge(&limits.cpus)
}

fn check_memory(role: Role, facts: &Facts, limits: &Limits) -> CheckResult {
    let bytes = match facts.memory_bytes.get() {
        Ok(b) => *b,
        Err(why) => {
            return CheckResult::unknown(
                "memory",
                "/proc/meminfo",
                why,
                "check that /proc is mounted",
            );
        }
    };
    Measure {
        name: "memory",
        role,
        shown: gib(bytes),
        meets: &|limit_gib| {
            let limit = limit_gib * GIB;
            bytes >= limit - limit / 100 * MEMTOTAL_MARGIN_PERCENT
        },
        unit: &|v| format!("{v} GiB"),
        fix: &|needed| format!("give the host at least {needed} of memory"),
    }
    .judge(&limits.memory_gib)
}

fn check_disk_var(role: Role, facts: &Facts, limits: &Limits) -> CheckResult {
    let bytes = match facts.var_free_bytes.get() {
        Ok(b) => *b,
        Err(why) => {
            return CheckResult::unknown(
                "disk-var",
                "the free space under /var",
                why,
                "check that /var exists",
            );
        }
    };
    Measure {
        name: "disk-var",
        role,
        shown: format!("{} free under /var", gib(bytes)),
        meets: &|limit_gib| bytes >= limit_gib * GIB,
        unit: &|v| format!("{v} GiB"),
        fix: &|needed| {
            format!("free space under /var, or grow the filesystem that holds it, to {needed} free")
        },
    }
    .judge(&limits.disk_var_gib)
}

fn check_virtualization(role: Role, facts: &Facts, params: &Params) -> CheckResult {
    const NAME: &str = "virtualization";
    if role == Role::Standalone && !params.compute {
        let message = "not needed: this host runs no instances (no compute role)".to_string();
        return CheckResult::pass(NAME, Severity::Warning, message);
    }
    let flag = facts.cpu_virt_flag.get();
    if let (Ok(Some(flag)), KvmDevice::Usable) = (flag, &facts.kvm_device) {
        let message = format!("kvm: the CPU has {flag} and /dev/kvm is usable");
        return CheckResult::pass(NAME, Severity::Warning, message);
    }
    let cpu = match flag {
        Ok(Some(_)) => None,
        Ok(None) => Some(
            "the CPU does not expose VT-x/AMD-V (no vmx or svm flag in /proc/cpuinfo)".to_string(),
        ),
        Err(why) => Some(format!("the CPU flags are unknown ({why})")),
    };
    let dev = match &facts.kvm_device {
        KvmDevice::Usable => None,
        KvmDevice::Missing => Some("/dev/kvm does not exist".to_string()),
        KvmDevice::Unusable(why) => Some(format!("/dev/kvm cannot be opened ({why})")),
    };
    let what = match (&cpu, &dev) {
        (Some(c), None) => format!("/dev/kvm exists but {c}"),
        (Some(c), Some(d)) => format!("{c} and {d}"),
        (None, Some(d)) => d.clone(),
        (None, None) => unreachable!("kvm is usable when neither part is missing"),
    };
    let fix = match (flag, &facts.kvm_device) {
        (Ok(Some(flag)), KvmDevice::Missing) => {
            let module = if *flag == "svm" { "kvm_amd" } else { "kvm_intel" };
            format!("load the kvm module (`modprobe {module}`) to use kvm; until then dcn uses qemu")
        }
        (Ok(Some(_)), _) => {
            "let root open /dev/kvm (check its permissions and the kvm module) to use kvm; until then dcn uses qemu".to_string()
        }
        _ => "enable VT-x/AMD-V in the firmware setup (or nested virtualization, if this host is a VM) to use kvm; until then dcn uses qemu".to_string(),
    };
    let message = format!(
        "qemu: {what}, so instances run in software emulation, many times slower than with kvm"
    );
    CheckResult::fail(NAME, Severity::Warning, message, fix)
}

/// What a host name resolves to, as far as other hosts are concerned.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HostnameClass {
    Unresolvable,
    /// Only 127.0.0.0/8 or ::1: what Debian's installer writes to
    /// /etc/hosts (`127.0.1.1 <name>`) when there is no static address.
    LoopbackOnly,
    /// A loopback address first, then a routable one: programs that take
    /// the first address get loopback.
    LoopbackFirst,
    Usable,
}

pub fn classify_hostname(addresses: &[IpAddr]) -> HostnameClass {
    let loopback = |a: &IpAddr| a.to_canonical().is_loopback();
    match addresses {
        [] => HostnameClass::Unresolvable,
        all if all.iter().all(loopback) => HostnameClass::LoopbackOnly,
        [first, ..] if loopback(first) => HostnameClass::LoopbackFirst,
        _ => HostnameClass::Usable,
    }
}

fn check_hostname(facts: &Facts) -> CheckResult {
    const NAME: &str = "hostname";
    let name = match facts.hostname.get() {
        Ok(n) => n,
        Err(why) => {
            let fix = "set a host name with `hostnamectl set-hostname NAME`";
            return CheckResult::unknown(NAME, "the host name", why, fix);
        }
    };
    let res = match facts.hostname_resolution.get() {
        Ok(r) => r,
        Err(why) => {
            let fix = "check that the resolver works (`getent hosts $(hostname)`)";
            return CheckResult::unknown(NAME, "what the host name resolves to", why, fix);
        }
    };
    let list = |addrs: &[IpAddr]| {
        addrs
            .iter()
            .map(|a| a.to_string())
            .collect::<Vec<_>>()
            .join(", ")
    };
    let add = format!("add the line `{}` to /etc/hosts", hosts_entry(name, facts));
    let loopback_lines: Vec<String> = facts
        .hosts_lines
        .iter()
        .filter(|l| l.address.to_canonical().is_loopback())
        .map(|l| format!("`{}`", l.text))
        .collect();
    let remove = format!("remove {name} from {}", loopback_lines.join(" and "));
    match classify_hostname(&res.addresses) {
        HostnameClass::Usable => CheckResult::pass(
            NAME,
            Severity::Error,
            format!("{name} resolves to {}", list(&res.addresses)),
        ),
        HostnameClass::Unresolvable => CheckResult::fail(
            NAME,
            Severity::Error,
            format!(
                "{name} does not resolve{}: nova, OVN and rabbitmq identify this host by its name",
                res.error
                    .as_ref()
                    .map(|e| format!(" ({e})"))
                    .unwrap_or_default()
            ),
            format!("{add}, or give {name} a DNS record"),
        ),
        HostnameClass::LoopbackOnly => CheckResult::fail(
            NAME,
            Severity::Error,
            format!(
                "{name} resolves only to {}: services would advertise a loopback address other hosts cannot reach",
                list(&res.addresses)
            ),
            if loopback_lines.is_empty() {
                add
            } else {
                format!("{add} and {remove}")
            },
        ),
        HostnameClass::LoopbackFirst => CheckResult::fail(
            NAME,
            Severity::Warning,
            format!(
                "{name} resolves first to {}, then {}: programs that take the first address get loopback",
                res.addresses[0],
                list(&res.addresses[1..])
            ),
            if loopback_lines.is_empty() {
                format!("make {name} resolve to a non-loopback address first")
            } else {
                format!("in /etc/hosts, {remove}")
            },
        ),
    }
}

/// The /etc/hosts line that maps `name` (and its short form) to this host's
/// non-loopback address, when one is known.
fn hosts_entry(name: &str, facts: &Facts) -> String {
    let addr = match facts.primary_address.known() {
        Some(a) if !a.to_canonical().is_loopback() => a.to_string(),
        _ => "<this host's address>".to_string(),
    };
    match name.split_once('.') {
        Some((short, _)) => format!("{addr} {name} {short}"),
        None => format!("{addr} {name}"),
    }
}

fn check_ports(role: Role, facts: &Facts, params: &Params) -> CheckResult {
    const NAME: &str = "ports";
    let listeners = match facts.listeners.get() {
        Ok(l) => l,
        Err(why) => {
            let fix = "check that /proc is mounted";
            return CheckResult::unknown(NAME, "the listening sockets", why, fix);
        }
    };
    let required = required_ports(role, params);
    let mut taken = Vec::new();
    let mut busy = Vec::new();
    for (port, what) in &required {
        let on: Vec<_> = listeners.iter().filter(|l| l.port == *port).collect();
        let Some(first) = on.first() else { continue };
        let by = first
            .process
            .as_ref()
            .map(|p| format!(" by {p}"))
            .unwrap_or_default();
        let addrs: Vec<String> = on.iter().map(|l| l.address.to_string()).collect();
        taken.push(format!(
            "{port} ({what}) is taken{by} on {}",
            addrs.join(", ")
        ));
        busy.push(port.to_string());
    }
    if taken.is_empty() {
        let ports: Vec<String> = required.iter().map(|(p, _)| p.to_string()).collect();
        let message = match ports.as_slice() {
            [one] => format!("port {one}, which dcn listens on, is free"),
            all => format!(
                "all {} ports dcn listens on are free: {}",
                all.len(),
                all.join(", ")
            ),
        };
        return CheckResult::pass(NAME, Severity::Error, message);
    }
    CheckResult::fail(
        NAME,
        Severity::Error,
        taken.join("; "),
        format!(
            "stop what listens on {} {} (`ss -ltnp` shows it), or move it to another port",
            if busy.len() == 1 { "port" } else { "ports" },
            busy.join(", ")
        ),
    )
}

/// `1 CPU`, `2 CPUs`.
pub(super) fn plural(n: u64, what: &str) -> String {
    if n == 1 {
        format!("1 {what}")
    } else {
        format!("{n} {what}s")
    }
}

/// Bytes as GiB with one decimal: `23.4 GiB`.
pub fn gib(bytes: u64) -> String {
    format!("{:.1} GiB", bytes as f64 / GIB as f64)
}

impl fmt::Display for Severity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Severity::Error => "error",
            Severity::Warning => "warning",
        })
    }
}
