//! The lab's bare-metal site (`dcn lab up --bare-metal N`) as the power-cut
//! tests see it: a node's BMC from the inventory the lab wrote, cutting its
//! power through that BMC (a Redfish ForceRestart: the VM loses what it had
//! not written back, as a real power cut does), and what the centre says
//! of the node (its phase, its planes).

use super::Lab;
use serde_json::Value;
use std::time::{Duration, Instant};

/// The lab's bare-metal site.
pub const SITE: &str = "bm1";
/// Its BMC password, on the control plane.
const PASSWORD_FILE: &str = "/etc/dcn/bmc/bm1.password";

/// A node's BMC as the lab's inventory names it.
pub struct Bmc {
    pub node: String,
    endpoint: String,
    pin: String,
    system: String,
}

impl Bmc {
    pub fn of(lab: &Lab, node: &str) -> Bmc {
        let text = std::fs::read_to_string(lab.dir.join("bm1.inventory.yaml")).unwrap();
        let inv: Value = serde_yaml::from_str(&text).unwrap();
        let n = inv["nodes"]
            .as_array()
            .and_then(|a| a.iter().find(|n| n["hostname"] == node))
            .unwrap_or_else(|| panic!("{node} is not in the lab's inventory"))
            .clone();
        let s = |v: &Value| v.as_str().unwrap().to_string();
        Bmc {
            node: node.to_string(),
            endpoint: s(&n["bmc"]["endpoint"]),
            pin: s(&n["bmc"]["tls"]["pin"]),
            system: s(&n["bmc"]["system"]),
        }
    }

    /// Cut the node's power and turn it on again, through its BMC.
    pub fn cut_power(&self, lab: &Lab, why: &str) {
        lab.ok(&[
            "dcn",
            "bmc",
            "power",
            "reset",
            "--bmc",
            &self.endpoint,
            "--bmc-pin",
            &self.pin,
            "--system",
            &self.system,
            "--username",
            "admin",
            "--password-file",
            PASSWORD_FILE,
        ]);
        eprintln!("cut {}'s power: {why}", self.node);
    }
}

/// The node's entry in `dcn site status bm1 --output json` (null while the
/// control plane does not answer).
pub fn site_entry(lab: &Lab, node: &str) -> Value {
    let out = lab.exec(&["dcn", "site", "status", SITE, "--output", "json"]);
    let v: Value = serde_json::from_slice(&out.stdout).unwrap_or(Value::Null);
    v["nodes"]
        .as_array()
        .and_then(|a| a.iter().find(|n| n["hostname"] == node).cloned())
        .unwrap_or(Value::Null)
}

/// The node's (state, compute, network) in `dcn node list`.
pub fn planes(lab: &Lab, node: &str) -> (String, String, String) {
    let n = listed(lab, node);
    let s = |v: &Value| v.as_str().unwrap_or("-").to_string();
    (s(&n["state"]), s(&n["compute"]), s(&n["network"]))
}

/// Wait, touching nothing, until the node is placed with its nova-compute
/// up and its chassis answering; the seconds it took.
pub fn wait_whole(lab: &Lab, node: &str, after: &str, limit: Duration) -> f64 {
    let t = Instant::now();
    loop {
        let entry = site_entry(lab, node);
        let planes = planes(lab, node);
        if entry["phase"] == "placed" && planes == ("placed".into(), "up".into(), "up".into()) {
            return t.elapsed().as_secs_f64();
        }
        if t.elapsed() > limit {
            lab.dump_logs("cp");
            panic!(
                "{node} did not come back whole within {}s after {after}: {} {planes:?}\n{entry:#}",
                limit.as_secs(),
                entry["shown"]
            );
        }
        std::thread::sleep(Duration::from_secs(10));
    }
}

/// Wait until the node reaches `phase` (with `detail` in its detail, if
/// given): its current phase, or one its history recorded since this wait
/// began (a phase such as `first-boot` lasts less than a second, shorter
/// than a poll); panics after `limit`.
pub fn wait_phase(lab: &Lab, node: &str, phase: &str, detail: Option<&str>, limit: Duration) {
    let t = Instant::now();
    // Second resolution, as the records have it.
    let since = dcn::timefmt::rfc3339(std::time::SystemTime::now() - Duration::from_secs(1));
    let matches = |e: &serde_json::Value| {
        e["phase"] == phase
            && detail.is_none_or(|d| e["detail"].as_str().is_some_and(|x| x.contains(d)))
    };
    loop {
        let entry = site_entry(lab, node);
        let recorded = entry["history"].as_array().is_some_and(|h| {
            h.iter()
                .any(|e| e["at"].as_str().is_some_and(|at| at >= since.as_str()) && matches(e))
        });
        if matches(&entry) || recorded {
            return;
        }
        assert!(
            t.elapsed() < limit,
            "{node} never reached {phase} {detail:?} in {}s: {entry:#}",
            limit.as_secs()
        );
        std::thread::sleep(Duration::from_secs(2));
    }
}

/// Set a site config for bm1 that the nodes apply with their sync timer
/// (debug on for nova-compute); returns when the centre saved it.
pub fn set_site_config(lab: &Lab) {
    let file = lab.dir.join("hosts/cp/rootfs/root/bm1-config.yaml");
    std::fs::write(
        &file,
        "apiVersion: dcn/v1alpha1\nkind: SiteConfig\nsite: bm1\nservices:\n  novaCompute:\n    customServiceConfig: |\n      [DEFAULT]\n      debug = true\n",
    )
    .unwrap();
    lab.ok(&[
        "dcn",
        "site",
        "config",
        SITE,
        "--file",
        "/root/bm1-config.yaml",
    ]);
}

/// Wait until the node reports it runs config `revision` without error.
pub fn wait_config(lab: &Lab, node: &str, revision: u64, limit: Duration) -> f64 {
    let t = Instant::now();
    loop {
        let entry = site_entry(lab, node);
        let config = &entry["config"];
        if config["revision"] == revision && config["error"].is_null() {
            return t.elapsed().as_secs_f64();
        }
        assert!(
            t.elapsed() < limit,
            "{node} did not apply site config revision {revision}: {config:#}"
        );
        std::thread::sleep(Duration::from_secs(10));
    }
}

/// The node's entry in `dcn node list` (null when it is not listed).
fn listed(lab: &Lab, node: &str) -> Value {
    let out = lab.exec(&["dcn", "node", "list", "--output", "json"]);
    let v: Value = serde_json::from_slice(&out.stdout).unwrap_or(Value::Null);
    v.as_array()
        .and_then(|a| {
            a.iter()
                .find(|n| n["progress"]["hostname"] == node)
                .cloned()
        })
        .unwrap_or(Value::Null)
}

/// Wait, touching nothing, until the node's SSH server answers on its
/// network (asked from its site's BMC host); what it says first
/// (`SSH-2.0-…`). Panics after `limit`.
pub fn wait_ssh(lab: &Lab, node: &str, limit: Duration) -> String {
    let t = Instant::now();
    loop {
        if let Some(address) = listed(lab, node)["address"].as_str() {
            let probe = format!("exec 3<>/dev/tcp/{address}/22 && head -c 8 <&3");
            let out = lab.exec_on("bm1-bmc", &["timeout", "20", "bash", "-c", probe.as_str()]);
            let said = String::from_utf8_lossy(&out.stdout).into_owned();
            if out.status.success() && said.starts_with("SSH-") {
                return said;
            }
        }
        if t.elapsed() > limit {
            panic!("{node}: its SSH server does not answer on port 22");
        }
        std::thread::sleep(Duration::from_secs(10));
    }
}
