//! Virtual media: `VirtualMedia.InsertMedia` and `VirtualMedia.EjectMedia`,
//! with the vendor workarounds each named where it is applied.

use super::client::{Client, Request, RetryOn, SendError};
use super::discover::Slot;
use super::error::RedfishError;
use anyhow::{Context, Result, bail};
use reqwest::Method;
use serde_json::{Value, json};
use std::time::Duration;

/// Attempts of an InsertMedia that fails with 5xx.
const INSERT_SERVER_ERROR_ATTEMPTS: u32 = 3;

/// Insert the image at `url` into `slot`. The BMC fetches the image itself,
/// and some answer only once they have (sushy-tools downloads all of it), so
/// the request may take up to `timeout` (raised by the setting
/// `timeout_from`, if the operator has one).
pub fn insert(
    client: &Client,
    slot: &Slot,
    url: &str,
    timeout: Duration,
    timeout_from: Option<&str>,
) -> Result<()> {
    let target = slot
        .media
        .actions
        .as_ref()
        .and_then(|a| a.insert.as_ref())
        .map(|t| t.target.clone())
        .with_context(|| {
            format!(
                "virtual media {} has no InsertMedia action (BMCs that only take a PATCH of Image, such as the Lenovo SD530, are not supported)",
                slot.id()
            )
        })?;
    let mut payload = InsertPayload {
        url,
        flags: true,
        transfer_protocol: None,
    };
    let mut server_errors = 0;
    loop {
        let body = payload.json();
        let req = Request {
            timeout: Some(timeout),
            timeout_from,
            retry_on: RetryOn::Connect,
            ..Request::new(Method::POST, &target).json(&body)
        };
        let err = match client.send(&req) {
            Ok(_) => return Ok(()),
            Err(e) => e,
        };
        let Some(re) = err.answer() else {
            return Err(err.into());
        };
        if payload.adjust(re) {
            continue;
        }
        if re.is_server_error() && server_errors + 1 < INSERT_SERVER_ERROR_ATTEMPTS {
            // Dell iDRAC answers 5xx to an InsertMedia sent while the
            // previous eject is still finishing; OpenStack Ironic retries
            // the same way (3 attempts).
            server_errors += 1;
            let delay = client.retry().delay(server_errors + 1);
            tracing::info!(
                "InsertMedia failed with {} ({}); Dell iDRAC does this while a previous eject is still finishing. Retrying in {:.1}s (attempt {} of {INSERT_SERVER_ERROR_ATTEMPTS}).",
                re.status,
                re.summary(),
                delay.as_secs_f64(),
                server_errors + 1
            );
            client.pause(delay);
            continue;
        }
        return Err(insert_failed(err, slot, url));
    }
}

/// An InsertMedia the BMC would not do, with where to look.
fn insert_failed(err: SendError, slot: &Slot, url: &str) -> anyhow::Error {
    let hint = if err.is_status(401) || err.is_status(403) {
        String::new()
    } else {
        format!(
            ". The BMC fetches {url} itself: check that the BMC (not only this machine) can reach it"
        )
    };
    anyhow::Error::new(err).context(format!(
        "the BMC could not insert the image into virtual media {}{hint}",
        slot.id()
    ))
}

struct InsertPayload<'a> {
    url: &'a str,
    /// Send `Inserted` and `WriteProtected` (the schema's defaults, said
    /// out loud for BMCs that do not apply defaults).
    flags: bool,
    transfer_protocol: Option<&'static str>,
}

impl InsertPayload<'_> {
    /// Change the payload for a BMC that refused it (4xx) for a parameter
    /// it takes otherwise; false when there is nothing left to change.
    fn adjust(&mut self, re: &RedfishError) -> bool {
        if re.status >= 500 {
            return false;
        }
        if self.flags && (re.mentions("Inserted") || re.mentions("WriteProtected")) {
            // Supermicro X11/X12 reject Inserted/WriteProtected as unknown
            // properties (HPE iLO 4 takes only Image); Dell iDRAC rejects
            // some WriteProtected values. Both default to true anyway.
            tracing::info!(
                "The BMC refused the Inserted/WriteProtected parameters of InsertMedia ({}), as Supermicro X11/X12 and Dell iDRAC BMCs do; retrying with the image URL only.",
                re.summary()
            );
            self.flags = false;
            return true;
        }
        if self.transfer_protocol.is_none() && re.mentions("TransferProtocolType") {
            // AMI MegaRAC-based BMCs (e.g. on Nokia servers) require the
            // optional TransferProtocolType; it follows from the URL.
            let proto = transfer_protocol(self.url);
            tracing::info!(
                "The BMC requires TransferProtocolType in InsertMedia, as AMI MegaRAC-based BMCs (e.g. on Nokia servers) do; retrying with {proto}."
            );
            self.transfer_protocol = Some(proto);
            return true;
        }
        false
    }

    fn json(&self) -> Value {
        let mut body = json!({ "Image": self.url });
        if self.flags {
            body["Inserted"] = json!(true);
            body["WriteProtected"] = json!(true);
        }
        if let Some(p) = self.transfer_protocol {
            body["TransferProtocolType"] = json!(p);
        }
        body
    }
}

/// Redfish's TransferProtocolType for an image URL.
fn transfer_protocol(url: &str) -> &'static str {
    match url
        .split("://")
        .next()
        .unwrap_or("")
        .to_ascii_lowercase()
        .as_str()
    {
        "https" => "HTTPS",
        "nfs" => "NFS",
        "smb" | "cifs" => "CIFS",
        "ftp" => "FTP",
        "sftp" => "SFTP",
        "tftp" => "TFTP",
        _ => "HTTP",
    }
}

/// Eject whatever `slot` holds.
pub fn eject(client: &Client, slot: &Slot) -> Result<()> {
    let target = slot
        .media
        .actions
        .as_ref()
        .and_then(|a| a.eject.as_ref())
        .map(|t| t.target.clone())
        .with_context(|| format!("virtual media {} has no EjectMedia action", slot.id()))?;
    // HPE iLO refuses an EjectMedia without a body (415 Unsupported Media
    // Type); an empty JSON object is what the schema describes and what
    // every BMC takes, so it is always sent.
    let body = json!({});
    let err = match client.send(&Request::new(Method::POST, &target).json(&body)) {
        Ok(_) => return Ok(()),
        Err(e) => e,
    };
    let retryable = err
        .answer()
        .is_some_and(|re| matches!(re.status, 400 | 409) || re.is_server_error());
    if retryable {
        // Some BMCs (HPE iLO, per OpenStack sushy) fail an eject that has
        // nothing left to do; what counts is that the drive is empty.
        if let Ok(now) = slot.reload(client)
            && !now.media.is_inserted()
        {
            tracing::debug!("EjectMedia failed ({err:#}), but {} is empty", slot.id());
            return Ok(());
        }
    }
    Err(err).with_context(|| format!("ejecting virtual media {}", slot.id()))
}

/// Refuse image URLs the BMC cannot use or that would leak a secret.
pub fn check_image_url(url: &str) -> Result<()> {
    let parsed =
        reqwest::Url::parse(url).map_err(|e| anyhow::anyhow!("--iso-url is not a URL ({e})"))?;
    if !parsed.username().is_empty() || parsed.password().is_some() {
        // Not echoing it: it holds credentials.
        bail!(
            "--iso-url must not carry credentials: they would be shown by the BMC and in logs; serve the image without authentication on a network only the BMCs reach"
        );
    }
    if parsed.host_str().is_none() {
        bail!("--iso-url {url} names no host");
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn payloads() {
        let mut p = InsertPayload {
            url: "http://10.0.0.1:8080/edge.iso",
            flags: true,
            transfer_protocol: None,
        };
        assert_eq!(
            p.json(),
            json!({"Image": "http://10.0.0.1:8080/edge.iso", "Inserted": true, "WriteProtected": true})
        );
        p.flags = false;
        p.transfer_protocol = Some(transfer_protocol(p.url));
        assert_eq!(
            p.json(),
            json!({"Image": "http://10.0.0.1:8080/edge.iso", "TransferProtocolType": "HTTP"})
        );
        assert_eq!(transfer_protocol("HTTPS://x/y.iso"), "HTTPS");
        assert_eq!(transfer_protocol("nfs://x/y.iso"), "NFS");
    }

    #[test]
    fn image_urls() {
        assert!(check_image_url("http://10.0.0.1:8080/edge.iso").is_ok());
        let e = check_image_url("http://u:hunter2@10.0.0.1/edge.iso").unwrap_err();
        assert!(!e.to_string().contains("hunter2"));
        assert!(check_image_url("edge.iso").is_err());
    }
}
