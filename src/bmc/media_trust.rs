//! Making the BMC verify the server it fetches an ISO from: the CA goes to
//! the virtual drive's `Certificates` collection and `VerifyCertificate`
//! is switched on (Redfish `VirtualMedia` 1.4). Many BMCs fetch over HTTPS
//! without checking the server at all; an ISO that carries a join token
//! should only go to the server the operator meant.

use super::client::{Client, Request};
use super::discover::Slot;
use anyhow::{Context, Result};
use reqwest::Method;
use serde::Deserialize;
use serde_json::json;

/// Whether the BMC now verifies the media server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MediaTrust {
    /// It verifies against the CA (uploaded now or before).
    Verified,
    /// It offers no way to: why.
    Unsupported(String),
}

#[derive(Deserialize)]
#[serde(rename_all = "PascalCase")]
struct Certificate {
    #[serde(default)]
    certificate_string: Option<String>,
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
    let wanted = normalise(ca_pem);
    let mut present = false;
    for m in super::collection::members(client, &certs.odata_id)
        .with_context(|| format!("listing the CA certificates of virtual media {}", slot.id()))?
    {
        let cert = client.get::<Certificate>(&m.odata_id)?.value;
        if cert.certificate_string.as_deref().map(normalise) == Some(wanted.clone()) {
            present = true;
            break;
        }
    }
    if !present {
        let body = json!({"CertificateString": ca_pem, "CertificateType": "PEM"});
        let sent = client.send(&Request::new(Method::POST, &certs.odata_id).json(&body));
        // The Redfish emulator keeps one certificate and answers 409
        // "already exists" for a second; if it is another CA than dcn's,
        // the BMC's fetch of the ISO fails verification and says so.
        let exists = |e: &anyhow::Error| {
            e.downcast_ref::<super::error::RedfishError>()
                .is_some_and(|re| re.status == 409)
        };
        match sent {
            Ok(_) => {}
            Err(e) if exists(&e) => tracing::info!(
                "virtual media {} already holds a CA certificate; the ISO's fetch checks it",
                slot.id()
            ),
            Err(e) => {
                return Err(e).with_context(|| {
                    format!(
                        "adding the dcn CA to virtual media {}'s certificates",
                        slot.id()
                    )
                });
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

/// A PEM text without its line breaks and surrounding space, to compare.
fn normalise(pem: &str) -> String {
    pem.split_whitespace().collect()
}
