use super::*;
use crate::host::{CmdOutput, RecordingRunner};

fn units(
    states: &'static [(&'static str, &'static str)],
    wanted_by: &'static str,
) -> RecordingRunner {
    RecordingRunner::answering(move |c| match c.args.first().map(String::as_str) {
        Some("is-enabled") => {
            let u = c.args.last().unwrap();
            let s = states
                .iter()
                .find(|(n, _)| n == u)
                .map_or("not-found", |(_, s)| s);
            CmdOutput::ok(format!("{s}\n"))
        }
        Some("show") => CmdOutput::ok(format!("{wanted_by}\n")),
        _ => CmdOutput::ok(""),
    })
}

#[test]
fn a_static_unit_starts_at_boot_only_through_an_enabled_unit() {
    // Debian's ovn-controller.service is static; ovn-host.service
    // (Wants=ovn-controller.service) is what starts it at boot.
    let r = units(
        &[
            ("ovn-controller.service", "static"),
            ("ovn-host.service", "disabled"),
        ],
        "ovn-host.service",
    );
    let (ok, why) = Systemd::new(&r)
        .starts_at_boot("ovn-controller.service")
        .unwrap();
    assert!(!ok);
    assert!(
        why.contains("none of the units that start it (ovn-host.service)"),
        "{why}"
    );
    let r = units(
        &[
            ("ovn-controller.service", "static"),
            ("ovn-host.service", "enabled"),
        ],
        "ovn-host.service",
    );
    assert!(
        Systemd::new(&r)
            .starts_at_boot("ovn-controller.service")
            .unwrap()
            .0
    );
    let r = units(&[("nova-compute.service", "disabled")], "");
    let (ok, why) = Systemd::new(&r)
        .starts_at_boot("nova-compute.service")
        .unwrap();
    assert!(!ok && why.contains("disabled"), "{why}");
    let r = units(&[("lonely.service", "static")], "");
    let (ok, why) = Systemd::new(&r).starts_at_boot("lonely.service").unwrap();
    assert!(!ok && why.contains("no unit wants it"), "{why}");
}

#[test]
fn failed_start_quotes_the_journal() {
    let r = RecordingRunner::answering(|c| match c.program.as_str() {
        "systemctl" => CmdOutput::failed(1, "Job for x.service failed"),
        "journalctl" => CmdOutput::ok("x[1]: database locked\n"),
        _ => CmdOutput::ok(""),
    });
    let err = Systemd::new(&r).start("x.service").unwrap_err();
    let msg = format!("{err:#}");
    assert!(msg.contains("x.service did not start"), "{msg}");
    assert!(msg.contains("database locked"), "{msg}");
}

#[test]
fn wait_active_gives_up_on_failed_units() {
    let r = RecordingRunner::answering(|c| {
        if c.args.first().map(String::as_str) == Some("is-active") {
            CmdOutput::failed(3, "")
        } else if c.args.first().map(String::as_str) == Some("show") {
            CmdOutput::ok("ActiveState=failed\nSubState=failed\n")
        } else {
            CmdOutput::ok("boom\n")
        }
    });
    let err = Systemd::new(&r)
        .wait_active("y.service", Duration::from_secs(60))
        .unwrap_err();
    assert!(format!("{err:#}").contains("y.service is failed (failed)"));
}

#[test]
fn enable_lists_units_in_one_call() {
    let r = RecordingRunner::new();
    Systemd::new(&r)
        .enable(&["a.service", "b.service"])
        .unwrap();
    assert_eq!(
        r.command_lines(),
        vec!["systemctl enable --quiet --no-reload a.service b.service"]
    );
}

/// A runner on which every systemctl call fails, as on a missing unit.
fn refusing() -> RecordingRunner {
    RecordingRunner::answering(|_| CmdOutput::failed(1, "Unit file x.service does not exist."))
}

#[test]
fn a_tree_gets_root_and_no_reload() {
    let r = RecordingRunner::new();
    let tree = Systemd::for_tree(&r, "/mnt/t");
    tree.enable(&["a.service", "b.service"]).unwrap();
    tree.disable(&["c.service"]).unwrap();
    tree.mask(&["d.service"]).unwrap();
    assert_eq!(
        r.command_lines(),
        vec![
            "systemctl --root=/mnt/t enable --quiet a.service b.service",
            "systemctl --root=/mnt/t disable --quiet c.service",
            "systemctl --root=/mnt/t mask --quiet d.service",
        ]
    );
    let calls = r.calls();
    assert!(calls.iter().all(|c| c.check && !c.read_only));
    assert_eq!(
        calls[0].description,
        "enabling a.service, b.service in /mnt/t"
    );
}

#[test]
fn disable_without_now_fails_on_a_missing_unit() {
    let r = RecordingRunner::new();
    Systemd::new(&r).disable(&["a.service"]).unwrap();
    assert_eq!(
        r.command_lines(),
        vec!["systemctl disable --quiet --no-reload a.service"]
    );
    assert!(Systemd::new(&refusing()).disable(&["x.service"]).is_err());
    assert!(
        Systemd::for_tree(&refusing(), "/t")
            .disable(&["x.service"])
            .is_err()
    );
}

#[test]
fn disable_if_present_tolerates_missing_units() {
    let r = refusing();
    Systemd::new(&r)
        .disable_if_present(&["x.service", "y.service"])
        .unwrap();
    Systemd::for_tree(&r, "/t")
        .disable_if_present(&["x.service"])
        .unwrap();
    assert_eq!(
        r.command_lines(),
        vec![
            "systemctl disable --quiet --no-reload x.service y.service",
            "systemctl --root=/t disable --quiet x.service",
        ]
    );
    assert!(r.calls().iter().all(|c| !c.check));
}

#[test]
fn disable_now_if_present_tolerates_missing_units() {
    let r = refusing();
    Systemd::new(&r)
        .disable_now_if_present(&["x.service"])
        .unwrap();
    assert_eq!(
        r.command_lines(),
        vec!["systemctl disable --now --quiet --no-reload x.service"]
    );
    assert_eq!(r.calls()[0].description, "disabling x.service");
    assert!(
        Systemd::new(&refusing())
            .disable_now(&["x.service"])
            .is_err()
    );
}

#[test]
fn no_units_no_call() {
    let r = RecordingRunner::new();
    let s = Systemd::new(&r);
    s.disable(&[]).unwrap();
    s.disable_if_present(&[]).unwrap();
    s.mask(&[]).unwrap();
    assert!(r.command_lines().is_empty());
}

#[test]
fn stop_for_good_lets_systemctl_reload_and_is_best_effort() {
    let r = refusing();
    Systemd::new(&r)
        .timeout(Duration::from_secs(120))
        .stop_for_good("x.service")
        .unwrap();
    assert_eq!(
        r.command_lines(),
        vec!["systemctl disable --now --quiet x.service"]
    );
    let c = &r.calls()[0];
    assert!(!c.check);
    assert_eq!(c.timeout, Duration::from_secs(120));
    assert_eq!(c.description, "stopping x.service");
}

#[test]
fn try_reload_or_restart_is_checked() {
    let r = RecordingRunner::new();
    Systemd::new(&r)
        .try_reload_or_restart("dbus.service")
        .unwrap();
    assert_eq!(
        r.command_lines(),
        vec!["systemctl try-reload-or-restart dbus.service"]
    );
    assert!(
        Systemd::new(&refusing())
            .try_reload_or_restart("dbus.service")
            .is_err()
    );
}

#[test]
fn reboot_and_poweroff_do_not_wait_for_an_answer() {
    let r = refusing();
    let s = Systemd::new(&r);
    s.reboot().unwrap();
    s.timeout(Duration::from_secs(15)).poweroff().unwrap();
    assert_eq!(
        r.command_lines(),
        vec!["systemctl reboot", "systemctl poweroff"]
    );
    let calls = r.calls();
    assert!(calls.iter().all(|c| !c.check && !c.read_only));
    assert_eq!(calls[0].timeout, DEFAULT_TIMEOUT);
    assert_eq!(calls[1].timeout, Duration::from_secs(15));
}

#[test]
fn system_state_is_a_bounded_read_only_query() {
    let r = RecordingRunner::answering(|_| CmdOutput::failed(1, ""));
    let state = Systemd::new(&r)
        .timeout(Duration::from_secs(10))
        .system_state()
        .unwrap();
    assert_eq!(state, "");
    assert_eq!(r.command_lines(), vec!["systemctl is-system-running"]);
    let c = &r.calls()[0];
    assert!(c.read_only && !c.check);
    assert_eq!(c.timeout, Duration::from_secs(10));
}
