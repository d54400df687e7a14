//! Which simulated hosts are not up, as the control plane sees them: their
//! OVN chassis (the southbound's ping of every chassis) and their
//! nova-computes (the operator's own view, `dcn node list`, which carries
//! each compute's last heartbeat).

use super::plan::SimHost;
use crate::host::command::{Cmd, Runner};
use crate::openstack::PlaneState;
use crate::openstack::southbound::Southbound;
use anyhow::{Context, Result};
use serde_json::Value;
use std::collections::BTreeMap;
use std::time::{Duration, SystemTime};

/// The simulated hosts of `hosts` whose chassis do not answer the
/// southbound's ping within `answer`.
pub fn down_chassis(
    runner: &dyn Runner,
    hosts: &[SimHost],
    answer: Duration,
) -> Result<Vec<String>> {
    let states = crate::openstack::southbound(runner).chassis_states(answer)?;
    Ok((hosts.iter())
        .filter(|h| states.get(&h.name) != Some(&PlaneState::Up))
        .map(|h| h.name.clone())
        .collect())
}

/// The simulated hosts of `hosts` that run a nova-compute which nova does
/// not call up, or whose last heartbeat is older than `since` (a compute
/// nova still calls up from before an outage has not come back yet).
pub fn silent_computes(
    runner: &dyn Runner,
    hosts: &[SimHost],
    since: SystemTime,
) -> Result<Vec<String>> {
    let out = runner.run(
        &Cmd::new("listing the edge hosts", "dcn")
            .args(["node", "list", "--output", "json"])
            .read_only()
            .timeout(Duration::from_secs(300)),
    )?;
    let list: Value =
        serde_json::from_str(&out.stdout).context("reading `dcn node list --output json`")?;
    let reports = compute_reports(&list);
    // Nova keeps whole seconds and more; the view gives whole seconds.
    let since = crate::timefmt::unix_seconds(since);
    Ok((hosts
        .iter()
        .filter(|h| h.compute.is_some_and(|c| c.reports())))
    .filter(|h| !reported_since(&reports, &h.name, since))
    .map(|h| h.name.clone())
    .collect())
}

type Reports<'a> = BTreeMap<&'a str, (PlaneState, Option<i64>)>;

/// Nova calls `host`'s compute up, from a heartbeat at `since` or later.
fn reported_since(reports: &Reports, host: &str, since: i64) -> bool {
    matches!(reports.get(host), Some((PlaneState::Up, Some(at))) if *at >= since)
}

/// Each listed host's compute state and last heartbeat (Unix seconds).
fn compute_reports(list: &Value) -> Reports<'_> {
    (list.as_array().into_iter().flatten())
        .filter_map(|n| {
            let state = match n["compute"].as_str()? {
                "up" => PlaneState::Up,
                "down" => PlaneState::Down,
                "disabled" => PlaneState::Disabled,
                "missing" => PlaneState::Missing,
                _ => PlaneState::Unknown,
            };
            let at = (n["computeLastReport"].as_str())
                .and_then(|t| crate::timefmt::parse_rfc3339(t).ok())
                .map(crate::timefmt::unix_seconds);
            Some((n["hostname"].as_str()?, (state, at)))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_compute_counts_once_it_reported_since() {
        let list = serde_json::json!([
            {"hostname": "a", "compute": "up", "computeLastReport": "2026-11-29T12:00:10Z"},
            {"hostname": "b", "compute": "up", "computeLastReport": "2026-11-29T11:59:00Z"},
            {"hostname": "c", "compute": "down", "computeLastReport": "2026-11-29T12:00:10Z"},
            {"hostname": "d", "compute": "missing"},
        ]);
        let r = compute_reports(&list);
        let since = crate::timefmt::unix_seconds(
            crate::timefmt::parse_rfc3339("2026-11-29T12:00:00Z").unwrap(),
        );
        let fresh = |h: &str| reported_since(&r, h, since);
        assert!(fresh("a"));
        assert!(!fresh("b"), "up by nova, but from before");
        assert!(!fresh("c"));
        assert!(!fresh("d"));
        assert!(!fresh("e"), "not listed");
    }
}
