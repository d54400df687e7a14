//! Converging keystone resources: each `ensure_*` creates what is missing,
//! corrects what differs, and leaves what is right alone.

use super::Cloud;
use crate::secrets::Secret;
use anyhow::{Context, Result};
use reqwest::Method;
use serde_json::{Value, json};

fn id_of(v: &Value) -> Result<String> {
    v["id"]
        .as_str()
        .map(String::from)
        .context("keystone returned an object without an id")
}

/// The first element of `list_key` in a listing at `path`.
fn find(cloud: &Cloud, path: &str, list_key: &str) -> Result<Option<Value>> {
    let v = cloud.get("identity", path)?;
    Ok(v[list_key].as_array().and_then(|a| a.first().cloned()))
}

/// A project in the Default domain; returns its id.
pub fn ensure_project(cloud: &Cloud, name: &str, description: &str) -> Result<String> {
    if let Some(p) = find(
        cloud,
        &format!("/projects?name={name}&domain_id=default"),
        "projects",
    )? {
        return id_of(&p);
    }
    let v = cloud.post(
        "identity",
        "/projects",
        &json!({"project": {"name": name, "domain_id": "default", "description": description, "enabled": true}}),
    )?;
    id_of(&v["project"]).with_context(|| format!("creating project {name}"))
}

/// A role by name; returns its id.
pub fn ensure_role(cloud: &Cloud, name: &str) -> Result<String> {
    if let Some(r) = find(cloud, &format!("/roles?name={name}"), "roles")? {
        return id_of(&r);
    }
    let v = cloud.post("identity", "/roles", &json!({"role": {"name": name}}))?;
    id_of(&v["role"])
}

/// A user in the Default domain with `password`; an existing user whose
/// password differs gets it reset. Returns its id.
pub fn ensure_user(
    cloud: &Cloud,
    name: &str,
    password: &Secret,
    project_id: &str,
) -> Result<String> {
    if let Some(u) = find_user(cloud, name)? {
        let id = id_of(&u)?;
        if !password_works(cloud, name, password)? {
            set_password(cloud, &id, name, password)?;
        }
        return Ok(id);
    }
    let v = cloud
        .post(
            "identity",
            "/users",
            &json!({"user": {"name": name, "domain_id": "default", "password": password.expose(),
                             "default_project_id": project_id, "enabled": true}}),
        )
        .with_context(|| format!("creating user {name}"))?;
    id_of(&v["user"])
}

/// The user named `name` in the Default domain, if any.
fn find_user(cloud: &Cloud, name: &str) -> Result<Option<Value>> {
    find(
        cloud,
        &format!("/users?name={name}&domain_id=default"),
        "users",
    )
}

/// Give user `id` (named `name`) `password`.
fn set_password(cloud: &Cloud, id: &str, name: &str, password: &Secret) -> Result<()> {
    cloud
        .request(
            Method::PATCH,
            "identity",
            &format!("/users/{id}"),
            Some(&json!({"user": {"password": password.expose()}})),
        )
        .with_context(|| format!("resetting the password of user {name}"))?;
    Ok(())
}

/// Whether `name` can get an unscoped token with `password`.
fn password_works(cloud: &Cloud, name: &str, password: &Secret) -> Result<bool> {
    let body = json!({"auth": {"identity": {"methods": ["password"], "password": {"user": {
        "name": name, "domain": {"id": "default"}, "password": password.expose()}}}}});
    match cloud.try_request(Method::POST, "identity", "/auth/tokens", Some(&body))? {
        Ok(_) => Ok(true),
        Err(refused) if refused.status == 401 => Ok(false),
        Err(refused) => Err(refused.into()),
    }
}

/// Grant `role` on a project to a user (a PUT: idempotent).
pub fn grant(cloud: &Cloud, project_id: &str, user_id: &str, role_id: &str) -> Result<()> {
    cloud.request(
        Method::PUT,
        "identity",
        &format!("/projects/{project_id}/users/{user_id}/roles/{role_id}"),
        None,
    )?;
    Ok(())
}

/// Take `role` on a project away from a user, if it has it.
pub fn revoke(cloud: &Cloud, project_id: &str, user_id: &str, role_id: &str) -> Result<()> {
    let path = format!("/projects/{project_id}/users/{user_id}/roles/{role_id}");
    match cloud.try_request(Method::DELETE, "identity", &path, None)? {
        Ok(_) => Ok(()),
        Err(refused) if refused.status == 404 => Ok(()),
        Err(refused) => Err(refused.into()),
    }
}

/// A catalog service; returns its id.
pub fn ensure_service(cloud: &Cloud, name: &str, kind: &str) -> Result<String> {
    let v = cloud.get("identity", &format!("/services?type={kind}"))?;
    if let Some(s) = v["services"]
        .as_array()
        .and_then(|a| a.iter().find(|s| s["name"] == name))
    {
        return id_of(s);
    }
    let v = cloud.post(
        "identity",
        "/services",
        &json!({"service": {"name": name, "type": kind, "enabled": true, "description": format!("{name} ({kind})")}}),
    )?;
    id_of(&v["service"])
}

/// A service's public endpoint at `public_url`, and its internal and admin
/// endpoints at `internal_url`, in `region`.
pub fn ensure_endpoints(
    cloud: &Cloud,
    service_id: &str,
    public_url: &str,
    internal_url: &str,
    region: &str,
) -> Result<()> {
    let existing = cloud.get("identity", &format!("/endpoints?service_id={service_id}"))?;
    let existing = existing["endpoints"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    for (interface, url) in [
        ("public", public_url),
        ("internal", internal_url),
        ("admin", internal_url),
    ] {
        match existing
            .iter()
            .find(|e| e["interface"] == interface && e["region_id"] == region)
        {
            Some(e) if e["url"] == url => {}
            Some(e) => {
                let id = id_of(e)?;
                cloud.request(
                    Method::PATCH,
                    "identity",
                    &format!("/endpoints/{id}"),
                    Some(&json!({"endpoint": {"url": url}})),
                )?;
            }
            None => {
                cloud.post(
                    "identity",
                    "/endpoints",
                    &json!({"endpoint": {"service_id": service_id, "interface": interface, "url": url, "region_id": region, "enabled": true}}),
                )?;
            }
        }
    }
    Ok(())
}
/// Create or update a node's keystone user in the `service` project with
/// the `service` role only: not `admin`, which under Zed's policies is
/// admin of the whole cloud. What nova-compute does with it (report to
/// placement, bind ports, read the networks of its guests) the `service`
/// role may do through the policy drop-ins of the placement and neutron
/// recipes (docs/security.md). A user an older dcn made keeps no `admin`.
pub fn ensure_node_user(
    cloud: &Cloud,
    scope: &NodeUserScope,
    user: &str,
    password: &Secret,
) -> Result<()> {
    // Most joins are of new hosts: create first, and look the user up only
    // when keystone says it exists (a lookup by name is a call as costly
    // as the creation's own work apart from its hash).
    let new_user = json!({"user": {"name": user, "domain_id": "default", "password": password.expose(),
                                   "default_project_id": scope.project, "enabled": true}});
    match cloud.try_request(Method::POST, "identity", "/users", Some(&new_user))? {
        // A new user has no roles yet: nothing to take away.
        Ok(v) => grant(cloud, &scope.project, &id_of(&v["user"])?, &scope.service),
        Err(refused) if refused.status == 409 => {
            let u = (find_user(cloud, user)?)
                .with_context(|| format!("keystone says user {user} exists, but lists none"))?;
            let id = id_of(&u)?;
            // A join always brings a fresh password: set it without first
            // asking keystone whether the old one works (a hash check too).
            set_password(cloud, &id, user, password)?;
            grant(cloud, &scope.project, &id, &scope.service)?;
            revoke(cloud, &scope.project, &id, &scope.admin)
        }
        Err(refused) => Err(anyhow::Error::from(refused).context(format!("creating user {user}"))),
    }
}

/// The ids a node user's roles need: the `service` project, and the
/// `service` and `admin` roles. They do not change while a login lasts,
/// so the join service looks them up once per login, not per join.
pub struct NodeUserScope {
    project: String,
    service: String,
    admin: String,
}

impl NodeUserScope {
    pub fn look_up(cloud: &Cloud) -> Result<NodeUserScope> {
        Ok(NodeUserScope {
            project: ensure_project(cloud, "service", "OpenStack services")?,
            service: ensure_role(cloud, "service")?,
            admin: ensure_role(cloud, "admin")?,
        })
    }
}

/// Delete a keystone user, if it exists; keystone then refuses its tokens.
pub fn remove_user(cloud: &Cloud, user: &str) -> Result<()> {
    let v = cloud.get("identity", &format!("/users?name={user}&domain_id=default"))?;
    if let Some(id) = v["users"]
        .as_array()
        .and_then(|a| a.first())
        .and_then(|u| u["id"].as_str())
    {
        cloud.request(Method::DELETE, "identity", &format!("/users/{id}"), None)?;
    }
    Ok(())
}
