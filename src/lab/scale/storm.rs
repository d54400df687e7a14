//! Reconnect storms at the fleet's full size: every carrier's link cut
//! and restored at once, then the control plane restarted with every
//! chassis connected. Each is timed until every simulated chassis answers
//! the southbound again, with no manual step, and the control plane's CPU
//! and memory are read over that recovery.

use super::plan::SimHost;
use super::sample::Snapshot;
use crate::host::command::SystemRunner;
use crate::lab::nsenter::ContainerRunner;
use crate::lab::state::LabState;
use anyhow::{Context, Result, bail};
use serde::Serialize;
use std::path::Path;
use std::time::{Duration, Instant};

/// How long a storm may take to recover before the harness gives up.
const RECOVERY_LIMIT: Duration = Duration::from_secs(30 * 60);

/// Both storms, at `hosts` simulated hosts.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Storms {
    pub hosts: usize,
    /// Every carrier's link cut, then restored at once.
    pub links: Storm,
    /// The control plane's container powered off and booted.
    pub restart: Storm,
}

/// One storm.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Storm {
    /// How long the outage lasted: the links cut, or the control plane
    /// from power-off until its systemd runs.
    pub outage_seconds: f64,
    /// Simulated chassis that did not answer at the outage's end (the
    /// links storm; the restart's are all gone with their server).
    pub down_before_recovery: usize,
    /// From the outage's end until every simulated chassis answers.
    pub all_up_seconds: f64,
    /// The control plane's CPU over that recovery, in % of one core.
    pub cpu_percent: f64,
    /// The control plane's PSS once every chassis is up.
    pub pss_bytes: u64,
}

/// The lab as the storms drive it.
pub struct StormLab<'a> {
    pub dir: &'a Path,
    pub state: &'a LabState,
    /// Every simulated host.
    pub hosts: &'a [SimHost],
    /// How long the links stay cut.
    pub cut: Duration,
}

impl StormLab<'_> {
    /// Run both storms, links first.
    pub fn run(&self) -> Result<Storms> {
        let links = self.links()?;
        tracing::info!(
            "  links storm: {} chassis down after a {:.0}s cut, all up {:.1}s after the links came back",
            links.down_before_recovery,
            links.outage_seconds,
            links.all_up_seconds
        );
        let restart = self.restart()?;
        tracing::info!(
            "  restart storm: the control plane up in {:.0}s, every chassis {:.1}s after that",
            restart.outage_seconds,
            restart.all_up_seconds
        );
        Ok(Storms {
            hosts: self.hosts.len(),
            links,
            restart,
        })
    }

    fn carriers(&self) -> Vec<&str> {
        let mut c: Vec<&str> = self.hosts.iter().map(|h| h.carrier.as_str()).collect();
        c.sort();
        c.dedup();
        c
    }

    fn set_links(&self, up: bool) -> Result<()> {
        let system = SystemRunner::new(false);
        for carrier in self.carriers() {
            let link = &self.state.host(carrier)?.router_link;
            crate::lab::net::set_link(&system, link, up)?;
        }
        Ok(())
    }

    /// Cut every carrier's link for `cut`, then restore them all at once.
    fn links(&self) -> Result<Storm> {
        let cp_init =
            (self.state.host("cp")?.init_pid).context("the control plane is not running")?;
        tracing::info!(
            "  cutting the links of {} carriers for {}",
            self.carriers().len(),
            humantime::format_duration(self.cut)
        );
        self.set_links(false)?;
        let cut = Instant::now();
        std::thread::sleep(self.cut);
        let down = down_chassis(cp_init, self.hosts);
        // The links come back whatever the check said.
        self.set_links(true)?;
        let outage_seconds = cut.elapsed().as_secs_f64();
        let down = down?;
        self.recovery(cp_init, outage_seconds, down.len())
    }

    /// Power the control plane off and boot it.
    fn restart(&self) -> Result<Storm> {
        tracing::info!("  restarting the control plane");
        let restarted = crate::lab::restart(self.dir, "cp", false)?;
        let state = LabState::load(&crate::host::Files::new("/", false), self.dir)?
            .context("the lab's state is gone")?;
        let cp_init = (state.host("cp")?.init_pid).context("the control plane did not boot")?;
        self.recovery(cp_init, restarted.seconds, self.hosts.len())
    }

    /// Time from now until every simulated chassis answers, with the
    /// control plane's CPU meanwhile.
    fn recovery(&self, cp_init: u32, outage_seconds: f64, down: usize) -> Result<Storm> {
        let before = Snapshot::take(cp_init);
        let started = Instant::now();
        loop {
            // While the control plane starts, its southbound may not
            // answer yet: that is part of the recovery.
            match down_chassis(cp_init, self.hosts) {
                Ok(d) if d.is_empty() => break,
                Ok(d) => tracing::info!(
                    "  {} of {} chassis up",
                    self.hosts.len() - d.len(),
                    self.hosts.len()
                ),
                Err(e) => tracing::info!("  the southbound does not answer yet: {e:#}"),
            }
            if started.elapsed() > RECOVERY_LIMIT {
                bail!(
                    "the simulated chassis are not all up {} after the storm",
                    humantime::format_duration(RECOVERY_LIMIT)
                );
            }
            std::thread::sleep(Duration::from_secs(2));
        }
        let all_up_seconds = started.elapsed().as_secs_f64();
        let after = Snapshot::take(cp_init);
        let units = before.window(&after);
        Ok(Storm {
            outage_seconds,
            down_before_recovery: down,
            all_up_seconds,
            cpu_percent: units.values().map(|u| u.cpu_percent).sum(),
            pss_bytes: units.values().map(|u| u.pss_bytes).sum(),
        })
    }
}

/// The simulated hosts whose chassis do not answer now (the control
/// plane's container changes with a restart, so it is named by its init).
fn down_chassis(cp_init: u32, hosts: &[SimHost]) -> Result<Vec<String>> {
    super::down_chassis(
        &ContainerRunner::new(cp_init),
        hosts,
        Duration::from_secs(10),
    )
}
