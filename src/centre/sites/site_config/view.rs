//! `dcn node show HOST`: a node's resolved drop-ins, each value with the
//! level it came from, and the revision the node reported.

use super::{Resolved, current, resolve};
use crate::centre::sites::registry::Registry;
use crate::types::SiteName;
use anyhow::Result;
use serde::Serialize;
use std::collections::BTreeMap;

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
    pub applied: Option<Box<crate::centre::sites::AppliedConfig>>,
    pub services: BTreeMap<String, Resolved>,
}

pub fn node_view(
    recipes: &crate::recipes::Recipes,
    files: &crate::host::Files,
    hostname: &str,
) -> Result<NodeView> {
    let registry = Registry::new(files);
    let node = registry.node(hostname)?.ok_or_else(|| {
        anyhow::anyhow!("there is no joined node {hostname:?}; `dcn node list` shows the nodes")
    })?;
    let site: SiteName = node.site.parse().map_err(|e: String| anyhow::anyhow!(e))?;
    let revision = current(&registry, &site)?;
    let cp = crate::deployment::saved_config(files)?
        .services
        .custom_configs();
    let services = resolve(recipes, &cp, &revision.config, hostname);
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
            // Once per file: each value is then found through its index.
            let ini = crate::ini::Ini::parse(&r.text).unwrap_or_default();
            let mut section = "";
            for o in &r.origins {
                if o.section != section {
                    writeln!(f, "    [{}]", o.section)?;
                    section = &o.section;
                }
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
