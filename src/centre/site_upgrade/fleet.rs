//! The [`Fleet`] of a real control plane: what each node reported through
//! the join service, and whether the centre sees it on the release — it
//! says it runs it, its nova-compute is up and has reported since its
//! turn began, its chassis answers the join service's pings, and it runs
//! its site's current config revision.

use super::drive::Fleet;
use crate::centre::sites::upgrade_campaign::CampaignNode;
use crate::centre::sites::upgrade_state::{self, NodeUpgradeState};
use crate::centre::sites::{Registry, site_config};
use crate::host::Host;
use crate::openstack::PlaneState;
use crate::openstack::compute::ComputeCloud;
use crate::wire::EdgeRelease;
use anyhow::Result;
use std::time::SystemTime;

pub struct CentreFleet<'a, C: ComputeCloud> {
    pub host: &'a Host,
    pub release: &'a EdgeRelease,
    pub compute: C,
}

impl<C: ComputeCloud> Fleet for CentreFleet<'_, C> {
    fn state(&self, hostname: &str) -> Result<Option<NodeUpgradeState>> {
        upgrade_state::load(&self.host.files, hostname)
    }

    fn on_release(&self, node: &CampaignNode, since: SystemTime) -> Result<Result<(), String>> {
        let host = node.hostname.as_str();
        let state = self.state(host)?.unwrap_or_default();
        if state.check.runs.as_deref() != Some(self.release.id.as_str())
            || state.check.dcn_version != self.release.dcn_version
        {
            return Ok(Err(format!(
                "it does not say it runs release {} yet",
                self.release.id
            )));
        }
        // The cloud's answers may fail while services restart: not yet.
        let reports = match self.compute.compute_reports() {
            Ok(r) => r,
            Err(e) => return Ok(Err(format!("nova did not answer ({e:#})"))),
        };
        match reports.get(host) {
            Some(r) if r.state == PlaneState::Up && r.last_report.is_some_and(|t| t >= since) => {}
            Some(r) if r.state == PlaneState::Up => {
                return Ok(Err(
                    "its compute service has not reported since its turn began".into(),
                ));
            }
            Some(r) => {
                return Ok(Err(format!("its compute service is {}", r.state.as_str())));
            }
            None => return Ok(Err("nova lists no compute service of it".into())),
        }
        let southbound = crate::openstack::southbound(self.host.runner.as_ref());
        let chassis = match crate::centre::sites::chassis_liveness::chassis_states(
            self.host,
            &southbound,
            SystemTime::now(),
        ) {
            Ok(c) => c,
            Err(e) => return Ok(Err(format!("the southbound did not answer ({e:#})"))),
        };
        if chassis.get(host) != Some(&PlaneState::Up) {
            return Ok(Err(
                "its chassis does not answer the southbound's pings".into()
            ));
        }
        let registry = Registry::new(&self.host.files);
        let site: crate::types::SiteName = node.site.parse().map_err(anyhow::Error::msg)?;
        let wanted = site_config::current(&registry, &site)?.revision;
        let runs = registry
            .node(host)?
            .and_then(|n| n.config)
            .map_or(0, |c| c.revision);
        if wanted > 0 && runs != wanted {
            return Ok(Err(format!(
                "it runs site config revision {runs}, not the site's {wanted}"
            )));
        }
        Ok(Ok(()))
    }
}
