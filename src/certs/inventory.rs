//! Every certificate dcn issued that this host knows of, for `dcn cert
//! list`, `dcn status` and the node views: on the control plane its CAs,
//! its TLS certificates and each node's certificate (as the centre last
//! issued it); on an edge its own.

use super::authority::{Authorities, NEXT_CERT};
use super::policy::{Standing, left, standing, system_time};
use crate::deployment::Deployment;
use crate::host::Files;
use crate::pki::{CertInfo, Pin};
use crate::sites::Registry;
use anyhow::{Context, Result};
use serde::Serialize;
use std::time::{Duration, SystemTime};

/// Warn about a certificate with less than this left…
pub const WARN_BEFORE: Duration = Duration::from_secs(30 * 24 * 3600);

/// One certificate.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct CertRow {
    /// `control plane`, or the node's host name.
    pub owner: String,
    /// `ca`, `ca (next)`, `api`, `rabbitmq`, `ovn-sb`, `join`, `node`.
    pub name: String,
    pub subject: String,
    pub issuer: String,
    pub serial: String,
    /// RFC 3339.
    pub not_after: String,
    /// Seconds of validity left (0 once expired).
    pub seconds_left: u64,
    /// `ok`, `renewal due`, `expired`.
    pub state: String,
    /// The CA's pin, for CAs.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pin: Option<String>,
}

impl CertRow {
    pub fn new(
        owner: &str,
        name: &str,
        info: &CertInfo,
        renew_when_left: u8,
        now: SystemTime,
    ) -> CertRow {
        CertRow {
            owner: owner.to_string(),
            name: name.to_string(),
            subject: info.subject.clone(),
            issuer: info.issuer.clone(),
            serial: info.serial.clone(),
            not_after: crate::timefmt::rfc3339(system_time(info.not_after)),
            seconds_left: left(info, now).as_secs(),
            state: match standing(info, renew_when_left, now) {
                Standing::Good { .. } => "ok",
                Standing::Due => "renewal due",
                Standing::Expired => "expired",
            }
            .to_string(),
            pin: info
                .is_ca
                .then(|| Pin::of_spki_der(&info.spki_der).to_string()),
        }
    }

    /// Validity left, as people read it (`87d`, `4m 10s`, `expired`).
    pub fn left_shown(&self) -> String {
        if self.seconds_left == 0 {
            return "expired".into();
        }
        let s = self.seconds_left;
        if s >= 2 * 24 * 3600 {
            format!("{}d", s / (24 * 3600))
        } else if s >= 2 * 3600 {
            format!("{}h", s / 3600)
        } else {
            format!("{}m {}s", s / 60, s % 60)
        }
    }

    /// What `dcn status` says of it, if anything: it expired, or it has
    /// less than [`WARN_BEFORE`] left and is in its renewal window (so
    /// renewal is not keeping up; short lifetimes, such as a lab's, are
    /// always under 30 days).
    pub fn warning(&self) -> Option<String> {
        let due = self.state != "ok";
        if self.state == "expired" {
            Some(format!(
                "{} certificate of {} expired at {}",
                self.name, self.owner, self.not_after
            ))
        } else if due && self.seconds_left < WARN_BEFORE.as_secs() {
            Some(format!(
                "{} certificate of {} expires in {} and has not been renewed",
                self.name,
                self.owner,
                self.left_shown()
            ))
        } else {
            None
        }
    }
}

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
        for (name, _, _) in super::leaves::LEAVES {
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
            crate::join::edge::NODE_CERT,
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
        .read_string(crate::join::node_cert::STATE)?
        .and_then(|t| serde_json::from_str::<Known>(&t).ok())
        .map_or(33, |k| k.renew_when_left))
}

/// The certificate of each node, by host name, as the centre recorded it.
pub fn node_rows(
    files: &Files,
    now: SystemTime,
) -> Result<std::collections::BTreeMap<String, CertRow>> {
    Ok(list(files, now)?
        .into_iter()
        .filter(|r| r.name == "node")
        .map(|r| (r.owner.clone(), r))
        .collect())
}
