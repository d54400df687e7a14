//! A node's certificate through the join service. On each check the node
//! (with its node secret) reports the CAs it trusts, and, when its
//! certificate is due, sends a CSR for the key it has held since it joined:
//! the centre signs it with a new CA made for that certificate alone
//! ([`crate::openstack::southbound::admission`]), which the OVN southbound admits from
//! then on, beside the earlier one until that expires. The reply carries
//! the CAs the node must trust now, which is how a CA rotation reaches
//! every node before anything is signed with the new CA.
//!
//! A node's secret does not expire: a node that was off past its
//! certificate's end renews the same way when it is back.

use super::handlers::{Refusal, authenticated_node, internal, issue, node_policy, refuse};
use crate::centre::sites::{NodeRecord, Registry, southbound_members};
use crate::certs::authority::Authorities;
use crate::host::Host;
use crate::openstack::southbound::admission;
use crate::pki::Pin;
use crate::wire::{CertificateCheck, CertificateReply, MAX_TRUSTED_CAS, TrustedCas};
use sha2::Digest;

/// `POST /v1/nodes/{hostname}/certificate`.
pub fn check(
    host: &Host,
    hostname: &str,
    bearer: Option<&str>,
    body: &[u8],
) -> Result<CertificateReply, Refusal> {
    let (check, pins) = parse(body)?;
    let policy = node_policy(host)?;
    let registry = Registry::new(&host.files);
    let lock = registry.lock().map_err(internal)?;
    let (mut node, _) = authenticated_node(&registry, hostname, bearer)?;
    let mut changed = node.trusted_cas != pins;
    node.trusted_cas = pins;

    let mut certificate = None;
    if let Some(csr) = &check.csr {
        certificate = Some(renew(&mut node, csr, hostname, policy.node)?);
        changed = true;
    }
    // A node holding a certificate the centre did not issue it (a control
    // plane restored from a backup older than the node's last renewal)
    // is told to renew now: the SB admits only the recorded one's CA.
    let recorded = node
        .certificate
        .as_deref()
        .and_then(|pem| crate::pki::pem_der(pem).ok())
        .map(|der| format!("sha256:{}", hex::encode(sha2::Sha256::digest(der))));
    let renew_now = certificate.is_none()
        && check.holds.is_some()
        && recorded.is_some()
        && check.holds != recorded;
    if changed {
        registry.save_node(&node).map_err(internal)?;
    }
    drop(lock);
    if certificate.is_some() {
        southbound_members::admit(&host.files).map_err(internal)?;
        tracing::info!("renewed the certificate of node {hostname}");
    }
    Ok(CertificateReply {
        trusted_cas: Authorities::new(&host.files).trusted().map_err(internal)?,
        renew_when_left: policy.renew_when_left,
        check_every: policy.check_interval().as_secs(),
        certificate,
        renew_now,
    })
}

/// The check in `body`, and the pins of the CAs the node trusts.
fn parse(body: &[u8]) -> Result<(CertificateCheck, Vec<String>), Refusal> {
    let check: CertificateCheck = serde_json::from_slice(body)
        .map_err(|e| refuse(400, "bad-request", format!("not a certificate check: {e}")))?;
    if check.trusted_cas.len() > MAX_TRUSTED_CAS {
        return Err(refuse(
            400,
            "bad-request",
            format!("a node trusts at most {MAX_TRUSTED_CAS} CAs"),
        ));
    }
    let pins = (check.trusted_cas.iter())
        .map(|p| p.parse::<Pin>().map(|p| p.to_string()))
        .collect::<Result<Vec<String>, _>>()
        .map_err(|e| refuse(400, "bad-request", format!("a trusted CA pin: {e}")))?;
    Ok((check, pins))
}

/// Sign `csr` for `node` with a CA of its own, kept in its record beside
/// the earlier ones still valid; the certificate.
fn renew(
    node: &mut NodeRecord,
    csr: &str,
    hostname: &str,
    validity: std::time::Duration,
) -> Result<String, Refusal> {
    let address = node.address.parse().map_err(|_| {
        internal(anyhow::anyhow!(
            "the recorded address of {hostname} is damaged"
        ))
    })?;
    let issued = issue(csr, hostname, address, validity)?;
    // Renewal keeps the node's key; a new key is a new host to the
    // centre, which joins again.
    if node.key_pin.as_deref() != Some(issued.key_pin.as_str()) {
        return Err(refuse(
            409,
            "key-changed",
            format!(
                "the CSR is not for the key {hostname} joined with; a node renews its certificate with the same key (a host with a new key joins again)"
            ),
        ));
    }
    let mut previous = std::mem::take(&mut node.previous_southbound_cas);
    previous.extend(node.southbound_ca.take());
    node.previous_southbound_cas = admission::unexpired(previous);
    node.southbound_ca = Some(issued.ca_pem);
    node.certificate = Some(issued.cert_pem.clone());
    Ok(issued.cert_pem)
}

/// `GET /v1/ca`: public knowledge, which a node that missed a rotation
/// checks against the pin its operator gives.
pub fn trusted_cas(host: &Host) -> Result<TrustedCas, Refusal> {
    Ok(TrustedCas {
        trusted_cas: Authorities::new(&host.files).trusted().map_err(internal)?,
    })
}
