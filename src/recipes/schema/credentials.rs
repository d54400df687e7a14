//! What a joining node is given, by kind: its own accounts and the
//! control plane's shared secrets.

use serde::Deserialize;

/// One credential a joining node gets, by kind.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(tag = "kind", rename_all = "camelCase", deny_unknown_fields)]
pub enum SiteCredentialRecipe {
    /// A RabbitMQ user of the node's own, `username` templated with
    /// `host.hostname`, allowed what `permissions` say.
    #[serde(rename_all = "camelCase")]
    RabbitmqUser {
        username: String,
        permissions: RabbitPermissionsRecipe,
    },
    /// A keystone user of the node's own in the `service` project, with
    /// the admin and service roles (as the control plane's service users).
    #[serde(rename_all = "camelCase")]
    KeystoneUser { username: String },
    /// A MariaDB user of the node's own at the centre, `username`
    /// templated with `host.hostname`, with every privilege on each of
    /// `databases` (each one a control-plane recipe declares) and nothing
    /// else, allowed in over TLS only. The endpoint it connects to is the
    /// recipes' matter, as every other endpoint an edge reaches.
    #[serde(rename_all = "camelCase")]
    DatabaseUser {
        username: String,
        databases: Vec<String>,
    },
    /// One of the control plane's own passwords (declared under
    /// `passwords:` by a control-plane service), the same for every node:
    /// a secret both sides must share, such as nova's metadata secret.
    ControlPlaneSecret,
}

/// What a node's RabbitMQ user may do on the vhost `/`: regular expressions
/// over exchange and queue names, as `rabbitmqctl set_permissions` takes
/// them, and optionally which routing and binding keys it may use on one
/// topic exchange (`set_topic_permissions`). Each is templated with
/// `host.hostname` and `host.hostnamePattern` (the host name with the
/// characters that mean something in a regular expression escaped), so a
/// node's user can be limited to its own names; each must match whole
/// names (`^(...)$`), which the recipe tests check.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct RabbitPermissionsRecipe {
    pub configure: String,
    pub write: String,
    pub read: String,
    pub topic: Option<TopicPermissionsRecipe>,
}

/// Routing keys a user may publish (`write`) and bind (`read`) on one topic
/// exchange.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct TopicPermissionsRecipe {
    pub exchange: String,
    pub write: String,
    pub read: String,
}
