//! Keystone's side of the control plane: the admin's credentials, and the
//! catalog step (the `service` project, a user per service, each service
//! and its endpoints), done only while keystone really lists them.

use crate::engine::digest;
use crate::engine::{Context, Step};
use crate::openstack::{Cloud, Credentials, identity};
use crate::recipes::{Recipes, Values, render_str};
use crate::secrets::Secret;
use anyhow::{Context as _, Result};

/// The admin's credentials on this control plane, through keystone's
/// loopback endpoint (`public`: through the TLS endpoint clients use).
pub fn admin_credentials(values: &Values, public: bool) -> Result<Credentials> {
    Ok(Credentials {
        auth_url: if public {
            format!("https://{}:5000/v3", values.cp["address"])
        } else {
            "http://127.0.0.1:5000/v3".to_string()
        },
        username: "admin".into(),
        password: Secret::new(
            values
                .password
                .get("keystone_admin")
                .context("no keystone_admin password")?
                .clone(),
        ),
        project: "admin".into(),
        region: values.cp["region"].clone(),
        interface: if public { "public" } else { "internal" }.into(),
    })
}

/// Keystone's `service` project, one user per service, and the catalog.
pub struct Catalog {
    pub entries: Vec<CatalogEntry>,
    pub values: std::sync::Arc<Values>,
}

pub struct CatalogEntry {
    pub service: String,
    pub user: Option<(String, Secret)>,
    pub name: String,
    pub kind: String,
    pub url: String,
    pub internal_url: String,
}

impl CatalogEntry {
    /// Whether keystone's lists show this entry: its user, its service of
    /// its type, and that service's public and internal endpoints.
    fn registered(
        &self,
        services: &serde_json::Value,
        endpoints: &serde_json::Value,
        users: &serde_json::Value,
    ) -> bool {
        let has = |list: &serde_json::Value, key: &str, f: &dyn Fn(&serde_json::Value) -> bool| {
            list[key].as_array().is_some_and(|a| a.iter().any(f))
        };
        if let Some((user, _)) = &self.user
            && !has(users, "users", &|u| u["name"] == user.as_str())
        {
            return false;
        }
        let Some(id) = services["services"].as_array().and_then(|a| {
            a.iter()
                .find(|s| s["name"] == self.name.as_str() && s["type"] == self.kind.as_str())
                .and_then(|s| s["id"].as_str())
        }) else {
            return false;
        };
        let endpoint = |interface: &str, url: &str| {
            has(endpoints, "endpoints", &|e| {
                e["service_id"] == id && e["interface"] == interface && e["url"] == url
            })
        };
        endpoint("public", &self.url)
            && endpoint("internal", &self.internal_url)
            && endpoint("admin", &self.internal_url)
    }
}

impl Catalog {
    pub fn new(
        recipes: &Recipes,
        services: &[String],
        values: std::sync::Arc<Values>,
    ) -> Result<Catalog> {
        let mut entries = Vec::new();
        for s in services {
            let Some(id) = recipes.services.get(s).and_then(|r| r.identity.as_ref()) else {
                continue;
            };
            let user = match (&id.user, &id.password) {
                (Some(u), Some(p)) => Some((
                    u.clone(),
                    Secret::new(
                        values
                            .password
                            .get(p)
                            .with_context(|| format!("no password {p}"))?
                            .clone(),
                    ),
                )),
                _ => None,
            };
            entries.push(CatalogEntry {
                service: s.clone(),
                user,
                name: id.name.clone(),
                kind: id.kind.clone(),
                url: render_str(&id.url, &values)?,
                internal_url: render_str(id.internal_url.as_ref().unwrap_or(&id.url), &values)?,
            });
        }
        Ok(Catalog { entries, values })
    }
}

impl Step for Catalog {
    fn name(&self) -> String {
        "keystone.catalog".into()
    }
    fn describe(&self) -> String {
        "create the service project, service users and the catalog".into()
    }
    fn fingerprint(&self) -> String {
        let parts: Vec<String> = self
            .entries
            .iter()
            .map(|e| {
                format!(
                    "{} {} {} {} {} {}",
                    e.name,
                    e.kind,
                    e.url,
                    e.internal_url,
                    e.user.as_ref().map(|u| u.0.as_str()).unwrap_or(""),
                    e.user
                        .as_ref()
                        .map(|u| digest([u.1.expose().as_bytes()]))
                        .unwrap_or_default()
                )
            })
            .collect();
        digest(parts.iter().map(|p| p.as_bytes()))
    }
    /// Keystone has every service user, service and endpoint (and the
    /// catalog last ran as it is now).
    fn is_done(&self, ctx: &Context) -> Result<bool> {
        if !ctx.journal.is_done(&self.name(), &self.fingerprint()) {
            return Ok(false);
        }
        let Ok(cloud) = Cloud::login(&admin_credentials(&self.values, false)?, None) else {
            return Ok(false);
        };
        let services = cloud.get("identity", "/services")?;
        let endpoints = cloud.get("identity", "/endpoints")?;
        let users = cloud.get("identity", "/users?domain_id=default")?;
        Ok(self
            .entries
            .iter()
            .all(|e| e.registered(&services, &endpoints, &users)))
    }
    fn apply(&self, ctx: &Context) -> Result<()> {
        if ctx.host.dry_run {
            for e in &self.entries {
                tracing::info!("    would register {} ({}) at {}", e.name, e.kind, e.url);
            }
            return Ok(());
        }
        let creds = admin_credentials(&self.values, false)?;
        let cloud = Cloud::login(&creds, None)?;
        let project = identity::ensure_project(&cloud, "service", "OpenStack services")?;
        let admin = identity::ensure_role(&cloud, "admin")?;
        let service_role = identity::ensure_role(&cloud, "service")?;
        for e in &self.entries {
            if let Some((user, password)) = &e.user {
                let uid = identity::ensure_user(&cloud, user, password, &project)?;
                identity::grant(&cloud, &project, &uid, &admin)?;
                identity::grant(&cloud, &project, &uid, &service_role)?;
            }
            let sid = identity::ensure_service(&cloud, &e.name, &e.kind)?;
            identity::ensure_endpoints(&cloud, &sid, &e.url, &e.internal_url, &creds.region)
                .with_context(|| format!("registering the {} endpoints", e.name))?;
            tracing::debug!("    {} ({}) at {}", e.name, e.kind, e.url);
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_catalog_entry_is_registered_only_with_its_user_service_and_endpoints() {
        let e = CatalogEntry {
            service: "placement".into(),
            user: Some(("placement".into(), Secret::new("pw"))),
            name: "placement".into(),
            kind: "placement".into(),
            url: "https://10.0.0.1:8778".into(),
            internal_url: "http://127.0.0.1:8778".into(),
        };
        let services =
            json!({"services": [{"id": "s1", "name": "placement", "type": "placement"}]});
        let users = json!({"users": [{"name": "placement"}]});
        let ep = |i: &str, u: &str| json!({"service_id": "s1", "interface": i, "url": u});
        let all = json!({"endpoints": [
            ep("public", "https://10.0.0.1:8778"),
            ep("internal", "http://127.0.0.1:8778"),
            ep("admin", "http://127.0.0.1:8778"),
        ]});
        assert!(e.registered(&services, &all, &users));
        let lost = json!({"endpoints": [ep("public", "https://10.0.0.1:8778"), ep("admin", "http://127.0.0.1:8778")]});
        assert!(!e.registered(&services, &lost, &users), "an endpoint lost");
        assert!(
            !e.registered(&services, &all, &json!({"users": []})),
            "the user lost"
        );
        assert!(
            !e.registered(&json!({"services": []}), &all, &users),
            "the service lost"
        );
    }
}
