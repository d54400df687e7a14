//! Outages the edge must ride out, judged from inside its guests: a WAN
//! cut of several minutes (no round lost at the cut site, the other site
//! untouched, a config change waiting for the link), a power cycle of an
//! edge while its link is cut, a stalled ovn-controller that shows at the
//! centre, and a power cycle of the control plane.

use super::observe::{
    DiagnoseOnPanic, agent_alive, at_host, compute_state, last_rounds, node_health, rounds_since,
    wait_for,
};
use crate::common::{Guest, Lab, guest_works};
use crate::{day2, lifecycle};
use std::time::{Duration, Instant};

/// Cut edge1's WAN link for several minutes: its guests go on getting
/// DHCP answers and talking ICMP and TCP to each other, every round; the
/// control plane notices, edge2 is not affected, a node override made
/// meanwhile waits for the link, edge1's certificate expires and renews
/// once it is back, and a new server lands there.
pub fn wan_cut(
    lab: &Lab,
    guests: &[Guest],
    certificates: &mut lifecycle::History,
    edge2_config: &day2::Compute,
) {
    let marks = last_rounds(lab, guests);
    certificates.sample(lab);
    let cut_diagnose = DiagnoseOnPanic(lab, "edge1");
    assert!(lab.lab(&["link", "edge1", "down"]).status.success());
    let cut = Instant::now();
    let noticed = wait_for(
        "the control plane notices edge1 is gone",
        Duration::from_secs(180),
        || compute_state(lab, "edge1") == "down",
    );
    eprintln!(
        "edge1 reported down {:.0}s after the cut",
        noticed.as_secs_f64()
    );
    let nodes = node_health(lab);
    assert_eq!(
        nodes["edge1"].2, "down",
        "the cut site's chassis cannot answer: {nodes:?}"
    );
    assert_eq!(
        nodes["edge2"],
        ("placed".into(), "up".into(), "up".into()),
        "{nodes:?}"
    );
    // A node override made while edge1 is cut off waits for it.
    let edge1_config = day2::node_override_while_cut(lab);
    // At least three minutes, and until edge1's certificate has expired
    // (it cannot renew while it is cut off).
    while cut.elapsed() < Duration::from_secs(180) || !lifecycle::node_cert_expired(lab, "edge1") {
        assert_eq!(compute_state(lab, "edge2"), "up", "edge2 is not affected");
        assert!(
            cut.elapsed() < Duration::from_secs(420),
            "edge1's certificate never expired"
        );
        std::thread::sleep(Duration::from_secs(20));
    }
    let s = lab.json(&["openstack", "server", "show", "edge2-a"]);
    assert_eq!(s["status"], "ACTIVE");
    let during = rounds_since(lab, guests, &marks);
    // Restore it: nova-compute and ovn-controller reconnect by themselves.
    assert!(lab.lab(&["link", "edge1", "up"]).status.success());
    let restored = Instant::now();
    for g in guests {
        let (n, lost) = &during[&g.name];
        eprintln!(
            "{} during the {:.0}s cut: {n} rounds, {} lost",
            g.name,
            cut.elapsed().as_secs_f64(),
            lost.len()
        );
        assert!(
            *n >= 15,
            "{}: only {n} rounds in {:.0}s",
            g.name,
            cut.elapsed().as_secs_f64()
        );
        assert!(lost.is_empty(), "{}: lost rounds {lost:?}", g.name);
    }
    let back = wait_for(
        "nova-compute on edge1 reports up",
        Duration::from_secs(180),
        || compute_state(lab, "edge1") == "up",
    );
    let ovn_back = wait_for(
        "ovn-controller on edge1 is alive",
        Duration::from_secs(180),
        || agent_alive(lab, "edge1"),
    );
    eprintln!(
        "after the link returned: nova-compute up in {:.0}s, OVN agent alive in {:.0}s (reconnect)",
        back.as_secs_f64(),
        ovn_back.as_secs_f64()
    );
    assert!(
        back <= Duration::from_secs(60),
        "nova-compute took {back:?} to come back"
    );
    lifecycle::renewed_after_the_cut(lab, "edge1", "edge1");
    certificates.sample(lab);
    drop(cut_diagnose);
    day2::caught_up(lab, &edge1_config, edge2_config);
    let s = lab.create_server("vm-edge1-after", Some("edge1"));
    assert_eq!(s["status"], "ACTIVE", "{s}");
    assert_eq!(s["OS-EXT-SRV-ATTR:host"], "edge1", "{s}");
    eprintln!(
        "new server on edge1 ACTIVE {:.0}s after the link returned",
        restored.elapsed().as_secs_f64()
    );
}

/// Power-cycle edge1 while its WAN link is cut (issue 28): the lab
/// restarts it and can enter it during the cut; once the link returns,
/// nova brings its guests back, with their network, with nobody touching
/// the host; edge2's guests lose no round meanwhile.
pub fn power_cycle_during_a_cut(lab: &Lab, guests: &[Guest]) {
    let before: Vec<String> = at_host(guests, "edge1")
        .iter()
        .map(|g| lab.guest_boots(&g.host, &g.id).last().unwrap().boot.clone())
        .collect();
    let marks = last_rounds(lab, guests);
    assert!(lab.lab(&["link", "edge1", "down"]).status.success());
    let power_on = Instant::now();
    let restart = lab.lab(&["restart", "edge1"]);
    assert!(
        restart.status.success(),
        "restart during a cut: {}",
        String::from_utf8_lossy(&restart.stderr)
    );
    let booted = power_on.elapsed();
    // Entered during the cut: its systemd answers (still starting: what
    // needs the control plane waits for the link).
    let state = lab.exec_on("edge1", &["systemctl", "is-system-running"]);
    let state = String::from_utf8_lossy(&state.stdout).trim().to_string();
    eprintln!(
        "edge1 during the cut, {:.0}s after its power-on: {state}",
        booted.as_secs_f64()
    );
    assert!(
        ["starting", "running", "degraded"].contains(&state.as_str()),
        "{state}"
    );
    let status = lab.lab(&["status"]);
    let line = String::from_utf8_lossy(&status.stdout)
        .lines()
        .find(|l| l.starts_with("edge1 "))
        .unwrap_or_default()
        .to_string();
    assert!(line.contains("running") && line.contains("down"), "{line}");
    std::thread::sleep(Duration::from_secs(30));
    lab.ok_on("edge1", &["true"]);
    assert!(lab.lab(&["link", "edge1", "up"]).status.success());
    for (g, old) in at_host(guests, "edge1").iter().zip(&before) {
        wait_for(
            &format!("{} back with its network after edge1's power cycle", g.name),
            Duration::from_secs(480),
            || {
                lab.guest_boots(&g.host, &g.id)
                    .last()
                    .is_some_and(|b| &b.boot != old && guest_works(b, g))
            },
        );
        eprintln!(
            "{}: traffic {:.0}s after edge1's power-on (host up in {:.0}s)",
            g.name,
            power_on.elapsed().as_secs_f64(),
            booted.as_secs_f64()
        );
    }
    let after = rounds_since(lab, &at_host(guests, "edge2"), &marks);
    for (name, (n, lost)) in &after {
        assert!(
            *n > 0 && lost.is_empty(),
            "{name} while edge1 rebooted: {n} rounds, lost {lost:?}"
        );
    }
}

/// A dead ovn-controller at a site shows at the centre.
pub fn stalled_ovn_controller_shows(lab: &Lab) {
    // (Signalled through its pid file: systemd cannot signal the unit's
    // auxiliary processes inside the lab's containers.)
    let signal = |sig: &str| {
        lab.ok_on(
            "edge2",
            &[
                "sh",
                "-c",
                &format!("kill -{sig} $(cat /run/ovn/ovn-controller.pid)"),
            ],
        )
    };
    signal("STOP");
    // The views judge chassis by the join service's pings, every 30 s,
    // each with 5 s to be answered: down within 35 s.
    let down = wait_for(
        "edge2's stopped ovn-controller shows down",
        Duration::from_secs(60),
        || node_health(lab)["edge2"].2 == "down",
    );
    let nodes = node_health(lab);
    signal("CONT");
    eprintln!("edge2's stopped chassis showed down after {down:?}");
    assert_eq!(nodes["edge2"].1, "up", "{nodes:?}");
    assert_eq!(
        nodes["edge2"].2, "down",
        "a stopped ovn-controller: {nodes:?}"
    );
    wait_for(
        "edge2's chassis answers again",
        Duration::from_secs(60),
        || node_health(lab)["edge2"].2 == "up",
    );
}

/// A control-plane power cycle: the edges' guests keep their traffic
/// throughout, and everything reconnects without intervention.
pub fn control_plane_power_cycle(
    lab: &Lab,
    edge_guests: &[Guest],
    certificates: &mut lifecycle::History,
) {
    for g in edge_guests {
        lab.wait_guest_working(g, Duration::from_secs(300));
    }
    let marks = last_rounds(lab, edge_guests);
    certificates.sample(lab);
    assert!(lab.lab(&["restart", "cp"]).status.success());
    let recovered = wait_for(
        "both edges up after the control plane restarted",
        Duration::from_secs(420),
        || {
            ["edge1", "edge2"]
                .iter()
                .all(|h| compute_state(lab, h) == "up" && agent_alive(lab, h))
        },
    );
    eprintln!(
        "edges up again {:.0}s after the control plane restarted",
        recovered.as_secs_f64()
    );
    for (name, (n, lost)) in rounds_since(lab, edge_guests, &marks) {
        assert!(
            n > 0 && lost.is_empty(),
            "{name} through the control plane's power cycle: {n} rounds, lost {lost:?}"
        );
    }
}
