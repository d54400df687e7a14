//! What a joining node is given, by kind: its own accounts and the
//! control plane's shared secrets.

use serde::Deserialize;

/// One credential a joining node gets, by kind.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(tag = "kind", rename_all = "camelCase", deny_unknown_fields)]
pub enum SiteCredentialRecipe {
    /// A RabbitMQ user of the node's own, `username` templated with
    /// `host.hostname`, allowed what `access` names.
    #[serde(rename_all = "camelCase")]
    RabbitmqUser {
        username: String,
        access: RabbitAccess,
    },
    /// A keystone user of the node's own in the `service` project, with
    /// the admin and service roles (as the control plane's service users).
    #[serde(rename_all = "camelCase")]
    KeystoneUser { username: String },
    /// One of the control plane's own passwords (declared under
    /// `passwords:` by a control-plane service), the same for every node:
    /// a secret both sides must share, such as nova's metadata secret.
    ControlPlaneSecret,
}

/// What a node's RabbitMQ user may reach.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum RabbitAccess {
    /// nova-compute's own queues and exchanges, and nothing of any other
    /// node or service (`centre::sites::provision::RabbitPermissions::compute_node`).
    ComputeNode,
}
