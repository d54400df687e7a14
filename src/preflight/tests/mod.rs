//! Preflight checks on hand-built facts: the shared good host and check helpers.

use super::facts::{Fact, KvmDevice, Resolution};
use super::sources::OsRelease;
use super::*;
use std::net::IpAddr;

mod hostname;
mod ports;
mod report;
mod resources;
mod system;

pub(super) const GIB: u64 = 1 << 30;

pub(super) fn ip(s: &str) -> IpAddr {
    s.parse().unwrap()
}

/// A host that passes every check of both roles.
pub(super) fn good() -> Facts {
    Facts {
        euid: 0,
        os: Fact::Known(OsRelease {
            id: "debian".into(),
            version_id: "12".into(),
            pretty_name: "Debian GNU/Linux 12 (bookworm)".into(),
        }),
        pid1: Fact::Known("systemd".into()),
        systemd_booted: true,
        cpus: Fact::Known(4),
        memory_bytes: Fact::Known(16 * GIB),
        var_free_bytes: Fact::Known(100 * GIB),
        cpu_virt_flag: Fact::Known(Some("vmx".into())),
        kvm_device: KvmDevice::Usable,
        hostname: Fact::Known("cp".into()),
        hostname_resolution: Fact::Known(Resolution {
            addresses: vec![ip("192.0.2.2")],
            error: None,
        }),
        hosts_lines: vec![],
        primary_address: Fact::Known(ip("192.0.2.2")),
        listeners: Fact::Known(vec![]),
    }
}

pub(super) fn check(role: Role, facts: &Facts, name: &str) -> CheckResult {
    check_with(role, facts, &Params::default(), name)
}

pub(super) fn check_with(role: Role, facts: &Facts, params: &Params, name: &str) -> CheckResult {
    evaluate(crate::recipes::for_tests(), role, facts, params)
        .into_iter()
        .find(|c| c.name == name)
        .unwrap()
}

/// (status, severity) of a check, the pair every boundary test looks at.
pub(super) fn outcome(role: Role, facts: &Facts, name: &str) -> (Status, Severity) {
    let c = check(role, facts, name);
    (c.status, c.severity)
}

pub(super) const PASS: (Status, Severity) = (Status::Pass, Severity::Error);
pub(super) const ERROR: (Status, Severity) = (Status::Fail, Severity::Error);
pub(super) const WARNING: (Status, Severity) = (Status::Fail, Severity::Warning);
