//! The report: --ignore-preflight-errors, ignored checks, and the text and JSON output.

use super::*;
use crate::preflight::sources::HostsLine;

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
            crate::recipes::for_tests(),
            Role::Edge,
            &crate::host::Files::new("/nonexistent", false),
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
    let r = Report::new(
        crate::recipes::for_tests(),
        Role::Standalone,
        broken(),
        &Params::default(),
        vec![],
    );
    assert!(r.has_errors());

    let r = Report::new(
        crate::recipes::for_tests(),
        Role::Standalone,
        broken(),
        &Params::default(),
        vec!["systemd".into()],
    );
    assert!(r.has_errors(), "cpus still fails");
    let systemd = r.checks.iter().find(|c| c.name == "systemd").unwrap();
    assert_eq!(systemd.status, Status::Ignored);

    let ignore = parse_ignore(&["systemd,cpus,root".into()]).unwrap();
    let r = Report::new(
        crate::recipes::for_tests(),
        Role::Standalone,
        broken(),
        &Params::default(),
        ignore,
    );
    assert!(!r.has_errors());
    let root = r.checks.iter().find(|c| c.name == "root").unwrap();
    assert_eq!(root.status, Status::Pass, "a passing check stays passed");

    let r = Report::new(
        crate::recipes::for_tests(),
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
        crate::recipes::for_tests(),
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

    let good = Report::new(
        crate::recipes::for_tests(),
        Role::Edge,
        good(),
        &Params::default(),
        vec![],
    );
    assert_eq!(
        good.to_string().lines().last().unwrap(),
        "edge preflight: 9 passed, 0 warnings, 0 errors, 0 ignored"
    );
    let mut f =
        crate::preflight::facts::gather(&crate::host::Files::new("/nonexistent-root", false));
    f.hosts_lines = vec![HostsLine {
        address: ip("127.0.1.1"),
        text: "127.0.1.1 x".into(),
    }];
    let unknown = serde_json::to_value(Report::new(
        crate::recipes::for_tests(),
        Role::Edge,
        f,
        &Params::default(),
        vec![],
    ))
    .unwrap();
    assert!(
        unknown["facts"]["os"]["unknown"]
            .as_str()
            .unwrap()
            .contains("os-release")
    );
}
