//! The OVN southbound database through `ovn-sbctl` on the control plane:
//! rows as JSON, and the one write dcn makes there (see
//! [`mirror_chassis_options`]).

use crate::host::{Cmd, Runner};
use anyhow::{Context, Result};
use serde_json::Value;
use std::collections::BTreeMap;

/// Chassis options that Debian 12's neutron (21.0.0) reads from a
/// chassis' `external_ids`, while its ovn-controller (OVN 23.03) writes
/// them to `other_config` only (neutron's side was fixed upstream after
/// that release, LP#1990229). Without them neutron sees no gateway chassis,
/// no availability zones and no bridge mappings, and binds ports without
/// the chassis' datapath type (see the neutron recipe's patch).
pub const NEUTRON_READS_FROM_EXTERNAL_IDS: &[&str] =
    &["ovn-cms-options", "ovn-bridge-mappings", "datapath-type"];

/// The rows of a southbound table, each cell a JSON value as ovn-sbctl's
/// `--format=json` gives it.
pub fn sb_list(runner: &dyn Runner, table: &str, columns: &str) -> Result<Vec<Vec<Value>>> {
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
pub fn parse_rows(text: &str) -> Result<Vec<Vec<Value>>> {
    let v: Value = serde_json::from_str(text)?;
    Ok(v["data"]
        .as_array()
        .context("no data array")?
        .iter()
        .filter_map(|row| row.as_array().cloned())
        .collect())
}

/// An OVSDB map cell, `["map", [[key, value], …]]`.
pub fn map_cell(v: &Value) -> BTreeMap<String, String> {
    v.get(1)
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|kv| Some((kv[0].as_str()?.to_string(), kv[1].as_str()?.to_string())))
        .collect()
}

/// Copy [`NEUTRON_READS_FROM_EXTERNAL_IDS`] from each chassis'
/// `other_config` to its `external_ids` where they differ. ovn-controller
/// never writes `external_ids`, and recreates its chassis row when it
/// restarts, so the join service runs this periodically. Returns the
/// chassis it updated.
pub fn mirror_chassis_options(runner: &dyn Runner) -> Result<Vec<String>> {
    let rows = sb_list(runner, "Chassis", "name,other_config,external_ids")?;
    let mut updated = Vec::new();
    for row in rows {
        let Some(name) = row.first().and_then(Value::as_str) else {
            continue;
        };
        let (other, external) = (map_cell(&row[1]), map_cell(&row[2]));
        let sets: Vec<String> = NEUTRON_READS_FROM_EXTERNAL_IDS
            .iter()
            .filter_map(|k| {
                let want = other.get(*k)?;
                (external.get(*k) != Some(want)).then(|| format!("external_ids:{k}={want:?}"))
            })
            .collect();
        if sets.is_empty() {
            continue;
        }
        runner.run(
            &Cmd::new(
                format!("showing chassis {name}'s options to neutron"),
                "ovn-sbctl",
            )
            .args(["--timeout=10", "set", "Chassis", name])
            .args(sets),
        )?;
        updated.push(name.to_string());
    }
    Ok(updated)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::host::{CmdOutput, RecordingRunner};

    #[test]
    fn options_neutron_cannot_see_are_mirrored_once() {
        let listing = r#"{"data":[
            ["edge1",["map",[["ovn-cms-options","enable-chassis-as-gw,availability-zones=edge1"],["ovn-bridge-mappings","physnet1:br-ex"],["iface-types","geneve"],["datapath-type","netdev"]]],["map",[]]],
            ["cp",["map",[["ovn-cms-options","enable-chassis-as-gw,availability-zones=central"]]],["map",[["ovn-cms-options","enable-chassis-as-gw,availability-zones=central"]]]]
        ],"headings":["name","other_config","external_ids"]}"#;
        let r = RecordingRunner::answering(move |c| {
            if c.args.contains(&"list".to_string()) {
                CmdOutput::ok(listing)
            } else {
                CmdOutput::ok("")
            }
        });
        assert_eq!(mirror_chassis_options(&r).unwrap(), ["edge1"]);
        let set = r.calls().pop().unwrap();
        assert_eq!(
            set.args[3..],
            [
                "edge1",
                "external_ids:ovn-cms-options=\"enable-chassis-as-gw,availability-zones=edge1\"",
                "external_ids:ovn-bridge-mappings=\"physnet1:br-ex\"",
                "external_ids:datapath-type=\"netdev\""
            ]
        );
    }
}
