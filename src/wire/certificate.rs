//! The certificate part of the join protocol: a node's certificate check
//! (`POST /v1/nodes/{hostname}/certificate`) and the CAs the control plane's
//! clients trust (`GET /v1/ca`).

use serde::{Deserialize, Serialize};

/// The suffix of a node's certificate resource under [`super::NODES_PATH`].
pub const CERTIFICATE_SUFFIX: &str = "/certificate";
/// Largest certificate check body accepted (a CSR and a few pins).
pub const CERTIFICATE_MAX_BODY: usize = 8 * 1024;
/// The most CA pins a node reports.
pub const MAX_TRUSTED_CAS: usize = 8;
/// The CA certificates the control plane's clients trust.
pub const CA_PATH: &str = "/v1/ca";

/// What a node sends when it checks its certificate.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct CertificateCheck {
    /// The pins (`sha256:…`) of the CAs the node trusts now.
    pub trusted_cas: Vec<String>,
    /// A CSR for the node's own key, when its certificate is due.
    #[serde(default)]
    pub csr: Option<String>,
    /// `sha256:<hex>` of the DER of the certificate the node holds, so the
    /// centre can tell one it did not record (a control plane restored from
    /// a backup older than the node's last renewal).
    #[serde(default)]
    pub holds: Option<String>,
}

/// The answer to a [`CertificateCheck`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct CertificateReply {
    /// Every CA certificate (PEM) the node must trust now, the newest
    /// first.
    pub trusted_cas: Vec<String>,
    /// Renew once this many percent of the certificate's validity are left.
    pub renew_when_left: u8,
    /// How often to check again, in seconds.
    pub check_every: u64,
    /// The renewed certificate, when the check carried a CSR.
    #[serde(default)]
    pub certificate: Option<String>,
    /// The centre does not know the certificate the node holds (its OVN
    /// southbound would refuse it): renew now, whatever its dates.
    #[serde(default)]
    pub renew_now: bool,
}

/// `GET /v1/ca`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct TrustedCas {
    /// Every CA certificate (PEM) the control plane's clients trust, the
    /// newest first.
    pub trusted_cas: Vec<String>,
}
