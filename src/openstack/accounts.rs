//! A node's own accounts on the control plane's services, whatever kind
//! its recipe declares ([`NodeAccount`]): a RabbitMQ user, a keystone user
//! or a MariaDB user. Which accounts a node gets, and when, is the centre's
//! to say ([`crate::centre::sites::accounts`]); making and deleting them is
//! here.

use super::compute::{ComputeHosts, Nova};
use super::{database, identity, messaging};
use crate::host::Host;
use crate::recipes::site_credentials::NodeAccount;
use crate::secrets::Secret;
use anyhow::Result;

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

/// The accounts on this control plane.
pub struct ControlPlaneAccounts {
    pub host: Host,
}

impl ControlPlaneAccounts {
    fn cloud(&self) -> Result<super::Cloud> {
        super::client::admin(&self.host)
    }
}

impl ComputeHosts for ControlPlaneAccounts {
    fn is_compute_host(&self, hostname: &str) -> Result<bool> {
        Nova::admin(&self.host)?.is_compute_host(hostname)
    }
}

impl NodeAccounts for ControlPlaneAccounts {
    fn ensure(&self, _hostname: &str, account: &NodeAccount, password: &Secret) -> Result<()> {
        match account {
            NodeAccount::Rabbitmq {
                username,
                permissions,
            } => messaging::ensure_user(&self.host, username, password, permissions),
            NodeAccount::Keystone { username } => {
                identity::ensure_node_user(&self.cloud()?, username, password)
            }
            NodeAccount::Database {
                username,
                databases,
            } => database::ensure_user(&self.host, username, password, databases),
        }
    }

    fn delete(&self, _hostname: &str, account: &NodeAccount) -> Result<()> {
        match account {
            NodeAccount::Rabbitmq { username, .. } => messaging::remove_user(&self.host, username),
            NodeAccount::Keystone { username } => identity::remove_user(&self.cloud()?, username),
            NodeAccount::Database { username, .. } => database::remove_user(&self.host, username),
        }
    }
}
