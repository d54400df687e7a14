//! `dcn site list|revoke` and `dcn node list|remove`: what the operator
//! does with sites and nodes after they joined.

use super::chassis_liveness;
use super::phases::{self, NodePhase};
use super::progress::{Phase, ProgressStore};
use super::registry::{NodeRecord, Registry, Site};
use super::southbound_members;
use crate::host::Host;
use crate::openstack::PlaneState;
use crate::openstack::accounts::ControlPlaneAccounts;
use crate::openstack::compute::ComputeCloud;
use crate::openstack::southbound::Southbound;
use crate::openstack::{compute_cloud, southbound};
use crate::recipes::Recipes;
use crate::timefmt::rfc3339;
use anyhow::{Result, bail};
use serde::Serialize;
use std::time::SystemTime;

/// A site with its nodes and outstanding tokens.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SiteView {
    #[serde(flatten)]
    pub site: Site,
    pub nodes: Vec<String>,
    pub tokens: usize,
}

pub fn list_sites(host: &Host) -> Result<Vec<SiteView>> {
    let registry = Registry::new(&host.files);
    let nodes = registry.nodes()?;
    let tokens = registry.tokens()?;
    Ok(registry
        .sites()?
        .into_iter()
        .map(|s| SiteView {
            nodes: nodes
                .iter()
                .filter(|n| n.site == s.name)
                .map(|n| n.hostname.clone())
                .collect(),
            tokens: tokens
                .iter()
                .filter(|t| t.site == s.name && t.uses < t.max_uses)
                .count(),
            site: s,
        })
        .collect())
}

pub fn list_nodes(host: &Host) -> Result<Vec<NodeRecord>> {
    Registry::new(&host.files).nodes()
}

/// A host of an edge site: joined (its node record), or only reporting
/// its progress so far.
#[derive(Debug, Serialize)]
#[serde(untagged)]
pub enum Member {
    Joined(Box<NodeRecord>),
    Reporting { hostname: String, site: String },
}

/// A host with its health on both planes and its progress.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct NodeView {
    #[serde(flatten)]
    pub node: Member,
    /// Its nova-compute service.
    pub compute: PlaneState,
    /// Its nova-compute service's last heartbeat, if it ever reported.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub compute_last_report: Option<String>,
    /// Its OVN chassis (ovn-controller connected and processing).
    pub network: PlaneState,
    /// Its progress: PHASE is `progress.shown`.
    pub progress: NodePhase,
}

impl NodeView {
    pub fn hostname(&self) -> &str {
        &self.progress.hostname
    }

    pub fn site(&self) -> &str {
        &self.progress.site
    }

    /// The join's record, if the host joined.
    pub fn joined(&self) -> Option<&NodeRecord> {
        match &self.node {
            Member::Joined(n) => Some(n),
            Member::Reporting { .. } => None,
        }
    }
}

/// The nodes (and the hosts that reported progress but never joined),
/// each with what nova and OVN say of it now. A plane the control plane
/// cannot be asked about is `unknown`, with a warning.
pub fn list_nodes_with_health(host: &Host) -> Result<Vec<NodeView>> {
    let hosts = phases::all_hosts(&host.files, SystemTime::now())?;
    let compute = compute_cloud(host)
        .and_then(|cloud| cloud.compute_reports())
        .map_err(|e| tracing::warn!("the compute cloud's view of the nodes is unknown: {e:#}"))
        .unwrap_or_default();
    let southbound = southbound(host.runner.as_ref());
    let network = chassis_liveness::chassis_states(host, &southbound, SystemTime::now())
        .map_err(|e| tracing::warn!("the southbound's view of the nodes is unknown: {e:#}"))
        .ok();
    let compute_known = !compute.is_empty();
    Ok(hosts
        .into_iter()
        .map(|(node, progress)| NodeView {
            compute_last_report: (compute.get(&progress.hostname))
                .and_then(|r| r.last_report)
                .map(rfc3339),
            compute: match compute.get(&progress.hostname) {
                Some(r) => r.state,
                None if compute_known => PlaneState::Missing,
                None => PlaneState::Unknown,
            },
            network: match &network {
                Some(m) => m
                    .get(&progress.hostname)
                    .copied()
                    .unwrap_or(PlaneState::Missing),
                None => PlaneState::Unknown,
            },
            node: match node {
                Some(n) => Member::Joined(Box::new(n)),
                None => Member::Reporting {
                    hostname: progress.hostname.clone(),
                    site: progress.site.clone(),
                },
            },
            progress,
        })
        .collect())
}

/// `dcn site status SITE`: every host's progress, and for each node whose
/// join is done, what nova and OVN say of it now (a plane down is flagged,
/// with where to look).
pub fn site_status_with_health(host: &Host, site: &str) -> Result<phases::SiteStatus> {
    let mut status = phases::site_status(&host.files, site, SystemTime::now())?;
    let done = |p: &NodePhase| {
        p.phase
            .is_some_and(|p| matches!(p, Phase::JoinFinished | Phase::Placed))
    };
    if !status.nodes.iter().any(done) {
        return Ok(status);
    }
    let views = list_nodes_with_health(host)?;
    status.nodes = std::mem::take(&mut status.nodes)
        .into_iter()
        .map(
            |p| match views.iter().find(|v| v.hostname() == p.hostname) {
                Some(v) if v.joined().is_some() => p.with_planes(phases::Planes {
                    compute: v.compute,
                    network: v.network,
                }),
                _ => p,
            },
        )
        .collect();
    Ok(status)
}

/// Revoke a site: every node's RabbitMQ and keystone users go, the OVN
/// southbound stops admitting its nodes, and its tokens and node secrets
/// stop working; its hosts' progress records go (none can report any
/// more). Other sites are untouched. Its nodes stay listed (and in nova)
/// until `dcn node remove`.
pub fn revoke_site(recipes: &Recipes, host: &Host, name: &str) -> Result<()> {
    let registry = Registry::new(&host.files);
    let lock = registry.lock()?;
    let mut site = registry.active_site(name)?;
    let accounts = ControlPlaneAccounts::new(host);
    let mut members = Vec::new();
    for mut node in registry.nodes()?.into_iter().filter(|n| n.site == name) {
        super::accounts::revoke(&accounts, recipes, &node.hostname)?;
        // Dead for good: a re-admitted site's hosts join with a new token.
        node.secret_hash = String::new();
        node.key_pin = None;
        node.southbound_ca = None;
        registry.save_node(&node)?;
        members.push(node.hostname);
    }
    // Its tokens stay on record, so a join with one is refused as a join to
    // a revoked site rather than as an unknown token.
    site.revoked_at = Some(rfc3339(SystemTime::now()));
    registry.save_site(&site)?;
    let progress = ProgressStore::new(&host.files);
    for p in progress.all()?.into_iter().filter(|p| p.site == name) {
        progress.remove(&lock, &p.hostname)?;
    }
    southbound_members::admit(&host.files)?;
    southbound(host.runner.as_ref()).cut_off(&members)?;
    Ok(())
}

/// What `dcn node remove` removed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Removed {
    /// A joined node, with its credentials and its place in nova.
    Node,
    /// A host that reported progress but never joined: its record.
    Reports,
}

/// Remove a node: its own credentials die first (RabbitMQ and keystone
/// users, the OVN southbound's trust in its certificate, its join-service
/// secret), then it leaves its aggregate and nova deletes its compute
/// service (with its compute node and resource provider), and its progress
/// record goes. The site and its other nodes are untouched. A host that
/// only reported progress loses its record.
pub fn remove_node(recipes: &Recipes, host: &Host, hostname: &str) -> Result<Removed> {
    let registry = Registry::new(&host.files);
    let lock = registry.lock()?;
    let progress = ProgressStore::new(&host.files);
    let Some(node) = registry.node(hostname)? else {
        if progress.get(hostname)?.is_some() {
            progress.remove(&lock, hostname)?;
            return Ok(Removed::Reports);
        }
        bail!("there is no node {hostname}; `dcn node list` shows the nodes");
    };
    let compute = compute_cloud(host)?;
    let accounts = ControlPlaneAccounts::new(host);
    super::accounts::revoke(&accounts, recipes, hostname)?;
    let mut dead = node.clone();
    dead.secret_hash = String::new();
    dead.key_pin = None;
    dead.southbound_ca = None;
    registry.save_node(&dead)?;
    southbound_members::admit(&host.files)?;
    let site = registry.site(&node.site)?;
    if let Some(aggregate) = site.as_ref().and_then(|s| s.aggregate_id) {
        compute.unplace(aggregate, hostname)?;
    }
    // A node an older dcn let join under the control plane's own name: its
    // accounts, certificate and edge zone are gone; the chassis, compute
    // service and resource provider of that name are the control plane's.
    if super::reserved::control_plane_hostname(&host.files)?.as_deref() == Some(hostname) {
        progress.remove(&lock, hostname)?;
        registry.remove_node(hostname)?;
        return Ok(Removed::Node);
    }
    southbound(host.runner.as_ref()).cut_off(&[hostname.to_string()])?;
    compute.remove_host(hostname)?;
    progress.remove(&lock, hostname)?;
    super::upgrade_state::forget(&host.files, hostname)?;
    registry.remove_node(hostname)?;
    Ok(Removed::Node)
}
