//! Each edge node's own accounts on the control plane: a RabbitMQ user and
//! a keystone user, both named `dcn-node-<hostname>`, made by the join
//! service when the node joins and deleted when the node is removed or its
//! site revoked. Per node, not per site, so that removing one node cuts it
//! off while its neighbours keep working (docs/security.md).

use super::provision;
use crate::host::Host;
use crate::secrets::{Secret, generate_password};
use anyhow::Result;

/// The name of a node's RabbitMQ and keystone users.
pub fn node_user(hostname: &str) -> String {
    format!("dcn-node-{hostname}")
}

/// A node's fresh credentials.
pub struct NodeCredentials {
    pub username: String,
    pub rabbit_password: Secret,
    pub keystone_password: Secret,
}

/// Where node accounts live. The control plane's RabbitMQ and keystone in
/// production ([`ControlPlaneAccounts`]); the join service's tests, which
/// have neither, record the calls instead.
pub trait NodeAccounts: Send + Sync {
    /// Create the node's users, or give existing ones new passwords (the
    /// old ones stop working at once).
    fn grant(&self, hostname: &str) -> Result<NodeCredentials>;
    /// Delete the node's users and close what they have open. Deleting
    /// users that are already gone succeeds.
    fn revoke(&self, hostname: &str) -> Result<()>;
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

impl NodeAccounts for ControlPlaneAccounts {
    fn grant(&self, hostname: &str) -> Result<NodeCredentials> {
        let user = node_user(hostname);
        let creds = NodeCredentials {
            rabbit_password: generate_password(),
            keystone_password: generate_password(),
            username: user.clone(),
        };
        provision::ensure_rabbit_account(
            &self.host,
            &user,
            &creds.rabbit_password,
            &provision::RabbitPermissions::compute_node(hostname),
        )?;
        provision::ensure_keystone_account(&self.cloud()?, &user, &creds.keystone_password)?;
        Ok(creds)
    }

    fn revoke(&self, hostname: &str) -> Result<()> {
        let user = node_user(hostname);
        provision::remove_rabbit_account(&self.host, &user)?;
        provision::remove_keystone_account(&self.cloud()?, &user)
    }
}
