use super::checks::{HostnameClass, classify_hostname, limits, required_ports};
use super::facts::{Fact, KvmDevice, Resolution};
use super::sources::{self, HostsLine, OsRelease};
use super::*;
use std::net::IpAddr;

const GIB: u64 = 1 << 30;

fn ip(s: &str) -> IpAddr {
    s.parse().unwrap()
}

/// A host that passes every check of both roles.
fn good() -> Facts {
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

fn check(role: Role, facts: &Facts, name: &str) -> CheckResult {
    check_with(role, facts, &Params::default(), name)
}

fn check_with(role: Role, facts: &Facts, params: &Params, name: &str) -> CheckResult {
    evaluate(role, facts, params)
        .into_iter()
        .find(|c| c.name == name)
        .unwrap()
}

/// (status, severity) of a check, the pair every boundary test looks at.
fn outcome(role: Role, facts: &Facts, name: &str) -> (Status, Severity) {
    let c = check(role, facts, name);
    (c.status, c.severity)
}

const PASS: (Status, Severity) = (Status::Pass, Severity::Error);
const ERROR: (Status, Severity) = (Status::Fail, Severity::Error);
const WARNING: (Status, Severity) = (Status::Fail, Severity::Warning);

#[test]
fn a_good_host_passes_everything_in_check_order() {
    for role in [Role::Standalone, Role::Edge] {
        let checks = evaluate(role, &good(), &Params::default());
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

#[test]
fn cpu_boundaries() {
    let mut f = good();
    let cases = [
        (Role::Standalone, 1, ERROR),
        (Role::Standalone, 2, PASS),
        (Role::Edge, 1, WARNING),
        (Role::Edge, 2, PASS),
    ];
    for (role, n, want) in cases {
        f.cpus = Fact::Known(n);
        assert_eq!(outcome(role, &f, "cpus"), want, "{role} with {n} CPUs");
    }
    f.cpus = Fact::Known(2);
    assert_eq!(
        check(Role::Standalone, &f, "cpus").message,
        "2 CPUs (minimum 2)"
    );
    assert_eq!(
        check(Role::Edge, &f, "cpus").message,
        "2 CPUs (minimum 1, recommended 2)"
    );
    f.cpus = Fact::Known(1);
    let c = check(Role::Edge, &f, "cpus");
    assert_eq!(
        c.message,
        "1 CPU, below the recommended 2 for an edge compute host"
    );
    assert_eq!(c.fix.unwrap(), "give the host at least 2 CPUs");
}

/// The smallest MemTotal that counts as `gib` GiB of memory.
fn mem_floor(gib: u64) -> u64 {
    gib * GIB - gib * GIB / 100 * 10
}

#[test]
fn memory_boundaries_allow_for_what_the_kernel_reserves() {
    let mut f = good();
    let cases = [
        (Role::Standalone, mem_floor(4) - 1, ERROR),
        (Role::Standalone, mem_floor(4), WARNING),
        (Role::Standalone, mem_floor(8) - 1, WARNING),
        (Role::Standalone, mem_floor(8), PASS),
        (Role::Edge, mem_floor(2) - 1, ERROR),
        (Role::Edge, mem_floor(2), WARNING),
        (Role::Edge, mem_floor(4) - 1, WARNING),
        (Role::Edge, mem_floor(4), PASS),
    ];
    for (role, bytes, want) in cases {
        f.memory_bytes = Fact::Known(bytes);
        assert_eq!(
            outcome(role, &f, "memory"),
            want,
            "{role} with {bytes} bytes"
        );
    }
    // What a VM with 4 GiB of RAM reports is enough for the minimum.
    f.memory_bytes = Fact::Known(4_020_000 * 1024);
    let c = check(Role::Standalone, &f, "memory");
    assert_eq!((c.status, c.severity), WARNING);
    assert_eq!(
        c.message,
        "3.8 GiB, below the recommended 8 GiB for a standalone control plane"
    );
    f.memory_bytes = Fact::Known(23_400 * GIB / 1000);
    assert_eq!(
        check(Role::Standalone, &f, "memory").message,
        "23.4 GiB (minimum 4 GiB, recommended 8 GiB)"
    );
}

#[test]
fn disk_boundaries() {
    let mut f = good();
    let cases = [
        (Role::Standalone, 10 * GIB - 1, ERROR),
        (Role::Standalone, 10 * GIB, WARNING),
        (Role::Standalone, 20 * GIB - 1, WARNING),
        (Role::Standalone, 20 * GIB, PASS),
        (Role::Edge, 5 * GIB - 1, ERROR),
        (Role::Edge, 5 * GIB, WARNING),
        (Role::Edge, 20 * GIB, PASS),
    ];
    for (role, bytes, want) in cases {
        f.var_free_bytes = Fact::Known(bytes);
        assert_eq!(
            outcome(role, &f, "disk-var"),
            want,
            "{role} with {bytes} bytes"
        );
    }
    f.var_free_bytes = Fact::Known(4 * GIB);
    let c = check(Role::Edge, &f, "disk-var");
    assert_eq!(
        c.message,
        "4.0 GiB free under /var, below the minimum of 5 GiB for an edge compute host"
    );
    assert!(c.fix.unwrap().ends_with("to 5 GiB free"));
}

#[test]
fn unknown_sizes_are_warnings_that_say_why() {
    let mut f = good();
    f.memory_bytes = Fact::unknown("reading /proc/meminfo: No such file or directory");
    let c = check(Role::Standalone, &f, "memory");
    assert_eq!((c.status, c.severity), WARNING);
    assert!(
        c.message
            .starts_with("not checked: could not read /proc/meminfo"),
        "{}",
        c.message
    );
    f.listeners = Fact::unknown("reading /proc/net/tcp: denied");
    assert_eq!(outcome(Role::Edge, &f, "ports"), WARNING);
}

#[test]
fn virtualization_kvm_or_qemu() {
    let mut f = good();
    let report = |f: &Facts| Report::new(Role::Edge, f.clone(), &Params::default(), vec![]);
    assert_eq!(report(&f).virt_type(), "kvm");
    let c = check(Role::Edge, &f, "virtualization");
    assert_eq!((c.status, c.severity), (Status::Pass, Severity::Warning));
    assert_eq!(c.message, "kvm: the CPU has vmx and /dev/kvm is usable");

    // This lab's machine: /dev/kvm is there, VT-x is not.
    f.cpu_virt_flag = Fact::Known(None);
    let c = check(Role::Edge, &f, "virtualization");
    assert_eq!((c.status, c.severity), WARNING);
    assert!(
        c.message
            .starts_with("qemu: /dev/kvm exists but the CPU does not expose VT-x/AMD-V")
    );
    assert!(c.message.contains("software emulation"));
    assert!(c.fix.unwrap().contains("enable VT-x/AMD-V"));
    let r = report(&f);
    assert_eq!(r.virt_type(), "qemu");
    assert!(!r.has_errors(), "qemu works; it is only slow");

    f.cpu_virt_flag = Fact::Known(Some("svm".into()));
    f.kvm_device = KvmDevice::Missing;
    let c = check(Role::Standalone, &f, "virtualization");
    assert_eq!(
        c.message.split(',').next().unwrap(),
        "qemu: /dev/kvm does not exist"
    );
    assert!(c.fix.unwrap().contains("modprobe kvm_amd"));
    assert_eq!(report(&f).virt_type(), "qemu");

    // A control plane without the compute role runs no instances.
    let params = Params {
        compute: false,
        ..Params::default()
    };
    let c = check_with(Role::Standalone, &f, &params, "virtualization");
    assert_eq!(c.status, Status::Pass);
}

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

fn with_fixture_listeners() -> Facts {
    let mut listeners = sources::parse_proc_net_tcp(include_str!("testdata/proc-net-tcp"));
    listeners.extend(sources::parse_proc_net_tcp(include_str!(
        "testdata/proc-net-tcp6"
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
    assert!(
        c.message
            .contains("5000 (api-proxy, keystone) is taken on 0.0.0.0")
    );
    assert!(
        c.message
            .contains("9292 (api-proxy, glance) is taken on ::")
    );
    assert!(
        c.message
            .contains("9696 (api-proxy, neutron) is taken on ::ffff:192.0.2.2")
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
    let standalone = required_ports(Role::Standalone, &Params::default());
    assert_eq!(standalone.len(), 15);
    let no_compute = Params {
        compute: false,
        ..Params::default()
    };
    assert!(
        !required_ports(Role::Standalone, &no_compute)
            .iter()
            .any(|(p, _)| *p == 6640)
    );
    let edge: Vec<u16> = required_ports(Role::Edge, &no_compute)
        .iter()
        .map(|(p, _)| *p)
        .collect();
    assert_eq!(edge, vec![6640]);
    assert_eq!(limits(Role::Edge).cpus.error_below, 1);
}

#[test]
fn ignore_list_is_validated() {
    let v = |s: &[&str]| s.iter().map(|x| x.to_string()).collect::<Vec<_>>();
    assert_eq!(
        parse_ignore(&v(&["systemd,Ports", " hostname ", "systemd"])).unwrap(),
        v(&["systemd", "ports", "hostname"])
    );
    assert_eq!(parse_ignore(&v(&["all"])).unwrap(), v(&["all"]));
    assert!(parse_ignore(&[]).unwrap().is_empty());
    let err = parse_ignore(&v(&["systemd,swap"])).unwrap_err().to_string();
    assert!(
        err.starts_with("unknown preflight check \"swap\" in --ignore-preflight-errors"),
        "{err}"
    );
    assert!(err.contains(
        "root, os, systemd, cpus, memory, disk-var, virtualization, hostname, ports, or all"
    ));
    assert!(
        run(
            Role::Edge,
            Path::new("/nonexistent"),
            &Params::default(),
            &v(&["nope"])
        )
        .is_err()
    );
}

fn broken() -> Facts {
    let mut f = good();
    f.pid1 = Fact::Known("process_api".into());
    f.systemd_booted = false;
    f.cpus = Fact::Known(1);
    f.cpu_virt_flag = Fact::Known(None);
    f
}

#[test]
fn ignored_errors_become_warnings_marked_ignored() {
    let r = Report::new(Role::Standalone, broken(), &Params::default(), vec![]);
    assert!(r.has_errors());

    let r = Report::new(
        Role::Standalone,
        broken(),
        &Params::default(),
        vec!["systemd".into()],
    );
    assert!(r.has_errors(), "cpus still fails");
    let systemd = r.checks.iter().find(|c| c.name == "systemd").unwrap();
    assert_eq!(systemd.status, Status::Ignored);

    let ignore = parse_ignore(&["systemd,cpus,root".into()]).unwrap();
    let r = Report::new(Role::Standalone, broken(), &Params::default(), ignore);
    assert!(!r.has_errors());
    let root = r.checks.iter().find(|c| c.name == "root").unwrap();
    assert_eq!(root.status, Status::Pass, "a passing check stays passed");

    let r = Report::new(
        Role::Standalone,
        broken(),
        &Params::default(),
        vec!["all".into()],
    );
    assert!(!r.has_errors());
    let virt = r
        .checks
        .iter()
        .find(|c| c.name == "virtualization")
        .unwrap();
    assert_eq!(virt.status, Status::Ignored);
}

#[test]
fn text_and_json_output() {
    let r = Report::new(
        Role::Standalone,
        broken(),
        &Params::default(),
        vec!["cpus".into()],
    );
    let text = r.to_string();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines[0], "[PASS]    root           running as root");
    assert!(lines[2].starts_with("[ERROR]   systemd        PID 1 is process_api, not systemd"));
    assert_eq!(
        lines[3],
        "                         fix: run dcn on a host booted with systemd, or try it in the local lab: `dcn lab up`"
    );
    assert!(lines[4].starts_with("[IGNORED] cpus           1 CPU, below the minimum of 2"));
    assert!(text.contains("[WARNING] virtualization qemu: "));
    assert_eq!(
        *lines.last().unwrap(),
        "standalone preflight: 6 passed, 1 warning, 1 error, 1 ignored; fix the errors, or skip them with --ignore-preflight-errors=systemd"
    );

    let json: serde_json::Value = serde_json::to_value(&r).unwrap();
    assert_eq!(json["role"], "standalone");
    assert_eq!(json["ok"], false);
    assert_eq!(json["virt_type"], "qemu");
    assert_eq!(json["ignored"][0], "cpus");
    assert_eq!(json["checks"][2]["name"], "systemd");
    assert_eq!(json["checks"][2]["status"], "fail");
    assert_eq!(json["checks"][2]["severity"], "error");
    assert_eq!(json["facts"]["cpus"], 1);
    assert_eq!(json["facts"]["kvm_device"]["state"], "usable");

    let good = Report::new(Role::Edge, good(), &Params::default(), vec![]);
    assert_eq!(
        good.to_string().lines().last().unwrap(),
        "edge preflight: 9 passed, 0 warnings, 0 errors, 0 ignored"
    );
    let mut f = super::facts::gather(Path::new("/nonexistent-root"));
    f.hosts_lines = vec![HostsLine {
        address: ip("127.0.1.1"),
        text: "127.0.1.1 x".into(),
    }];
    let unknown =
        serde_json::to_value(Report::new(Role::Edge, f, &Params::default(), vec![])).unwrap();
    assert!(
        unknown["facts"]["os"]["unknown"]
            .as_str()
            .unwrap()
            .contains("os-release")
    );
}
