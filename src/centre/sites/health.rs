//! A joined node's health as the centre sees it, from both planes: its
//! nova-compute service (the control path) and its OVN chassis (the data
//! path its guests' network depends on). nova can say "up" while a node's
//! ovn-controller is dead and its guests have no network, so both count.
//!
//! The chassis check is a ping, not a reading of old timestamps: it bumps
//! the northbound `nb_cfg` (`ovn-nbctl --wait=sb sync`) and waits briefly
//! for every chassis to report it processed that generation. A chassis
//! whose ovn-controller is dead or cut off cannot, whatever it did before.

use crate::host::{Cmd, Runner};
use crate::openstack::Cloud;
use anyhow::{Context, Result};
use serde::Serialize;
use serde_json::Value;
use std::collections::BTreeMap;
use std::time::{Duration, Instant};

/// How long a chassis has to answer a ping.
pub const CHASSIS_ANSWER: Duration = Duration::from_secs(6);

/// One plane's view of a node.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum PlaneState {
    /// Reports and answers.
    Up,
    /// Known, but not answering (service down, chassis silent).
    Down,
    /// Known but switched off by an operator (nova service disabled).
    Disabled,
    /// Not registered at all.
    Missing,
    /// The control plane could not be asked.
    Unknown,
}

impl PlaneState {
    pub fn as_str(self) -> &'static str {
        match self {
            PlaneState::Up => "up",
            PlaneState::Down => "down",
            PlaneState::Disabled => "disabled",
            PlaneState::Missing => "missing",
            PlaneState::Unknown => "unknown",
        }
    }
}

/// nova-compute services by host: up, down or disabled.
pub fn compute_states(cloud: &Cloud) -> Result<BTreeMap<String, PlaneState>> {
    let v = cloud
        .get("compute", "/os-services?binary=nova-compute")
        .context("listing nova-compute services")?;
    Ok(parse_compute_services(&v))
}

fn parse_compute_services(v: &Value) -> BTreeMap<String, PlaneState> {
    v["services"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|s| {
            let host = s["host"].as_str()?.to_string();
            let state = if s["status"] == "disabled" {
                PlaneState::Disabled
            } else if s["state"] == "up" {
                PlaneState::Up
            } else {
                PlaneState::Down
            };
            Some((host, state))
        })
        .collect()
}

/// OVN chassis by host name: up when the chassis processed a fresh
/// `nb_cfg` within `answer` (normally [`CHASSIS_ANSWER`]), down otherwise.
pub fn chassis_states(
    runner: &dyn Runner,
    answer: Duration,
) -> Result<BTreeMap<String, PlaneState>> {
    let chassis = crate::ovn::sb_list(runner, "Chassis", "name,hostname")?;
    let names: BTreeMap<String, String> = chassis
        .iter()
        .filter_map(|row| Some((row[0].as_str()?.to_string(), row[1].as_str()?.to_string())))
        .collect();
    // The ping: a new nb_cfg generation, propagated to the southbound.
    runner.run(
        &Cmd::new("asking every OVN chassis to report in", "ovn-nbctl")
            .args(["--wait=sb", "--timeout=10", "sync"])
            .timeout(Duration::from_secs(20)),
    )?;
    let target = nb_cfg(runner)?;
    let started = Instant::now();
    loop {
        let processed = chassis_nb_cfg(runner)?;
        let all = names
            .keys()
            .all(|n| processed.get(n).is_some_and(|c| *c >= target));
        if all || started.elapsed() >= answer {
            return Ok(names
                .iter()
                .map(|(name, host)| {
                    let up = processed.get(name).is_some_and(|c| *c >= target);
                    (
                        host.clone(),
                        if up { PlaneState::Up } else { PlaneState::Down },
                    )
                })
                .collect());
        }
        std::thread::sleep(Duration::from_millis(500));
    }
}

fn nb_cfg(runner: &dyn Runner) -> Result<i64> {
    let out = runner.run(
        &Cmd::new("reading the southbound generation", "ovn-sbctl")
            .args(["--timeout=10", "get", "SB_Global", ".", "nb_cfg"])
            .read_only(),
    )?;
    out.stdout
        .trim()
        .parse()
        .with_context(|| format!("SB_Global nb_cfg is not a number: {:?}", out.stdout.trim()))
}

fn chassis_nb_cfg(runner: &dyn Runner) -> Result<BTreeMap<String, i64>> {
    Ok(
        crate::ovn::sb_list(runner, "Chassis_Private", "name,nb_cfg")?
            .iter()
            .filter_map(|row| Some((row[0].as_str()?.to_string(), row[1].as_i64()?)))
            .collect(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::host::{CmdOutput, RecordingRunner};
    use std::sync::Arc;
    use std::sync::atomic::{AtomicI64, Ordering};

    #[test]
    fn nova_services_map_to_plane_states() {
        let v = serde_json::json!({"services": [
            {"host": "edge1", "state": "up", "status": "enabled"},
            {"host": "edge2", "state": "down", "status": "enabled"},
            {"host": "edge3", "state": "up", "status": "disabled"},
        ]});
        let m = parse_compute_services(&v);
        assert_eq!(m["edge1"], PlaneState::Up);
        assert_eq!(m["edge2"], PlaneState::Down);
        assert_eq!(m["edge3"], PlaneState::Disabled);
    }

    /// A southbound where edge1 follows every ping and edge2's
    /// ovn-controller stopped at generation 7.
    fn southbound() -> RecordingRunner {
        let generation = Arc::new(AtomicI64::new(7));
        RecordingRunner::answering(move |c| {
            let args = c.args.join(" ");
            if c.program == "ovn-nbctl" {
                generation.fetch_add(1, Ordering::SeqCst);
                return CmdOutput::ok("");
            }
            let g = generation.load(Ordering::SeqCst);
            if args.contains("SB_Global") {
                CmdOutput::ok(format!("{g}\n"))
            } else if args.ends_with("list Chassis") {
                CmdOutput::ok(
                    r#"{"data":[["c-1","edge1"],["c-2","edge2"]],"headings":["name","hostname"]}"#,
                )
            } else {
                CmdOutput::ok(format!(
                    r#"{{"data":[["c-1",{g}],["c-2",7]],"headings":["name","nb_cfg"]}}"#
                ))
            }
        })
    }

    #[test]
    fn a_chassis_that_does_not_answer_the_ping_is_down() {
        let r = southbound();
        let m = chassis_states(&r, Duration::from_millis(700)).unwrap();
        assert_eq!(m["edge1"], PlaneState::Up);
        // edge2 had answered generation 7 before it died: an old answer
        // does not count.
        assert_eq!(m["edge2"], PlaneState::Down);
        let calls = r.command_lines();
        assert!(
            calls.iter().any(|c| c.contains("ovn-nbctl --wait=sb")),
            "{calls:?}"
        );
    }
}
