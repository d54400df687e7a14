//! The one write dcn makes to chassis rows: the options neutron reads
//! from `external_ids`, copied there from `other_config`, where
//! ovn-controller writes them ([`NEUTRON_READS_FROM_EXTERNAL_IDS`]).
//!
//! The join service follows the `Chassis` table with an OVSDB monitor
//! (`ovsdb-client monitor`): every chassis once at the start, then only
//! the rows that are added or change, as they do. It used to list every
//! chassis every 5 s, a read that grows with the fleet whether anything
//! changed or not.

use super::{map_cell, parse_rows};
use crate::host::{Cmd, Runner};
use anyhow::{Context, Result};
use serde_json::Value;
use std::collections::BTreeMap;
use std::time::Duration;

/// Chassis options that Debian 12's neutron (21.0.0) reads from a
/// chassis' `external_ids`, while its ovn-controller (OVN 23.03) writes
/// them to `other_config` only (neutron's side was fixed upstream after
/// that release, LP#1990229). Without them neutron sees no gateway chassis,
/// no availability zones and no bridge mappings, and binds ports without
/// the chassis' datapath type (see the neutron recipe's patch).
pub const NEUTRON_READS_FROM_EXTERNAL_IDS: &[&str] =
    &["ovn-cms-options", "ovn-bridge-mappings", "datapath-type"];

/// The southbound's database socket (ovn-ctl's default), which ovn-sbctl
/// uses too.
const SB_SOCKET: &str = "unix:/var/run/ovn/ovnsb_db.sock";

/// The columns the monitor follows.
const COLUMNS: &str = "name,other_config,external_ids";

/// Follow the `Chassis` table until the monitor ends (the southbound
/// restarted or went away): each row of its first answer, then each row
/// added or changed, gets the options neutron reads where they differ.
/// `updated` hears of every chassis written. An ovn-controller recreates
/// its row when it restarts, which the monitor sees as a new row.
pub(super) fn watch(runner: &dyn Runner, updated: &mut dyn FnMut(&str)) -> Result<()> {
    let monitor = Cmd::new("following the OVN southbound's chassis", "ovsdb-client")
        .args(["--format=json", "monitor", SB_SOCKET, "OVN_Southbound"])
        .args(["Chassis", COLUMNS])
        // It runs until the southbound goes: the join service starts it
        // again.
        .timeout(Duration::from_secs(365 * 24 * 3600))
        .read_only();
    runner.stream_lines(&monitor, &mut |line| {
        for (name, sets) in changes(line)? {
            runner.run(
                &Cmd::new(
                    format!("showing chassis {name}'s options to neutron"),
                    "ovn-sbctl",
                )
                .args(["--timeout=10", "set", "Chassis", &name])
                .args(sets),
            )?;
            updated(&name);
        }
        Ok(())
    })?;
    Ok(())
}

/// The chassis of one monitor line that need their options copied, with
/// the `set` arguments for each. A line is a table whose rows begin with
/// the row's UUID and its action: `initial` and `insert` rows, and the
/// `new` half of a modification, carry every column; `old` halves and
/// `delete`s need nothing.
fn changes(line: &str) -> Result<Vec<(String, Vec<String>)>> {
    if line.trim().is_empty() {
        return Ok(Vec::new());
    }
    let rows = parse_rows(line).context("reading a line of the southbound's chassis monitor")?;
    Ok((rows.iter())
        .filter(|r| {
            matches!(
                r.get(1).and_then(Value::as_str),
                Some("initial" | "insert" | "new")
            )
        })
        .filter_map(|r| {
            let name = r.get(2)?.as_str()?;
            let sets = missing(&map_cell(r.get(3)?), &map_cell(r.get(4)?));
            (!sets.is_empty()).then(|| (name.to_string(), sets))
        })
        .collect())
}

/// The `external_ids:KEY="VALUE"` settings a chassis lacks.
fn missing(other: &BTreeMap<String, String>, external: &BTreeMap<String, String>) -> Vec<String> {
    (NEUTRON_READS_FROM_EXTERNAL_IDS.iter())
        .filter_map(|k| {
            let want = other.get(*k)?;
            (external.get(*k) != Some(want)).then(|| format!("external_ids:{k}={want:?}"))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::host::{CmdOutput, RecordingRunner};

    /// What `ovsdb-client --format=json monitor` printed here (OVS 3.1):
    /// the first answer, a chassis changing an option, one whose
    /// controller restarted (its row deleted and made again), and the
    /// monitor's answer to dcn's own write.
    const MONITOR: &str = concat!(
        r#"{"data":[["u1","initial","edge1",["map",[["ovn-cms-options","enable-chassis-as-gw,availability-zones=edge1"],["ovn-bridge-mappings","physnet1:br-ex"],["iface-types","geneve"],["datapath-type","netdev"]]],["map",[]]],["u2","initial","cp",["map",[["ovn-cms-options","enable-chassis-as-gw,availability-zones=central"]]],["map",[["ovn-cms-options","enable-chassis-as-gw,availability-zones=central"]]]]],"headings":["row","action","name","other_config","external_ids"]}"#,
        "\n",
        r#"{"data":[["u2","old",null,["map",[["ovn-cms-options","enable-chassis-as-gw,availability-zones=central"]]],null],["","new","cp",["map",[["ovn-cms-options","availability-zones=central"]]],["map",[["ovn-cms-options","enable-chassis-as-gw,availability-zones=central"]]]]],"headings":["row","action","name","other_config","external_ids"]}"#,
        "\n",
        r#"{"data":[["u3","delete","edge2",["map",[["datapath-type","netdev"]]],["map",[["datapath-type","netdev"]]]]],"headings":["row","action","name","other_config","external_ids"]}"#,
        "\n",
        r#"{"data":[["u4","insert","edge2",["map",[["datapath-type","netdev"]]],["map",[]]]],"headings":["row","action","name","other_config","external_ids"]}"#,
        "\n",
        r#"{"data":[["u4","old",null,null,["map",[]]],["","new","edge2",["map",[["datapath-type","netdev"]]],["map",[["datapath-type","netdev"]]]]],"headings":["row","action","name","other_config","external_ids"]}"#,
        "\n"
    );

    fn watched() -> (Vec<String>, Vec<String>) {
        let r = RecordingRunner::answering(|c| match c.program.as_str() {
            "ovsdb-client" => CmdOutput::ok(MONITOR),
            _ => CmdOutput::ok(""),
        });
        let mut updated = Vec::new();
        watch(&r, &mut |name| updated.push(name.to_string())).unwrap();
        let writes = (r.calls().iter())
            .filter(|c| c.program == "ovn-sbctl")
            .map(|c| c.args[3..].join(" "))
            .collect();
        (updated, writes)
    }

    #[test]
    fn only_rows_that_are_new_or_changed_are_written_and_each_once() {
        let (updated, writes) = watched();
        assert_eq!(updated, ["edge1", "cp", "edge2"]);
        assert_eq!(
            writes,
            [
                r#"edge1 external_ids:ovn-cms-options="enable-chassis-as-gw,availability-zones=edge1" external_ids:ovn-bridge-mappings="physnet1:br-ex" external_ids:datapath-type="netdev""#,
                r#"cp external_ids:ovn-cms-options="availability-zones=central""#,
                r#"edge2 external_ids:datapath-type="netdev""#,
            ],
            "the matching cp row at the start, the delete and dcn's own write's echo wrote nothing"
        );
    }

    #[test]
    fn the_monitor_follows_the_chassis_table_over_the_southbound_socket() {
        let r = RecordingRunner::answering(|_| CmdOutput::ok(""));
        watch(&r, &mut |_| {}).unwrap();
        let line = r.command_lines().remove(0);
        assert_eq!(
            line,
            "ovsdb-client --format=json monitor unix:/var/run/ovn/ovnsb_db.sock OVN_Southbound Chassis name,other_config,external_ids"
        );
    }

    #[test]
    fn a_line_that_is_not_a_table_is_an_error() {
        assert!(changes("").unwrap().is_empty());
        let e = changes("ovsdb-client: transaction error").unwrap_err();
        assert!(format!("{e:#}").contains("chassis monitor"), "{e:#}");
    }
}
