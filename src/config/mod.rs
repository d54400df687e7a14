//! Operator configuration files: versioned YAML (`apiVersion: dcn/v1alpha1`)
//! with a `kind`. Every field is optional with a documented default; unknown
//! fields, wrong types and bad values are errors that name the file, line and
//! field path.

pub mod backup;
pub mod certificates;
pub mod inventory;
pub mod node;
pub mod site_config;
mod standalone;

pub use inventory::{SiteInventory, load_inventory, parse_inventory};
pub use node::{NodeConfig, load_node, parse_node};
pub use site_config::{SiteConfig, parse_site_config};
pub use standalone::*;

use crate::recipes::Recipes;
use serde::{Deserialize, Serialize};
use std::path::Path;

/// The commented, complete default `StandaloneConfig`
/// (`dcn config defaults`).
pub const STANDALONE_DEFAULTS: &str = include_str!("standalone-defaults.yaml");

/// The only config API version so far.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub enum ApiVersion {
    #[default]
    #[serde(rename = "dcn/v1alpha1")]
    V1Alpha1,
}

pub use crate::yaml::parse::{ConfigError, check_limits, parse};

/// Read and parse a `StandaloneConfig` file, checked against `recipes`.
pub fn load_standalone(recipes: &Recipes, path: &Path) -> anyhow::Result<StandaloneConfig> {
    let text = crate::yaml::read_file(path)
        .map_err(|e| anyhow::anyhow!("cannot read the config file: {e}"))?;
    Ok(parse_standalone(
        recipes,
        &text,
        &path.display().to_string(),
    )?)
}

/// Parse a `StandaloneConfig` (see [`read_standalone`]) and check its
/// service keys against `recipes`.
pub fn parse_standalone(
    recipes: &Recipes,
    text: &str,
    file: &str,
) -> Result<StandaloneConfig, ConfigError> {
    let config = read_standalone(text, file)?;
    config.services.check(recipes, text, file)?;
    Ok(config)
}

/// Parse a `StandaloneConfig`, checking the header first so a file of
/// another kind gets a clear error rather than a list of unknown fields.
/// Its service keys are not checked: for the copy dcn saved, which was
/// checked before it was saved.
pub fn read_standalone(text: &str, file: &str) -> Result<StandaloneConfig, ConfigError> {
    check_header(text, file, "StandaloneConfig")?;
    parse(text, file)
}

/// The kinds `dcn config validate` reads.
pub const KINDS: [&str; 4] = [
    "StandaloneConfig",
    "NodeConfig",
    "SiteInventory",
    "SiteConfig",
];

/// `dcn config validate FILE`: read and check a config of any kind in
/// [`KINDS`] (chosen by its `kind`), service keys against `recipes`; a
/// line saying what it is.
pub fn validate_file(recipes: &Recipes, path: &Path) -> anyhow::Result<String> {
    let file = path.display().to_string();
    let text = crate::yaml::read_file(path)
        .map_err(|e| anyhow::anyhow!("cannot read the config file: {e}"))?;
    Ok(validate_text(recipes, &text, &file)?)
}

/// [`validate_file`] on `text`, named `file` in errors.
pub fn validate_text(recipes: &Recipes, text: &str, file: &str) -> Result<String, ConfigError> {
    match kind_of(text, file)?.as_str() {
        "StandaloneConfig" => {
            parse_standalone(recipes, text, file)?;
            Ok(format!("{file}: valid StandaloneConfig"))
        }
        "NodeConfig" => {
            let node = parse_node(text, file)?;
            Ok(format!("{file}: valid NodeConfig for {}", node.hostname))
        }
        "SiteConfig" => {
            let c = parse_site_config(recipes, text, file)?;
            let n = c.nodes.len();
            let s = if n == 1 { "" } else { "s" };
            Ok(format!(
                "{file}: valid SiteConfig for site {}, {n} node override{s}",
                c.site
            ))
        }
        _ => {
            let inv = parse_inventory(text, file)?;
            let n = inv.nodes.len();
            let s = if n == 1 { "" } else { "s" };
            Ok(format!(
                "{file}: valid SiteInventory for site {}, {n} node{s}",
                inv.site
            ))
        }
    }
}

/// The file's `kind`, one of [`KINDS`].
fn kind_of(text: &str, file: &str) -> Result<String, ConfigError> {
    check_limits(text, file)?;
    let err = |message: String| ConfigError::at(file, "kind", message);
    let kinds = KINDS.join(", ");
    let value: serde_yaml::Value = parse(text, file)?;
    let Some(map) = value.as_mapping() else {
        return Err(err(format!(
            "not a dcn config: a dcn config is a mapping that starts with `apiVersion: dcn/v1alpha1` and a `kind` ({kinds})"
        )));
    };
    match map.get("kind").map(|k| k.as_str()) {
        Some(Some(k)) if KINDS.contains(&k) => Ok(k.to_string()),
        Some(_) => Err(err(format!(
            "unknown kind: `dcn config validate` reads {kinds}"
        ))),
        None => Err(err(format!("missing; add `kind:` with one of {kinds}"))),
    }
}

/// Check `apiVersion` and `kind` before the body.
fn check_header(text: &str, file: &str, kind: &str) -> Result<(), ConfigError> {
    #[derive(Deserialize)]
    #[serde(rename_all = "camelCase")]
    struct Header {
        api_version: Option<serde_yaml::Value>,
        kind: Option<serde_yaml::Value>,
    }
    // Before the first serde_yaml parse of the text.
    check_limits(text, file)?;
    let err = |path: &str, message: String| ConfigError::at(file, path, message);
    let header: Header = match serde_yaml::from_str(text) {
        Ok(h) => h,
        // Syntax errors are reported, with their line, by the full parse.
        Err(_) => return Ok(()),
    };
    match header.api_version.as_ref().and_then(|v| v.as_str()) {
        Some("dcn/v1alpha1") => {}
        Some(other) => {
            return Err(err(
                "apiVersion",
                format!("unsupported apiVersion {other:?}; this dcn reads dcn/v1alpha1"),
            ));
        }
        None => {
            return Err(err(
                "apiVersion",
                "missing; start the file with `apiVersion: dcn/v1alpha1`".to_string(),
            ));
        }
    }
    match header.kind.as_ref().and_then(|v| v.as_str()) {
        Some(k) if k == kind => Ok(()),
        Some(other) => Err(err(
            "kind",
            format!("this command expects kind {kind}, but the file is a {other}"),
        )),
        None => Err(err("kind", format!("missing; add `kind: {kind}`"))),
    }
}

#[cfg(test)]
mod tests;
