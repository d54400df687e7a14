//! Each edge node's own credentials on the control plane, as the edge
//! role's recipes declare them ([`crate::recipes::site_credentials`]):
//! RabbitMQ, keystone and MariaDB users made by the join service when the node
//! joins and deleted when the node is removed or its site revoked, and the
//! control-plane secrets it shares. Users are per node, not per site, so
//! that removing one node cuts it off while its neighbours keep working
//! (docs/security.md).

use super::provision;
use crate::host::Host;
use crate::passwords::PasswordStore;
use crate::recipes::Recipes;
use crate::recipes::site_credentials::NodeAccount;
use crate::secrets::{Secret, generate_password};
use crate::wire::SiteCredential;
use anyhow::{Context, Result};
use std::collections::BTreeMap;

/// Where node accounts live. The control plane's RabbitMQ and keystone in
/// production ([`ControlPlaneAccounts`]); the join service's tests, which
/// have neither, record the calls instead.
pub trait NodeAccounts: super::reserved::ComputeHosts + Send + Sync {
    /// Create the account with `password`, or give the existing one that
    /// password (the old one stops working at once).
    fn ensure(&self, hostname: &str, account: &NodeAccount, password: &Secret) -> Result<()>;
    /// Delete the account and close what it has open. Deleting an account
    /// that is already gone succeeds.
    fn delete(&self, hostname: &str, account: &NodeAccount) -> Result<()>;
}

/// Give `hostname` every site credential: its accounts with fresh
/// passwords, and the shared secrets from the control plane's passwords.
pub fn grant(
    accounts: &dyn NodeAccounts,
    recipes: &Recipes,
    passwords: &PasswordStore,
    hostname: &str,
) -> Result<BTreeMap<String, SiteCredential>> {
    let mut out = BTreeMap::new();
    for (name, c) in recipes.site_credentials()? {
        let credential = match c.account(hostname)? {
            Some(account) => {
                let password = generate_password();
                (accounts.ensure(hostname, &account, &password))
                    .with_context(|| format!("making {account} (site credential {name})"))?;
                SiteCredential {
                    username: Some(account.username().to_string()),
                    password,
                }
            }
            None => SiteCredential {
                username: None,
                password: passwords.get(name)?.clone(),
            },
        };
        out.insert(name.to_string(), credential);
    }
    Ok(out)
}

/// Delete every account of `hostname`.
pub fn revoke(accounts: &dyn NodeAccounts, recipes: &Recipes, hostname: &str) -> Result<()> {
    for account in recipes.node_accounts(hostname)? {
        (accounts.delete(hostname, &account)).with_context(|| format!("removing {account}"))?;
    }
    Ok(())
}

/// The accounts on this control plane.
pub struct ControlPlaneAccounts {
    pub host: Host,
}

impl ControlPlaneAccounts {
    fn cloud(&self) -> Result<crate::openstack::Cloud> {
        let config = crate::deployment::saved_config(&self.host.files)?;
        provision::admin_cloud(&self.host, config.control_plane.region.as_str())
    }
}

impl super::reserved::ComputeHosts for ControlPlaneAccounts {
    fn is_compute_host(&self, hostname: &str) -> Result<bool> {
        provision::is_compute_host(&self.cloud()?, hostname)
    }
}

impl NodeAccounts for ControlPlaneAccounts {
    fn ensure(&self, _hostname: &str, account: &NodeAccount, password: &Secret) -> Result<()> {
        match account {
            NodeAccount::Rabbitmq {
                username,
                permissions,
            } => provision::ensure_rabbit_account(&self.host, username, password, permissions),
            NodeAccount::Keystone { username } => {
                provision::ensure_keystone_account(&self.cloud()?, username, password)
            }
            NodeAccount::Database {
                username,
                databases,
            } => provision::ensure_database_account(&self.host, username, password, databases),
        }
    }

    fn delete(&self, _hostname: &str, account: &NodeAccount) -> Result<()> {
        match account {
            NodeAccount::Rabbitmq { username, .. } => {
                provision::remove_rabbit_account(&self.host, username)
            }
            NodeAccount::Keystone { username } => {
                provision::remove_keystone_account(&self.cloud()?, username)
            }
            NodeAccount::Database { username, .. } => {
                provision::remove_database_account(&self.host, username)
            }
        }
    }
}
