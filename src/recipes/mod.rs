//! Roles and services as data. `recipes/<release>/roles/*.yaml` say which
//! services make up a role; `recipes/<release>/services/*.yaml` say, per
//! service, which packages, debconf answers, config files, units, ports and
//! health checks it consists of. Code supplies the values (addresses,
//! passwords, worker counts); recipes say where they go. The recipes are
//! embedded in the binary at build time (see `build.rs`).

pub mod catalogue;
mod checks;
pub mod exports;
mod render;
mod schema;
pub mod site_credentials;

pub use render::{RenderedFile, Values, render_files, render_str};
pub use schema::*;

use anyhow::{Context, Result, bail};
use std::collections::BTreeMap;

include!(concat!(env!("OUT_DIR"), "/recipes_embedded.rs"));

/// The embedded recipes, parsed once, for unit tests (commands load them
/// where they start and pass them on).
#[cfg(test)]
pub fn for_tests() -> &'static Recipes {
    static RECIPES: std::sync::OnceLock<Recipes> = std::sync::OnceLock::new();
    RECIPES.get_or_init(|| Recipes::embedded().expect("the embedded recipes load"))
}

/// The distribution release the recipes are written for.
pub const RELEASE: &str = "debian-12";

/// All roles and services of one release.
#[derive(Debug, Clone)]
pub struct Recipes {
    pub roles: BTreeMap<String, RoleRecipe>,
    pub services: BTreeMap<String, ServiceRecipe>,
    /// Each service's recipe text, for errors that name its line.
    texts: BTreeMap<String, String>,
}

impl Recipes {
    /// The recipes built into this binary.
    pub fn embedded() -> Result<Recipes> {
        Self::from_files(EMBEDDED.iter().map(|(p, c)| (p.to_string(), c.to_string())))
    }

    /// Recipes from `(path under recipes/, contents)` pairs.
    pub fn from_files(files: impl IntoIterator<Item = (String, String)>) -> Result<Recipes> {
        let mut roles = BTreeMap::new();
        let mut services = BTreeMap::new();
        let mut texts = BTreeMap::new();
        for (path, text) in files {
            let Some(rest) = path.strip_prefix(&format!("{RELEASE}/")) else {
                continue;
            };
            if let Some(name) = rest
                .strip_prefix("roles/")
                .and_then(|n| n.strip_suffix(".yaml"))
            {
                let r: RoleRecipe = crate::yaml::parse::parse(&text, &format!("recipes/{path}"))?;
                if r.role != name {
                    bail!(
                        "recipes/{path} defines role {:?}; the file name says {name:?}",
                        r.role
                    );
                }
                roles.insert(name.to_string(), r);
            } else if let Some(name) = rest
                .strip_prefix("services/")
                .and_then(|n| n.strip_suffix(".yaml"))
            {
                let s: ServiceRecipe =
                    crate::yaml::parse::parse(&text, &format!("recipes/{path}"))?;
                if s.service != name {
                    bail!(
                        "recipes/{path} defines service {:?}; the file name says {name:?}",
                        s.service
                    );
                }
                services.insert(name.to_string(), s);
                texts.insert(name.to_string(), text);
            }
        }
        let recipes = Recipes {
            roles,
            services,
            texts,
        };
        recipes.check()?;
        Ok(recipes)
    }

    /// The TLS frontends of every service, port by frontend name: what the
    /// api-proxy serves on the control plane's address.
    pub fn tls_frontends(&self) -> BTreeMap<String, u16> {
        (self.services.values())
            .flat_map(|s| s.tls_frontends.iter().map(|(n, p)| (n.clone(), *p)))
            .collect()
    }

    /// Every role names services that exist, no two services share a
    /// config key, an export or a TLS frontend, and the rest of
    /// [`checks`].
    fn check(&self) -> Result<()> {
        checks::config_keys_unique(self)?;
        checks::setup_commands(self)?;
        checks::tls_frontends(self)?;
        checks::backup_and_renewal(self)?;
        exports::check_unique(self)?;
        site_credentials::check(self)?;
        checks::compute_links(self)?;
        checks::roles_name_services(self)
    }

    /// An error in `service`'s recipe at `path` (keys, or indexes of
    /// sequence items), with the file, line and column.
    pub(crate) fn error_at(&self, service: &str, path: &[&str], message: String) -> anyhow::Error {
        let file = format!("recipes/{RELEASE}/services/{service}.yaml");
        let text = self.texts.get(service).map(String::as_str).unwrap_or("");
        crate::yaml::parse::ConfigError::located(text, &file, path, message).into()
    }

    pub fn role(&self, name: &str) -> Result<&RoleRecipe> {
        self.roles
            .get(name)
            .with_context(|| format!("no role {name:?} in the {RELEASE} recipes"))
    }

    pub fn service(&self, name: &str) -> Result<&ServiceRecipe> {
        self.services
            .get(name)
            .with_context(|| format!("no service {name:?} in the {RELEASE} recipes"))
    }

    /// The services of `roles`, in role order, each once.
    pub fn services_for_roles(&self, roles: &[&str]) -> Result<Vec<&ServiceRecipe>> {
        let mut out: Vec<&ServiceRecipe> = Vec::new();
        for r in roles {
            for s in &self.role(r)?.services {
                if !out.iter().any(|x| &x.service == s) {
                    out.push(self.service(s)?);
                }
            }
        }
        Ok(out)
    }

    /// The packages of `roles`, sorted, each once.
    pub fn packages_for_roles(&self, roles: &[&str]) -> Result<Vec<String>> {
        let mut pkgs: Vec<String> = self
            .services_for_roles(roles)?
            .iter()
            .flat_map(|s| s.packages.iter().cloned())
            .collect();
        pkgs.sort();
        pkgs.dedup();
        Ok(pkgs)
    }

    /// The TCP ports the services of `roles` listen on, sorted, each with
    /// the services that name it (`5000`: `api-proxy, keystone`).
    pub fn ports_for_roles(&self, roles: &[&str]) -> Result<Vec<(u16, String)>> {
        let mut ports: BTreeMap<u16, Vec<&str>> = BTreeMap::new();
        for s in self.services_for_roles(roles)? {
            for p in &s.ports {
                ports.entry(*p).or_default().push(&s.service);
            }
        }
        Ok(ports.into_iter().map(|(p, s)| (p, s.join(", "))).collect())
    }

    /// The passwords the services of `roles` declare, sorted, each once.
    pub fn passwords_for_roles(&self, roles: &[&str]) -> Result<Vec<String>> {
        let mut names: Vec<String> = (self.services_for_roles(roles)?.iter())
            .flat_map(|s| s.passwords.iter().cloned())
            .collect();
        names.sort();
        names.dedup();
        Ok(names)
    }

    /// Every unit the services of `roles` own: those `dcn` enables and
    /// starts (packaging units that start others, like ovn-host, included)
    /// and those it keeps off. A host prepared before it is configured (the
    /// edge ISO, the lab's edge layer) has all of them disabled, so nothing
    /// starts unconfigured; the join enables exactly the started ones.
    pub fn units_for_roles(&self, roles: &[&str]) -> Result<Vec<String>> {
        let mut units: Vec<String> = self
            .services_for_roles(roles)?
            .iter()
            .flat_map(|s| s.units.iter().chain(&s.disable_units).cloned())
            .collect();
        units.sort();
        units.dedup();
        Ok(units)
    }
}

#[cfg(test)]
mod render_tests;
#[cfg(test)]
mod tests;
