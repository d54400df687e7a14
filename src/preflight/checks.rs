//! The checks: pure functions from [`Facts`] to [`CheckResult`]s, so every
//! boundary is tested on constructed facts. Minimums and ports are data
//! ([`limits`], [`required_ports`]); docs/preflight.md explains the numbers.

mod hostname;
mod platform;
mod ports;
mod sizes;

pub use hostname::{HostnameClass, classify_hostname};
pub use ports::{required_ports, required_ports_in};
pub use sizes::{Limit, Limits, limits};

use super::Role;
use super::facts::Facts;
use serde::Serialize;
use std::fmt;

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

const GIB: u64 = 1 << 30;

/// Run every check for `role` on `facts`, in [`CHECK_NAMES`] order.
pub fn evaluate(
    recipes: &crate::recipes::Recipes,
    role: Role,
    facts: &Facts,
    params: &Params,
) -> Vec<CheckResult> {
    let limits = limits(role);
    vec![
        platform::check_root(facts),
        platform::check_os(facts),
        platform::check_systemd(facts),
        sizes::check_cpus(role, facts, &limits),
        sizes::check_memory(role, facts, &limits),
        sizes::check_disk_var(role, facts, &limits),
        platform::check_virtualization(role, facts, params),
        hostname::check_hostname(facts),
        ports::check_ports(recipes, role, facts, params),
    ]
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
