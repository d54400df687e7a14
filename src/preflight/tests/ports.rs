//! The ports check: listeners named with their purpose, the join port, and each role's ports.

use super::*;
use crate::preflight::checks::{limits, required_ports};
use crate::preflight::sources;

fn with_fixture_listeners() -> Facts {
    let mut listeners = sources::parse_proc_net_tcp(include_str!("../testdata/proc-net-tcp"));
    listeners.extend(sources::parse_proc_net_tcp(include_str!(
        "../testdata/proc-net-tcp6"
    )));
    listeners[2].process = Some("mariadbd[812]".into());
    let mut f = good();
    f.listeners = Fact::Known(listeners);
    f
}

#[test]
fn ports_in_use_are_named_with_their_purpose() {
    let f = with_fixture_listeners();
    let c = check(Role::Standalone, &f, "ports");
    assert_eq!((c.status, c.severity), ERROR);
    assert!(
        c.message
            .contains("3306 (mariadb) is taken by mariadbd[812] on 127.0.0.1"),
        "{}",
        c.message
    );
    assert!(c.message.contains("5000 (keystone) is taken on 0.0.0.0"));
    assert!(c.message.contains("9292 (glance) is taken on ::"));
    assert!(
        c.message
            .contains("9696 (neutron) is taken on ::ffff:192.0.2.2")
    );
    assert!(c.message.contains("6640 (ovn-controller) is taken"));
    assert!(
        !c.message.contains("2024"),
        "ports dcn does not need are not reported"
    );
    assert_eq!(
        c.fix.unwrap(),
        "stop what listens on ports 3306, 5000, 6640, 8774, 9292, 9696 (`ss -ltnp` shows it), or move it to another port"
    );

    let c = check(Role::Edge, &f, "ports");
    assert_eq!((c.status, c.severity), ERROR);
    assert!(
        c.message
            .starts_with("6640 (ovn-controller) is taken on ::1")
    );
    assert!(
        c.fix
            .unwrap()
            .starts_with("stop what listens on port 6640 ")
    );
}

#[test]
fn the_join_port_follows_the_config() {
    let mut f = good();
    f.listeners = Fact::Known(sources::parse_proc_net_tcp(
        "h\n 0: 00000000:24E3 00000000:0000 0A 00000000:00000000 00:00000000 00000000 0 0 5 1\n",
    ));
    let c = check(Role::Standalone, &f, "ports");
    assert!(
        c.message
            .starts_with("9443 (join-service) is taken on 0.0.0.0"),
        "{}",
        c.message
    );
    let moved = Params {
        join_port: 10443,
        ..Params::default()
    };
    let c = check_with(Role::Standalone, &f, &moved, "ports");
    assert_eq!(c.status, Status::Pass);
    assert!(c.message.contains("10443"));
}

#[test]
fn required_ports_per_role() {
    let standalone = required_ports(
        crate::recipes::for_tests(),
        Role::Standalone,
        &Params::default(),
    );
    assert_eq!(standalone.len(), 15);
    let no_compute = Params {
        compute: false,
        ..Params::default()
    };
    assert!(
        !required_ports(crate::recipes::for_tests(), Role::Standalone, &no_compute)
            .iter()
            .any(|(p, _)| *p == 6640)
    );
    let edge: Vec<u16> = required_ports(crate::recipes::for_tests(), Role::Edge, &no_compute)
        .iter()
        .map(|(p, _)| *p)
        .collect();
    assert_eq!(edge, vec![6640]);
    assert_eq!(limits(Role::Edge).cpus.error_below, 1);
}
