//! A site's service config at the centre: stored as numbered revisions,
//! resolved per node (node > site > control plane, key by key, each value
//! remembering where it came from), and compared between revisions so an
//! operator sees the per-node file diffs before a change is made.

mod resolve;
mod view;

pub use resolve::{FileDiff, Layer, NodeChange, Origin, Resolved, plan, resolve, resolve_layers};
pub use view::{NodeView, node_view};

use super::registry::{NodeRecord, Registry};
use crate::config::SiteConfig;
use crate::types::SiteName;
use anyhow::Result;
use serde::{Deserialize, Serialize};

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
pub fn set(
    recipes: &crate::recipes::Recipes,
    files: &crate::host::Files,
    new: SiteConfig,
    dry_run: bool,
) -> Result<Change> {
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

#[cfg(test)]
mod tests;
