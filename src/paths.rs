//! Where dcn keeps its state on a host. All paths are system paths, resolved
//! under the host's root directory by [`crate::host::Files`].

/// dcn's state: secrets, PKI, journal. 0700.
pub const STATE_DIR: &str = "/var/lib/dcn";
/// Generated passwords. 0700.
pub const SECRETS_DIR: &str = "/var/lib/dcn/secrets";
/// The CA and certificates. 0700.
pub const PKI_DIR: &str = "/var/lib/dcn/pki";
/// The deployment journal (what ran, when, how long).
pub const JOURNAL_FILE: &str = "/var/lib/dcn/journal.json";
/// Records of database schema syncs that started and have not ended.
pub const SCHEMA_SYNCS_DIR: &str = "/var/lib/dcn/schema-syncs";
/// Where dcn's binary lives on every host it set up (the units that run
/// dcn run it from there): the control plane, an edge, the edge image.
pub const DCN_BINARY: &str = "/usr/local/bin/dcn";
/// Operator-facing files (clouds.yaml, openrc).
pub const ETC_DIR: &str = "/etc/dcn";

/// The CA certificate.
pub const CA_CERT: &str = "/var/lib/dcn/pki/ca.crt";
/// The CA private key.
pub const CA_KEY: &str = "/var/lib/dcn/pki/ca.key";

/// Certificate path of the leaf called `name`.
pub fn leaf_cert(name: &str) -> String {
    format!("{PKI_DIR}/{name}.crt")
}

/// Private key path of the leaf called `name`.
pub fn leaf_key(name: &str) -> String {
    format!("{PKI_DIR}/{name}.key")
}

/// Where the CA certificate is readable by everyone on every host.
pub const PUBLIC_CA: &str = "/etc/dcn/ca.crt";
