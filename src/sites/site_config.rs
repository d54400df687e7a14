//! A site's service config at the centre: stored as numbered revisions,
//! resolved per node (node > site > control plane, key by key, each value
//! remembering where it came from), and compared between revisions so an
//! operator sees the per-node file diffs before a change is made.

use super::registry::{NodeRecord, Registry};
use crate::config::SiteConfig;
use crate::config::types::{IniText, SiteName};
use crate::ini::Ini;
use crate::recipes::Recipes;
use anyhow::Result;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// A site's config as stored: the operator's document and its revision
/// (0: none set yet).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Revision {
    pub revision: u64,
    pub updated_at: String,
    pub config: SiteConfig,
}

impl Revision {
    /// What a site has before any config is set.
    pub fn initial(site: SiteName) -> Revision {
        Revision {
            revision: 0,
            updated_at: String::new(),
            config: SiteConfig::empty(site),
        }
    }
}

/// One value of a resolved file, and the layer it came from.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Origin {
    pub section: String,
    pub key: String,
    /// `control plane`, `site edge1` or `node edge1-n1`.
    pub from: String,
}

/// One edge service's resolved drop-in for one node.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Resolved {
    /// The drop-in the service reads last (from its recipe).
    pub path: String,
    /// The file's INI text.
    pub text: String,
    pub origins: Vec<Origin>,
}

/// Every edge service's drop-in for `hostname`: the control plane's
/// `services.<key>.customServiceConfig`, then the site's, then the node's,
/// later layers replacing a key of an earlier one. Services with nothing
/// set are left out (their drop-in is removed).
pub fn resolve(
    recipes: &Recipes,
    control_plane: &BTreeMap<String, IniText>,
    site: &SiteConfig,
    hostname: &str,
) -> BTreeMap<String, Resolved> {
    let node = site
        .nodes
        .iter()
        .find(|(h, _)| h.as_str() == hostname)
        .map(|(_, n)| n.services.custom_configs())
        .unwrap_or_default();
    let layers = [
        ("control plane".to_string(), control_plane.clone()),
        (
            format!("site {}", site.site),
            site.services.custom_configs(),
        ),
        (format!("node {hostname}"), node),
    ];
    let mut out = BTreeMap::new();
    for key in recipes.edge_config_keys() {
        let Some(path) = (recipes.config_keys().get(key))
            .and_then(|s| s.custom_config.as_ref())
            .map(|c| c.path.clone())
        else {
            continue;
        };
        let mut merged = Ini::default();
        let mut origins: Vec<Origin> = Vec::new();
        for (from, custom) in &layers {
            let Some(text) = custom.get(key) else {
                continue;
            };
            // IniText was checked when it was read.
            let Ok(ini) = Ini::parse(text.as_str()) else {
                continue;
            };
            for section in &ini.sections {
                for e in &section.entries {
                    merged.set(&section.name, &e.key, e.value.clone());
                    origins.retain(|o| !(o.section == section.name && o.key == e.key));
                    origins.push(Origin {
                        section: section.name.clone(),
                        key: e.key.clone(),
                        from: from.clone(),
                    });
                }
            }
        }
        if merged.sections.iter().all(|s| s.entries.is_empty()) {
            continue;
        }
        // In the file's order, so they read section by section.
        let rank = |o: &Origin| {
            (merged.sections.iter().enumerate())
                .flat_map(|(i, s)| s.entries.iter().enumerate().map(move |(j, e)| (i, j, s, e)))
                .find(|(_, _, s, e)| s.name == o.section && e.key == o.key)
                .map(|(i, j, _, _)| (i, j))
        };
        origins.sort_by_key(|o| rank(o));
        out.insert(
            key.to_string(),
            Resolved {
                path,
                text: merged.to_string(),
                origins,
            },
        );
    }
    out
}

/// What a new revision changes on one node: a unified diff per drop-in
/// that changes (empty when nothing does).
#[derive(Debug, Clone, Serialize)]
pub struct NodeChange {
    pub hostname: String,
    pub diffs: Vec<FileDiff>,
}

#[derive(Debug, Clone, Serialize)]
pub struct FileDiff {
    pub service: String,
    pub path: String,
    pub diff: String,
}

/// The per-node diffs from `old` to `new` for the site's `nodes`.
pub fn plan(
    recipes: &Recipes,
    control_plane: &BTreeMap<String, IniText>,
    old: &SiteConfig,
    new: &SiteConfig,
    nodes: &[NodeRecord],
) -> Vec<NodeChange> {
    nodes
        .iter()
        .map(|n| {
            let before = resolve(recipes, control_plane, old, &n.hostname);
            let after = resolve(recipes, control_plane, new, &n.hostname);
            let mut diffs = Vec::new();
            for key in recipes.edge_config_keys() {
                let (a, b) = (before.get(key), after.get(key));
                let text = |r: Option<&Resolved>| r.map(|r| r.text.clone()).unwrap_or_default();
                if text(a) == text(b) {
                    continue;
                }
                let path = a.or(b).map(|r| r.path.clone()).unwrap_or_default();
                let (now, new) = (text(a), text(b));
                let diff = similar::TextDiff::from_lines(now.as_str(), new.as_str())
                    .unified_diff()
                    .header(&format!("{path} (now)"), &format!("{path} (new)"))
                    .to_string();
                diffs.push(FileDiff {
                    service: key.to_string(),
                    path,
                    diff,
                });
            }
            NodeChange {
                hostname: n.hostname.clone(),
                diffs,
            }
        })
        .collect()
}

/// The site's stored config, or its initial (empty) revision.
pub fn current(registry: &Registry, site: &SiteName) -> Result<Revision> {
    Ok(registry
        .site_config(site.as_str())?
        .unwrap_or_else(|| Revision::initial(site.clone())))
}

/// What `dcn site config SITE --file F` did, or would do.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Change {
    pub site: String,
    /// The revision before, and the one nodes get (the same when nothing
    /// changed).
    pub from: u64,
    pub to: u64,
    pub dry_run: bool,
    pub nodes: Vec<NodeChange>,
}

/// Make `new` the site's config as a new revision (unless it is the same
/// as the current one, or `dry_run`). The site must exist and be active;
/// the file names its site, which must be `site`.
pub fn set(files: &crate::host::Files, new: SiteConfig, dry_run: bool) -> Result<Change> {
    let registry = Registry::new(files);
    let _lock = registry.lock()?;
    let site = new.site.clone();
    registry.active_site(site.as_str())?;
    let old = current(&registry, &site)?;
    let nodes: Vec<NodeRecord> = (registry.nodes()?.into_iter())
        .filter(|n| n.site == site.as_str())
        .collect();
    let cp = crate::deployment::saved_config(files)?
        .services
        .custom_configs();
    let recipes = crate::recipes::catalogue::embedded();
    let changes = plan(recipes, &cp, &old.config, &new, &nodes);
    let same = old.config == new;
    let to = if same { old.revision } else { old.revision + 1 };
    if !same && !dry_run {
        registry.save_site_config(&Revision {
            revision: to,
            updated_at: crate::timefmt::rfc3339(std::time::SystemTime::now()),
            config: new,
        })?;
    }
    Ok(Change {
        site: site.to_string(),
        from: old.revision,
        to,
        dry_run,
        nodes: changes,
    })
}

impl std::fmt::Display for Change {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        for n in &self.nodes {
            if n.diffs.is_empty() {
                writeln!(f, "{}: no change", n.hostname)?;
            }
            for d in &n.diffs {
                writeln!(f, "{}: {} ({})", n.hostname, d.path, d.service)?;
                write!(f, "{}", d.diff)?;
            }
        }
        if self.nodes.is_empty() {
            writeln!(
                f,
                "site {} has no joined nodes yet; new ones get this config",
                self.site
            )?;
        }
        match (self.from == self.to, self.dry_run) {
            (true, _) => writeln!(f, "site {}: revision {} unchanged", self.site, self.to),
            (false, true) => writeln!(
                f,
                "site {}: would make revision {} (dry run: nothing changed); run again without --dry-run to apply",
                self.site, self.to
            ),
            (false, false) => writeln!(
                f,
                "site {}: revision {} saved; its nodes apply it within about 30 s (`dcn site status {}` shows who runs it)",
                self.site, self.to, self.site
            ),
        }
    }
}

/// `dcn node show HOST`: the node's resolved drop-ins with where each value
/// came from, and the revision it reported.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct NodeView {
    pub hostname: String,
    pub site: String,
    /// The site's current revision.
    pub revision: u64,
    /// What the node reported last.
    pub applied: Option<Box<super::AppliedConfig>>,
    pub services: BTreeMap<String, Resolved>,
}

pub fn node_view(files: &crate::host::Files, hostname: &str) -> Result<NodeView> {
    let registry = Registry::new(files);
    let node = registry.node(hostname)?.ok_or_else(|| {
        anyhow::anyhow!("there is no joined node {hostname:?}; `dcn node list` shows the nodes")
    })?;
    let site: SiteName = node.site.parse().map_err(|e: String| anyhow::anyhow!(e))?;
    let revision = current(&registry, &site)?;
    let cp = crate::deployment::saved_config(files)?
        .services
        .custom_configs();
    let services = resolve(
        crate::recipes::catalogue::embedded(),
        &cp,
        &revision.config,
        hostname,
    );
    Ok(NodeView {
        hostname: node.hostname.clone(),
        site: node.site.clone(),
        revision: revision.revision,
        applied: node.config.clone(),
        services,
    })
}

impl std::fmt::Display for NodeView {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        writeln!(f, "Node {} in site {}", self.hostname, self.site)?;
        let runs = match &self.applied {
            None => "not reported yet".to_string(),
            Some(a) => match &a.error {
                None => format!("runs revision {} (reported {})", a.revision, a.reported_at),
                Some(e) => format!(
                    "runs revision {}; the last one failed: {} ({})",
                    a.revision,
                    crate::terminal_text::sanitize(e),
                    a.reported_at
                ),
            },
        };
        writeln!(
            f,
            "  Site config:  revision {}; the node {runs}",
            self.revision
        )?;
        if self.services.is_empty() {
            return writeln!(f, "  Custom config: (none)");
        }
        for (key, r) in &self.services {
            writeln!(f, "  {key}: {}", r.path)?;
            let mut section = "";
            for o in &r.origins {
                if o.section != section {
                    writeln!(f, "    [{}]", o.section)?;
                    section = &o.section;
                }
                let ini = crate::ini::Ini::parse(&r.text).unwrap_or_default();
                let value = ini.get(&o.section, &o.key).unwrap_or_default();
                let line = format!("{} = {}", o.key, value.replace('\n', "\\n"));
                writeln!(
                    f,
                    "    {:<40} # {}",
                    crate::terminal_text::sanitize(&line),
                    o.from
                )?;
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests;
