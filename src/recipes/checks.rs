//! What makes a set of recipes whole, checked as they load: a broken
//! recipe is an error that names its file and line
//! ([`Recipes::error_at`]), never a surprise at deploy time.

use super::{Recipes, ServicePhase};
use anyhow::{Result, bail};
use std::collections::BTreeMap;

/// No two services take the same config key.
pub(super) fn config_keys_unique(recipes: &Recipes) -> Result<()> {
    let mut keys: BTreeMap<&str, &str> = BTreeMap::new();
    for s in recipes.services.values() {
        if let Some(c) = &s.custom_config
            && let Some(other) = keys.insert(&c.config_key, &s.service)
        {
            return Err(recipes.error_at(
                &s.service,
                &["customConfig", "configKey"],
                format!(
                    "services {other} and {} both take the config key {:?}",
                    s.service, c.config_key
                ),
            ));
        }
    }
    Ok(())
}

/// Each setup command says how a re-run knows its effect is there, and a
/// schema it may rebuild is one of its service's own databases.
pub(super) fn setup_commands(recipes: &Recipes) -> Result<()> {
    for s in recipes.services.values() {
        for (i, c) in s.setup.iter().enumerate() {
            let at = i.to_string();
            let ways = [c.check.is_some(), c.check_sql.is_some(), c.rerun];
            if ways.iter().filter(|w| **w).count() != 1 {
                return Err(recipes.error_at(&s.service, &["setup", &at], format!(
                    "setup command {} of {} needs exactly one of `check` (a read-only command whose success means its effect is there), `checkSql` (a query that returns a row when it is) and `rerun: true` (cheap and idempotent, run every time): a re-run must not take the journal's word for what another program stored",
                    c.name,
                    s.service
                )));
            }
            let own = s
                .database
                .as_ref()
                .map(|d| d.names.as_slice())
                .unwrap_or(&[]);
            if let Some(db) = c.schema.iter().find(|db| !own.contains(db)) {
                return Err(recipes.error_at(&s.service, &["setup", &at, "schema"], format!(
                    "setup command {} of {} names the schema of database {db}, which is not one of the service's own databases ({}): a sync that starts again from empty databases may drop only its own",
                    c.name,
                    s.service,
                    own.join(", ")
                )));
            }
        }
    }
    Ok(())
}

/// A TLS frontend's port is its service's, and no two services declare the
/// same frontend.
pub(super) fn tls_frontends(recipes: &Recipes) -> Result<()> {
    let mut frontends: BTreeMap<&str, &str> = BTreeMap::new();
    for s in recipes.services.values() {
        for (name, port) in &s.tls_frontends {
            let at = ["tlsFrontends", name.as_str()];
            if !s.ports.contains(port) {
                return Err(recipes.error_at(&s.service, &at, format!(
                    "TLS frontend {name} of {} is on port {port}, which is not one of the service's `ports` (preflight checks those)",
                    s.service
                )));
            }
            if let Some(other) = frontends.insert(name, &s.service) {
                return Err(recipes.error_at(
                    &s.service,
                    &at,
                    format!(
                        "services {other} and {} both declare TLS frontend {name:?}",
                        s.service
                    ),
                ));
            }
        }
    }
    Ok(())
}

/// Backup parts are well-formed, uniquely named and dumped only by
/// infrastructure services; every certificate says how its users reload it.
pub(super) fn backup_and_renewal(recipes: &Recipes) -> Result<()> {
    let mut parts = std::collections::BTreeSet::new();
    for s in recipes.services.values() {
        for (i, b) in s.backup.iter().enumerate() {
            let at = ["backup", &i.to_string()];
            let err = |m: String| recipes.error_at(&s.service, &at, m);
            b.check()
                .map_err(|e| err(format!("backup part {} of {}: {e}", b.name, s.service)))?;
            if b.dump.is_some() && s.phase != ServicePhase::Infrastructure {
                return Err(err(format!(
                    "backup part {} of {}: dumps are loaded back right after the infrastructure phase, so only its services may make them",
                    b.name, s.service
                )));
            }
            if !parts.insert(b.name.clone()) {
                return Err(err(format!("two backup parts are called {}", b.name)));
            }
        }
        for (i, c) in s.certificates.iter().enumerate() {
            let at = ["certificates", &i.to_string(), "onRenew"];
            c.on_renew.check().map_err(|e| {
                recipes.error_at(
                    &s.service,
                    &at,
                    format!("certificate {} of {}: {e}", c.leaf, s.service),
                )
            })?;
        }
    }
    Ok(())
}

/// Every role names services that exist.
pub(super) fn roles_name_services(recipes: &Recipes) -> Result<()> {
    for role in recipes.roles.values() {
        for s in &role.services {
            if !recipes.services.contains_key(s) {
                bail!(
                    "role {} names service {s:?}, which has no recipe",
                    role.role
                );
            }
        }
    }
    Ok(())
}

/// A role's `computeLink` names site credentials that a service of the
/// role declares, of the kinds the link needs.
pub(super) fn compute_links(recipes: &Recipes) -> Result<()> {
    use super::SiteCredentialRecipe as Kind;
    for role in recipes.roles.values() {
        let Some(link) = &role.compute_link else {
            continue;
        };
        let declared: BTreeMap<&str, &Kind> = (role.services.iter())
            .filter_map(|s| recipes.services.get(s))
            .flat_map(|s| s.site_credentials.iter())
            .map(|(name, c)| (name.as_str(), c))
            .collect();
        let messaging = matches!(
            declared.get(link.messaging.as_str()),
            Some(Kind::RabbitmqUser { .. })
        );
        let service = matches!(
            declared.get(link.service.as_str()),
            Some(Kind::KeystoneUser { .. })
        );
        for (ok, field, name, kind) in [
            (messaging, "messaging", &link.messaging, "rabbitmqUser"),
            (service, "service", &link.service, "keystoneUser"),
        ] {
            if !ok {
                bail!(
                    "role {}: computeLink.{field} names {name:?}, which no service of the role declares as a {kind} site credential",
                    role.role
                );
            }
        }
    }
    Ok(())
}
