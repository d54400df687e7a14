//! The hostname check: other hosts must reach this one by its name, so the
//! name has to resolve to a non-loopback address (and first to one).

use super::{CheckResult, Severity};
use crate::preflight::facts::Facts;
use std::net::IpAddr;

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

pub(super) fn check_hostname(facts: &Facts) -> CheckResult {
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
