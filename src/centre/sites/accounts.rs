//! Which credentials each edge node gets on the control plane, as the edge
//! role's recipes declare them ([`crate::recipes::site_credentials`]):
//! RabbitMQ, keystone and MariaDB users made by the join service when the node
//! joins and deleted when the node is removed or its site revoked, and the
//! control-plane secrets it shares. Users are per node, not per site, so
//! that removing one node cuts it off while its neighbours keep working
//! (docs/security.md).

use crate::openstack::accounts::NodeAccounts;
use crate::passwords::PasswordStore;
use crate::recipes::Recipes;
use crate::secrets::generate_password;
use crate::wire::SiteCredential;
use anyhow::{Context, Result};
use std::collections::BTreeMap;

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
