//! Placing joined hosts: once a node's nova-compute has registered, the
//! join service maps it to the cell and adds it to its site's aggregate, so
//! the edge itself never needs admin rights. The node's progress record
//! says `placed` from then on.

use crate::host::{Cmd, Host};
use crate::sites::progress::{Phase, ProgressStore};
use crate::sites::provision;
use crate::sites::{NodeState, Registry};
use crate::timefmt::rfc3339;
use anyhow::Result;
use std::time::{Duration, SystemTime};

/// How often the placer looks for nodes to place.
pub const INTERVAL: Duration = Duration::from_secs(5);

/// Place every joined node whose compute service has registered.
pub fn place_pending(host: &Host) -> Result<usize> {
    let registry = Registry::new(&host.files);
    // A node named like the control plane (joined under an older dcn,
    // which did not refuse it) is never put in an edge zone.
    let control_plane = crate::sites::reserved::control_plane_hostname(&host.files)?;
    let pending: Vec<_> = registry
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
        .collect();
    if pending.is_empty() {
        return Ok(0);
    }
    let config = crate::deployment::saved_config(&host.files)?;
    let cloud = provision::admin_cloud(host, config.control_plane.region.as_str())?;
    let registered: Vec<_> = pending
        .into_iter()
        .filter(|n| provision::is_compute_host(&cloud, &n.hostname).unwrap_or(false))
        .collect();
    if registered.is_empty() {
        return Ok(0);
    }
    // Map the new hosts to cell1 now rather than at the scheduler's next
    // periodic discovery.
    host.runner.run(
        &Cmd::new("mapping new compute hosts to the cell", "runuser")
            .args([
                "-u",
                "nova",
                "--",
                "nova-manage",
                "cell_v2",
                "discover_hosts",
            ])
            .timeout(Duration::from_secs(120)),
    )?;
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
        match provision::add_to_aggregate(&cloud, aggregate, &node.hostname) {
            Ok(()) => {
                let lock = registry.lock()?;
                if let Some(mut n) = registry.node(&node.hostname)? {
                    n.state = NodeState::Placed;
                    n.placed_at = Some(rfc3339(SystemTime::now()));
                    registry.save_node(&n)?;
                    if let Err(e) = ProgressStore::new(&host.files).record_centre(
                        &lock,
                        &n.site,
                        &n.hostname,
                        Phase::Placed,
                        None,
                        &[],
                    ) {
                        tracing::warn!("recording that {} was placed: {e:#}", n.hostname);
                    }
                }
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
