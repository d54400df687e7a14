//! The verify phase: the control plane works, checked through its APIs —
//! a token is issued, the catalog has every service, every API answers,
//! nova's services and the OVN agents are up, `nova-status upgrade check`
//! passes. Checks retry a bounded number of times: services that just
//! started report their state a little late.

use super::catalog::admin_credentials;
use crate::engine::{Context, Step};
use crate::host::Cmd;
use crate::openstack::Cloud;
use crate::recipes::Values;
use anyhow::{Result, bail};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// How long the services may take to report themselves up.
const SETTLE: Duration = Duration::from_secs(180);

pub struct Verify {
    pub values: Arc<Values>,
    /// Service types the catalog must list.
    pub catalog: Vec<String>,
    /// Compute hosts whose nova-compute must be up.
    pub compute_hosts: Vec<String>,
    /// The CAs a client of the public endpoints trusts, read when the
    /// check runs (the secrets phase may have just made them).
    pub trusted_cas: fn(&crate::host::Files) -> Result<String>,
}

impl Verify {
    fn check_once(&self, cloud: &Cloud) -> Result<Vec<String>> {
        let mut problems = Vec::new();
        let types = cloud.catalog_types();
        for t in &self.catalog {
            if !types.contains(t) {
                problems.push(format!("the catalog has no {t} service"));
                continue;
            }
            if let Err(e) = cloud.get(t, "/") {
                // 300 Multiple Choices and 401 answers are fine: the API is up.
                if !format!("{e:#}").contains("returned 30") {
                    problems.push(format!("the {t} API does not answer: {e:#}"));
                }
            }
        }
        let services = cloud.get("compute", "/os-services")?;
        let services = services["services"].as_array().cloned().unwrap_or_default();
        let mut want: Vec<(String, String)> = vec![
            ("nova-conductor".into(), self.values.cp["hostname"].clone()),
            ("nova-scheduler".into(), self.values.cp["hostname"].clone()),
        ];
        want.extend(
            self.compute_hosts
                .iter()
                .map(|h| ("nova-compute".to_string(), h.clone())),
        );
        for (binary, host) in &want {
            match services
                .iter()
                .find(|s| s["binary"] == binary.as_str() && s["host"] == host.as_str())
            {
                Some(s) if s["state"] == "up" => {}
                Some(s) => problems.push(format!("{binary} on {host} is {}", s["state"])),
                None => problems.push(format!("{binary} on {host} has not registered")),
            }
        }
        let agents = cloud.get("network", "/v2.0/agents")?;
        let agents = agents["agents"].as_array().cloned().unwrap_or_default();
        for host in &self.compute_hosts {
            // A chassis of a zone is a gateway chassis, which neutron calls
            // "OVN Controller Gateway agent".
            for kind in ["OVN Controller", "OVN Metadata agent"] {
                match agents.iter().find(|a| {
                    a["agent_type"]
                        .as_str()
                        .is_some_and(|t| t.starts_with(kind))
                        && a["host"] == host.as_str()
                }) {
                    Some(a) if a["alive"] == true => {}
                    Some(_) => problems.push(format!("the {kind} on {host} is not alive")),
                    None => problems.push(format!("no {kind} on {host}")),
                }
            }
        }
        Ok(problems)
    }
}

impl Step for Verify {
    fn name(&self) -> String {
        "verify.apis".into()
    }
    fn describe(&self) -> String {
        "check the control plane through its APIs".into()
    }
    fn is_check(&self) -> bool {
        true
    }
    fn apply(&self, ctx: &Context) -> Result<()> {
        let started = Instant::now();
        // Through the public TLS endpoints, as clients and edges see them.
        let creds = admin_credentials(&self.values, true)?;
        let ca = Some((self.trusted_cas)(&ctx.host.files)?);
        let mut last;
        loop {
            last = match Cloud::login(&creds, ca.as_deref()) {
                Ok(cloud) => self
                    .check_once(&cloud)
                    .unwrap_or_else(|e| vec![format!("{e:#}")]),
                Err(e) => vec![format!("no token: {e:#}")],
            };
            if last.is_empty() || started.elapsed() > SETTLE {
                break;
            }
            std::thread::sleep(Duration::from_secs(3));
        }
        if !last.is_empty() {
            bail!(
                "the control plane is not healthy after {}s:\n  {}",
                SETTLE.as_secs(),
                last.join("\n  ")
            );
        }
        let out = ctx.host.runner.run(
            &Cmd::new("running nova's upgrade checks", "runuser")
                .args(["-u", "nova", "--", "nova-status", "upgrade", "check"])
                .read_only()
                .unchecked()
                .timeout(Duration::from_secs(180)),
        )?;
        // 0: all passed, 1: warnings only; 2 and up: failures.
        if out.code.is_none_or(|c| c >= 2) {
            bail!("`nova-status upgrade check` failed:\n{}", out.stdout);
        }
        tracing::info!(
            "    token, catalog, APIs, services and agents are up ({:.0}s)",
            started.elapsed().as_secs_f64()
        );
        Ok(())
    }
}
