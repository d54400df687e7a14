//! The join protocol between `dcn join` (an edge host) and `dcn serve` (the
//! control plane's join service): JSON over HTTPS, the server's certificate
//! issued by the CA the edge trusts through its bundle (and pin).
//!
//! - `POST /v1/join`: a join token, the host's name and address, and a CSR
//!   (the node's key never leaves it). The reply carries the site's
//!   credentials, the node's certificate and a node secret.
//! - `GET /v1/nodes/{hostname}`: `Authorization: Bearer <node secret>`; what
//!   the control plane sees of the node (its compute service, cell, aggregate
//!   and resource provider). The edge holds no admin rights to ask itself.
//! - `GET /v1/health`: the service's time, for the edge's clock check.

use serde::{Deserialize, Serialize};

pub const JOIN_PATH: &str = "/v1/join";
pub const HEALTH_PATH: &str = "/v1/health";
pub const NODES_PATH: &str = "/v1/nodes/";

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct JoinRequest {
    /// `<id>.<secret>` from the bundle.
    pub token: String,
    pub hostname: String,
    /// The address the host's services use (`my_ip`, OVN encapsulation).
    pub address: String,
    /// PEM certificate signing request for the node's key.
    pub csr: String,
    pub dcn_version: String,
}

/// Credentials of a user (RabbitMQ or keystone).
#[derive(Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct UserCredentials {
    pub username: String,
    pub password: String,
}

impl std::fmt::Debug for UserCredentials {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "UserCredentials {{ username: {:?}, password: <redacted> }}",
            self.username
        )
    }
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct JoinReply {
    pub site: String,
    /// The node's certificate (PEM), signed by the CA, for the OVN SB.
    pub node_certificate: String,
    /// Bearer secret for `GET /v1/nodes/{hostname}`.
    pub node_secret: String,
    pub messaging: UserCredentials,
    pub service_user: UserCredentials,
    /// nova's metadata proxy shared secret.
    pub metadata_secret: String,
}

/// A refusal, with a machine-readable reason and a message for the operator.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ErrorReply {
    /// `token-unknown`, `token-expired`, `token-used-up`, `site-revoked`,
    /// `node-in-other-site`, `bad-request`, `rate-limited`, `internal`.
    pub error: String,
    pub message: String,
}

/// What the control plane sees of a node.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct NodeStatus {
    pub site: String,
    /// `up`, `down` or `missing`.
    pub compute_service: String,
    pub cell_mapped: bool,
    pub in_aggregate: bool,
    pub resource_provider: bool,
}

impl NodeStatus {
    /// Everything the join waits for.
    pub fn ready(&self) -> bool {
        self.compute_service == "up"
            && self.cell_mapped
            && self.in_aggregate
            && self.resource_provider
    }
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Health {
    /// The control plane's clock, RFC 3339.
    pub time: String,
}
