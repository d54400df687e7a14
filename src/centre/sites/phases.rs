//! What the operator sees of each node's progress: `dcn site status SITE`
//! (every host of a site: its phase, since when, its last report and last
//! error) and the PHASE column of `dcn node list`. A node that is not done
//! and has reported nothing for [`SILENT_AFTER`](super::progress::SILENT_AFTER)
//! shows as `silent (last: <phase>)`. The CONFIG column says which revision
//! of the site's service config each joined node runs.

use super::progress::{Entry, LastError, Phase, ProgressRecord, ProgressStore};
use super::registry::{AppliedConfig, NodeRecord, NodeState, Registry};
use crate::host::Files;
use crate::openstack::PlaneState;
use crate::terminal_text::{Column, Table};
use crate::timefmt::{parse_rfc3339, rough};
use anyhow::{Result, bail};
use serde::Serialize;
use std::fmt;
use std::time::SystemTime;

/// One host's progress as shown.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct NodePhase {
    pub hostname: String,
    pub site: String,
    /// The phase it is in (none before its first report).
    pub phase: Option<Phase>,
    /// The detail of that phase (the step, or the reason it failed).
    pub detail: Option<String>,
    /// As shown: the phase, or `silent (last: <phase>)`.
    pub shown: String,
    pub silent: bool,
    /// When it entered its phase (RFC 3339).
    pub since: Option<String>,
    /// When it last reported anything.
    pub last_report: Option<String>,
    pub last_error: Option<LastError>,
    pub history: Vec<Entry>,
    /// The site config revision the node reported it runs (joined nodes).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub config: Option<Box<AppliedConfig>>,
    /// What the centre sees of a node whose join is done (`dcn site
    /// status`): a plane down is flagged in `shown`, with the reason.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub planes: Option<Planes>,
    /// The node's certificate, as the centre last issued it (joined nodes
    /// whose join recorded it).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub certificate: Option<NodeCertificate>,
    /// Its dcn and its upgrade (joined nodes that asked for orders, or
    /// that an upgrade includes).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub upgrade: Option<NodeUpgrade>,
}

/// A node's upgrade as the operator sees it: what it runs, and where its
/// turn in the upgrade under way stands (its own reports, and the
/// centre's verdict).
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct NodeUpgrade {
    /// The dcn it last said it runs.
    pub dcn_version: Option<String>,
    /// The edge release it runs.
    pub runs: Option<String>,
    /// The release of the upgrade under way that includes it.
    pub release: Option<String>,
    /// `waiting`, then what the node reports (`staging`, `staged`,
    /// `applying`, `applied`, `failed`), then the centre's `upgraded` or
    /// `failed`.
    pub phase: Option<String>,
    pub detail: Option<String>,
    /// When it entered that phase.
    pub since: Option<String>,
    /// The last lines of its output, with `failed`.
    pub log: Vec<String>,
    /// Packages its upgrade changes, units it restarted, guests left on
    /// the qemu it replaced (until their next restart).
    pub changes: Vec<String>,
    pub restarted: Vec<String>,
    pub guests_on_old_qemu: Vec<String>,
    /// Its image cache (nova's names: the SHA-1 of each image id).
    pub image_cache: Vec<String>,
}

impl NodeUpgrade {
    /// From the node's last report and the upgrade under way, if either.
    pub fn of(
        state: Option<&super::upgrade_state::NodeUpgradeState>,
        campaign: Option<&super::upgrade_campaign::Campaign>,
        hostname: &str,
    ) -> Option<NodeUpgrade> {
        use super::upgrade_campaign::Outcome;
        let turn = campaign.and_then(|c| {
            (c.nodes.iter())
                .find(|n| n.hostname == hostname)
                .map(|n| (c, n))
        });
        if state.is_none() && turn.is_none() {
            return None;
        }
        let mut u = NodeUpgrade {
            dcn_version: state.map(|s| s.check.dcn_version.clone()),
            runs: state.and_then(|s| s.check.runs.clone()),
            image_cache: state
                .map(|s| s.check.image_cache.clone())
                .unwrap_or_default(),
            ..NodeUpgrade::default()
        };
        let Some((c, node)) = turn else {
            return Some(u);
        };
        u.release = Some(c.release.id.clone());
        let reported =
            (state.and_then(|s| s.check.progress.as_ref())).filter(|p| p.release == c.release.id);
        if let Some(p) = reported {
            u.phase = Some(p.phase.to_string());
            u.detail = p.detail.clone();
            u.since = state.and_then(|s| s.phase_since.clone());
            u.log = p.log.clone();
            u.changes = p.changes.clone();
            u.restarted = p.restarted.clone();
            u.guests_on_old_qemu = p.guests_on_old_qemu.clone();
        }
        match &node.outcome {
            Some(Outcome::Upgraded { at }) => {
                u.phase = Some("upgraded".into());
                u.detail = None;
                u.since = Some(at.clone());
            }
            Some(Outcome::Failed { reason, at }) => {
                u.phase = Some("failed".into());
                u.detail = Some(reason.clone());
                u.since = Some(at.clone());
            }
            None if reported.is_none() => u.phase = Some("waiting".into()),
            None => {}
        }
        Some(u)
    }

    /// The UPGRADE column: the dcn a node runs, or where its turn stands
    /// and the release it goes to.
    pub fn cell(&self) -> String {
        let to = (self.release.as_deref())
            .map(|r| r.split('-').next().unwrap_or(r).to_string())
            .unwrap_or_default();
        match self.phase.as_deref() {
            Some("upgraded") => format!("upgraded {to}"),
            Some(p) => format!("{p} → {to}"),
            None => self.dcn_version.clone().unwrap_or_else(|| "-".into()),
        }
    }
}

/// Where a node's certificate stands.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct NodeCertificate {
    /// `ok`, `renewal due` or `expired`.
    pub state: String,
    pub not_after: String,
    pub seconds_left: u64,
}

impl NodeCertificate {
    fn of(record: &NodeRecord, renew_when_left: u8, now: SystemTime) -> Option<NodeCertificate> {
        let info = crate::pki::CertInfo::from_pem(record.certificate.as_deref()?).ok()?;
        let row = crate::certs::inventory::CertRow::new(
            &record.hostname,
            "node",
            &info,
            renew_when_left,
            now,
        );
        Some(NodeCertificate {
            state: row.state,
            not_after: row.not_after,
            seconds_left: row.seconds_left,
        })
    }

    /// What is wrong, for the operator, if anything: the node has not
    /// renewed a certificate in its renewal window (it is off, or cut
    /// off), or it expired.
    pub fn problem(&self, hostname: &str) -> Option<String> {
        match self.state.as_str() {
            "ok" => None,
            "expired" => Some(format!(
                "{hostname}: CERT expired at {}: the node renews it by itself when it reaches the join service again (its node secret does not expire); until then its next OVN session is refused. If it missed a CA rotation, run `dcn node trust-ca --ca-pin PIN` on it (`dcn ca status` prints the pin)",
                self.not_after
            )),
            _ => Some(format!(
                "{hostname}: CERT expires at {} and the node has not renewed it: it checks at each of its config syncs; see `systemctl status dcn-config-sync` on the node, and its link to the control plane",
                self.not_after
            )),
        }
    }
}

/// A node's two planes as the centre sees them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Planes {
    /// Its nova-compute service.
    pub compute: PlaneState,
    /// Its OVN chassis.
    pub network: PlaneState,
}

impl Planes {
    /// What is wrong, for the operator: each plane that is not up, with
    /// where to look.
    pub fn problems(&self, hostname: &str) -> Vec<String> {
        let mut out = Vec::new();
        match self.compute {
            PlaneState::Up | PlaneState::Unknown => {}
            s => out.push(format!(
                "{hostname}: COMPUTE {}: its nova-compute service does not report to the control plane; on the node, see `systemctl status nova-compute` and /var/log/nova/nova-compute.log, and check its link to the control plane",
                s.as_str()
            )),
        }
        match self.network {
            PlaneState::Up | PlaneState::Unknown => {}
            s => out.push(format!(
                "{hostname}: NETWORK {}: its OVN chassis does not answer the control plane, so its guests get no DHCP and no traffic; on the node, see `systemctl status ovn-controller` and `ovs-vsctl get open . external-ids:ovn-remote`",
                s.as_str()
            )),
        }
        out
    }
}

impl NodePhase {
    pub fn from_record(p: &ProgressRecord, now: SystemTime) -> NodePhase {
        let current = p.current();
        NodePhase {
            hostname: p.hostname.clone(),
            site: p.site.clone(),
            phase: current.map(|e| e.phase),
            detail: current.and_then(|e| e.detail.clone()),
            shown: p.shown_phase(now),
            silent: p.is_silent(now),
            since: current.map(|e| e.at.clone()),
            last_report: (!p.history.is_empty()).then(|| p.updated_at.clone()),
            last_error: p.last_error.clone(),
            history: p.history.clone(),
            config: None,
            planes: None,
            certificate: None,
            upgrade: None,
        }
    }

    /// Attach what the centre sees of the node's planes, when its join is
    /// done (it finished, or it is placed): a plane that is not up shows
    /// in its phase (`placed, NETWORK down`).
    pub fn with_planes(mut self, planes: Planes) -> NodePhase {
        if !self
            .phase
            .is_some_and(|p| matches!(p, Phase::JoinFinished | Phase::Placed))
        {
            return self;
        }
        for (name, state) in [("COMPUTE", planes.compute), ("NETWORK", planes.network)] {
            if !matches!(state, PlaneState::Up | PlaneState::Unknown) {
                self.shown.push_str(&format!(", {name} {}", state.as_str()));
            }
        }
        self.planes = Some(planes);
        self
    }

    /// A node that joined before progress was recorded (or whose record
    /// was removed by hand): its phase from the node record.
    pub fn from_node(n: &NodeRecord) -> NodePhase {
        let (phase, since) = match (n.state, &n.placed_at) {
            (NodeState::Placed, Some(at)) => (Phase::Placed, at.clone()),
            (NodeState::Placed, None) => (Phase::Placed, n.joined_at.clone()),
            (NodeState::Joined, _) => (Phase::Joined, n.joined_at.clone()),
        };
        NodePhase {
            hostname: n.hostname.clone(),
            site: n.site.clone(),
            phase: Some(phase),
            detail: None,
            shown: phase.to_string(),
            silent: false,
            since: Some(since),
            last_report: None,
            last_error: None,
            history: Vec::new(),
            config: n.config.clone(),
            planes: None,
            certificate: None,
            upgrade: None,
        }
    }
}

/// Every host the control plane knows of, joined or only reporting: the
/// node record (if it joined) and its progress.
pub fn all_hosts(files: &Files, now: SystemTime) -> Result<Vec<(Option<NodeRecord>, NodePhase)>> {
    let nodes = Registry::new(files).nodes()?;
    let mut progress = ProgressStore::new(files).all()?;
    let renew =
        crate::deployment::saved_config(files).map_or(33, |c| c.certificates.renew_when_left.0);
    let campaign = super::upgrade_campaign::Campaign::load(files)?;
    let mut out: Vec<(Option<NodeRecord>, NodePhase)> = nodes
        .into_iter()
        .map(|n| {
            let mut phase = match progress.iter().position(|p| p.hostname == n.hostname) {
                Some(i) => NodePhase::from_record(&progress.remove(i), now),
                None => NodePhase::from_node(&n),
            };
            phase.config = n.config.clone();
            phase.certificate = NodeCertificate::of(&n, renew, now);
            (Some(n), phase)
        })
        .collect();
    for (node, phase) in out.iter_mut() {
        if let Some(n) = node {
            let state = super::upgrade_state::load(files, &n.hostname)?;
            phase.upgrade = NodeUpgrade::of(state.as_ref(), campaign.as_ref(), &n.hostname);
        }
    }
    out.extend(
        progress
            .iter()
            .map(|p| (None, NodePhase::from_record(p, now))),
    );
    out.sort_by(|a, b| a.1.hostname.cmp(&b.1.hostname));
    Ok(out)
}

/// `dcn site status SITE`.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SiteStatus {
    pub site: String,
    /// The site's current service config revision (0: none set).
    pub config_revision: u64,
    pub nodes: Vec<NodePhase>,
    #[serde(skip)]
    now: SystemTime,
}

/// The progress of every host of `site`, as of `now`.
pub fn site_status(files: &Files, site: &str, now: SystemTime) -> Result<SiteStatus> {
    let registry = Registry::new(files);
    if registry.site(site)?.is_none() {
        bail!("there is no site {site:?}; `dcn site list` shows the sites");
    }
    let config_revision = registry.site_config(site)?.map_or(0, |r| r.revision);
    Ok(SiteStatus {
        site: site.to_string(),
        config_revision,
        nodes: all_hosts(files, now)?
            .into_iter()
            .map(|(_, p)| p)
            .filter(|p| p.site == site)
            .collect(),
        now,
    })
}

/// How long ago `at` was, in rough words (`-` for none).
pub fn age(at: Option<&str>, now: SystemTime) -> String {
    at.and_then(|t| parse_rfc3339(t).ok())
        .map(|t| format!("{} ago", rough(now.duration_since(t).unwrap_or_default())))
        .unwrap_or_else(|| "-".into())
}

/// The CONFIG column: `-` before a node reports; the revision it runs,
/// with the site's when it is behind, and `failed` when the last one it
/// fetched did not apply (its reason is printed below the table).
fn config_cell(applied: Option<&AppliedConfig>, site_revision: u64) -> String {
    match applied {
        None => "-".into(),
        Some(a) if a.error.is_some() => format!("{} (failed)", a.revision),
        Some(a) if a.revision < site_revision => format!("{} of {site_revision}", a.revision),
        Some(a) => a.revision.to_string(),
    }
}

impl fmt::Display for SiteStatus {
    /// The table, then each last error with its log lines. Everything a
    /// node sent was made safe to print when it was recorded.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.nodes.is_empty() {
            return writeln!(
                f,
                "Site {} has no nodes and no node has reported to it yet.",
                self.site
            );
        }
        let mut table = Table::new(&[
            Column::new("NODE", 64).at_least(20),
            Column::new("PHASE", 64).at_least(34),
            Column::new("SINCE", 24).at_least(14),
            Column::new("LAST-REPORT", 24).at_least(14),
            Column::new("CONFIG", 32).at_least(10),
            Column::new("CERT", 16).at_least(7),
            Column::new("UPGRADE", 32).at_least(9),
            Column::new("ERROR", 60),
        ])
        .gap(1);
        for n in &self.nodes {
            table.row([
                n.hostname.as_str(),
                &n.shown,
                &age(n.since.as_deref(), self.now),
                &age(n.last_report.as_deref(), self.now),
                &config_cell(n.config.as_deref(), self.config_revision),
                n.certificate.as_ref().map_or("-", |c| c.state.as_str()),
                &n.upgrade.as_ref().map_or("-".into(), NodeUpgrade::cell),
                n.last_error.as_ref().map_or("-", |e| e.reason.as_str()),
            ]);
        }
        f.write_str(&table.render())?;
        writeln!(
            f,
            "\nSite config: revision {} (`dcn node show HOST` shows a node's resolved config)",
            self.config_revision
        )?;
        for n in &self.nodes {
            for problem in n.planes.iter().flat_map(|p| p.problems(&n.hostname)) {
                write!(f, "\n{problem}\n")?;
            }
            if let Some(problem) = n.certificate.as_ref().and_then(|c| c.problem(&n.hostname)) {
                write!(f, "\n{problem}\n")?;
            }
        }
        for n in &self.nodes {
            let Some(e) = &n.last_error else { continue };
            write!(
                f,
                "\n{} failed{} at {}: {}\n",
                n.hostname,
                e.phase.map(|p| format!(" in {p}")).unwrap_or_default(),
                e.at,
                e.reason
            )?;
            for line in &e.log {
                writeln!(f, "    {line}")?;
            }
        }
        for n in &self.nodes {
            let Some(u) = &n.upgrade else { continue };
            let (Some(release), Some(phase)) = (&u.release, &u.phase) else {
                continue;
            };
            match phase.as_str() {
                "failed" => {
                    write!(
                        f,
                        "\n{}: upgrade to {release} failed{}: {}\n",
                        n.hostname,
                        u.since
                            .as_deref()
                            .map(|t| format!(" at {t}"))
                            .unwrap_or_default(),
                        u.detail.as_deref().unwrap_or("(no reason given)")
                    )?;
                    for line in &u.log {
                        writeln!(f, "    {line}")?;
                    }
                }
                "upgraded" if !u.guests_on_old_qemu.is_empty() => writeln!(
                    f,
                    "\n{}: guests still on the qemu the upgrade replaced (they take the new one at their next restart): {}",
                    n.hostname,
                    u.guests_on_old_qemu.join(", ")
                )?,
                _ => {}
            }
        }
        for n in &self.nodes {
            let Some(AppliedConfig {
                error: Some(e),
                reported_at,
                ..
            }) = n.config.as_deref()
            else {
                continue;
            };
            writeln!(
                f,
                "\n{} did not apply the site config at {reported_at}: {}",
                n.hostname,
                crate::terminal_text::sanitize(e)
            )?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests;
