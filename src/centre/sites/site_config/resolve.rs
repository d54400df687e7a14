//! Resolution of a site's config for one node (node > site > control plane,
//! key by key, each value remembering its level), and the per-node diffs
//! between two revisions. Both take time in proportion to the texts they
//! read and write: every lookup goes through the [`Ini`] index, origins are
//! kept by position, and the diff is [`crate::ini::diff`]'s.

use crate::centre::sites::registry::NodeRecord;
use crate::config::SiteConfig;
use crate::ini::{Ini, Position};
use crate::recipes::Recipes;
use crate::types::{IniText, NodeName};
use serde::Serialize;
use std::collections::BTreeMap;

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

/// One level of config: its name in [`Origin::from`], and its INI text by
/// edge config key.
#[derive(Debug, Clone)]
pub struct Layer<'a> {
    pub from: String,
    pub texts: BTreeMap<&'a str, &'a str>,
}

impl<'a> Layer<'a> {
    fn new(from: String, texts: impl IntoIterator<Item = (&'a String, &'a IniText)>) -> Layer<'a> {
        let texts = (texts.into_iter())
            .filter(|(_, t)| !t.is_empty())
            .map(|(k, t)| (k.as_str(), t.as_str()))
            .collect();
        Layer { from, texts }
    }
}

/// The layers of `hostname` (whose overrides `site` may hold), first to
/// last: the control plane's `services.<key>.customServiceConfig`, the
/// site's, the node's.
fn layers<'a>(
    control_plane: &'a BTreeMap<String, IniText>,
    site: &'a SiteConfig,
    hostname: &str,
) -> [Layer<'a>; 3] {
    let node = node_overrides(site, hostname).map(|n| &n.services.0);
    [
        Layer::new("control plane".to_string(), control_plane),
        Layer::new(
            format!("site {}", site.site),
            (site.services.0.iter()).map(|(k, c)| (k, &c.custom_service_config)),
        ),
        Layer::new(
            format!("node {hostname}"),
            (node.into_iter().flatten()).map(|(k, c)| (k, &c.custom_service_config)),
        ),
    ]
}

fn node_overrides<'a>(
    site: &'a SiteConfig,
    hostname: &str,
) -> Option<&'a crate::config::site_config::NodeOverrides> {
    site.nodes.get(&hostname.parse::<NodeName>().ok()?)
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
    resolve_layers(recipes, &layers(control_plane, site, hostname))
}

/// [`resolve`] from its layers, first to last.
pub fn resolve_layers(recipes: &Recipes, layers: &[Layer]) -> BTreeMap<String, Resolved> {
    let mut out = BTreeMap::new();
    for key in recipes.edge_config_keys() {
        let Some(custom) = (recipes.config_keys().get(key)).and_then(|s| s.custom_config.as_ref())
        else {
            continue;
        };
        let mut merged = Ini::default();
        // The layer of each entry, by position: in file order.
        let mut origin: BTreeMap<Position, usize> = BTreeMap::new();
        for (layer, l) in layers.iter().enumerate() {
            let Some(text) = l.texts.get(key) else {
                continue;
            };
            // IniText was checked when it was read.
            let Ok(ini) = Ini::parse(text) else {
                continue;
            };
            for section in ini.sections() {
                for e in section.entries() {
                    let at = merged.set(section.name(), &e.key, e.value.clone());
                    origin.insert(at, layer);
                }
            }
        }
        if merged.is_empty() {
            continue;
        }
        let origins = (origin.into_iter())
            .map(|(at, layer)| {
                let (section, e) = merged.at(at);
                Origin {
                    section: section.to_string(),
                    key: e.key.clone(),
                    from: layers[layer].from.clone(),
                }
            })
            .collect();
        out.insert(
            key.to_string(),
            Resolved {
                path: custom.path.clone(),
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

/// The per-node diffs from `old` to `new` for the site's `nodes`. Nodes
/// that neither config overrides get the same drop-ins, so theirs are
/// worked out once.
pub fn plan(
    recipes: &Recipes,
    control_plane: &BTreeMap<String, IniText>,
    old: &SiteConfig,
    new: &SiteConfig,
    nodes: &[NodeRecord],
) -> Vec<NodeChange> {
    let diffs = |hostname: &str| {
        let before = resolve(recipes, control_plane, old, hostname);
        let after = resolve(recipes, control_plane, new, hostname);
        file_diffs(recipes, &before, &after)
    };
    let mut shared: Option<Vec<FileDiff>> = None;
    (nodes.iter())
        .map(|n| {
            let h = n.hostname.as_str();
            let own = node_overrides(old, h).is_some() || node_overrides(new, h).is_some();
            let diffs = match own {
                true => diffs(h),
                false => shared.get_or_insert_with(|| diffs(h)).clone(),
            };
            NodeChange {
                hostname: n.hostname.clone(),
                diffs,
            }
        })
        .collect()
}

/// A resolved drop-in's text; empty when the service has none.
fn text(r: Option<&Resolved>) -> &str {
    r.map_or("", |r| r.text.as_str())
}

/// The diff of each drop-in that differs between `before` and `after`.
fn file_diffs(
    recipes: &Recipes,
    before: &BTreeMap<String, Resolved>,
    after: &BTreeMap<String, Resolved>,
) -> Vec<FileDiff> {
    let mut diffs = Vec::new();
    for key in recipes.edge_config_keys() {
        let (a, b) = (before.get(key), after.get(key));
        let (now, new) = (text(a), text(b));
        if now == new {
            continue;
        }
        let path = a.or(b).map(|r| r.path.clone()).unwrap_or_default();
        diffs.push(FileDiff {
            service: key.to_string(),
            diff: crate::ini::diff::unified(
                now,
                new,
                &format!("{path} (now)"),
                &format!("{path} (new)"),
            ),
            path,
        });
    }
    diffs
}
