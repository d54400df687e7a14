//! `manifest.yaml`: what an edge host needs to know about its control plane
//! and its site. Field names are camelCase; unknown fields are refused.
//! `docs/bundle-format.md` describes every field.

use super::{DIGESTED_MEMBERS, FORMAT_VERSION, token};
use crate::recipes::Recipes;
use crate::types::endpoints::{HttpsUrl, Sha256Digest, TlsEndpoint, timestamp};
use crate::types::{Hostname, IniText, RegionName, SiteName};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::net::IpAddr;
use std::time::SystemTime;

/// The manifest of a join bundle.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Manifest {
    /// Always [`FORMAT_VERSION`] for what this dcn writes.
    pub format_version: u32,
    /// The edge site (availability zone) a host joining with it lands in.
    pub site: SiteName,
    /// When the bundle was exported. Written in whole seconds.
    #[serde(with = "timestamp")]
    pub created_at: SystemTime,
    /// When the bundle, and its join token, stop being accepted.
    #[serde(with = "timestamp")]
    pub not_after: SystemTime,
    pub control_plane: ControlPlaneInfo,
    /// Lines for the edge's /etc/hosts, so names in the endpoints resolve
    /// without DNS.
    #[serde(default)]
    pub hosts: Vec<HostsEntry>,
    /// Operator INI text per edge service, written to its `*.conf.d/`.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub custom_service_config: CustomServiceConfig,
    /// Whether the edge gives every instance a config drive (the
    /// control plane's `zones.edgeConfigDrive`). Absent: yes.
    #[serde(default = "yes")]
    pub config_drive: bool,
    /// CA certificates (PEM) the host trusts besides `ca.crt`, which alone
    /// signs and is pinned: while the control plane moves to a new CA
    /// (`dcn ca rotate`), `ca.crt` is the new one and this holds the one
    /// its services still present. Absent otherwise.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub also_trusted: Vec<String>,
    /// The public id of the join token in the `token` member.
    pub token_id: String,
    /// `sha256:<hex>` of each other member's bytes (`ca.crt`, `token`). The
    /// writer fills this in.
    pub members: BTreeMap<String, Sha256Digest>,
}

/// The most CAs a bundle trusts besides `ca.crt` (one during a rotation).
pub const MAX_ALSO_TRUSTED: usize = 2;

fn yes() -> bool {
    true
}

/// How an edge reaches the control plane.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct ControlPlaneInfo {
    /// The join service (`dcn serve`) that turns the token into the host's
    /// credentials and certificate.
    pub join_endpoint: HttpsUrl,
    /// Keystone region of every endpoint.
    pub region: RegionName,
    /// What the control plane's services export to edges, by export name
    /// (`identity`, `messaging`, `ovnSouthbound`, …): exactly the exports
    /// of the service catalogue (see `crate::recipes::exports`).
    pub exports: BTreeMap<String, TlsEndpoint>,
}

/// One /etc/hosts line.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct HostsEntry {
    pub address: IpAddr,
    pub names: Vec<Hostname>,
}

/// Operator INI text for the services that run on an edge host, by the
/// service's config key in the recipes (`novaCompute`, …). A key that is
/// not an edge service of this dcn's catalogue is refused.
pub type CustomServiceConfig = BTreeMap<String, IniText>;

/// A rule a manifest breaks that its types alone cannot express.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ManifestProblem {
    /// Dotted path of the field, e.g. `hosts[0].names`.
    pub path: String,
    pub message: String,
}

impl Manifest {
    /// Check the rules between fields, service keys against the catalogue
    /// of `recipes`. The writer calls it before writing and the reader
    /// after parsing, so dcn never writes what it refuses.
    pub fn validate(&self, recipes: &Recipes) -> Result<(), ManifestProblem> {
        // The reader refuses another version, older or newer, with advice
        // (BundleError); this keeps the writer to its own.
        if self.format_version != FORMAT_VERSION {
            let v = self.format_version;
            return problem(
                "formatVersion",
                format!("is {v}; this dcn writes {FORMAT_VERSION}"),
            );
        }
        self.validate_against_catalogue(recipes)?;
        if self.not_after <= self.created_at {
            return problem("notAfter", "must be later than createdAt".into());
        }
        for (i, entry) in self.hosts.iter().enumerate() {
            if entry.names.is_empty() {
                let msg = format!("lists no host name for {}", entry.address);
                return problem(&format!("hosts[{i}].names"), msg);
            }
        }
        self.validate_also_trusted()?;
        if let Err(e) = token::check_id(&self.token_id) {
            return problem("tokenId", e.to_string());
        }
        self.validate_members()
    }

    /// Its config keys are the catalogue's edge keys, and its exports
    /// exactly the catalogue's.
    fn validate_against_catalogue(&self, recipes: &Recipes) -> Result<(), ManifestProblem> {
        for key in self.custom_service_config.keys() {
            if let Err(e) = recipes.config_key(key, true) {
                return problem(&format!("customServiceConfig.{key}"), e);
            }
        }
        let exports = recipes.export_names();
        for name in self.control_plane.exports.keys() {
            if !exports.contains(&name.as_str()) {
                let msg = format!(
                    "is not an export of this dcn's service catalogue; it exports {}",
                    exports.join(", ")
                );
                return problem(&format!("controlPlane.exports.{name}"), msg);
            }
        }
        for name in exports {
            if !self.control_plane.exports.contains_key(name) {
                let msg = format!("does not list {name}, which edges of this dcn need");
                return problem("controlPlane.exports", msg);
            }
        }
        Ok(())
    }

    /// At most [`MAX_ALSO_TRUSTED`] more CAs, each one PEM certificate of
    /// a CA that may sign certificates.
    fn validate_also_trusted(&self) -> Result<(), ManifestProblem> {
        if self.also_trusted.len() > MAX_ALSO_TRUSTED {
            let msg = format!(
                "lists {} CAs; a bundle names at most {MAX_ALSO_TRUSTED} besides ca.crt",
                self.also_trusted.len()
            );
            return problem("alsoTrusted", msg);
        }
        for (i, pem) in self.also_trusted.iter().enumerate() {
            let blocks = pem.matches("-----BEGIN ").count();
            let ok = blocks == 1
                && crate::pki::CertInfo::from_pem(pem).is_ok_and(|c| c.is_ca && c.key_cert_sign);
            if !ok {
                let msg = "is not one PEM certificate of a CA that may sign certificates".into();
                return problem(&format!("alsoTrusted[{i}]"), msg);
            }
        }
        Ok(())
    }

    /// The digests of exactly the bundle's digested members.
    fn validate_members(&self) -> Result<(), ManifestProblem> {
        for name in self.members.keys() {
            if !DIGESTED_MEMBERS.contains(&name.as_str()) {
                let msg = format!(
                    "lists {name:?}, which is not a bundle member; it lists exactly {}",
                    DIGESTED_MEMBERS.join(" and ")
                );
                return problem("members", msg);
            }
        }
        for name in DIGESTED_MEMBERS {
            if !self.members.contains_key(name) {
                return problem("members", format!("does not list the digest of {name}"));
            }
        }
        Ok(())
    }

    /// The manifest as YAML: the exact bytes that are signed.
    pub fn to_yaml(&self) -> String {
        serde_yaml::to_string(self).expect("a manifest serialises to YAML")
    }
}
/// A manifest problem at field `path`.
fn problem(path: &str, message: String) -> Result<(), ManifestProblem> {
    Err(ManifestProblem {
        path: path.to_string(),
        message,
    })
}
