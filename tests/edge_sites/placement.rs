//! The sites as the cloud sees them, and servers in their zones: two edge
//! sites, each its own availability zone in nova and neutron, hosts up and
//! placed with what they start at boot enabled; a server that names no
//! zone stays at the centre; and two real guests per site that get an
//! address, a config drive and their metadata, and talk to each other.

use super::observe::{agent_alive, node_health, wait_for};
use crate::common::{Guest, Lab, rows_with};
use serde_json::Value;
use std::time::{Duration, Instant};

/// Two sites, each its own availability zone, hosts up and placed.
pub fn sites_up_and_placed(lab: &Lab) {
    let services = lab.json(&[
        "openstack",
        "compute",
        "service",
        "list",
        "--service",
        "nova-compute",
    ]);
    for site in ["edge1", "edge2"] {
        let row = rows_with(&services, "Host", site);
        assert!(
            row.len() == 1 && row[0]["State"] == "up" && row[0]["Zone"] == site,
            "{site}: {services}"
        );
        // join waits for nova's view of the host; the OVN chassis reports
        // to neutron on its own heartbeat, so give it a bounded moment.
        wait_for(
            &format!("the OVN controller on {site} is alive"),
            Duration::from_secs(120),
            || agent_alive(lab, site),
        );
    }
    let nodes = node_health(lab);
    for site in ["edge1", "edge2"] {
        assert_eq!(
            nodes[site],
            ("placed".into(), "up".into(), "up".into()),
            "{nodes:?}"
        );
    }
    let status = lab.ok_on("edge1", &["dcn", "status"]);
    assert!(
        status.contains("all services are up") && status.contains("site edge1"),
        "{status}"
    );
    // What the host must start at boot is enabled, not left to the join's
    // start (Debian's ovn-controller.service is static: ovn-host starts it).
    for unit in [
        "ovn-host.service",
        "openvswitch-switch.service",
        "nova-compute.service",
    ] {
        let state = lab.exec_on("edge1", &["systemctl", "is-enabled", unit]);
        assert_eq!(
            String::from_utf8_lossy(&state.stdout).trim(),
            "enabled",
            "{unit}"
        );
    }
}

/// Zones: the centre and every site, in nova and in neutron; a network
/// hinted to a site is in its zone.
pub fn zones_in_nova_and_neutron(lab: &Lab) {
    let zone_names = |kind: &str| {
        lab.ok(&[
            "openstack",
            "availability",
            "zone",
            "list",
            kind,
            "-f",
            "value",
            "-c",
            "Zone Name",
        ])
    };
    let compute_zones = zone_names("--compute");
    let network_zones = zone_names("--network");
    for z in ["central", "edge1", "edge2"] {
        assert!(
            compute_zones.lines().any(|l| l.trim() == z),
            "compute zones: {compute_zones}"
        );
        assert!(
            network_zones.lines().any(|l| l.trim() == z),
            "network zones: {network_zones}"
        );
    }
    lab.ok(&[
        "openstack",
        "network",
        "create",
        "--availability-zone-hint",
        "edge1",
        "net-edge1",
    ]);
    let net = lab.json(&["openstack", "network", "show", "net-edge1"]);
    assert!(
        net["availability_zones"]
            .as_array()
            .is_some_and(|z| z.iter().any(|z| z == "edge1")),
        "an edge1-hinted network is in edge1's zone: {net}"
    );
}

/// A server that names no zone stays at the centre; one that names the old
/// default zone never reaches a site. Then two real guests per site:
/// address by DHCP, config drive, their own uuid from the metadata service
/// over TCP, TCP to each other. Returns the site guests.
pub fn guests_in_their_zones(lab: &Lab) -> Vec<Guest> {
    let started = Instant::now();
    lab.boot_guest("vm-central", None, None, None);
    let central = lab.wait_active("vm-central");
    assert_eq!(central["OS-EXT-SRV-ATTR:host"], "cp", "{central}");
    assert_eq!(
        central["OS-EXT-AZ:availability_zone"], "central",
        "{central}"
    );
    let out = lab.try_boot_guest("vm-nova", Some("nova"), None, None, true);
    let s = lab.exec(&["openstack", "server", "show", "vm-nova", "-f", "json"]);
    let s: Value = serde_json::from_slice(&s.stdout).unwrap_or(Value::Null);
    assert!(
        !out.status.success()
            && !["edge1", "edge2"].contains(&s["OS-EXT-SRV-ATTR:host"].as_str().unwrap_or("")),
        "a request for zone nova must not land on a site: {s}"
    );

    // Two real guests per site: address by DHCP, config drive, their own
    // uuid from the metadata service over TCP, TCP to each other.
    let mut guests: Vec<Guest> = Vec::new();
    for site in ["edge1", "edge2"] {
        for g in lab.guest_pair(site, Some(site)) {
            assert_eq!((g.host.as_str(), g.zone.as_str()), (site, site), "{g:?}");
            guests.push(g);
        }
    }
    for g in &guests {
        let boot = lab.wait_guest_working(g, Duration::from_secs(300));
        let cd = boot.event("configdrive");
        assert!(
            cd.is_some_and(|e| e["uuid"] == g.id),
            "{}: no config drive with its uuid: {:?}",
            g.name,
            boot.events
        );
        eprintln!(
            "{} on {}: DHCP {}s after its kernel started, metadata at {}s, working {:.0}s after the first create",
            g.name,
            g.host,
            boot.event("dhcp").unwrap()["uptime"],
            boot.event("metadata").unwrap()["uptime"],
            started.elapsed().as_secs_f64()
        );
    }
    guests
}
