//! Every certificate this host holds or, on the control plane, has
//! recorded for its nodes, with how long each has left: what `dcn cert
//! list` and `dcn status` show.

use crate::centre::renewal::leaves::LEAVES;
use crate::centre::sites::Registry;
use crate::certs::authority::{Authorities, NEXT_CERT};
use crate::certs::inventory::CertRow;
use crate::deployment::Deployment;
use crate::host::Files;
use crate::pki::CertInfo;
use anyhow::{Context, Result};
use std::time::SystemTime;

fn row_of(
    files: &Files,
    path: &str,
    owner: &str,
    name: &str,
    renew: u8,
    now: SystemTime,
) -> Result<Option<CertRow>> {
    let Some(pem) = files.read_string(path)? else {
        return Ok(None);
    };
    let info = CertInfo::from_pem(&pem).with_context(|| format!("reading {path}"))?;
    Ok(Some(CertRow::new(owner, name, &info, renew, now)))
}

/// Every certificate this host knows of, at `now`.
pub fn list(files: &Files, now: SystemTime) -> Result<Vec<CertRow>> {
    let deployment = Deployment::load(files)?
        .context("dcn has set up nothing on this host: run `dcn standalone init` or `dcn join`")?;
    let mut rows = Vec::new();
    if deployment.roles.iter().any(|r| r == "controller") {
        let config = crate::deployment::saved_config(files)?;
        let renew = config.certificates.renew_when_left.0;
        let cp = "control plane";
        // CAs: renewal of a CA is a rotation, due at the same point.
        if let Some(r) = row_of(files, crate::paths::CA_CERT, cp, "ca", renew, now)? {
            rows.push(r);
        }
        if Authorities::new(files).next()?.is_some()
            && let Some(r) = row_of(files, NEXT_CERT, cp, "ca (next)", renew, now)?
        {
            rows.push(r);
        }
        for (name, _, _) in LEAVES {
            if let Some(r) = row_of(files, &crate::paths::leaf_cert(name), cp, name, renew, now)? {
                rows.push(r);
            }
        }
        for node in Registry::new(files).nodes()? {
            let Some(pem) = &node.certificate else {
                continue;
            };
            let info = CertInfo::from_pem(pem).with_context(|| {
                format!("reading the recorded certificate of {}", node.hostname)
            })?;
            rows.push(CertRow::new(&node.hostname, "node", &info, renew, now));
        }
    } else {
        let renew = node_renewal_point(files)?;
        let host = deployment.hostname.as_str();
        if let Some(r) = row_of(
            files,
            crate::edge::join::edge::NODE_CERT,
            host,
            "node",
            renew,
            now,
        )? {
            rows.push(r);
        }
    }
    Ok(rows)
}

/// The renewal point an edge last heard from the centre.
fn node_renewal_point(files: &Files) -> Result<u8> {
    #[derive(serde::Deserialize)]
    #[serde(rename_all = "camelCase")]
    struct Known {
        renew_when_left: u8,
    }
    Ok(files
        .read_string(crate::edge::join::node_cert::STATE)?
        .and_then(|t| serde_json::from_str::<Known>(&t).ok())
        .map_or(33, |k| k.renew_when_left))
}
