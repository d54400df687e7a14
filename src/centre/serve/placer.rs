//! Placing joined hosts: once a node's nova-compute has registered, the
//! join service maps it to the cell and adds it to its site's aggregate, so
//! the edge itself never needs admin rights (`in-zone`). Once the node says
//! its join finished (`join-finished`) and the centre sees both its planes
//! up (its nova-compute service and its OVN chassis, which answers a
//! ping), its record says `placed`: the node is finished, not only in its
//! zone while its join still runs.

use crate::centre::sites::progress::{Phase, ProgressStore};
use crate::centre::sites::{NodeRecord, NodeState, Registry};
use crate::host::Host;
use crate::openstack::PlaneState;
use crate::openstack::compute::ComputeCloud;
use crate::openstack::southbound::Southbound;
use crate::openstack::{compute_cloud, southbound};
use crate::timefmt::rfc3339;
use anyhow::Result;
use std::time::{Duration, SystemTime};

/// How often the placer looks for nodes to place.
pub const INTERVAL: Duration = Duration::from_secs(5);

/// The placer's rounds, every [`INTERVAL`], for as long as the join
/// service runs: place what registered, record what finished, and show
/// neutron the chassis options it reads.
pub fn run(host: &Host) {
    let compute = || Ok(Box::new(compute_cloud(host)?) as Box<dyn ComputeCloud>);
    let southbound = southbound(host.runner.as_ref());
    loop {
        if let Err(e) = place_pending(host, &compute) {
            tracing::warn!("placing joined hosts: {e:#}");
        }
        if let Err(e) = record_placed(host, &compute, &southbound) {
            tracing::warn!("recording finished hosts as placed: {e:#}");
        }
        match southbound.mirror_chassis_options() {
            Ok(updated) if !updated.is_empty() => {
                tracing::info!("chassis options shown to neutron: {}", updated.join(", "))
            }
            Ok(_) => {}
            Err(e) => tracing::warn!("mirroring OVN chassis options for neutron: {e:#}"),
        }
        std::thread::sleep(INTERVAL);
    }
}

/// Place every joined node whose compute service has registered in
/// `compute` (made only when a node is waiting: logging in costs a
/// keystone round trip every round).
pub fn place_pending(
    host: &Host,
    compute: &dyn Fn() -> Result<Box<dyn ComputeCloud>>,
) -> Result<usize> {
    let registry = Registry::new(&host.files);
    let pending = joined(host, &registry)?;
    if pending.is_empty() {
        return Ok(0);
    }
    let compute = compute()?;
    let registered: Vec<_> = pending
        .into_iter()
        .filter(|n| compute.is_compute_host(&n.hostname).unwrap_or(false))
        .collect();
    if registered.is_empty() {
        return Ok(0);
    }
    compute.map_new_hosts()?;
    let mut placed = 0;
    for node in registered {
        let Some(site) = registry
            .site(&node.site)?
            .filter(|s| s.revoked_at.is_none())
        else {
            continue;
        };
        let Some(aggregate) = site.aggregate_id else {
            continue;
        };
        match compute.place(aggregate, &node.hostname) {
            Ok(()) => {
                mark_placed(host, &registry, &node.hostname)?;
                tracing::info!(
                    "placed {} in availability zone {}",
                    node.hostname,
                    site.name
                );
                placed += 1;
            }
            // Not mapped yet: the next round tries again.
            Err(e) => tracing::debug!(
                "{} is not ready for its aggregate yet: {e:#}",
                node.hostname
            ),
        }
    }
    Ok(placed)
}

/// The nodes that joined and wait to be placed. A node named like the
/// control plane (joined under an older dcn, which did not refuse it) is
/// never put in an edge zone.
fn joined(host: &Host, registry: &Registry) -> Result<Vec<NodeRecord>> {
    let control_plane = crate::centre::sites::reserved::control_plane_hostname(&host.files)?;
    Ok(registry
        .nodes()?
        .into_iter()
        .filter(|n| n.state == NodeState::Joined)
        .filter(|n| {
            let reserved = control_plane.as_deref() == Some(n.hostname.as_str());
            if reserved {
                tracing::warn!(
                    "node {} of site {} has the control plane's name: not placing it; remove it with `dcn node remove`",
                    n.hostname,
                    n.site
                );
            }
            !reserved
        })
        .collect())
}

/// Mark `hostname` placed in the registry and in its progress record.
fn mark_placed(host: &Host, registry: &Registry, hostname: &str) -> Result<()> {
    let lock = registry.lock()?;
    if let Some(mut n) = registry.node(hostname)? {
        n.state = NodeState::Placed;
        n.placed_at = Some(rfc3339(SystemTime::now()));
        registry.save_node(&n)?;
        if let Err(e) = ProgressStore::new(&host.files).record_centre(
            &lock,
            &n.site,
            &n.hostname,
            Phase::InZone,
            None,
            &[],
        ) {
            tracing::warn!("recording that {} was placed: {e:#}", n.hostname);
        }
    }
    Ok(())
}

/// How long a chassis has to answer the placer's ping.
const CHASSIS_ANSWER: Duration = Duration::from_secs(3);

/// Record `placed` for each node whose join finished (its last report),
/// that is in its zone, and whose nova-compute service and OVN chassis are
/// both up. Returns how many it placed.
pub fn record_placed(
    host: &Host,
    compute: &dyn Fn() -> Result<Box<dyn ComputeCloud>>,
    southbound: &dyn Southbound,
) -> Result<usize> {
    let registry = Registry::new(&host.files);
    let store = ProgressStore::new(&host.files);
    let finished: Vec<_> = store
        .all()?
        .into_iter()
        .filter(|p| p.current().is_some_and(|e| e.phase == Phase::JoinFinished))
        .filter(|p| {
            registry
                .node(&p.hostname)
                .ok()
                .flatten()
                .is_some_and(|n| n.state == NodeState::Placed && n.site == p.site)
        })
        .collect();
    if finished.is_empty() {
        return Ok(0);
    }
    let compute = compute()?.compute_states()?;
    let network = southbound.chassis_states(CHASSIS_ANSWER)?;
    let mut placed = 0;
    for p in finished {
        let up = |states: &std::collections::BTreeMap<String, PlaneState>| {
            states.get(&p.hostname) == Some(&PlaneState::Up)
        };
        if !(up(&compute) && up(&network)) {
            tracing::debug!(
                "{}: its join finished; waiting for both planes (compute {:?}, network {:?})",
                p.hostname,
                compute.get(&p.hostname),
                network.get(&p.hostname)
            );
            continue;
        }
        let lock = registry.lock()?;
        store.record_centre(&lock, &p.site, &p.hostname, Phase::Placed, None, &[])?;
        tracing::info!(
            "{} is placed: its join finished and both planes are up",
            p.hostname
        );
        placed += 1;
    }
    Ok(placed)
}
