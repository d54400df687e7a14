//! Edge sites end to end (issue 4): `dcn lab up --edges 2 --spare 1` joins
//! two edge sites, each its own availability zone on its own routed subnet,
//! then the DCN failure modes are proven: a WAN cut leaves the instance
//! running and heals by itself, refused joins change nothing, a control
//! plane restart is survived without intervention, and no secret leaks into
//! argv, journals, dcn's output or world-readable files.
//!
//! Needs root and about 20 minutes: runs when DCN_LAB_E2E=1.

mod common;

use common::*;
use serde_json::Value;
use std::time::{Duration, Instant};

/// Poll `check` every 3 s until it returns true or `limit` passes.
fn wait_for(what: &str, limit: Duration, mut check: impl FnMut() -> bool) -> Duration {
    let started = Instant::now();
    while !check() {
        assert!(
            started.elapsed() < limit,
            "{what}: not within {}s",
            limit.as_secs()
        );
        std::thread::sleep(Duration::from_secs(3));
    }
    started.elapsed()
}

fn compute_state(lab: &Lab, host: &str) -> String {
    let out = lab.exec(&[
        "openstack",
        "compute",
        "service",
        "list",
        "--service",
        "nova-compute",
        "-f",
        "json",
    ]);
    let v: Value = serde_json::from_slice(&out.stdout).unwrap_or(Value::Null);
    v.as_array()
        .and_then(|a| a.iter().find(|r| r["Host"] == host))
        .and_then(|r| r["State"].as_str().map(String::from))
        .unwrap_or_else(|| "missing".into())
}

fn agent_alive(lab: &Lab, host: &str) -> bool {
    let out = lab.exec(&[
        "openstack",
        "network",
        "agent",
        "list",
        "--host",
        host,
        "-f",
        "json",
    ]);
    let v: Value = serde_json::from_slice(&out.stdout).unwrap_or(Value::Null);
    v.as_array().is_some_and(|a| {
        a.iter()
            .any(|r| r["Agent Type"] == "OVN Controller agent" && r["Alive"] == true)
    })
}

fn running_guests(lab: &Lab, host: &str) -> String {
    String::from_utf8_lossy(
        &lab.exec_on(host, &["virsh", "list", "--state-running", "--name"])
            .stdout,
    )
    .into_owned()
}

/// Copy a file from one lab host's disk to another's (an operator's scp).
fn hand_over(lab: &Lab, from: &str, to: &str, path: &str) {
    let src = lab
        .dir
        .join("hosts")
        .join(from)
        .join("rootfs")
        .join(path.trim_start_matches('/'));
    let dst = lab
        .dir
        .join("hosts")
        .join(to)
        .join("rootfs")
        .join(path.trim_start_matches('/'));
    std::fs::copy(&src, &dst).unwrap();
}

/// Export a bundle on the control plane; returns the CA pin it printed.
fn export(lab: &Lab, args: &[&str]) -> String {
    let mut a = vec!["dcn", "bundle", "export"];
    a.extend_from_slice(args);
    let out = lab.ok(&a);
    out.lines()
        .find_map(|l| l.strip_prefix("CA pin: "))
        .expect("a pin")
        .to_string()
}

fn untouched(lab: &Lab, host: &str) {
    let out = lab.exec_on(host, &["test", "-e", "/var/lib/dcn"]);
    assert!(
        !out.status.success(),
        "a refused join left /var/lib/dcn on {host}"
    );
}

#[test]
fn lab_edge_sites_end_to_end() {
    if !enabled() {
        return;
    }
    let dir = tempfile::Builder::new()
        .prefix("dcn-lab-edges-")
        .tempdir_in("/var/tmp")
        .unwrap();
    let lab = Lab::up(dir.path(), &["--edges", "2", "--spare", "1"]);
    let mut outputs = lab.up_output.clone();
    let report: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.path().join("report.json")).unwrap())
            .unwrap();
    eprintln!("edge joins: {}", report["edgeJoins"]);

    // Two sites, each its own availability zone, hosts up and placed.
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
            || agent_alive(&lab, site),
        );
    }
    let nodes = lab.ok(&["dcn", "node", "list"]);
    assert!(
        nodes.lines().filter(|l| l.contains("placed")).count() == 2,
        "{nodes}"
    );
    let status = lab.ok_on("edge1", &["dcn", "status"]);
    assert!(
        status.contains("all services are up") && status.contains("site edge1"),
        "{status}"
    );

    // A server requested in each zone lands on that site's host.
    lab.guest_prerequisites("192.168.88.0/24");
    for site in ["edge1", "edge2"] {
        let s = lab.create_server(&format!("vm-{site}"), Some(site));
        assert_eq!(s["status"], "ACTIVE", "{s}");
        assert_eq!(s["OS-EXT-SRV-ATTR:host"], site, "{s}");
        assert!(
            running_guests(&lab, site).contains("instance-"),
            "no guest on {site}"
        );
    }

    // Cut edge1's WAN link for several minutes.
    let guest = running_guests(&lab, "edge1");
    assert!(lab.lab(&["link", "edge1", "down"]).status.success());
    let cut = Instant::now();
    let noticed = wait_for(
        "the control plane notices edge1 is gone",
        Duration::from_secs(180),
        || compute_state(&lab, "edge1") == "down",
    );
    eprintln!(
        "edge1 reported down {:.0}s after the cut",
        noticed.as_secs_f64()
    );
    while cut.elapsed() < Duration::from_secs(180) {
        assert_eq!(
            running_guests(&lab, "edge1"),
            guest,
            "the instance on edge1 must keep running"
        );
        assert_eq!(compute_state(&lab, "edge2"), "up", "edge2 is not affected");
        std::thread::sleep(Duration::from_secs(20));
    }
    let s = lab.json(&["openstack", "server", "show", "vm-edge2"]);
    assert_eq!(s["status"], "ACTIVE");
    // Restore it: nova-compute and ovn-controller reconnect by themselves.
    assert!(lab.lab(&["link", "edge1", "up"]).status.success());
    let back = wait_for(
        "nova-compute on edge1 reports up",
        Duration::from_secs(180),
        || compute_state(&lab, "edge1") == "up",
    );
    let ovn_back = wait_for(
        "ovn-controller on edge1 is alive",
        Duration::from_secs(180),
        || agent_alive(&lab, "edge1"),
    );
    eprintln!(
        "after the link returned: nova-compute up in {:.0}s, OVN agent alive in {:.0}s",
        back.as_secs_f64(),
        ovn_back.as_secs_f64()
    );
    assert!(
        back <= Duration::from_secs(60),
        "nova-compute took {back:?} to come back"
    );
    assert_eq!(running_guests(&lab, "edge1"), guest);
    let s = lab.create_server("vm-edge1-after", Some("edge1"));
    assert_eq!(s["status"], "ACTIVE", "{s}");

    // Refused joins on the spare host edge3 change nothing.
    let pin = export(
        &lab,
        &[
            "--site",
            "edge3",
            "--max-uses",
            "1",
            "-o",
            "/root/edge3.tar.gz",
        ],
    );
    hand_over(&lab, "cp", "edge3", "/root/edge3.tar.gz");
    let bad_pin = format!("sha256:{}", "0".repeat(64));
    let out = lab.fails_on(
        "edge3",
        &["dcn", "join", "/root/edge3.tar.gz", "--ca-pin", &bad_pin],
    );
    assert!(out.to_lowercase().contains("pin"), "{out}");
    untouched(&lab, "edge3");

    export(
        &lab,
        &["--site", "edge3", "--ttl", "1s", "-o", "/root/old.tar.gz"],
    );
    hand_over(&lab, "cp", "edge3", "/root/old.tar.gz");
    std::thread::sleep(Duration::from_secs(2));
    let out = lab.fails_on(
        "edge3",
        &["dcn", "join", "/root/old.tar.gz", "--ca-pin", &pin],
    );
    assert!(out.contains("expired"), "{out}");
    untouched(&lab, "edge3");

    assert!(lab.lab(&["link", "edge3", "down"]).status.success());
    let out = lab.fails_on(
        "edge3",
        &[
            "dcn",
            "join",
            "/root/edge3.tar.gz",
            "--ca-pin",
            &pin,
            "--timeout",
            "20s",
        ],
    );
    assert!(
        out.contains("did not answer within the join timeout"),
        "{out}"
    );
    untouched(&lab, "edge3");
    assert!(lab.lab(&["link", "edge3", "up"]).status.success());

    export(&lab, &["--site", "doomed", "-o", "/root/doomed.tar.gz"]);
    hand_over(&lab, "cp", "edge3", "/root/doomed.tar.gz");
    lab.ok(&["dcn", "site", "revoke", "doomed"]);
    let out = lab.fails_on(
        "edge3",
        &["dcn", "join", "/root/doomed.tar.gz", "--ca-pin", &pin],
    );
    assert!(out.contains("revoked"), "{out}");
    untouched(&lab, "edge3");

    // A good join, removal, reset: the used token is refused afterwards.
    let joined = lab.ok_on(
        "edge3",
        &[
            "dcn",
            "join",
            "/root/edge3.tar.gz",
            "--ca-pin",
            &pin,
            "--packages",
            "local:/srv/dcn-repo",
        ],
    );
    outputs.push_str(&joined);
    assert!(joined.contains("joined site edge3"), "{joined}");
    let again = lab.ok_on(
        "edge3",
        &[
            "dcn",
            "join",
            "/root/edge3.tar.gz",
            "--ca-pin",
            &pin,
            "--packages",
            "local:/srv/dcn-repo",
        ],
    );
    assert!(
        again.contains("is still a node of site edge3"),
        "a second join converges: {again}"
    );
    hand_over(&lab, "cp", "edge1", "/root/edge3.tar.gz");
    let out = lab.fails_on(
        "edge1",
        &["dcn", "join", "/root/edge3.tar.gz", "--ca-pin", &pin],
    );
    assert!(out.contains("is a node of site edge1"), "{out}");
    lab.ok(&["dcn", "node", "remove", "edge3"]);
    lab.ok_on("edge3", &["dcn", "reset", "--yes"]);
    let out = lab.fails_on(
        "edge3",
        &[
            "dcn",
            "join",
            "/root/edge3.tar.gz",
            "--ca-pin",
            &pin,
            "--packages",
            "local:/srv/dcn-repo",
        ],
    );
    assert!(out.contains("used"), "{out}");

    // A control-plane restart: the edges recover without intervention.
    assert!(lab.lab(&["restart", "cp"]).status.success());
    let recovered = wait_for(
        "both edges up after the control plane restarted",
        Duration::from_secs(420),
        || {
            ["edge1", "edge2"]
                .iter()
                .all(|h| compute_state(&lab, h) == "up" && agent_alive(&lab, h))
        },
    );
    eprintln!(
        "edges up again {:.0}s after the control plane restarted",
        recovered.as_secs_f64()
    );

    // No secret in argv, journals, dcn's output or world-readable files.
    let mut secrets: Vec<String> = Vec::new();
    let values = |text: &str| -> Vec<String> {
        text.lines()
            .filter_map(|l| l.split_once(": ").map(|(_, v)| v.trim().to_string()))
            .filter(|v| v.len() >= 20 && v.chars().all(|c| c.is_ascii_alphanumeric()))
            .collect()
    };
    secrets.extend(values(&lab.ok(&[
        "sh",
        "-c",
        "cat /var/lib/dcn/secrets/passwords.yaml /var/lib/dcn/sites/*.secrets.yaml",
    ])));
    for edge in ["edge1", "edge2"] {
        secrets.extend(values(
            &lab.ok_on(edge, &["cat", "/var/lib/dcn/node/credentials.yaml"]),
        ));
    }
    assert!(
        secrets.len() >= 12,
        "found the secrets to look for: {}",
        secrets.len()
    );
    for s in &secrets {
        assert!(
            !outputs.contains(s.as_str()),
            "a secret appears in dcn's output"
        );
    }
    let list = secrets.join("\n");
    for host in ["cp", "edge1", "edge2"] {
        let file = lab
            .dir
            .join("hosts")
            .join(host)
            .join("rootfs/root/.secret-scan");
        std::fs::write(&file, &list).unwrap();
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o600)).unwrap();
        let scan = lab.exec_on(host, &["sh", "-c", "
            ps -eo args | grep -F -f /root/.secret-scan && echo LEAK:argv;
            journalctl --no-pager -o cat | grep -F -q -f /root/.secret-scan && echo LEAK:journal;
            find / -xdev \\( -path /proc -o -path /sys -o -path /usr -o -path /srv -o -path /root/.secret-scan \\) -prune -o -type f -perm -o=r -size -4M -print0 | xargs -0 -r grep -l -F -f /root/.secret-scan | sed 's/^/LEAK:file /';
            true"]);
        let found = String::from_utf8_lossy(&scan.stdout);
        assert!(!found.contains("LEAK"), "secrets leak on {host}:\n{found}");
    }

    drop(lab);
    assert_nothing_left(dir.path());
}
