//! What every node of a site gets when it joins, as the edge role's recipes
//! declare it (`siteCredentials:`): RabbitMQ and keystone users of its own,
//! and control-plane secrets both sides must share. The join service
//! provisions each by its kind (`crate::centre::sites::accounts`) and replies with
//! them by name; the edge renders `{{ user.<name> }}` and
//! `{{ password.<name> }}` with them. An edge service that needs a user of
//! its own is a recipe change only.

use super::{RabbitPermissionsRecipe, Recipes, SiteCredentialRecipe, Values, render_str};
use anyhow::{Result, bail};
use std::collections::BTreeMap;

/// The role whose services' credentials a joining node gets.
pub const EDGE_ROLE: &str = "edge";

/// One credential one service declares.
#[derive(Debug, Clone, Copy)]
pub struct SiteCredential<'a> {
    pub name: &'a str,
    pub service: &'a str,
    pub kind: &'a SiteCredentialRecipe,
}

/// What a RabbitMQ user may do on the vhost `/`, rendered for one user:
/// regular expressions over exchange and queue names (`set_permissions`)
/// and, optionally, (exchange, routing keys it may publish, binding keys it
/// may bind) on one topic exchange (`set_topic_permissions`).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct RabbitPermissions {
    pub configure: String,
    pub write: String,
    pub read: String,
    pub topic: Option<(String, String, String)>,
}

impl RabbitPermissions {
    /// Everything: the control plane's own services.
    pub fn all() -> RabbitPermissions {
        RabbitPermissions {
            configure: ".*".into(),
            write: ".*".into(),
            read: ".*".into(),
            topic: None,
        }
    }

    /// A recipe's permissions for the node `hostname`.
    fn render(recipe: &RabbitPermissionsRecipe, hostname: &str) -> Result<RabbitPermissions> {
        let values = node_values(hostname);
        let r = |template: &str| render_str(template, &values);
        Ok(RabbitPermissions {
            configure: r(&recipe.configure)?,
            write: r(&recipe.write)?,
            read: r(&recipe.read)?,
            topic: match &recipe.topic {
                Some(t) => Some((r(&t.exchange)?, r(&t.write)?, r(&t.read)?)),
                None => None,
            },
        })
    }
}

/// An account the control plane keeps for one node.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub enum NodeAccount {
    Rabbitmq {
        username: String,
        permissions: RabbitPermissions,
    },
    Keystone {
        username: String,
    },
    /// A MariaDB user at the centre, `'username'@'%'`, over TLS only.
    Database {
        username: String,
        databases: Vec<String>,
    },
}

/// The longest user name MariaDB takes.
const MAX_DATABASE_USER: usize = 80;

impl NodeAccount {
    pub fn username(&self) -> &str {
        match self {
            NodeAccount::Rabbitmq { username, .. }
            | NodeAccount::Keystone { username }
            | NodeAccount::Database { username, .. } => username,
        }
    }
}

impl std::fmt::Display for NodeAccount {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            NodeAccount::Rabbitmq { username, .. } => write!(f, "RabbitMQ user {username}"),
            NodeAccount::Keystone { username } => write!(f, "keystone user {username}"),
            NodeAccount::Database { username, .. } => write!(f, "MariaDB user {username}"),
        }
    }
}

impl SiteCredential<'_> {
    /// A user of the node's own (with a username), not a shared secret.
    pub fn is_account(&self) -> bool {
        *self.kind != SiteCredentialRecipe::ControlPlaneSecret
    }

    /// The account this credential is on `hostname`; `None` for a shared
    /// control-plane secret.
    pub fn account(&self, hostname: &str) -> Result<Option<NodeAccount>> {
        let user = |template: &str| username(template, hostname);
        Ok(match self.kind {
            SiteCredentialRecipe::RabbitmqUser {
                username,
                permissions,
            } => Some(NodeAccount::Rabbitmq {
                username: user(username)?,
                permissions: RabbitPermissions::render(permissions, hostname)?,
            }),
            SiteCredentialRecipe::KeystoneUser { username } => Some(NodeAccount::Keystone {
                username: user(username)?,
            }),
            SiteCredentialRecipe::DatabaseUser {
                username,
                databases,
            } => {
                let username = user(username)?;
                if username.len() > MAX_DATABASE_USER {
                    bail!(
                        "MariaDB user {username} is longer than the {MAX_DATABASE_USER} characters MariaDB takes; give the host a shorter name"
                    );
                }
                Some(NodeAccount::Database {
                    username,
                    databases: databases.clone(),
                })
            }
            SiteCredentialRecipe::ControlPlaneSecret => None,
        })
    }
}

/// What a credential's templates are rendered with: the node's name, as
/// itself and as a regular expression that matches only it. Nothing else is
/// given, so a template naming anything else fails at load.
fn node_values(hostname: &str) -> Values {
    let mut values = Values::default();
    values.host.insert("hostname".into(), hostname.into());
    values
        .host
        .insert("hostnamePattern".into(), regex_escape(hostname));
    values
}

/// `s` with the characters that mean something in a regular expression
/// escaped (host names hold letters, digits, `-` and `.`).
fn regex_escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        if !c.is_ascii_alphanumeric() && c != '-' && c != '_' {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

/// A username template rendered for `hostname`.
fn username(template: &str, hostname: &str) -> Result<String> {
    let name = render_str(template, &node_values(hostname))?;
    // It reaches SQL and rabbitmqctl's arguments: no quotes either.
    if name.is_empty()
        || name.len() > 255
        || name
            .chars()
            .any(|c| c.is_whitespace() || "'\"`\\".contains(c))
    {
        bail!(
            "username {name:?} (from {template:?}) is empty, longer than 255, or has spaces or quotes"
        );
    }
    Ok(name)
}

/// Every credential of every service, duplicates included.
fn declared(recipes: &Recipes) -> impl Iterator<Item = SiteCredential<'_>> {
    recipes.services.values().flat_map(|s| {
        s.site_credentials
            .iter()
            .map(|(name, kind)| SiteCredential {
                name,
                service: &s.service,
                kind,
            })
    })
}

impl Recipes {
    /// The credentials a joining node gets: those the edge role's services
    /// declare, by name.
    pub fn site_credentials(&self) -> Result<BTreeMap<&str, SiteCredential<'_>>> {
        let edge: Vec<&str> = (self.services_for_roles(&[EDGE_ROLE])?.into_iter())
            .map(|s| s.service.as_str())
            .collect();
        Ok(declared(self)
            .filter(|c| edge.contains(&c.service))
            .map(|c| (c.name, c))
            .collect())
    }

    /// The accounts a node has on the control plane, each once.
    pub fn node_accounts(&self, hostname: &str) -> Result<Vec<NodeAccount>> {
        let mut out = Vec::new();
        for c in self.site_credentials()?.values() {
            if let Some(a) = c.account(hostname)? {
                out.push(a);
            }
        }
        out.sort();
        out.dedup();
        Ok(out)
    }
}

/// Each pattern matches whole names (`^(...)$`, or `.*` for all), so a
/// node's user cannot reach a name that only starts or ends like its own.
fn anchored(p: &RabbitPermissions) -> Result<()> {
    let mut patterns = vec![
        ("configure", &p.configure),
        ("write", &p.write),
        ("read", &p.read),
    ];
    if let Some((_, write, read)) = &p.topic {
        patterns.extend([("topic write", write), ("topic read", read)]);
    }
    for (what, pattern) in patterns {
        if pattern != ".*" && !(pattern.starts_with('^') && pattern.ends_with('$')) {
            bail!("the {what} pattern {pattern:?} does not match whole names; write it as ^(...)$");
        }
    }
    Ok(())
}

/// Names are unique, shared secrets are control-plane passwords, and every
/// account is the node's own: its username differs from node to node, and
/// from every other credential's of its kind (two credentials on one
/// account would each reset the other's password).
pub(super) fn check(recipes: &Recipes) -> Result<()> {
    let passwords: Vec<&String> = (recipes.services.values())
        .flat_map(|s| &s.passwords)
        .collect();
    let declared_databases: Vec<&str> = (recipes.services.values())
        .filter_map(|s| s.database.as_ref())
        .flat_map(|d| d.names.iter().map(String::as_str))
        .collect();
    let mut names: BTreeMap<&str, &str> = BTreeMap::new();
    let mut accounts: BTreeMap<NodeAccount, &str> = BTreeMap::new();
    for c in declared(recipes) {
        let what = || format!("recipe {}: site credential {}", c.service, c.name);
        if let Some(other) = names.insert(c.name, c.service) {
            bail!(
                "services {other} and {} both declare site credential {:?}",
                c.service,
                c.name
            );
        }
        if !c.is_account() && !passwords.iter().any(|p| *p == c.name) {
            bail!(
                "{}: a controlPlaneSecret must be a password a service declares under `passwords:`",
                what()
            );
        }
        let (Some(a), Some(b)) = (
            c.account("node1").map_err(|e| e.context(what()))?,
            c.account("node2").map_err(|e| e.context(what()))?,
        ) else {
            continue;
        };
        if let NodeAccount::Rabbitmq { permissions, .. } = &a {
            anchored(permissions).map_err(|e| e.context(what()))?;
        }
        if let NodeAccount::Database { databases, .. } = &a {
            for db in databases {
                if !declared_databases.contains(&db.as_str()) {
                    bail!(
                        "{}: database {db:?} is not one a service declares under `database.names`",
                        what()
                    );
                }
            }
        }
        if a.username() == b.username() {
            bail!(
                "{}: username {:?} is the same on every node; put {{{{ host.hostname }}}} in it",
                what(),
                a.username()
            );
        }
        if let Some(other) = accounts.insert(a.clone(), c.name) {
            bail!(
                "{}: {a} is also site credential {other}'s; give it a username of its own",
                what()
            );
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests;
