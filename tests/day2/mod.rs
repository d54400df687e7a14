//! Day-2 site config in the edge lab (issue 14): a change for site edge1
//! reaches edge1 only, restarts its nova-compute once, and makes it log at
//! debug level; the dry run shows the diff first and changes nothing; a
//! node override made while edge1's WAN is cut reaches it when the link
//! returns; a node that joins the site later gets the site's part of it.
//! What is checked is what runs on the hosts (the drop-in, the unit's
//! invocations, nova-compute's log), not only what the centre records.

use crate::common::Lab;
use crate::edge_sites::observe::wait_for;
use serde_json::Value;
use std::time::Duration;

/// nova-compute's custom drop-in, from the novaCompute recipe.
pub const DROP_IN: &str = "/etc/nova/nova-compute.conf.d/90-custom.conf";
const FILE: &str = "/root/site-edge1.yaml";

const SITE_DEBUG: &str = "apiVersion: dcn/v1alpha1
kind: SiteConfig
site: edge1
services:
  novaCompute:
    customServiceConfig: |
      [DEFAULT]
      debug = true
";

const NODE_OVERRIDE: &str = "nodes:
  edge1:
    services:
      novaCompute:
        customServiceConfig: |
          [DEFAULT]
          cpu_allocation_ratio = 3.0
";

/// A host's nova-compute as its init system and its log see it.
#[derive(Debug, Clone, PartialEq)]
pub struct Compute {
    /// systemd's id of the unit's current run: a new one per (re)start.
    pub invocation: String,
    /// How many times systemd stopped it (restarts included).
    pub stops: usize,
    pub drop_in: Option<String>,
    pub debug_lines: usize,
}

pub fn compute(lab: &Lab, host: &str) -> Compute {
    let invocation = lab.ok_on(
        host,
        &[
            "systemctl",
            "show",
            "-p",
            "InvocationID",
            "--value",
            "nova-compute.service",
        ],
    );
    let count = |cmd: &str| -> usize {
        lab.ok_on(host, &["sh", "-c", cmd])
            .trim()
            .parse()
            .unwrap_or_else(|e| panic!("{host}: {cmd}: {e}"))
    };
    Compute {
        invocation: invocation.trim().to_string(),
        stops: count(
            "journalctl -q -u nova-compute.service -o cat --no-pager | grep -c '^Stopped nova-compute' || true",
        ),
        drop_in: std::fs::read_to_string(lab.host_path(host, DROP_IN)).ok(),
        debug_lines: count(
            "cat /var/log/nova/nova-compute.log 2>/dev/null | grep -c ' DEBUG ' || true",
        ),
    }
}

/// The revision `host` reported it runs (`dcn site status`'s CONFIG).
pub fn applied(lab: &Lab, site: &str, host: &str) -> (u64, Option<u64>) {
    let status = dcn_json(lab, &["site", "status", site]);
    let node = status["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|n| n["hostname"] == host)
        .unwrap_or_else(|| panic!("{host} is not in {status}"));
    (
        status["configRevision"].as_u64().unwrap(),
        node["config"]["revision"].as_u64(),
    )
}

/// A dcn command on the control plane, with JSON output.
fn dcn_json(lab: &Lab, args: &[&str]) -> Value {
    let mut a = vec!["dcn"];
    a.extend(args);
    a.extend(["--output", "json"]);
    serde_json::from_str(&lab.ok(&a)).unwrap()
}

fn wait_applied(lab: &Lab, host: &str, revision: u64, limit: Duration) -> Duration {
    wait_for(
        &format!("{host} reports site config revision {revision}"),
        limit,
        || applied(lab, "edge1", host).1 == Some(revision),
    )
}

/// `dcn site config edge1` with `text` as its file (`--dry-run` when
/// `dry_run`); what it printed.
fn site_config(lab: &Lab, text: &str, dry_run: bool) -> String {
    std::fs::write(lab.host_path("cp", FILE), text).unwrap();
    let mut args = vec!["dcn", "site", "config", "edge1", "--file", FILE];
    if dry_run {
        args.push("--dry-run");
    }
    lab.ok(&args)
}

/// Revision 1, with edge1 connected: debug for nova-compute at site edge1.
/// Returns edge2's state, which nothing here may change.
pub fn site_debug(lab: &Lab) -> Compute {
    let edge1 = compute(lab, "edge1");
    let edge2 = compute(lab, "edge2");
    assert!(
        !edge1.drop_in.iter().any(|t| t.contains("debug")),
        "{edge1:?}"
    );
    assert_eq!(applied(lab, "edge1", "edge1"), (0, Some(0)));

    let plan = site_config(lab, SITE_DEBUG, true);
    eprintln!("dry run of revision 1:\n{plan}");
    assert!(
        plan.contains(&format!("edge1: {DROP_IN} (novaCompute)"))
            && plan.contains("+debug = true")
            && plan.contains("dry run: nothing changed"),
        "{plan}"
    );
    assert!(
        !plan.contains("edge2"),
        "edge2 is not in site edge1: {plan}"
    );
    std::thread::sleep(Duration::from_secs(35));
    assert_eq!(
        applied(lab, "edge1", "edge1"),
        (0, Some(0)),
        "a dry run saves nothing"
    );
    assert_eq!(compute(lab, "edge1"), edge1, "a dry run changes no host");

    let saved = site_config(lab, SITE_DEBUG, false);
    assert!(saved.contains("revision 1 saved"), "{saved}");
    let took = wait_applied(lab, "edge1", 1, Duration::from_secs(120));
    eprintln!("edge1 applied site config revision 1 in {took:?}");
    let after = compute(lab, "edge1");
    let drop_in = after.drop_in.clone().unwrap_or_default();
    assert!(drop_in.contains("debug = true"), "{drop_in}");
    assert_ne!(after.invocation, edge1.invocation, "nova-compute restarted");
    assert_eq!(after.stops, edge1.stops + 1, "once");
    wait_debug(lab, "edge1", edge1.debug_lines);
    // Later ticks find nothing new and restart nothing.
    std::thread::sleep(Duration::from_secs(40));
    assert_eq!(compute(lab, "edge1").invocation, after.invocation);
    let now2 = compute(lab, "edge2");
    assert_eq!(
        (&now2.invocation, now2.stops, &now2.drop_in),
        (&edge2.invocation, edge2.stops, &edge2.drop_in),
        "edge2 untouched"
    );
    assert_eq!(applied(lab, "edge2", "edge2"), (0, Some(0)));
    edge2
}

/// nova-compute logs at debug level once it runs with the drop-in.
fn wait_debug(lab: &Lab, host: &str, before: usize) {
    wait_for(
        &format!("{host}'s nova-compute logs DEBUG lines with debug = true"),
        Duration::from_secs(180),
        || compute(lab, host).debug_lines > before,
    );
}

/// Revision 2, made while edge1's WAN is cut: a node override on top.
/// edge1 cannot fetch it yet; the centre shows it behind.
pub fn node_override_while_cut(lab: &Lab) -> Compute {
    let edge1 = compute(lab, "edge1");
    let both = format!("{SITE_DEBUG}{NODE_OVERRIDE}");
    let plan = site_config(lab, &both, true);
    assert!(
        plan.contains("+cpu_allocation_ratio = 3.0") && plan.contains(" debug = true"),
        "the diff adds the override and keeps the site's value: {plan}"
    );
    let saved = site_config(lab, &both, false);
    assert!(saved.contains("revision 2 saved"), "{saved}");
    let show = lab.ok(&["dcn", "node", "show", "edge1"]);
    eprintln!("{show}");
    let origin = |key: &str| -> String {
        show.lines()
            .find(|l| l.trim_start().starts_with(key))
            .unwrap_or_else(|| panic!("no {key} in {show}"))
            .to_string()
    };
    assert!(origin("debug = true").ends_with("# site edge1"), "{show}");
    assert!(
        origin("cpu_allocation_ratio = 3.0").ends_with("# node edge1"),
        "{show}"
    );
    let status = lab.ok(&["dcn", "site", "status", "edge1"]);
    assert!(
        status
            .lines()
            .any(|l| l.starts_with("edge1 ") && l.contains(" 1 of 2 ")),
        "edge1 is behind while cut off: {status}"
    );
    std::thread::sleep(Duration::from_secs(35));
    assert_eq!(compute(lab, "edge1").invocation, edge1.invocation);
    edge1
}

/// After the link returns: edge1 catches up by itself, restarting
/// nova-compute once more.
pub fn caught_up(lab: &Lab, before: &Compute, edge2: &Compute) {
    let took = wait_applied(lab, "edge1", 2, Duration::from_secs(180));
    eprintln!("edge1 caught up with revision 2 {took:?} after nova-compute was back");
    let now = compute(lab, "edge1");
    let drop_in = now.drop_in.clone().unwrap_or_default();
    assert!(
        drop_in.contains("cpu_allocation_ratio = 3.0") && drop_in.contains("debug = true"),
        "{drop_in}"
    );
    assert_eq!(now.stops, before.stops + 1, "one restart for revision 2");
    let now2 = compute(lab, "edge2");
    assert_eq!(
        (&now2.invocation, &now2.drop_in),
        (&edge2.invocation, &edge2.drop_in),
        "edge2 untouched"
    );
}

/// A node that joins site edge1 later runs its site's config (not edge1's
/// override), even after a second `dcn join` with the bundle.
pub fn new_node_gets_the_site_config(lab: &Lab, host: &str) {
    wait_applied(lab, host, 2, Duration::from_secs(120));
    let c = compute(lab, host);
    let drop_in = c.drop_in.unwrap_or_default();
    assert!(
        drop_in.contains("debug = true") && !drop_in.contains("cpu_allocation_ratio"),
        "{host}: {drop_in}"
    );
    let show = dcn_json(lab, &["node", "show", host]);
    assert_eq!(show["applied"]["revision"], 2, "{show}");
}
