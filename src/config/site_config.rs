//! `kind: SiteConfig`: the operator's config for one edge site's services,
//! with per-node overrides. Keys are the catalogue's edge config keys
//! (`novaCompute`, …); INI text is checked when the file is read, so an
//! invalid file is refused before anything changes. Resolved per node as
//! node > site > control plane by [`crate::centre::sites::site_config`].

use super::{ApiVersion, ConfigError};
use crate::recipes::Recipes;
use crate::types::{IniText, NodeName, SiteName};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// A site's service config.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct SiteConfig {
    pub api_version: ApiVersion,
    pub kind: SiteConfigKind,
    pub site: SiteName,
    /// The site's defaults, by edge config key.
    #[serde(default, skip_serializing_if = "EdgeServices::is_empty")]
    pub services: EdgeServices,
    /// Overrides for single nodes, by host name.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub nodes: BTreeMap<NodeName, NodeOverrides>,
}

impl SiteConfig {
    /// Every service key, the site's and each node's, is an edge service
    /// of `recipes`; `text` is the file parsed, for the error's line.
    pub fn check(&self, recipes: &Recipes, text: &str, file: &str) -> Result<(), ConfigError> {
        self.services.check(recipes, &["services"], text, file)?;
        for (name, node) in &self.nodes {
            let at = ["nodes", name.as_str(), "services"];
            node.services.check(recipes, &at, text, file)?;
        }
        Ok(())
    }

    /// An empty config for `site` (what a site has before any is set).
    pub fn empty(site: SiteName) -> SiteConfig {
        SiteConfig {
            api_version: ApiVersion::V1Alpha1,
            kind: SiteConfigKind::SiteConfig,
            site,
            services: EdgeServices::default(),
            nodes: BTreeMap::new(),
        }
    }
}

/// The `kind` of a [`SiteConfig`] file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub enum SiteConfigKind {
    #[default]
    SiteConfig,
}

/// One node's overrides.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct NodeOverrides {
    #[serde(default)]
    pub services: EdgeServices,
}

/// Settings of the services that run on edges, by config key. Which keys
/// are edge services is the catalogue's to say: [`SiteConfig::check`]
/// refuses the others, with the valid ones.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(transparent)]
pub struct EdgeServices(pub BTreeMap<String, EdgeServiceConfig>);

impl EdgeServices {
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// The non-empty INI texts by config key.
    pub fn custom_configs(&self) -> BTreeMap<String, IniText> {
        (self.0.iter())
            .filter(|(_, c)| !c.custom_service_config.is_empty())
            .map(|(k, c)| (k.clone(), c.custom_service_config.clone()))
            .collect()
    }

    /// Every key is an edge service of `recipes`; an error names the first
    /// that is not, at `at.<key>` in `text`.
    fn check(
        &self,
        recipes: &Recipes,
        at: &[&str],
        text: &str,
        file: &str,
    ) -> Result<(), ConfigError> {
        for key in self.0.keys() {
            let path: Vec<&str> = at.iter().copied().chain([key.as_str()]).collect();
            (recipes.config_key(key, true))
                .map_err(|m| ConfigError::located(text, file, &path, m))?;
        }
        Ok(())
    }
}

/// One edge service's settings.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct EdgeServiceConfig {
    /// oslo.config INI text for the service's `*.conf.d/` drop-in.
    #[serde(default)]
    pub custom_service_config: IniText,
}

/// Read a `kind: SiteConfig` file's text and check its service keys
/// against `recipes`.
pub fn parse_site_config(
    recipes: &Recipes,
    text: &str,
    file: &str,
) -> Result<SiteConfig, ConfigError> {
    super::check_header(text, file, "SiteConfig")?;
    let config: SiteConfig = super::parse(text, file)?;
    config.check(recipes, text, file)?;
    Ok(config)
}

#[cfg(test)]
mod tests {
    use super::*;

    const HEAD: &str = "apiVersion: dcn/v1alpha1\nkind: SiteConfig\nsite: edge1\n";

    #[test]
    fn site_defaults_and_node_overrides_read_back() {
        let text = format!(
            "{HEAD}services:\n  novaCompute:\n    customServiceConfig: |\n      [DEFAULT]\n      debug = true\nnodes:\n  edge1-n1:\n    services:\n      novaCompute:\n        customServiceConfig: |\n          [DEFAULT]\n          cpu_allocation_ratio = 4.0\n"
        );
        let c = parse_site_config(crate::recipes::for_tests(), &text, "s.yaml").unwrap();
        assert_eq!(c.site.as_str(), "edge1");
        let site = c.services.custom_configs();
        assert!(site["novaCompute"].as_str().contains("debug = true"));
        let node = &c.nodes[&"edge1-n1".parse::<NodeName>().unwrap()];
        assert!(
            node.services.custom_configs()["novaCompute"]
                .as_str()
                .contains("cpu_allocation_ratio")
        );
        // It serialises to what it reads.
        let again = serde_yaml::to_string(&c).unwrap();
        assert_eq!(
            parse_site_config(crate::recipes::for_tests(), &again, "again").unwrap(),
            c
        );
    }

    #[test]
    fn a_service_that_is_not_on_edges_or_bad_ini_is_refused_with_its_line() {
        let e = parse_site_config(
            crate::recipes::for_tests(),
            &format!("{HEAD}services:\n  nova: {{}}\n"),
            "s.yaml",
        )
        .unwrap_err();
        assert_eq!(e.line, Some(5), "{e}");
        assert!(e.message.contains("\"nova\" does not run on edge hosts; the edge services are novaCompute, ovnMetadataAgent"), "{e}");
        let e = parse_site_config(
            crate::recipes::for_tests(),
            &format!("{HEAD}services:\n  cinder: {{}}\n"),
            "s.yaml",
        )
        .unwrap_err();
        assert!(e.message.contains("unknown service \"cinder\""), "{e}");
        // A node's override is checked as the site's, and named where it is.
        let e = parse_site_config(
            crate::recipes::for_tests(),
            &format!("{HEAD}nodes:\n  edge1-n1:\n    services:\n      nova: {{}}\n"),
            "s.yaml",
        )
        .unwrap_err();
        assert_eq!((e.line, e.column), (Some(7), Some(7)), "{e}");
        assert_eq!(e.path, "nodes.edge1-n1.services.nova");
        assert!(e.message.contains("does not run on edge hosts"), "{e}");
        let e = parse_site_config(
            crate::recipes::for_tests(),
            &format!(
                "{HEAD}services:\n  novaCompute:\n    customServiceConfig: \"debug = true\\n\"\n"
            ),
            "s.yaml",
        )
        .unwrap_err();
        assert!(e.message.contains("invalid INI"), "{e}");
        let e = parse_site_config(
            crate::recipes::for_tests(),
            &format!("{HEAD}nodes:\n  Bad_Name: {{}}\n"),
            "s.yaml",
        )
        .unwrap_err();
        assert!(e.path.starts_with("nodes"), "{e}");
    }

    #[test]
    fn a_text_over_the_size_bound_is_refused_with_its_path_and_the_bound() {
        // 10,000 one-key sections: what once cost a dry run minutes.
        let ini: String = (0..10_000).map(|i| format!("[s{i}]\\nk=v\\n")).collect();
        let text = format!(
            "{HEAD}nodes:\n  edge1-n1:\n    services:\n      novaCompute:\n        customServiceConfig: \"{ini}\"\n"
        );
        let e = parse_site_config(crate::recipes::for_tests(), &text, "s.yaml").unwrap_err();
        assert_eq!(
            e.path, "nodes.edge1-n1.services.novaCompute.customServiceConfig",
            "{e}"
        );
        assert_eq!(e.line, Some(8), "{e}");
        assert!(
            e.message
                .contains("has 10000 sections, more than the 256 dcn accepts"),
            "{e}"
        );
    }
}
