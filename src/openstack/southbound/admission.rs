//! Who may write the OVN southbound database from across the WAN: each
//! node's certificate, and the list of CAs the southbound trusts (the
//! centre's registry says who the members are).
//!
//! - **Authorisation**: edges reach the SB through its SSL listener with
//!   OVN's `ovn-controller` RBAC role (the ovn-central recipe), so a node can
//!   change only its own `Chassis`, `Chassis_Private` and `Encap` rows: its
//!   certificate's CN is its chassis name.
//! - **Revocation**: ovsdb-server has no CRL, so each node's certificate is
//!   signed by a CA of its own, made for that one certificate (its key is
//!   thrown away). The SB trusts exactly the CAs of current members,
//!   listed in [`CLIENT_CAS`]; ovsdb-server reloads that file when it
//!   changes. Removing a node drops its CA from the list, makes the SB drop
//!   its connections (everyone reconnects within seconds; the removed node
//!   can no longer) and deletes its chassis.
//!
//! The file always holds one more CA, whose key nobody has: ovsdb-server
//! keeps its old list when the file holds none.

use crate::host::{FileSpec, Files};
use crate::pki::{CertificateAuthority, LeafRequest, Pin, Usage};
use anyhow::{Context, Result};
use std::net::IpAddr;

/// The CAs the SB's SSL listener trusts (its `set-ssl` CA file).
pub const CLIENT_CAS: &str = "/etc/ovn/dcn/sb-clients.pem";

/// A node's certificate for the SB, with the CA that alone signed it.
pub struct NodeCertificate {
    pub cert_pem: String,
    pub ca_pem: String,
    /// Pin of the node's key (from its CSR).
    pub key_pin: String,
    /// The key itself (an uncompressed P-256 point when `p256`), for the
    /// proof that the node holds it.
    pub public_key: Vec<u8>,
    pub p256: bool,
}

/// Sign a node's CSR, for a certificate valid for `validity`, with a CA
/// made for it alone and valid as long (so the SB stops trusting that CA
/// when the certificate ends). The CSR's signature is checked (the
/// requester holds the key); only its public key is used.
pub fn issue(
    csr_pem: &str,
    hostname: &str,
    address: IpAddr,
    validity: std::time::Duration,
) -> Result<NodeCertificate> {
    let validity = crate::pki::lifetime::validity(validity);
    let ca = CertificateAuthority::generate_for(&format!("dcn node {hostname}"), validity)?;
    let cert_pem = ca.sign_csr_for(
        csr_pem,
        &LeafRequest {
            common_name: hostname.to_string(),
            dns_names: vec![hostname.to_string()],
            ip_addresses: vec![address],
            usage: Usage::Client,
        },
        validity,
    )?;
    let key_pin = Pin::of_cert_pem(&cert_pem)?.to_string();
    let csr = rcgen::CertificateSigningRequestParams::from_pem(csr_pem)
        .context("reading the certificate signing request")?;
    use rcgen::PublicKeyData;
    Ok(NodeCertificate {
        cert_pem,
        ca_pem: ca.cert_pem().to_string(),
        key_pin,
        public_key: csr.public_key.der_bytes().to_vec(),
        p256: csr.public_key.algorithm() == &rcgen::PKCS_ECDSA_P256_SHA256,
    })
}

/// A node the southbound admits: the CA of its current certificate (even
/// when expired: the node renews with it) and those of earlier ones.
pub struct Member<'a> {
    pub current_ca: &'a str,
    pub previous_cas: &'a [String],
}

/// Write [`CLIENT_CAS`]: the CAs of `members` (earlier ones until they
/// expire) and the keyless one. The file is rewritten only when that list
/// changes (ovsdb-server reloads it each time).
pub fn write_client_cas(files: &Files, members: &[Member]) -> Result<()> {
    let mut cas: Vec<String> = Vec::new();
    for member in members {
        cas.push(format!("{}\n", member.current_ca.trim_end()));
        for previous in unexpired(member.previous_cas.to_vec()) {
            cas.push(format!("{}\n", previous.trim_end()));
        }
    }
    let existing = files.read_string(CLIENT_CAS)?.unwrap_or_default();
    let mut listed = crate::pki::split_pem(&existing);
    // The last one is the keyless CA.
    if listed.pop().is_some() && listed == cas {
        return Ok(());
    }
    let keyless = CertificateAuthority::generate("dcn: admits no one")?;
    let mut text = String::from("# Written by dcn: the CAs of the edge nodes the OVN SB admits.\n");
    for ca in &cas {
        text.push_str(ca);
    }
    text.push_str(keyless.cert_pem().trim_end());
    text.push('\n');
    if !files.exists("/etc/ovn/dcn")? {
        files.ensure_dir("/etc/ovn/dcn", &FileSpec::public_dir())?;
    }
    files.write(CLIENT_CAS, text.as_bytes(), &FileSpec::public())?;
    Ok(())
}

/// The CAs of `cas` that have not expired (each node CA lives as long as
/// the one certificate it signed).
pub fn unexpired(cas: Vec<String>) -> Vec<String> {
    let now = std::time::SystemTime::now();
    cas.into_iter()
        .filter(|pem| {
            crate::pki::CertInfo::from_pem(pem)
                .is_ok_and(|i| crate::pki::lifetime::system_time(i.not_after) > now)
        })
        .collect()
}
