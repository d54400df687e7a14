//! `dcn site upgrade`: edge sites brought to what the control plane runs
//! (its dcn and its packages, served as the edge release), node by node:
//! every node stages the release while it keeps working, then the canary
//! applies it alone, then batches; a node that fails stops new turns once
//! `--max-failures` have failed, and a re-run resumes. Nodes pull their
//! orders through the join service from the upgrade's record
//! (`crate::centre::sites::upgrade_campaign`); what they report is kept
//! per node (`crate::centre::sites::upgrade_state`); each round of the
//! upgrade is [`drive::round`], against the real fleet ([`fleet`]).

pub mod drive;
mod fleet;

pub use crate::centre::sites::upgrade_campaign::Campaign;

use crate::centre::edge_release::{self, StoredRelease};
use crate::centre::sites::Registry;
use crate::centre::sites::upgrade_campaign::{CampaignNode, Outcome, waves};
use crate::centre::sites::upgrade_state;
use crate::host::Host;
use crate::recipes::Recipes;
use crate::types::SiteName;
use anyhow::{Result, bail};
use drive::{Event, Limits, Standing};
use std::collections::BTreeMap;
use std::time::{Duration, SystemTime};

/// Held by the `dcn site upgrade` that drives the upgrade: one at a time.
const DRIVE_LOCK: &str = "/var/lib/dcn/upgrade/drive.lock";

/// What `dcn site upgrade` is asked.
pub struct Options {
    pub sites: Vec<SiteName>,
    pub canary: Option<String>,
    pub batch: usize,
    pub max_failures: usize,
    pub limits: Limits,
}

/// One node as the plan shows it.
#[derive(Debug, Clone, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PlannedNode {
    pub hostname: String,
    pub site: String,
    /// 0 for the canary's (or the first batch without one).
    pub wave: usize,
    /// The dcn it last said it runs (none: it never checked in).
    pub dcn_version: Option<String>,
    /// It runs the release already.
    pub current: bool,
    /// Where its upgrade to this release stands, as it last said.
    pub phase: Option<String>,
}

/// What an upgrade would do.
#[derive(Debug, Clone, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Plan {
    pub release: StoredRelease,
    /// The release was built just now.
    pub built: bool,
    pub previous: Option<String>,
    /// Packages whose version differs from the previous release's
    /// (`name old → new`, `name (new) v`).
    pub package_changes: Vec<String>,
    pub nodes: Vec<PlannedNode>,
    /// The node that goes first, alone.
    pub canary: Option<String>,
    /// An earlier run of the same upgrade is resumed.
    pub resumes: bool,
}

/// The nodes of `sites`, in the operator's order of sites and by name
/// within each.
fn nodes_of(host: &Host, sites: &[SiteName]) -> Result<Vec<(String, String)>> {
    let registry = Registry::new(&host.files);
    let all = registry.nodes()?;
    let mut out = Vec::new();
    for site in sites {
        registry.active_site(site.as_str())?;
        let mut names: Vec<String> = (all.iter())
            .filter(|n| n.site == site.as_str() && !n.secret_hash.is_empty())
            .map(|n| n.hostname.clone())
            .collect();
        names.sort();
        if names.is_empty() {
            bail!("site {site} has no joined node to upgrade");
        }
        out.extend(names.into_iter().map(|h| (h, site.to_string())));
    }
    Ok(out)
}

/// Build (or find) the release, and say what upgrading `opts.sites` to
/// it would do. Changes nothing but the control plane's edge release.
pub fn plan(recipes: &Recipes, host: &Host, opts: &Options) -> Result<Plan> {
    if opts.sites.is_empty() {
        bail!("name at least one site to upgrade");
    }
    let nodes = nodes_of(host, &opts.sites)?;
    let waved = waves(&nodes, opts.canary.as_deref(), opts.batch)?;
    let prepared = edge_release::prepare(recipes, host)?;
    let release = &prepared.release.release;
    let mut planned = Vec::new();
    for n in &waved {
        let state = upgrade_state::load(&host.files, &n.hostname)?;
        let phase = (state.as_ref())
            .and_then(|s| s.check.progress.as_ref())
            .filter(|p| p.release == release.id)
            .map(|p| match &p.detail {
                Some(d) => format!("{} ({d})", p.phase),
                None => p.phase.to_string(),
            });
        planned.push(PlannedNode {
            hostname: n.hostname.clone(),
            site: n.site.clone(),
            wave: n.wave,
            current: state.as_ref().and_then(|s| s.check.runs.as_deref())
                == Some(release.id.as_str()),
            dcn_version: state.map(|s| s.check.dcn_version),
            phase,
        });
    }
    let package_changes = match &prepared.previous {
        Some(p) => diff(
            &edge_release::index(&host.files, &p.release.id)?.versions(),
            &edge_release::index(&host.files, &release.id)?.versions(),
        ),
        None => Vec::new(),
    };
    let resumes = Campaign::load(&host.files)?.is_some_and(|c| {
        c.release.id == release.id && c.sites == site_names(&opts.sites) && !c.done()
    });
    Ok(Plan {
        previous: prepared.previous.map(|p| p.release.id),
        built: prepared.built,
        release: prepared.release,
        package_changes,
        nodes: planned,
        canary: opts.canary.clone(),
        resumes,
    })
}

fn site_names(sites: &[SiteName]) -> Vec<String> {
    sites.iter().map(|s| s.to_string()).collect()
}

/// The versions that differ between two indexes' packages.
fn diff(before: &BTreeMap<&str, &str>, after: &BTreeMap<&str, &str>) -> Vec<String> {
    let mut out = Vec::new();
    for (name, v) in after {
        match before.get(name) {
            Some(old) if old == v => {}
            Some(old) => out.push(format!("{name} {old} → {v}")),
            None => out.push(format!("{name} (new) {v}")),
        }
    }
    for (name, v) in before {
        if !after.contains_key(name) {
            out.push(format!("{name} {v} (left out)"));
        }
    }
    out
}

/// Nodes that cannot take part: they never asked for orders (a dcn before
/// 0.2.0, or cut off), or run a dcn too old to take upgrades. Refused
/// before anything is ordered, with the way out.
fn refuse_unreachable(plan: &Plan) -> Result<()> {
    let stuck: Vec<String> = (plan.nodes.iter())
        .filter(|n| !n.current)
        .filter_map(|n| match &n.dcn_version {
            None => Some(format!("{} (never asked)", n.hostname)),
            Some(v) if !crate::release::upgradable_node(v) => {
                Some(format!("{} (dcn {v})", n.hostname))
            }
            Some(_) => None,
        })
        .collect();
    if stuck.is_empty() {
        return Ok(());
    }
    bail!(
        "these nodes have not asked the control plane for upgrade orders: {}. A node asks every 30 s from dcn {} on; one on an older dcn is brought over by hand once (copy this control plane's /usr/local/bin/dcn to it and run `dcn join` with its site's bundle), and one that is cut off must be back first. Or leave its site out of this upgrade.",
        stuck.join(", "),
        crate::release::FIRST_UPGRADABLE_NODE
    )
}

/// How the upgrade ended.
pub struct Summary {
    pub campaign: Campaign,
    pub standing: Standing,
}

/// Run the upgrade of `opts.sites` until every node is on the release, or
/// `max_failures` failed; `on_event` hears what happens as it happens.
pub fn run(
    recipes: &Recipes,
    host: &Host,
    opts: &Options,
    on_event: &mut dyn FnMut(&Event),
) -> Result<Summary> {
    let Some(_lock) = crate::host::lock::FileLock::try_take(&host.files, DRIVE_LOCK)? else {
        bail!(
            "another `dcn site upgrade` is running on this control plane: wait for it to end, or stop it (its nodes finish what they began) and run this again"
        );
    };
    let plan = plan(recipes, host, opts)?;
    refuse_unreachable(&plan)?;
    let mut campaign = start(host, opts, &plan)?;
    campaign.save(&host.files)?;
    let fleet = fleet::CentreFleet {
        host,
        release: &plan.release.release,
        compute: crate::openstack::compute_cloud(host)?,
    };
    let mut seen = BTreeMap::new();
    loop {
        let before = campaign.clone();
        let (events, standing) = drive::round(
            &mut campaign,
            &fleet,
            opts.limits,
            SystemTime::now(),
            &mut seen,
        )?;
        if campaign != before {
            campaign.save(&host.files)?;
        }
        for e in &events {
            on_event(e);
        }
        if standing != Standing::Going {
            return Ok(Summary { campaign, standing });
        }
        std::thread::sleep(Duration::from_secs(3));
    }
}

/// The campaign of this run: an earlier run's of the same release and
/// sites carried over (upgraded nodes stay done, nodes still applying go
/// on, failed ones get their turn again), or a new one.
fn start(host: &Host, opts: &Options, plan: &Plan) -> Result<Campaign> {
    let nodes: Vec<(String, String)> = (plan.nodes.iter())
        .map(|n| (n.hostname.clone(), n.site.clone()))
        .collect();
    let mut fresh = Campaign {
        release: plan.release.release.clone(),
        sites: site_names(&opts.sites),
        canary: opts.canary.clone(),
        batch: opts.batch,
        max_failures: opts.max_failures,
        started_at: crate::timefmt::rfc3339(SystemTime::now()),
        nodes: waves(&nodes, opts.canary.as_deref(), opts.batch)?,
    };
    if let Some(old) = Campaign::load(&host.files)?
        && old.release.id == fresh.release.id
    {
        for node in fresh.nodes.iter_mut() {
            if let Some(before) = old.nodes.iter().find(|n| n.hostname == node.hostname) {
                carry_over(node, before);
            }
        }
        fresh.started_at = old.started_at;
    }
    Ok(fresh)
}

fn carry_over(node: &mut CampaignNode, before: &CampaignNode) {
    node.attempt = before.attempt;
    match &before.outcome {
        Some(Outcome::Upgraded { .. }) => node.outcome = before.outcome.clone(),
        Some(Outcome::Failed { .. }) => {}
        None => node.ordered_at = before.ordered_at.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_re_run_keeps_what_is_done_and_gives_failed_nodes_a_new_attempt() {
        let n = |outcome: Option<Outcome>, ordered: bool| CampaignNode {
            hostname: "n".into(),
            site: "s".into(),
            wave: 3,
            attempt: 2,
            ordered_at: ordered.then(|| "t".to_string()),
            outcome,
        };
        let mut fresh = n(None, false);
        fresh.attempt = 0;
        fresh.wave = 1;
        let mut node = fresh.clone();
        carry_over(
            &mut node,
            &n(Some(Outcome::Upgraded { at: "t".into() }), true),
        );
        assert!(node.upgraded() && node.attempt == 2 && node.wave == 1);
        let mut node = fresh.clone();
        carry_over(
            &mut node,
            &n(
                Some(Outcome::Failed {
                    reason: "r".into(),
                    at: "t".into(),
                }),
                true,
            ),
        );
        assert!(node.outcome.is_none() && node.ordered_at.is_none() && node.attempt == 2);
        let mut node = fresh;
        carry_over(&mut node, &n(None, true));
        assert!(node.in_flight(), "still applying: it goes on");
    }

    #[test]
    fn the_release_diff_names_what_changed() {
        let before: BTreeMap<&str, &str> = [("a", "1"), ("b", "1"), ("gone", "1")].into();
        let after: BTreeMap<&str, &str> = [("a", "1"), ("b", "2"), ("c", "1")].into();
        assert_eq!(
            diff(&before, &after),
            ["b 1 → 2", "c (new) 1", "gone 1 (left out)"]
        );
    }

    #[test]
    fn nodes_that_never_asked_or_are_too_old_are_refused_by_name() {
        let node = |h: &str, v: Option<&str>, current: bool| PlannedNode {
            hostname: h.into(),
            site: "edge1".into(),
            wave: 0,
            dcn_version: v.map(str::to_string),
            current,
            phase: None,
        };
        let release = StoredRelease {
            release: crate::wire::EdgeRelease {
                id: "x".into(),
                dcn_version: crate::release::THIS.into(),
                dcn: crate::wire::ReleaseFile {
                    name: "dcn".into(),
                    sha256: String::new(),
                    size: 0,
                },
                index: crate::wire::ReleaseFile {
                    name: "Packages".into(),
                    sha256: String::new(),
                    size: 0,
                },
            },
            built_at: String::new(),
            packages: 0,
            not_in_source: 0,
        };
        let mut plan = Plan {
            release,
            built: false,
            previous: None,
            package_changes: vec![],
            nodes: vec![
                node("a", Some(crate::release::THIS), false),
                node("b", None, true),
            ],
            canary: None,
            resumes: false,
        };
        refuse_unreachable(&plan).unwrap();
        plan.nodes.push(node("c", None, false));
        plan.nodes.push(node("d", Some("0.1.0"), false));
        let e = refuse_unreachable(&plan).unwrap_err().to_string();
        assert!(
            e.contains("c (never asked), d (dcn 0.1.0)") && e.contains("dcn join"),
            "{e}"
        );
    }
}
