//! The root, os and systemd checks, and a good host passing every check in order.

use super::*;
use crate::preflight::sources;

#[test]
fn a_good_host_passes_everything_in_check_order() {
    for role in [Role::Standalone, Role::Edge] {
        let checks = evaluate(
            crate::recipes::for_tests(),
            role,
            &good(),
            &Params::default(),
        );
        let names: Vec<&str> = checks.iter().map(|c| c.name).collect();
        assert_eq!(names, CHECK_NAMES);
        for c in &checks {
            assert_eq!(c.status, Status::Pass, "{role} {c:?}");
            assert_eq!(c.fix, None);
        }
    }
}

#[test]
fn root_is_required() {
    let mut f = good();
    f.euid = 1000;
    let c = check(Role::Edge, &f, "root");
    assert_eq!((c.status, c.severity), ERROR);
    assert!(c.message.contains("uid 1000"), "{}", c.message);
}

#[test]
fn only_debian_12() {
    let mut f = good();
    f.os = Fact::Known(sources::parse_os_release(
        "ID=ubuntu\nVERSION_ID=\"22.04\"\nPRETTY_NAME=\"Ubuntu 22.04.4 LTS\"\n",
    ));
    let c = check(Role::Standalone, &f, "os");
    assert_eq!((c.status, c.severity), ERROR);
    assert!(
        c.message.starts_with("Ubuntu 22.04.4 LTS is not supported"),
        "{}",
        c.message
    );
    f.os = Fact::Known(sources::parse_os_release("ID=debian\nVERSION_ID=11\n"));
    assert_eq!(outcome(Role::Edge, &f, "os"), ERROR);
    f.os = Fact::unknown("reading /etc/os-release: No such file or directory");
    assert_eq!(outcome(Role::Edge, &f, "os"), ERROR);
}

#[test]
fn systemd_must_be_pid_1() {
    let mut f = good();
    f.pid1 = Fact::Known("process_api".into());
    f.systemd_booted = false;
    let c = check(Role::Standalone, &f, "systemd");
    assert_eq!((c.status, c.severity), ERROR);
    assert!(
        c.message.starts_with("PID 1 is process_api, not systemd"),
        "{}",
        c.message
    );
    assert!(c.fix.unwrap().contains("`dcn lab up`"));

    // /proc/1 unreadable: systemd's own marker decides.
    f.pid1 = Fact::unknown("permission denied");
    assert_eq!(outcome(Role::Edge, &f, "systemd"), ERROR);
    f.systemd_booted = true;
    assert_eq!(outcome(Role::Edge, &f, "systemd"), PASS);
}
