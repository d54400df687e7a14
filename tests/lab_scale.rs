//! The scale harness against a real lab at small N (docs/scale.md): two
//! carriers, 20 then 50 simulated edge hosts joined through the real join
//! path, each a real OVN chassis, the first four also a real nova-compute
//! (nova's fake virt driver), the next four a replayed one. Checked: every
//! host is a node of its site at the control plane and a chassis of its
//! own in the southbound, with the options neutron reads shown to it, a
//! keystone user left with a host's name is taken over by its join, the
//! computes (real and replayed) are placed in their site's zone, every
//! chassis and compute comes back by itself after all links were cut and
//! after the control plane restarted, a second run joins no one again and
//! switches the real computes to the replayer and back (`--calibrate`),
//! and the cost per host
//! stays within a stated margin of a ratio measured in the same run (the
//! idle control plane's CPU), so a slower machine does not fail it and a
//! regression does.

mod common;

use common::*;
use serde_json::Value;
use std::path::Path;

/// The largest control-plane CPU per simulated host allowed, as a share of
/// the idle control plane's CPU in the same run. Measured on the 2-core
/// lab machine (docs/scale.md): 0.0075, 0.0102 and 0.0053 in three runs of
/// this test (0.023, 0.030 and 0.018 % of a core per host, the idle
/// control plane about 3 %), 0.0051 and 0.0086 in two runs of 0 to 100
/// hosts, 0.0192 with four real and four replayed computes among the 50
/// (0.059 % of a core per host); before the placer's fix a waiting host
/// cost about 0.4 %, which this fails by far. Three times the largest
/// measured share leaves room for a window's noise.
const MAX_COST_PER_HOST_OF_IDLE: f64 = 0.03;

fn scale(lab: &Lab, report: &Path, hosts: &str, window: &str, more: &[&str]) -> Value {
    let out = dcn()
        .args(["lab", "scale", "--dir"])
        .arg(&lab.dir)
        .args(["--hosts", hosts, "--window", window, "--settle", "20s"])
        .args(more)
        .arg("--report")
        .arg(report)
        .output()
        .unwrap();
    eprintln!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.status.success(), "dcn lab scale failed");
    serde_json::from_str(&std::fs::read_to_string(report.join("report.json")).unwrap()).unwrap()
}

#[test]
#[ignore = "needs root and the lab (about 21 minutes): tests/run.sh runs it with --ignored"]
fn lab_scale_small() {
    require_root();
    let dir = tempfile::Builder::new()
        .prefix("dcn-lab-scale-")
        .tempdir_in("/var/tmp")
        .unwrap();
    let lab = Lab::up(dir.path(), &["--spare", "2"]);
    // A keystone user of a host's name left from a join whose record was
    // lost, with the admin role an older dcn gave: the host's join must
    // take it over (its own fresh password, `service` only), not fail.
    lab.ok_on(
        "cp",
        &[
            "sh",
            "-c",
            ". /etc/dcn/admin-openrc && openstack user create --domain default \
             --password \"$(od -An -N16 -tx1 /dev/urandom | tr -d ' \\n')\" dcn-node-s001n01 >/dev/null \
             && openstack role add --project service --user dcn-node-s001n01 admin",
        ],
    );
    let report = scale(
        &lab,
        &dir.path().join("scale"),
        "20,50",
        "2m",
        &[
            "--storms",
            "60s",
            "--fake-computes",
            "4",
            "--replayed-computes",
            "4",
        ],
    );

    let steps = report["steps"].as_array().unwrap();
    let sizes: Vec<u64> = steps.iter().map(|s| s["hosts"].as_u64().unwrap()).collect();
    assert_eq!(sizes, vec![0, 20, 50], "{report}");
    let joins: Vec<u64> = (steps.iter())
        .map(|s| s["joins"]["count"].as_u64().unwrap())
        .collect();
    assert_eq!(
        joins,
        vec![0, 20, 30],
        "every new host joined once: {report}"
    );
    let computes: Vec<u64> = (steps.iter())
        .map(|s| s["computes"].as_u64().unwrap())
        .collect();
    assert_eq!(computes, vec![0, 4, 4], "{report}");
    let replayed: Vec<u64> = (steps.iter())
        .map(|s| s["replayed"].as_u64().unwrap())
        .collect();
    assert_eq!(replayed, vec![0, 4, 4], "{report}");
    // The operator's views were timed at every step with hosts.
    for s in &steps[1..] {
        for view in ["nodeListSeconds", "siteStatusSeconds"] {
            let t = s["views"][view].as_f64().unwrap();
            assert!(t > 0.0 && t < 300.0, "{view}: {report}");
        }
    }

    // The storms: a 60 s cut took every chassis down, and after it and
    // after the control plane's restart every one came back by itself
    // (the harness waits for that; how fast is the report's, not a
    // test's, figure).
    let storms = &report["storms"];
    assert_eq!(storms["hosts"], 50, "{report}");
    assert_eq!(storms["links"]["downBeforeRecovery"], 50, "{report}");
    for storm in ["links", "restart"] {
        let up = storms[storm]["allUpSeconds"].as_f64().unwrap();
        assert!(up > 0.0, "{storm}: {report}");
        // Every nova-compute reported to nova again after it.
        let computes = storms[storm]["computesUpSeconds"].as_f64().unwrap();
        assert!(computes > 0.0, "{storm}: {report}");
    }
    let md = std::fs::read_to_string(dir.path().join("scale/report.md")).unwrap();
    assert!(md.contains("## Reconnect storms at 50 hosts"), "{md}");

    // Each is a node of its site at the control plane, and a chassis of
    // its own (its own tunnel endpoint) in the southbound, also after the
    // control plane's restart.
    let nodes: Value =
        serde_json::from_str(&lab.ok_on("cp", &["dcn", "node", "list", "--output", "json"]))
            .unwrap();
    let sims: Vec<&Value> = (nodes.as_array().unwrap().iter())
        .filter(|n| n["hostname"].as_str().unwrap_or("").starts_with('s'))
        .collect();
    assert_eq!(sims.len(), 50, "{nodes}");
    assert!(
        sims.iter()
            .any(|n| n["hostname"] == "s005n10" && n["site"] == "s005"),
        "{nodes}"
    );
    // The four with a nova-compute (fake virt driver, the edge recipe's
    // config, the host's own accounts) and the four replayed ones (the
    // carrier's replayer, over the same accounts) are placed in their
    // site's zone and up, with a heartbeat nova recorded.
    for name in ["s001n01", "s001n04", "s001n05", "s001n08"] {
        let n = sims.iter().find(|n| n["hostname"] == name).unwrap();
        assert_eq!(n["state"], "placed", "{n}");
        assert_eq!(n["compute"], "up", "{n}");
        assert!(n["computeLastReport"].is_string(), "{n}");
    }
    // The leftover user was taken over: s001n01's nova-compute logged in
    // with the password its join set (its resource provider, which it
    // made in placement as that user, is there), and the user has the
    // service role and no other.
    let providers = lab.ok_on(
        "cp",
        &[
            "sh",
            "-c",
            ". /etc/dcn/admin-openrc && openstack resource provider list --name s001n01 -f value -c name",
        ],
    );
    assert_eq!(providers.trim(), "s001n01", "{providers}");
    let roles = lab.ok_on(
        "cp",
        &[
            "sh",
            "-c",
            ". /etc/dcn/admin-openrc && openstack role assignment list --names -f value -c Role --user dcn-node-s001n01",
        ],
    );
    assert_eq!(
        roles.split_whitespace().collect::<Vec<_>>(),
        ["service"],
        "{roles}"
    );
    let n = sims.iter().find(|n| n["hostname"] == "s001n09").unwrap();
    assert_eq!(n["compute"], "missing", "{n}");
    let chassis = lab.exec(&[
        "ovn-sbctl",
        "--bare",
        "--columns=hostname,encaps",
        "list",
        "Chassis",
    ]);
    let text = String::from_utf8_lossy(&chassis.stdout);
    for name in ["s001n01", "s003n07", "s005n10"] {
        assert!(
            text.lines().any(|l| l == name),
            "{name} has no chassis:\n{text}"
        );
    }
    // Neutron reads each chassis' site (its zone) from external_ids: the
    // join service copied it there from what ovn-controller wrote.
    let shown = lab.exec(&[
        "ovn-sbctl",
        "--bare",
        "--columns=name,external_ids",
        "list",
        "Chassis",
    ]);
    let text = String::from_utf8_lossy(&shown.stdout);
    let lines: Vec<&str> = text.lines().collect();
    for name in ["s001n01", "s003n07", "s005n10"] {
        let at = lines.iter().position(|l| *l == name);
        let ids = at.and_then(|i| lines.get(i + 1)).unwrap_or(&"");
        let zone = format!("availability-zones={}", &name[..4]);
        assert!(
            ids.contains(&zone) && ids.contains("ovn-bridge-mappings"),
            "{name}'s options are not shown to neutron:\n{text}"
        );
    }
    let encaps = lab.exec(&["ovn-sbctl", "--bare", "--columns=ip", "list", "Encap"]);
    let mut ips: Vec<String> = (String::from_utf8_lossy(&encaps.stdout).lines())
        .filter(|l| l.starts_with("10.240."))
        .map(String::from)
        .collect();
    ips.sort();
    ips.dedup();
    assert!(
        ips.len() >= 50,
        "each chassis its own tunnel endpoint: {ips:?}"
    );

    // The cost per host, against the idle control plane of the same run.
    let idle = steps[0]["cpuPercent"].as_f64().unwrap();
    let per_host = report["fit"]["cpuPercentPerHost"].as_f64().unwrap();
    eprintln!(
        "idle control plane {idle:.1} % of a core; {per_host:.4} % per simulated host ({:.4} of idle)",
        per_host / idle
    );
    assert!(
        per_host <= MAX_COST_PER_HOST_OF_IDLE * idle,
        "the control plane's cost per edge host regressed: {per_host:.4} % of a core per host, more than {MAX_COST_PER_HOST_OF_IDLE} of the idle control plane's {idle:.1} %"
    );
    assert!(md.contains("| 50 |"), "{md}");
    let svg = std::fs::read_to_string(dir.path().join("scale/curve.svg")).unwrap();
    assert!(svg.contains("<polyline"), "{svg}");

    // A second run finds every host joined: nobody joins twice. It
    // switches the four real computes to the replayer, then off, then
    // back, each time waiting for nova to hear from them (or not):
    // the calibration's mechanics (its figures need windows of minutes,
    // docs/scale.md).
    let again = scale(
        &lab,
        &dir.path().join("again"),
        "50",
        "20s",
        &[
            "--fake-computes",
            "4",
            "--replayed-computes",
            "4",
            "--calibrate",
        ],
    );
    assert_eq!(again["steps"][1]["joins"]["count"], 0, "{again}");
    let check = &again["calibration"][0];
    assert_eq!(check["computes"], 4, "{again}");
    assert!(check["replayedCpuPercent"].is_f64(), "{again}");

    drop(lab);
    assert_nothing_left(dir.path());
}
