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
use crate::openstack::client::KeptLogin;
use crate::openstack::compute::ComputeCloud;
use crate::openstack::southbound::Southbound;
use crate::openstack::{compute_cloud, southbound};
use crate::timefmt::rfc3339;
use anyhow::Result;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

/// How often the placer looks for nodes to place.
pub const INTERVAL: Duration = Duration::from_secs(5);

/// The compute cloud the placer's rounds share: logged in when a round
/// first needs it, kept, and made again after a round that failed.
struct Login<'a> {
    log_in: &'a dyn Fn() -> Result<Arc<dyn ComputeCloud>>,
    kept: KeptLogin<dyn ComputeCloud>,
}

impl Login<'_> {
    fn get(&self) -> Result<Arc<dyn ComputeCloud>> {
        self.kept.get(self.log_in)
    }

    fn forget(&self) {
        self.kept.forget()
    }
}

/// The placer's rounds, every [`INTERVAL`], for as long as the join
/// service runs: place what registered, and record what finished.
pub fn run(host: &Host) {
    let log_in = || Ok(Arc::new(compute_cloud(host)?) as Arc<dyn ComputeCloud>);
    let login = Login {
        log_in: &log_in,
        kept: Default::default(),
    };
    let compute = || login.get();
    let southbound = southbound(host.runner.as_ref());
    loop {
        if let Err(e) = place_pending(host, &compute) {
            login.forget();
            tracing::warn!("placing joined hosts: {e:#}");
        }
        if let Err(e) = record_placed(host, &compute, &southbound) {
            login.forget();
            tracing::warn!("recording finished hosts as placed: {e:#}");
        }
        std::thread::sleep(INTERVAL);
    }
}

/// Show neutron the chassis options it reads, as chassis come and change,
/// for as long as the join service runs: the southbound's chassis are
/// followed, and followed again [`INTERVAL`] after that ends (the
/// southbound restarted; its first answer then covers what changed
/// meanwhile).
pub fn show_chassis_forever(southbound: &dyn Southbound) {
    loop {
        let shown = &mut |name: &str| tracing::info!("chassis options shown to neutron: {name}");
        match southbound.watch_chassis_options(shown) {
            Ok(()) => tracing::info!("the southbound's chassis monitor ended; following it again"),
            Err(e) => tracing::warn!("following the OVN chassis for neutron: {e:#}"),
        }
        std::thread::sleep(INTERVAL);
    }
}

/// Place every joined node whose compute service has registered in
/// `compute` (asked for only when a node is waiting: it may log in).
pub fn place_pending(
    host: &Host,
    compute: &dyn Fn() -> Result<Arc<dyn ComputeCloud>>,
) -> Result<usize> {
    let registry = Registry::new(&host.files);
    let pending = joined(host, &registry)?;
    if pending.is_empty() {
        return Ok(0);
    }
    let compute = compute()?;
    // One listing per round, whatever the number of nodes waiting: a call
    // per node made nova-api the heaviest cost per edge host at 50 hosts
    // (docs/scale.md).
    let services = compute.compute_states()?;
    let registered: Vec<_> = pending
        .into_iter()
        .filter(|n| services.contains_key(&n.hostname))
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
    compute: &dyn Fn() -> Result<Arc<dyn ComputeCloud>>,
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::centre::sites::Site;
    use crate::openstack::compute::{ComputeHosts, ComputeReport, HostView};
    use std::collections::BTreeMap;
    use std::sync::Mutex;

    /// A cloud whose compute services are `registered`; it counts its
    /// calls and records the hosts it placed.
    #[derive(Default)]
    struct Cloud {
        registered: Vec<String>,
        calls: Mutex<BTreeMap<&'static str, usize>>,
        placed: Mutex<Vec<String>>,
    }

    impl Cloud {
        fn count(&self, call: &'static str) {
            *self.calls.lock().unwrap().entry(call).or_default() += 1;
        }
    }

    impl ComputeHosts for Cloud {
        fn is_compute_host(&self, hostname: &str) -> Result<bool> {
            self.count("is_compute_host");
            Ok(self.registered.iter().any(|h| h == hostname))
        }
    }

    impl ComputeCloud for Cloud {
        fn ensure_zone(&self, _: &str) -> Result<u64> {
            unreachable!()
        }
        fn map_new_hosts(&self) -> Result<()> {
            self.count("map_new_hosts");
            Ok(())
        }
        fn place(&self, _: u64, hostname: &str) -> Result<()> {
            self.placed.lock().unwrap().push(hostname.into());
            Ok(())
        }
        fn unplace(&self, _: u64, _: &str) -> Result<()> {
            unreachable!()
        }
        fn remove_host(&self, _: &str) -> Result<()> {
            unreachable!()
        }
        fn compute_reports(&self) -> Result<BTreeMap<String, ComputeReport>> {
            self.count("compute_states");
            let up = ComputeReport {
                state: PlaneState::Up,
                last_report: None,
            };
            Ok((self.registered.iter()).map(|h| (h.clone(), up)).collect())
        }
        fn host_view(&self, _: &str, _: Option<u64>) -> Result<HostView> {
            unreachable!()
        }
    }

    #[test]
    fn the_login_is_kept_until_a_round_fails() {
        let made = Mutex::new(0);
        let log_in = || {
            *made.lock().unwrap() += 1;
            Ok(Arc::new(Cloud::default()) as Arc<dyn ComputeCloud>)
        };
        let login = Login {
            log_in: &log_in,
            kept: Default::default(),
        };
        login.get().unwrap();
        login.get().unwrap();
        assert_eq!(*made.lock().unwrap(), 1);
        login.forget();
        login.get().unwrap();
        assert_eq!(*made.lock().unwrap(), 2);
    }

    #[test]
    fn one_listing_per_round_places_every_registered_node() {
        let dir = tempfile::tempdir().unwrap();
        let host = Host::system(dir.path(), false);
        let registry = Registry::new(&host.files);
        registry
            .save_site(&Site {
                name: "s1".into(),
                created_at: "2026-01-01T00:00:00Z".into(),
                aggregate_id: Some(7),
                revoked_at: None,
            })
            .unwrap();
        for k in 0..40 {
            let n = NodeRecord::for_test(&format!("n{k}"), "s1", NodeState::Joined);
            registry.save_node(&n).unwrap();
        }
        let cloud = Arc::new(Cloud {
            registered: vec!["n3".into(), "n17".into(), "cp".into()],
            ..Cloud::default()
        });
        let compute = || Ok(cloud.clone() as Arc<dyn ComputeCloud>);
        let placed = place_pending(&host, &compute).unwrap();
        assert_eq!(placed, 2);
        let calls = cloud.calls.lock().unwrap().clone();
        assert_eq!(calls.get("compute_states"), Some(&1), "{calls:?}");
        assert_eq!(calls.get("is_compute_host"), None, "{calls:?}");
        let mut placed = cloud.placed.lock().unwrap().clone();
        placed.sort();
        assert_eq!(placed, vec!["n17".to_string(), "n3".to_string()]);
        assert_eq!(
            registry.node("n3").unwrap().unwrap().state,
            NodeState::Placed
        );
        assert_eq!(
            registry.node("n4").unwrap().unwrap().state,
            NodeState::Joined
        );
    }
}
