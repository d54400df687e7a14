//! A node's own accounts on the control plane's services, whatever kind
//! its recipe declares ([`NodeAccount`]): a RabbitMQ user, a keystone user
//! or a MariaDB user. Which accounts a node gets, and when, is the centre's
//! to say ([`crate::centre::sites::accounts`]); making and deleting them is
//! here.

use super::Cloud;
use super::batch::GroupCommit;
use super::client::KeptLogin;
use super::compute::{ComputeHosts, Nova};
use super::messaging::RabbitUser;
use super::{database, identity, messaging};
use crate::host::Host;
use crate::recipes::site_credentials::NodeAccount;
use crate::secrets::Secret;
use anyhow::Result;
use std::sync::{Arc, OnceLock};

/// Where node accounts live. The control plane's services in production
/// ([`ControlPlaneAccounts`]); the join service's tests, which have none
/// of them, record the calls instead.
pub trait NodeAccounts: ComputeHosts + Send + Sync {
    /// Create the account with `password`, or give the existing one that
    /// password (the old one stops working at once).
    fn ensure(&self, hostname: &str, account: &NodeAccount, password: &Secret) -> Result<()>;
    /// Delete the account and close what it has open. Deleting an account
    /// that is already gone succeeds.
    fn delete(&self, hostname: &str, account: &NodeAccount) -> Result<()>;
}

/// RabbitMQ users made in one `rabbitmqctl` call at most: a bound on
/// the definitions one call reads.
const RABBIT_BATCH: usize = 100;

/// The accounts on this control plane. One value serves every join the
/// service answers: RabbitMQ users of joins at once are made together
/// ([`GroupCommit`]), and keystone is called with one kept admin login.
pub struct ControlPlaneAccounts {
    host: Host,
    admin: KeptLogin<Admin>,
    rabbit: GroupCommit<RabbitUser>,
}

/// The kept admin login, with what node users need of keystone looked up
/// once for as long as it is kept.
struct Admin {
    cloud: Arc<Cloud>,
    node_scope: OnceLock<identity::NodeUserScope>,
}

impl Admin {
    fn node_scope(&self) -> Result<&identity::NodeUserScope> {
        if let Some(scope) = self.node_scope.get() {
            return Ok(scope);
        }
        let scope = identity::NodeUserScope::look_up(&self.cloud)?;
        // Joins at once may each look it up; the first kept wins.
        Ok(self.node_scope.get_or_init(|| scope))
    }
}

impl ControlPlaneAccounts {
    pub fn new(host: &Host) -> ControlPlaneAccounts {
        ControlPlaneAccounts {
            host: host.clone(),
            admin: KeptLogin::default(),
            rabbit: GroupCommit::new(RABBIT_BATCH),
        }
    }

    /// `call` with the kept admin login; when it fails, the login is
    /// made again for the next call (its token may have expired).
    fn with_admin<T>(&self, call: impl FnOnce(&Admin) -> Result<T>) -> Result<T> {
        let admin = self.admin.get(|| {
            Ok(Arc::new(Admin {
                cloud: Arc::new(super::client::admin(&self.host)?),
                node_scope: OnceLock::new(),
            }))
        })?;
        let outcome = call(&admin);
        if outcome.is_err() {
            self.admin.forget();
        }
        outcome
    }
}

impl ComputeHosts for ControlPlaneAccounts {
    fn is_compute_host(&self, hostname: &str) -> Result<bool> {
        self.with_admin(|admin| {
            Nova::with_login(admin.cloud.clone(), &self.host).is_compute_host(hostname)
        })
    }
}

impl NodeAccounts for ControlPlaneAccounts {
    fn ensure(&self, _hostname: &str, account: &NodeAccount, password: &Secret) -> Result<()> {
        match account {
            NodeAccount::Rabbitmq {
                username,
                permissions,
            } => {
                let user = RabbitUser {
                    name: username.clone(),
                    password: password.clone(),
                    permissions: permissions.clone(),
                };
                (self.rabbit).submit(user, |users| messaging::ensure_users(&self.host, users))
            }
            NodeAccount::Keystone { username } => self.with_admin(|admin| {
                let scope = admin.node_scope()?;
                identity::ensure_node_user(&admin.cloud, scope, username, password)
            }),
            NodeAccount::Database {
                username,
                databases,
            } => database::ensure_user(&self.host, username, password, databases),
        }
    }

    fn delete(&self, _hostname: &str, account: &NodeAccount) -> Result<()> {
        match account {
            NodeAccount::Rabbitmq { username, .. } => messaging::remove_user(&self.host, username),
            NodeAccount::Keystone { username } => {
                self.with_admin(|admin| identity::remove_user(&admin.cloud, username))
            }
            NodeAccount::Database { username, .. } => database::remove_user(&self.host, username),
        }
    }
}
