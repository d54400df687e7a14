//! What the edge lab's test watches: a host's compute service and OVN
//! agent as the centre sees them, each guest's rounds of checks from inside
//! it, and what the network says of a host when the test fails.

use crate::common::{Guest, Lab, round_no, round_ok};
use serde_json::Value;
use std::collections::BTreeMap;
use std::time::{Duration, Instant};

/// While alive and the test panics: what the network says of `host` (the
/// OVN chassis and ports at the centre, the host's ovn-controller log).
pub struct DiagnoseOnPanic<'a>(pub &'a Lab, pub &'a str);

impl Drop for DiagnoseOnPanic<'_> {
    fn drop(&mut self) {
        if !std::thread::panicking() {
            return;
        }
        let (lab, host) = (self.0, self.1);
        lab.dump_logs(host);
        for (on, cmd) in [
            (
                "cp",
                "ovn-sbctl show; ovn-sbctl --columns=logical_port,chassis,up list Port_Binding | head -60; tail -30 /var/log/ovn/ovsdb-server-sb.log; dcn cert list; journalctl -u dcn-join -n 30 --no-pager; openstack compute service list; grep -v RPCClient /var/log/nova/nova-compute.log | tail -40",
            ),
            (
                host,
                "tail -40 /var/log/ovn/ovn-controller.log; ovs-vsctl show; virsh list --all; journalctl -u dcn-config-sync -n 30 --no-pager; ls -l --time-style=full-iso /etc/ovn/dcn",
            ),
        ] {
            let out = lab.exec_on(on, &["sh", "-c", cmd]);
            eprintln!(
                "--- {on}: {cmd}\n{}{}",
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            );
        }
    }
}

/// Poll `check` every 3 s until it returns true or `limit` passes.
pub fn wait_for(what: &str, limit: Duration, mut check: impl FnMut() -> bool) -> Duration {
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

pub fn compute_state(lab: &Lab, host: &str) -> String {
    lab.compute_service(host)
        .and_then(|r| r["State"].as_str().map(String::from))
        .unwrap_or_else(|| "missing".into())
}

pub fn agent_alive(lab: &Lab, host: &str) -> bool {
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
            // Every chassis is a gateway chassis of its zone, which neutron
            // lists as "OVN Controller Gateway agent".
            .any(|r| {
                r["Agent Type"]
                    .as_str()
                    .is_some_and(|t| t.starts_with("OVN Controller"))
                    && r["Alive"] == true
            })
    })
}

/// `dcn node list --output json` as host -> (state, compute, network).
pub fn node_health(lab: &Lab) -> BTreeMap<String, (String, String, String)> {
    let v: Value =
        serde_json::from_str(&lab.ok(&["dcn", "node", "list", "--output", "json"])).unwrap();
    v.as_array()
        .unwrap()
        .iter()
        .map(|n| {
            let s = |k: &str| n[k].as_str().unwrap_or("").to_string();
            (s("hostname"), (s("state"), s("compute"), s("network")))
        })
        .collect()
}

/// Each guest's latest boot and its last round number.
pub fn last_rounds(lab: &Lab, guests: &[Guest]) -> BTreeMap<String, (String, u64)> {
    guests
        .iter()
        .map(|g| {
            let b = lab
                .guest_boots(&g.host, &g.id)
                .pop()
                .expect("a booted guest");
            let last = b.rounds().last().map_or(0, |r| round_no(r));
            (g.name.clone(), (b.boot, last))
        })
        .collect()
}

/// For each guest, the rounds of the same boot after `marks`: how many,
/// and those that are missing or had a failed check.
pub fn rounds_since(
    lab: &Lab,
    guests: &[Guest],
    marks: &BTreeMap<String, (String, u64)>,
) -> BTreeMap<String, (usize, Vec<String>)> {
    guests
        .iter()
        .map(|g| {
            let (boot, mark) = &marks[&g.name];
            let boots = lab.guest_boots(&g.host, &g.id);
            let mut lost = Vec::new();
            let Some(b) = boots.iter().find(|b| &b.boot == boot) else {
                return (g.name.clone(), (0, vec!["the guest rebooted".into()]));
            };
            if boots.last().map(|l| &l.boot) != Some(boot) {
                lost.push("the guest rebooted".into());
            }
            let rounds: Vec<_> = b
                .rounds()
                .into_iter()
                .filter(|r| round_no(r) > *mark)
                .collect();
            let mut expect = mark + 1;
            for r in &rounds {
                if round_no(r) != expect {
                    lost.push(format!("rounds {expect}..{} missing", round_no(r)));
                }
                if !round_ok(r) {
                    lost.push(format!("{r:?}"));
                }
                expect = round_no(r) + 1;
            }
            (g.name.clone(), (rounds.len(), lost))
        })
        .collect()
}

/// The guests of `guests` on `host`.
pub fn at_host(guests: &[Guest], host: &str) -> Vec<Guest> {
    guests.iter().filter(|g| g.host == host).cloned().collect()
}
