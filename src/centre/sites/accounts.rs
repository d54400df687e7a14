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
use crate::recipes::site_credentials::NodeAccount;
use crate::wire::SiteCredential;
use anyhow::{Context, Result};
use std::collections::BTreeMap;
use std::time::Instant;

/// Give `hostname` every site credential: its accounts with fresh
/// passwords, and the shared secrets from the control plane's passwords.
/// The accounts are made at the same time (they live in different
/// services), and each one's time is logged: a join waits for the slowest.
pub fn grant(
    accounts: &dyn NodeAccounts,
    recipes: &Recipes,
    passwords: &PasswordStore,
    hostname: &str,
) -> Result<BTreeMap<String, SiteCredential>> {
    let mut out = BTreeMap::new();
    let mut wanted = Vec::new();
    for (name, c) in recipes.site_credentials()? {
        match c.account(hostname)? {
            Some(account) => wanted.push((name.to_string(), account)),
            None => {
                let shared = SiteCredential {
                    username: None,
                    password: passwords.get(name)?.clone(),
                };
                out.insert(name.to_string(), shared);
            }
        }
    }
    let made: Vec<Result<(String, SiteCredential)>> = std::thread::scope(|scope| {
        let jobs: Vec<_> = (wanted.iter())
            .map(|(name, account)| scope.spawn(move || make(accounts, hostname, name, account)))
            .collect();
        (jobs.into_iter())
            .map(|j| {
                (j.join()).unwrap_or_else(|_| Err(anyhow::anyhow!("making an account panicked")))
            })
            .collect()
    });
    for m in made {
        let (name, credential) = m?;
        out.insert(name, credential);
    }
    Ok(out)
}

/// One account of `hostname` with a fresh password.
fn make(
    accounts: &dyn NodeAccounts,
    hostname: &str,
    name: &str,
    account: &NodeAccount,
) -> Result<(String, SiteCredential)> {
    let started = Instant::now();
    let password = (accounts.make(hostname, account))
        .with_context(|| format!("making {account} (site credential {name})"))?;
    tracing::info!(
        "join of {hostname}: {account} made in {:.2}s",
        started.elapsed().as_secs_f64()
    );
    let credential = SiteCredential {
        username: Some(account.username().to_string()),
        password,
    };
    Ok((name.to_string(), credential))
}

/// Delete every account of `hostname`.
pub fn revoke(accounts: &dyn NodeAccounts, recipes: &Recipes, hostname: &str) -> Result<()> {
    for account in recipes.node_accounts(hostname)? {
        (accounts.delete(hostname, &account)).with_context(|| format!("removing {account}"))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::openstack::compute::ComputeHosts;
    use std::sync::{Condvar, Mutex};
    use std::time::Duration;

    /// Accounts that each wait until every account of the join is being
    /// made at once (or give up after a minute: they took turns).
    struct AllAtOnce {
        expected: usize,
        inside: Mutex<usize>,
        changed: Condvar,
    }

    impl ComputeHosts for AllAtOnce {
        fn is_compute_host(&self, _: &str) -> Result<bool> {
            Ok(false)
        }
    }

    impl NodeAccounts for AllAtOnce {
        fn make(&self, _: &str, _: &NodeAccount) -> Result<crate::secrets::Secret> {
            let mut inside = self.inside.lock().unwrap();
            *inside += 1;
            self.changed.notify_all();
            let (_inside, waited) = (self.changed)
                .wait_timeout_while(inside, Duration::from_secs(60), |n| *n < self.expected)
                .unwrap();
            anyhow::ensure!(
                !waited.timed_out(),
                "the accounts were made one after another"
            );
            Ok(crate::secrets::generate_password())
        }

        fn delete(&self, _: &str, _: &NodeAccount) -> Result<()> {
            Ok(())
        }
    }

    #[test]
    fn a_join_makes_its_accounts_at_the_same_time() {
        let recipes = Recipes::embedded().unwrap();
        let expected = recipes.node_accounts("e1").unwrap().len();
        assert!(expected >= 2, "the edge has a RabbitMQ and a keystone user");
        let accounts = AllAtOnce {
            expected,
            inside: Mutex::new(0),
            changed: Condvar::new(),
        };
        let dir = tempfile::tempdir().unwrap();
        let files = crate::host::Files::new(dir.path(), false);
        let mut passwords = PasswordStore::load(&files).unwrap();
        let shared: Vec<String> = (recipes.site_credentials().unwrap().into_iter())
            .filter(|(_, c)| !c.is_account())
            .map(|(name, _)| name.to_string())
            .collect();
        passwords.ensure(shared.iter().map(String::as_str));
        let granted = grant(&accounts, &recipes, &passwords, "e1").unwrap();
        assert_eq!(*accounts.inside.lock().unwrap(), expected);
        let users = granted.values().filter(|c| c.username.is_some()).count();
        assert_eq!(users, expected, "{:?}", granted.keys());
    }
}
