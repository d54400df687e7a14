//! What a bundle holds, with the token's secret redacted: the `dcn bundle
//! inspect` view, as text (`Display`) or JSON (`Serialize`).

use super::manifest::HostsEntry;
use super::reader::VerifiedBundle;
use crate::pki::CertInfo;
use crate::terminal_text::sanitize;
use crate::timefmt;
use serde::Serialize;
use std::collections::BTreeMap;
use std::fmt;
use std::time::SystemTime;

/// A redacted summary of a verified bundle.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Inspection {
    pub format_version: u32,
    pub site: String,
    pub created_at: String,
    pub not_after: String,
    pub expired: bool,
    /// `expires in 23h 59m` or `expired 2h ago`.
    pub expiry: String,
    pub join_endpoint: String,
    pub region: String,
    /// What the control plane exports to edges, by export name.
    pub exports: BTreeMap<String, String>,
    pub hosts: Vec<HostsEntry>,
    pub custom_service_config: Vec<CustomConfig>,
    pub token_id: String,
    /// `<id>.<redacted>`.
    pub token: String,
    pub ca_subject: String,
    pub ca_pin: String,
    /// Whether the CA pin was checked against `--ca-pin`.
    pub pin_checked: bool,
}

/// One service's custom INI text. It is not secret, so it is shown whole.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct CustomConfig {
    pub service: String,
    pub bytes: usize,
    pub text: String,
}

impl VerifiedBundle {
    /// The summary as of now.
    pub fn inspect(&self) -> Inspection {
        self.inspect_at(SystemTime::now())
    }

    /// The summary as of `now`.
    pub fn inspect_at(&self, now: SystemTime) -> Inspection {
        let m = &self.manifest;
        let expired = self.is_expired(now);
        let expiry = if expired {
            let ago = now.duration_since(m.not_after).unwrap_or_default();
            format!("expired {} ago", timefmt::rough(ago))
        } else {
            format!("expires in {}", timefmt::rough(self.expires_in(now)))
        };
        Inspection {
            format_version: m.format_version,
            site: m.site.to_string(),
            created_at: timefmt::rfc3339(m.created_at),
            not_after: timefmt::rfc3339(m.not_after),
            expired,
            expiry,
            join_endpoint: m.control_plane.join_endpoint.to_string(),
            region: m.control_plane.region.to_string(),
            exports: crate::recipes::exports::as_values(&m.control_plane.exports),
            hosts: m.hosts.clone(),
            custom_service_config: m
                .custom_service_config
                .iter()
                .filter(|(_, ini)| !ini.is_empty())
                .map(|(service, ini)| CustomConfig {
                    service: service.clone(),
                    bytes: ini.as_str().len(),
                    text: ini.as_str().to_string(),
                })
                .collect(),
            token_id: self.token.id.clone(),
            token: self.token.redacted(),
            // The reader parsed this certificate already.
            ca_subject: CertInfo::from_pem(&self.ca_cert_pem)
                .map(|i| i.subject)
                .unwrap_or_default(),
            ca_pin: self.ca_pin.to_string(),
            pin_checked: self.pin_checked,
        }
    }
}

impl fmt::Display for Inspection {
    /// Every string that came from the bundle goes through
    /// [`sanitize`]: the text view is for a terminal.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let site = sanitize(&self.site);
        writeln!(
            f,
            "Join bundle for site {site} (format {})",
            self.format_version
        )?;
        writeln!(f, "  Created:         {}", self.created_at)?;
        if self.expired {
            writeln!(
                f,
                "  Not after:       {} (EXPIRED: {}; run `dcn bundle export --site {site}` for a fresh bundle)",
                self.not_after, self.expiry
            )?;
        } else {
            writeln!(f, "  Not after:       {} ({})", self.not_after, self.expiry)?;
        }
        writeln!(f, "  Join endpoint:   {}", sanitize(&self.join_endpoint))?;
        writeln!(f, "  Region:          {}", sanitize(&self.region))?;
        writeln!(f, "  Exports:")?;
        for (name, endpoint) in &self.exports {
            writeln!(f, "    {name:<14} {}", sanitize(endpoint))?;
        }
        if self.hosts.is_empty() {
            writeln!(f, "  /etc/hosts:      (none)")?;
        } else {
            writeln!(f, "  /etc/hosts:")?;
            for h in &self.hosts {
                let names: Vec<&str> = h.names.iter().map(|n| n.as_str()).collect();
                writeln!(f, "    {:<14} {}", h.address, sanitize(&names.join(" ")))?;
            }
        }
        if self.custom_service_config.is_empty() {
            writeln!(f, "  Custom config:   (none)")?;
        } else {
            writeln!(f, "  Custom config:")?;
            for c in &self.custom_service_config {
                writeln!(f, "    {} ({} bytes):", c.service, c.bytes)?;
                for line in c.text.lines() {
                    writeln!(f, "      {}", sanitize(line))?;
                }
            }
        }
        writeln!(f, "  Join token:      {}", sanitize(&self.token))?;
        writeln!(f, "  CA:              {}", sanitize(&self.ca_subject))?;
        let pin_note = if self.pin_checked {
            "matches --ca-pin"
        } else {
            "not checked: no --ca-pin given; compare it with the pin `dcn bundle export` printed"
        };
        write!(f, "  CA pin:          {} ({pin_note})", self.ca_pin)
    }
}
