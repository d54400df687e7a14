//! Every certificate dcn issued that this host knows of, for `dcn cert
//! list`, `dcn status` and the node views: on the control plane its CAs,
//! its TLS certificates and each node's certificate (as the centre last
//! issued it); on an edge its own.

use super::policy::{Standing, left, standing};
use crate::pki::lifetime::system_time;
use crate::pki::{CertInfo, Pin};
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
