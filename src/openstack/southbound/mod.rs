//! The OVN southbound database on the control plane, through `ovn-sbctl`,
//! `ovn-nbctl` and `ovn-appctl`: rows as JSON, which chassis answer a ping,
//! cutting chassis off, and the one write dcn makes to chassis rows (see
//! `mirror_chassis_options`). [`Southbound`] is what the rest of dcn
//! uses; [`admission`] says who may write to it from across the WAN.

pub mod admission;
mod chassis_options;

use super::PlaneState;
use crate::host::{Cmd, Runner};
use anyhow::{Context, Result};
use serde_json::Value;
use std::collections::BTreeMap;
use std::time::{Duration, Instant};

/// The southbound as the centre uses it.
pub trait Southbound {
    /// Chassis by host name: up when the chassis processed a fresh
    /// `nb_cfg` within `answer`, down otherwise.
    fn chassis_states(&self, answer: Duration) -> Result<BTreeMap<String, PlaneState>>;
    /// Ask every chassis to report in: a new `nb_cfg` generation, written
    /// as far as the southbound. Returns that generation; it waits for no
    /// chassis.
    fn ping(&self) -> Result<i64>;
    /// The southbound's generation now, and the last one each chassis
    /// processed.
    fn generations(&self) -> Result<Generations>;
    /// Make every client reconnect (so a node whose CA left the trusted
    /// list is refused) and delete the chassis of `hostnames`.
    fn cut_off(&self, hostnames: &[String]) -> Result<()>;
    /// Show neutron the chassis options it reads from `external_ids`,
    /// following the chassis table: every chassis at the start, then each
    /// one that is added or changes, as it does (`updated` hears of each
    /// one written). Returns when the southbound's monitor ends.
    fn watch_chassis_options(&self, updated: &mut dyn FnMut(&str)) -> Result<()>;
}

/// The `nb_cfg` generations of the southbound and its chassis.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Generations {
    /// The southbound's (`SB_Global`).
    pub current: i64,
    /// By host name: the last generation each chassis processed (`None`
    /// before its first).
    pub chassis: BTreeMap<String, Option<i64>>,
}

/// The southbound of the control plane this runner runs on.
pub(super) struct OvnSouthbound<'a> {
    pub runner: &'a dyn Runner,
}

impl Southbound for OvnSouthbound<'_> {
    fn chassis_states(&self, answer: Duration) -> Result<BTreeMap<String, PlaneState>> {
        chassis_states(self.runner, answer)
    }
    fn ping(&self) -> Result<i64> {
        ping(self.runner)
    }
    fn generations(&self) -> Result<Generations> {
        generations(self.runner)
    }
    fn cut_off(&self, hostnames: &[String]) -> Result<()> {
        cut_off(self.runner, hostnames)
    }
    fn watch_chassis_options(&self, updated: &mut dyn FnMut(&str)) -> Result<()> {
        chassis_options::watch(self.runner, updated)
    }
}

/// How long a chassis has to answer a ping in the views an operator asks
/// for (`dcn node list`, `dcn site status`).
pub const CHASSIS_ANSWER: Duration = Duration::from_secs(6);

/// The SB's ovsdb-server control socket (ovn-ctl's default).
const SB_CONTROL: &str = "/var/run/ovn/ovnsb_db.ctl";

/// The rows of a southbound table, each cell a JSON value as ovn-sbctl's
/// `--format=json` gives it.
fn sb_list(runner: &dyn Runner, table: &str, columns: &str) -> Result<Vec<Vec<Value>>> {
    let out = runner.run(
        &Cmd::new(
            format!("reading the OVN southbound {table} table"),
            "ovn-sbctl",
        )
        .args([
            "--timeout=10",
            "--format=json",
            &format!("--columns={columns}"),
            "list",
            table,
        ])
        .read_only(),
    )?;
    parse_rows(&out.stdout).with_context(|| format!("reading ovn-sbctl's {table} output"))
}

/// `{"data": [[cell, …], …], "headings": […]}` as rows of cells.
pub(super) fn parse_rows(text: &str) -> Result<Vec<Vec<Value>>> {
    let v: Value = serde_json::from_str(text)?;
    Ok(v["data"]
        .as_array()
        .context("no data array")?
        .iter()
        .filter_map(|row| row.as_array().cloned())
        .collect())
}

/// An OVSDB map cell, `["map", [[key, value], …]]`.
pub(super) fn map_cell(v: &Value) -> BTreeMap<String, String> {
    v.get(1)
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|kv| Some((kv[0].as_str()?.to_string(), kv[1].as_str()?.to_string())))
        .collect()
}

/// OVN chassis by host name: up when the chassis processed a fresh
/// `nb_cfg` within `answer` (normally [`CHASSIS_ANSWER`]), down otherwise.
fn chassis_states(runner: &dyn Runner, answer: Duration) -> Result<BTreeMap<String, PlaneState>> {
    let names = chassis_hostnames(runner)?;
    let target = ping(runner)?;
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

/// Chassis names to their hosts' names.
fn chassis_hostnames(runner: &dyn Runner) -> Result<BTreeMap<String, String>> {
    Ok(sb_list(runner, "Chassis", "name,hostname")?
        .iter()
        .filter_map(|row| Some((row[0].as_str()?.to_string(), row[1].as_str()?.to_string())))
        .collect())
}

/// A new nb_cfg generation, propagated to the southbound (not waiting for
/// any chassis).
fn ping(runner: &dyn Runner) -> Result<i64> {
    runner.run(
        &Cmd::new("asking every OVN chassis to report in", "ovn-nbctl")
            .args(["--wait=sb", "--timeout=10", "sync"])
            .timeout(Duration::from_secs(20)),
    )?;
    nb_cfg(runner)
}

fn generations(runner: &dyn Runner) -> Result<Generations> {
    let current = nb_cfg(runner)?;
    let processed = chassis_nb_cfg(runner)?;
    let chassis = (chassis_hostnames(runner)?.into_iter())
        .map(|(name, host)| (host, processed.get(&name).copied()))
        .collect();
    Ok(Generations { current, chassis })
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
    Ok(sb_list(runner, "Chassis_Private", "name,nb_cfg")?
        .iter()
        .filter_map(|row| Some((row[0].as_str()?.to_string(), row[1].as_i64()?)))
        .collect())
}

/// Cut nodes off the SB once the list of client CAs it trusts no longer
/// holds theirs: every SB client reconnects (the SB reads the new list
/// first), then their chassis rows go. A chassis already gone is fine.
fn cut_off(runner: &dyn Runner, hostnames: &[String]) -> Result<()> {
    let out = runner.run(
        &Cmd::new(
            "making the OVN southbound drop its connections",
            "ovn-appctl",
        )
        .args(["-t", SB_CONTROL, "ovsdb-server/reconnect"])
        .unchecked(),
    )?;
    if !out.success() {
        anyhow::bail!(
            "the OVN southbound would not drop its connections ({}); run `ovn-appctl -t {SB_CONTROL} ovsdb-server/reconnect` on the control plane",
            out.stderr.trim()
        );
    }
    for host in hostnames {
        runner
            .run(
                &Cmd::new(format!("deleting OVN chassis {host}"), "ovn-sbctl").args([
                    "--timeout=20",
                    "--if-exists",
                    "chassis-del",
                    host,
                ]),
            )
            .with_context(|| format!("deleting the OVN chassis of {host}"))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::host::{CmdOutput, RecordingRunner};
    use std::sync::Arc;
    use std::sync::atomic::{AtomicI64, Ordering};

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

    #[test]
    fn a_ping_waits_for_no_chassis_and_generations_say_who_answered() {
        let r = southbound();
        assert_eq!(ping(&r).unwrap(), 8);
        let g = generations(&r).unwrap();
        assert_eq!(g.current, 8);
        assert_eq!(g.chassis["edge1"], Some(8));
        assert_eq!(g.chassis["edge2"], Some(7));
        // One sync, then reads only.
        let syncs = (r.command_lines().iter())
            .filter(|c| c.contains("ovn-nbctl"))
            .count();
        assert_eq!(syncs, 1);
    }
}
