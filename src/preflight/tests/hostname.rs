//! The hostname check: how resolved addresses are classified and which /etc/hosts fix is given.

use super::*;
use crate::preflight::checks::{HostnameClass, classify_hostname};
use crate::preflight::sources;

#[test]
fn hostname_classification() {
    assert_eq!(classify_hostname(&[]), HostnameClass::Unresolvable);
    assert_eq!(
        classify_hostname(&[ip("127.0.1.1")]),
        HostnameClass::LoopbackOnly
    );
    assert_eq!(
        classify_hostname(&[ip("127.0.0.1"), ip("::1")]),
        HostnameClass::LoopbackOnly
    );
    assert_eq!(
        classify_hostname(&[ip("::ffff:127.0.0.1")]),
        HostnameClass::LoopbackOnly
    );
    assert_eq!(
        classify_hostname(&[ip("127.0.1.1"), ip("192.0.2.2")]),
        HostnameClass::LoopbackFirst
    );
    assert_eq!(
        classify_hostname(&[ip("192.0.2.2"), ip("127.0.1.1")]),
        HostnameClass::Usable
    );
    assert_eq!(classify_hostname(&[ip("fd00::2")]), HostnameClass::Usable);
}

fn resolving_to(addrs: &[&str], hosts: &str) -> Facts {
    let mut f = good();
    f.hostname_resolution = Fact::Known(Resolution {
        addresses: addrs.iter().map(|a| ip(a)).collect(),
        error: None,
    });
    f.hosts_lines = sources::hosts_lines_naming(hosts, "cp");
    f
}

#[test]
fn hostname_on_loopback_only_says_which_line_to_add() {
    // Debian's installer default.
    let f = resolving_to(&["127.0.1.1"], "127.0.0.1 localhost\n127.0.1.1 cp\n");
    let c = check(Role::Standalone, &f, "hostname");
    assert_eq!((c.status, c.severity), ERROR);
    assert!(
        c.message.starts_with("cp resolves only to 127.0.1.1"),
        "{}",
        c.message
    );
    assert_eq!(
        c.fix.unwrap(),
        "add the line `192.0.2.2 cp` to /etc/hosts and remove cp from `127.0.1.1 cp`"
    );

    // No address known, a fully qualified name.
    let mut f = resolving_to(&["::1"], "");
    f.hostname = Fact::Known("cp.example.com".into());
    f.primary_address = Fact::unknown("this host has no default route");
    let c = check(Role::Edge, &f, "hostname");
    assert_eq!(
        c.fix.unwrap(),
        "add the line `<this host's address> cp.example.com cp` to /etc/hosts"
    );
}

#[test]
fn hostname_unresolvable_or_loopback_first() {
    let mut f = resolving_to(&[], "");
    f.hostname_resolution = Fact::Known(Resolution {
        addresses: vec![],
        error: Some("failed to lookup address information: Name or service not known".into()),
    });
    let c = check(Role::Edge, &f, "hostname");
    assert_eq!((c.status, c.severity), ERROR);
    assert!(
        c.message
            .starts_with("cp does not resolve (failed to lookup"),
        "{}",
        c.message
    );
    assert!(
        c.fix
            .unwrap()
            .starts_with("add the line `192.0.2.2 cp` to /etc/hosts")
    );

    let f = resolving_to(&["127.0.1.1", "192.0.2.2"], "127.0.1.1 cp\n192.0.2.2 cp\n");
    let c = check(Role::Standalone, &f, "hostname");
    assert_eq!((c.status, c.severity), WARNING);
    assert_eq!(
        c.fix.unwrap(),
        "in /etc/hosts, remove cp from `127.0.1.1 cp`"
    );

    let f = resolving_to(&["192.0.2.2"], "192.0.2.2 cp\n");
    assert_eq!(
        check(Role::Standalone, &f, "hostname").message,
        "cp resolves to 192.0.2.2"
    );
}
