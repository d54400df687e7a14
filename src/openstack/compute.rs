//! nova and placement as dcn needs them for edge sites: a host aggregate
//! per site whose availability zone is the site's name, compute hosts
//! mapped to the cell and placed in their site's aggregate, removed with
//! their compute service and resource provider, and the state of every
//! nova-compute service.

use super::{Cloud, PlaneState};
use crate::host::{Cmd, Host};
use anyhow::{Context, Result, bail};
use reqwest::Method;
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::time::{Duration, SystemTime};

/// Whether the cloud has a compute service named `hostname` (up or down).
pub trait ComputeHosts {
    fn is_compute_host(&self, hostname: &str) -> Result<bool>;
}

/// The compute cloud the centre places edge hosts in.
pub trait ComputeCloud: ComputeHosts {
    /// The site's host aggregate, made when missing (availability zone =
    /// site); its id.
    fn ensure_zone(&self, site: &str) -> Result<u64>;
    /// Map compute hosts that registered to the cell now, rather than at
    /// the scheduler's next periodic discovery.
    fn map_new_hosts(&self) -> Result<()>;
    /// Put a compute host in an aggregate (idempotent).
    fn place(&self, aggregate: u64, hostname: &str) -> Result<()>;
    /// Take a compute host out of an aggregate (idempotent).
    fn unplace(&self, aggregate: u64, hostname: &str) -> Result<()>;
    /// Delete the host's compute service, with its compute node and
    /// resource provider. Refused by nova while it has instances.
    fn remove_host(&self, hostname: &str) -> Result<()>;
    /// Every nova-compute service by host: its state and last heartbeat.
    fn compute_reports(&self) -> Result<BTreeMap<String, ComputeReport>>;
    /// Every nova-compute service by host: up, down or disabled.
    fn compute_states(&self) -> Result<BTreeMap<String, PlaneState>> {
        Ok((self.compute_reports()?.into_iter())
            .map(|(host, r)| (host, r.state))
            .collect())
    }
    /// What nova and placement hold of one host, `aggregate` its site's.
    fn host_view(&self, hostname: &str, aggregate: Option<u64>) -> Result<HostView>;
}

/// A nova-compute service as nova reports it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ComputeReport {
    pub state: PlaneState,
    /// Its last heartbeat (nova's `updated_at`: every `report_interval`,
    /// 10 s by default), if it ever reported.
    pub last_report: Option<SystemTime>,
}

/// One host as nova and placement see it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HostView {
    /// Its nova-compute service's state (`up`, `down`), or `missing`.
    pub compute_service: String,
    pub in_aggregate: bool,
    /// Placement has a resource provider of its name.
    pub resource_provider: bool,
}

/// This control plane's nova and placement, as its admin.
pub(super) struct Nova {
    cloud: std::sync::Arc<Cloud>,
    host: Host,
}

impl Nova {
    /// Log in as the admin of the control plane on `host`.
    pub fn admin(host: &Host) -> Result<Nova> {
        Ok(Nova::with_login(
            std::sync::Arc::new(super::client::admin(host)?),
            host,
        ))
    }

    /// With an admin login already made (a kept one).
    pub fn with_login(cloud: std::sync::Arc<Cloud>, host: &Host) -> Nova {
        Nova {
            cloud,
            host: host.clone(),
        }
    }

    /// The admin login.
    pub(super) fn cloud(&self) -> &Cloud {
        &self.cloud
    }
}

impl ComputeHosts for Nova {
    fn is_compute_host(&self, hostname: &str) -> Result<bool> {
        let v = self.cloud.get(
            "compute",
            &format!("/os-services?binary=nova-compute&host={hostname}"),
        )?;
        Ok(v["services"].as_array().is_some_and(|a| !a.is_empty()))
    }
}

impl ComputeCloud for Nova {
    fn ensure_zone(&self, site: &str) -> Result<u64> {
        let v = self.cloud.get("compute", "/os-aggregates")?;
        if let Some(a) = v["aggregates"]
            .as_array()
            .and_then(|a| a.iter().find(|a| a["name"] == site))
        {
            if a["availability_zone"] != site {
                bail!(
                    "host aggregate {site} exists with availability zone {}; dcn uses the site name as the zone: rename or remove that aggregate",
                    a["availability_zone"]
                );
            }
            return a["id"].as_u64().context("an aggregate without an id");
        }
        let v = self.cloud.post(
            "compute",
            "/os-aggregates",
            &json!({"aggregate": {"name": site, "availability_zone": site}}),
        )?;
        v["aggregate"]["id"]
            .as_u64()
            .context("nova created an aggregate without an id")
    }

    fn map_new_hosts(&self) -> Result<()> {
        self.host.runner.run(
            &Cmd::new("mapping new compute hosts to the cell", "runuser")
                .args([
                    "-u",
                    "nova",
                    "--",
                    "nova-manage",
                    "cell_v2",
                    "discover_hosts",
                ])
                .timeout(Duration::from_secs(120)),
        )?;
        Ok(())
    }

    fn place(&self, aggregate: u64, hostname: &str) -> Result<()> {
        if !self.in_aggregate(aggregate, hostname)? {
            self.cloud.post(
                "compute",
                &format!("/os-aggregates/{aggregate}/action"),
                &json!({"add_host": {"host": hostname}}),
            )?;
        }
        Ok(())
    }

    fn unplace(&self, aggregate: u64, hostname: &str) -> Result<()> {
        if self.in_aggregate(aggregate, hostname)? {
            self.cloud.post(
                "compute",
                &format!("/os-aggregates/{aggregate}/action"),
                &json!({"remove_host": {"host": hostname}}),
            )?;
        }
        Ok(())
    }

    fn remove_host(&self, hostname: &str) -> Result<()> {
        let services = self.cloud.get(
            "compute",
            &format!("/os-services?binary=nova-compute&host={hostname}"),
        )?;
        for s in services["services"].as_array().cloned().unwrap_or_default() {
            let id = s["id"]
                .as_str()
                .map(String::from)
                .or_else(|| s["id"].as_u64().map(|i| i.to_string()));
            let Some(id) = id else { continue };
            let path = format!("/os-services/{id}");
            if let Err(e) = self.cloud.request(Method::DELETE, "compute", &path, None) {
                bail!(
                    "nova would not delete the compute service of {hostname} ({e:#}); delete or migrate its instances first"
                );
            }
        }
        // Nova deletes the resource provider with the service; make sure.
        let path = format!("/resource_providers?name={hostname}");
        let rps = self.cloud.get("placement", &path)?;
        for rp in rps["resource_providers"]
            .as_array()
            .cloned()
            .unwrap_or_default()
        {
            if let Some(uuid) = rp["uuid"].as_str() {
                let path = format!("/resource_providers/{uuid}");
                self.cloud
                    .request(Method::DELETE, "placement", &path, None)?;
            }
        }
        Ok(())
    }

    fn compute_reports(&self) -> Result<BTreeMap<String, ComputeReport>> {
        let v = self
            .cloud
            .get("compute", "/os-services?binary=nova-compute")
            .context("listing nova-compute services")?;
        Ok(parse_compute_services(&v))
    }

    fn host_view(&self, hostname: &str, aggregate: Option<u64>) -> Result<HostView> {
        let services = self.cloud.get(
            "compute",
            &format!("/os-services?binary=nova-compute&host={hostname}"),
        )?;
        let compute_service = services["services"]
            .as_array()
            .and_then(|a| a.first())
            .and_then(|s| s["state"].as_str())
            .unwrap_or("missing")
            .to_string();
        let in_aggregate = match aggregate {
            Some(id) => self.in_aggregate(id, hostname)?,
            None => false,
        };
        let rps = (self.cloud).get("placement", &format!("/resource_providers?name={hostname}"))?;
        Ok(HostView {
            compute_service,
            in_aggregate,
            resource_provider: rps["resource_providers"]
                .as_array()
                .is_some_and(|a| !a.is_empty()),
        })
    }
}

impl Nova {
    fn in_aggregate(&self, aggregate: u64, hostname: &str) -> Result<bool> {
        let v = self
            .cloud
            .get("compute", &format!("/os-aggregates/{aggregate}"))?;
        Ok(v["aggregate"]["hosts"]
            .as_array()
            .is_some_and(|h| h.iter().any(|x| x == hostname)))
    }
}

fn parse_compute_services(v: &Value) -> BTreeMap<String, ComputeReport> {
    v["services"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|s| {
            let host = s["host"].as_str()?.to_string();
            let state = if s["status"] == "disabled" {
                PlaneState::Disabled
            } else if s["state"] == "up" {
                PlaneState::Up
            } else {
                PlaneState::Down
            };
            let last_report = s["updated_at"].as_str().and_then(nova_time);
            Some((host, ComputeReport { state, last_report }))
        })
        .collect()
}

/// A time as nova's API writes it: UTC, without a zone before
/// microversion 2.x's own changes (`2026-11-29T12:00:00.000000`).
fn nova_time(text: &str) -> Option<SystemTime> {
    let zoned = text.ends_with('Z') || text[10.min(text.len())..].contains(['+', '-']);
    let text = if zoned {
        text.to_string()
    } else {
        format!("{text}Z")
    };
    crate::timefmt::parse_rfc3339(&text).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nova_services_map_to_plane_states() {
        let v = serde_json::json!({"services": [
            {"host": "edge1", "state": "up", "status": "enabled"},
            {"host": "edge2", "state": "down", "status": "enabled"},
            {"host": "edge3", "state": "up", "status": "disabled"},
        ]});
        let m = parse_compute_services(&v);
        assert_eq!(m["edge1"].state, PlaneState::Up);
        assert_eq!(m["edge2"].state, PlaneState::Down);
        assert_eq!(m["edge3"].state, PlaneState::Disabled);
        assert_eq!(m["edge1"].last_report, None);
    }

    #[test]
    fn heartbeats_are_read_in_utc() {
        let v = serde_json::json!({"services": [
            {"host": "a", "state": "up", "status": "enabled", "updated_at": "2026-11-29T12:00:01.500000"},
            {"host": "b", "state": "up", "status": "enabled", "updated_at": "2026-11-29T12:00:01Z"},
            {"host": "c", "state": "up", "status": "enabled", "updated_at": "2026-11-29T13:00:01+01:00"},
            {"host": "d", "state": "down", "status": "enabled", "updated_at": "yesterday"},
        ]});
        let m = parse_compute_services(&v);
        let at = |h: &str| m[h].last_report.map(crate::timefmt::rfc3339);
        assert_eq!(at("a").as_deref(), Some("2026-11-29T12:00:01Z"));
        assert_eq!(at("b"), at("a"));
        assert_eq!(at("c"), at("a"));
        assert_eq!(m["d"].last_report, None);
    }
}
