//! The service catalogue: which services take operator config, under which
//! key (`services.<key>.customServiceConfig` on the control plane, the same
//! key in a site's config and in a bundle), and which of them run on edge
//! hosts. All of it is read from the recipes: a service with a
//! `customConfig` entry is configurable, one in the `edge` role runs on
//! edges. Nothing here names a service.

use super::{Recipes, ServiceRecipe};
use std::collections::BTreeMap;

/// The role whose services run on joined edge hosts.
pub const EDGE_ROLE: &str = "edge";

impl Recipes {
    /// Every configurable service by its config key.
    pub fn config_keys(&self) -> BTreeMap<&str, &ServiceRecipe> {
        self.services
            .values()
            .filter_map(|s| Some((s.custom_config.as_ref()?.config_key.as_str(), s)))
            .collect()
    }

    /// The config keys of the services that run on edge hosts, sorted.
    pub fn edge_config_keys(&self) -> Vec<&str> {
        let Some(edge) = self.roles.get(EDGE_ROLE) else {
            return Vec::new();
        };
        let mut keys: Vec<&str> = edge
            .services
            .iter()
            .filter_map(|s| self.services.get(s)?.custom_config.as_ref())
            .map(|c| c.config_key.as_str())
            .collect();
        keys.sort();
        keys
    }

    /// The configurable service under `key`, or an error that names the key
    /// and lists the valid ones (only those that run on edges with
    /// `edge_only`).
    pub fn config_key(&self, key: &str, edge_only: bool) -> Result<&ServiceRecipe, String> {
        let valid: Vec<&str> = if edge_only {
            self.edge_config_keys()
        } else {
            self.config_keys().into_keys().collect()
        };
        match self.config_keys().get(key) {
            Some(s) if valid.contains(&key) => Ok(s),
            Some(_) => Err(format!(
                "{key:?} does not run on edge hosts; the edge services are {}",
                valid.join(", ")
            )),
            None => Err(format!(
                "unknown service {key:?}; the services are {}",
                valid.join(", ")
            )),
        }
    }
}
