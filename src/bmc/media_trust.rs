//! Making the BMC verify the server it fetches an ISO from: the CA goes to
//! the virtual drive's `Certificates` collection and `VerifyCertificate`
//! is switched on (Redfish `VirtualMedia` 1.4). Many BMCs fetch over HTTPS
//! without checking the server at all; an ISO that carries a join token
//! should only go to the server the operator meant.

use super::client::{Client, Request};
use super::discover::Slot;
use anyhow::{Context, Result, bail};
use reqwest::Method;
use serde_json::{Value, json};

/// Whether the BMC now verifies the media server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MediaTrust {
    /// It verifies against the CA (uploaded now or before).
    Verified,
    /// It offers no way to: why.
    Unsupported(String),
}

/// Have `slot` verify image servers against `ca_pem`. Idempotent: a CA
/// already there is not added again.
pub fn trust_media_ca(client: &Client, slot: &Slot, ca_pem: &str) -> Result<MediaTrust> {
    let (Some(certs), Some(verifying)) = (&slot.media.certificates, slot.media.verify_certificate)
    else {
        return Ok(MediaTrust::Unsupported(format!(
            "virtual media {} has no Certificates or VerifyCertificate",
            slot.id()
        )));
    };
    let wanted = crate::pki::pem_der(ca_pem).context("the CA to give the BMC")?;
    if !matches!(
        holding(client, slot, &certs.odata_id, &wanted)?,
        Some(Holding::Ours)
    ) {
        let body = json!({"CertificateString": ca_pem, "CertificateType": "PEM"});
        let sent = client.send(&Request::new(Method::POST, &certs.odata_id).json(&body));
        if let Err(e) = sent {
            // A BMC with room for one certificate (the Redfish emulator is
            // one) answers 409 when it holds another: dcn does not replace
            // a CA it did not put there. A concurrent run may have added
            // dcn's meanwhile, which is fine.
            let conflict = e.is_status(409);
            let theirs = if conflict {
                holding(client, slot, &certs.odata_id, &wanted)?
            } else {
                None
            };
            match theirs {
                Some(Holding::Ours) => {}
                Some(Holding::Others(paths)) => bail!(
                    "virtual media {} holds another CA certificate ({}) and has no room for dcn's: \
                     remove it (DELETE it on the BMC) if nothing else needs it, then run dcn again",
                    slot.id(),
                    paths.join(", ")
                ),
                None => {
                    return Err(e).with_context(|| {
                        format!(
                            "adding the dcn CA to virtual media {}'s certificates",
                            slot.id()
                        )
                    });
                }
            }
        }
    }
    if !verifying {
        let body = json!({"VerifyCertificate": true});
        client
            .send(&Request::new(Method::PATCH, &slot.path).json(&body))
            .with_context(|| {
                format!(
                    "switching on certificate checks of virtual media {}",
                    slot.id()
                )
            })?;
    }
    Ok(MediaTrust::Verified)
}

/// What a virtual drive's certificate collection holds, as dcn sees it.
enum Holding {
    /// dcn's CA, among others or alone.
    Ours,
    /// Only other certificates, by their paths.
    Others(Vec<String>),
}

/// Whether the collection at `certs` holds the certificate `wanted` (DER):
/// `None` when it is empty. Certificates are compared by their DER bytes,
/// read from the BMC's raw answer: the cleaned copy [`Client::get`] gives
/// has its line breaks escaped for the terminal, and is never equal.
fn holding(client: &Client, slot: &Slot, certs: &str, wanted: &[u8]) -> Result<Option<Holding>> {
    let members = super::collection::members(client, certs)
        .with_context(|| format!("listing the CA certificates of virtual media {}", slot.id()))?;
    let mut others = Vec::new();
    for m in members {
        let reply = client.send(&Request::new(Method::GET, &m.odata_id))?;
        let cert: Value = serde_json::from_str(&reply.body)
            .with_context(|| format!("GET {}: the BMC's answer is not JSON", m.odata_id))?;
        let der = cert["CertificateString"]
            .as_str()
            .and_then(|pem| crate::pki::pem_der(pem).ok());
        if der.as_deref() == Some(wanted) {
            return Ok(Some(Holding::Ours));
        }
        others.push(m.odata_id);
    }
    Ok((!others.is_empty()).then_some(Holding::Others(others)))
}
