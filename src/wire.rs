//! The join protocol between `dcn join` (an edge host) and `dcn serve` (the
//! control plane's join service): JSON over HTTPS, the server's certificate
//! issued by the CA the edge trusts through its bundle (and pin).
//!
//! - `POST /v2/join`: a join token, the host's name and address, and a CSR
//!   (the node's key never leaves it). The reply carries the node's
//!   certificate, a node secret and its site credentials by the names the
//!   edge role's recipes declare ([`crate::recipes::site_credentials`]).
//!   `POST /v1/join` (dcn before site credentials, whose reply had fixed
//!   fields) is refused with `protocol-too-old` and what to do.
//! - `POST /v2/join/challenge`: a fresh [`Challenge`] (no credential). A
//!   host that joined before proves it holds its key *now* by signing one
//!   ([`proof_message`]); without that proof a re-join is refused, whatever
//!   token and CSR come with it.
//! - `GET /v1/nodes/{hostname}`: `Authorization: Bearer <node secret>`; what
//!   the control plane sees of the node (its compute service, cell, aggregate
//!   and resource provider). The edge holds no admin rights to ask itself.
//! - `POST /v1/progress`: a [`ProgressReport`] (the phase an installing or
//!   joining node is in), `Authorization: Bearer <credential>`: the join
//!   token before the node joined, its node secret after. Body at most
//!   [`PROGRESS_MAX_BODY`]; the control plane keeps what it may show
//!   (`crate::centre::sites::progress`).
//! - `GET /v1/nodes/{hostname}/config`: node secret; the node's resolved
//!   site config ([`NodeConfigReply`]): its revision and each edge service's
//!   drop-in.
//! - `POST /v1/nodes/{hostname}/config`: node secret; a [`ConfigApplied`]
//!   (the revision it now runs, or why the fetched one did not apply). Body
//!   at most [`CONFIG_MAX_BODY`].
//! - `POST /v1/nodes/{hostname}/certificate`: node secret; a
//!   [`CertificateCheck`] (the CAs the node trusts, and a CSR for its own
//!   key when its certificate is due). The [`CertificateReply`] carries the
//!   CAs to trust now (two during a CA rotation), when to renew, and the
//!   renewed certificate. Body at most [`CERTIFICATE_MAX_BODY`].
//! - `GET /v1/ca`: no credential; the CA certificates the control plane's
//!   clients trust ([`TrustedCas`]), for a node that missed a CA rotation
//!   and checks them against a pin its operator gives.
//! - `GET /v1/health`: the service's time, for the edge's clock check.
//! - `POST /v1/nodes/{hostname}/upgrade`: node secret; an [`UpgradeCheck`]
//!   (the dcn the node runs, how its upgrade goes, its image cache); the
//!   reply is its [`UpgradeOrder`]. A centre older than this part answers
//!   404, which a node takes as "no orders".
//! - `GET /v1/nodes/{hostname}/release/{id}/{file}`: node secret; a file of
//!   an [`EdgeRelease`] (its dcn binary, its package index, a package), at
//!   most [`RELEASE_CHUNK`] bytes per request (`Range`).

use serde::{Deserialize, Serialize};

mod certificate;
pub use certificate::*;
mod upgrade;
pub use upgrade::*;

pub const JOIN_PATH: &str = "/v2/join";
/// Where a join asks for a [`Challenge`] to sign.
pub const CHALLENGE_PATH: &str = "/v2/join/challenge";
/// Joins of an older dcn, refused with advice.
pub const OLD_JOIN_PATH: &str = "/v1/join";
pub const HEALTH_PATH: &str = "/v1/health";
pub const NODES_PATH: &str = "/v1/nodes/";
pub const PROGRESS_PATH: &str = "/v1/progress";

/// The suffix of a node's config resource under [`NODES_PATH`].
pub const CONFIG_SUFFIX: &str = "/config";
/// Largest config report body accepted.
pub const CONFIG_MAX_BODY: usize = 4 * 1024;

/// Largest progress report body accepted.
pub const PROGRESS_MAX_BODY: usize = 16 * 1024;
/// What the control plane keeps of a report's `detail` (characters).
pub const MAX_DETAIL: usize = 200;
/// What it keeps of a report's `log`: the last lines, each cut short.
pub const MAX_LOG_LINES: usize = 20;
pub const MAX_LOG_LINE: usize = 200;

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
    /// The node key's signature over a fresh challenge: required when the
    /// host joined before (a re-join), checked whenever it is sent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub proof: Option<KeyProof>,
}

/// A fresh challenge from the join service, valid for `expires_in` seconds
/// and for one proof.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Challenge {
    pub challenge: String,
    pub expires_in: u64,
}

/// That the sender holds the key of its CSR now: the key's ECDSA P-256 /
/// SHA-256 signature (ASN.1 DER, base64) over [`proof_message`].
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct KeyProof {
    pub challenge: String,
    pub signature: String,
}

/// What a node signs to prove it holds its key: the challenge, bound to
/// the host name and the join token's id it joins with (a proof made for
/// one host or token is worth nothing for another).
pub fn proof_message(challenge: &str, hostname: &str, token_id: &str) -> Vec<u8> {
    format!("dcn join proof v1\n{challenge}\n{hostname}\n{token_id}\n").into_bytes()
}

/// One site credential: a user of the node's own (RabbitMQ or keystone)
/// or, without a username, a secret shared with the control plane.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SiteCredential {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub username: Option<String>,
    pub password: crate::secrets::Secret,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct JoinReply {
    pub site: String,
    /// The node's certificate (PEM), signed by the CA, for the OVN SB.
    pub node_certificate: String,
    /// Bearer secret for `GET /v1/nodes/{hostname}`.
    pub node_secret: String,
    /// By the names the edge role's recipes declare.
    pub credentials: std::collections::BTreeMap<String, SiteCredential>,
}

/// Sign `challenge` for `hostname` and `token_id` with the node's key: what
/// `dcn join` sends back.
pub fn prove(
    key: &rcgen::KeyPair,
    challenge: &Challenge,
    hostname: &str,
    token_id: &str,
) -> anyhow::Result<KeyProof> {
    use base64::Engine;
    use rcgen::SigningKey;
    let message = proof_message(&challenge.challenge, hostname, token_id);
    let signature = key
        .sign(&message)
        .map_err(|e| anyhow::anyhow!("signing the join challenge with the node key: {e}"))?;
    Ok(KeyProof {
        challenge: challenge.challenge.clone(),
        signature: base64::engine::general_purpose::STANDARD.encode(signature),
    })
}

/// A refusal, with a machine-readable reason and a message for the operator.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ErrorReply {
    /// `token-unknown`, `token-expired`, `token-used-up`, `site-revoked`,
    /// `node-in-other-site`, `node-exists`, `name-reserved`, `proof-required`,
    /// `proof-invalid`, `bad-request`, `rate-limited`, `internal`.
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

/// Where a node is on its way from bare metal to its site's zone, in
/// order. The control plane records some itself ([`Phase::by_centre`]);
/// the node reports the others, and `failed`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Phase {
    /// `dcn site deploy` put the node's ISO in its BMC's virtual media.
    MediaInserted,
    /// … and powered it on, booting once from the media.
    PoweredOn,
    /// The installer ran; its detail is the step it is at.
    InstallerStarted,
    /// The OS is on the disk; the node reboots into it.
    DiskWritten,
    /// `dcn site deploy` took the media out again.
    MediaEjected,
    /// The installed system booted and runs its first-boot join.
    FirstBoot,
    /// `dcn join` started.
    JoinStarted,
    /// `dcn join` is at a step (the detail).
    JoinStep,
    /// The join service answered the node's join.
    Joined,
    /// The placer put the node in its site's aggregate (its join may still
    /// be running).
    InZone,
    /// `dcn join` finished every step on the node.
    JoinFinished,
    /// The node finished its join and the centre sees both its planes up:
    /// its nova-compute service and its OVN chassis.
    Placed,
    /// Something failed: the detail is the reason.
    Failed,
}

impl Phase {
    /// Every phase, in order.
    pub const ALL: [Phase; 13] = [
        Phase::MediaInserted,
        Phase::PoweredOn,
        Phase::InstallerStarted,
        Phase::DiskWritten,
        Phase::MediaEjected,
        Phase::FirstBoot,
        Phase::JoinStarted,
        Phase::JoinStep,
        Phase::Joined,
        Phase::InZone,
        Phase::JoinFinished,
        Phase::Placed,
        Phase::Failed,
    ];

    /// Recorded by the control plane only; a node cannot report it.
    pub fn by_centre(self) -> bool {
        matches!(
            self,
            Phase::MediaInserted
                | Phase::PoweredOn
                | Phase::MediaEjected
                | Phase::Joined
                | Phase::InZone
                | Phase::Placed
        )
    }

    /// Nothing more is expected after it (so it never turns silent).
    pub fn is_final(self) -> bool {
        matches!(self, Phase::Placed | Phase::Failed)
    }

    /// The node reports nothing more after it: its join is done, and the
    /// centre decides whether it is placed.
    pub fn node_is_done(self) -> bool {
        self.is_final() || self == Phase::JoinFinished
    }

    /// Its name on the wire.
    pub fn as_str(self) -> &'static str {
        match self {
            Phase::MediaInserted => "media-inserted",
            Phase::PoweredOn => "powered-on",
            Phase::InstallerStarted => "installer-started",
            Phase::DiskWritten => "disk-written",
            Phase::MediaEjected => "media-ejected",
            Phase::FirstBoot => "first-boot",
            Phase::JoinStarted => "join-started",
            Phase::JoinStep => "join-step",
            Phase::Joined => "joined",
            Phase::InZone => "in-zone",
            Phase::JoinFinished => "join-finished",
            Phase::Placed => "placed",
            Phase::Failed => "failed",
        }
    }
}

impl std::fmt::Display for Phase {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// `POST /v1/progress`: what an installing or joining node reports.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ProgressReport {
    pub hostname: String,
    pub phase: Phase,
    /// The step (`join-step`, `installer-started`) or the reason (`failed`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
    /// The last lines of output, with `failed`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub log: Vec<String>,
}

impl ProgressReport {
    /// The report cut to what the control plane keeps (the detail and each
    /// log line at most [`MAX_DETAIL`]/[`MAX_LOG_LINE`] characters, the last
    /// [`MAX_LOG_LINES`] lines), and then to fewer lines until its JSON fits
    /// in [`PROGRESS_MAX_BODY`].
    pub fn bounded(mut self) -> ProgressReport {
        let cut = |t: &str, max: usize| crate::terminal_text::head(t, max).to_string();
        self.hostname = cut(&self.hostname, 253);
        self.detail = self.detail.map(|d| cut(&d, MAX_DETAIL));
        let skip = self.log.len().saturating_sub(MAX_LOG_LINES);
        self.log = self.log[skip..]
            .iter()
            .map(|l| cut(l, MAX_LOG_LINE))
            .collect();
        while !self.log.is_empty()
            && serde_json::to_vec(&self).map_or(0, |v| v.len()) > PROGRESS_MAX_BODY
        {
            self.log.remove(0);
        }
        self
    }
}

/// The reply to a recorded report.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ProgressAck {
    /// The node's current phase at the control plane now.
    pub phase: Phase,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_report_is_cut_to_what_the_service_accepts() {
        let r = ProgressReport {
            hostname: "n1".into(),
            phase: Phase::Failed,
            detail: Some("d".repeat(1000)),
            // Escaped in JSON as 6 bytes each: 40 lines would be ~48 KiB.
            log: (0..40).map(|_| "\u{1}".repeat(1000)).collect(),
        }
        .bounded();
        assert_eq!(r.detail.unwrap().len(), MAX_DETAIL);
        assert!(r.log.len() < MAX_LOG_LINES && !r.log.is_empty());
        assert!(r.log.iter().all(|l| l.chars().count() == MAX_LOG_LINE));
        let r2 = ProgressReport {
            hostname: "n1".into(),
            phase: Phase::Failed,
            detail: None,
            log: (0..40).map(|i| format!("line {i}")).collect(),
        };
        let json = serde_json::to_vec(&r2.clone().bounded()).unwrap();
        assert!(json.len() <= PROGRESS_MAX_BODY);
        assert_eq!(r2.bounded().log[0], "line 20", "the last lines are kept");
        let names: Vec<String> = Phase::ALL
            .iter()
            .map(|p| serde_json::to_string(p).unwrap())
            .collect();
        assert_eq!(names[0], "\"media-inserted\"");
        for (p, n) in Phase::ALL.iter().zip(&names) {
            assert_eq!(format!("\"{p}\""), *n, "Display is the wire name");
        }
    }
}

/// A node's resolved site config.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct NodeConfigReply {
    /// The site's config revision (0: none set).
    pub revision: u64,
    /// Each edge service's drop-in text, by config key; a service that is
    /// absent has no drop-in.
    pub services: std::collections::BTreeMap<String, String>,
}

/// What a node reports after it fetched a revision.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ConfigApplied {
    /// The revision the node runs now.
    pub revision: u64,
    /// Why the revision it fetched did not apply (cut to [`MAX_DETAIL`]).
    #[serde(default)]
    pub error: Option<String>,
}
