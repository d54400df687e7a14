//! Reconnect storms at the fleet's full size: every carrier's link cut
//! and restored at once, then the control plane restarted with every
//! chassis connected. Each is timed until every simulated chassis answers
//! the southbound again, and every simulated nova-compute reports to nova
//! again, with no manual step, and the control plane's CPU
//! and memory are read over that recovery.

use super::health;
use super::plan::SimHost;
use super::sample::Snapshot;
use crate::host::command::SystemRunner;
use crate::lab::nsenter::ContainerRunner;
use crate::lab::state::LabState;
use anyhow::{Context, Result, bail};
use serde::Serialize;
use std::path::Path;
use std::time::{Duration, Instant, SystemTime};

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
    /// From the outage's end until every simulated nova-compute has
    /// reported to nova again (none when the hosts run none).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub computes_up_seconds: Option<f64>,
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
            "  links storm: {} chassis down after a {:.0}s cut, all up {:.1}s after the links came back, every nova-compute {}",
            links.down_before_recovery,
            links.outage_seconds,
            links.all_up_seconds,
            links
                .computes_up_seconds
                .map_or("(none run)".into(), |c| format!("{c:.1}s after"))
        );
        let restart = self.restart()?;
        tracing::info!(
            "  restart storm: the control plane up in {:.0}s, every chassis {:.1}s after that, every nova-compute {}",
            restart.outage_seconds,
            restart.all_up_seconds,
            restart
                .computes_up_seconds
                .map_or("(none run)".into(), |c| format!("{c:.1}s after that"))
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
        let down = health::down_chassis(
            &ContainerRunner::new(cp_init),
            self.hosts,
            Duration::from_secs(10),
        );
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

    /// Time from now until every simulated chassis answers and every
    /// simulated nova-compute has reported since, with the control
    /// plane's CPU meanwhile.
    fn recovery(&self, cp_init: u32, outage_seconds: f64, down: usize) -> Result<Storm> {
        let before = Snapshot::take(cp_init);
        let (since, started) = (SystemTime::now(), Instant::now());
        let runner = ContainerRunner::new(cp_init);
        let with_compute = (self.hosts.iter()).any(|h| h.compute.is_some_and(|c| c.reports()));
        let (mut chassis_up, mut computes_up) = (None, (!with_compute).then_some(0.0));
        while chassis_up.is_none() || computes_up.is_none() {
            // While the control plane starts, its southbound and APIs may
            // not answer yet: that is part of the recovery.
            if chassis_up.is_none() {
                match health::down_chassis(&runner, self.hosts, Duration::from_secs(10)) {
                    Ok(d) if d.is_empty() => chassis_up = Some(started.elapsed().as_secs_f64()),
                    Ok(d) => tracing::info!(
                        "  {} of {} chassis up",
                        self.hosts.len() - d.len(),
                        self.hosts.len()
                    ),
                    Err(e) => tracing::info!("  the southbound does not answer yet: {e:#}"),
                }
            }
            if computes_up.is_none() {
                match health::silent_computes(&runner, self.hosts, since) {
                    Ok(d) if d.is_empty() => computes_up = Some(started.elapsed().as_secs_f64()),
                    Ok(d) => tracing::info!("  {} nova-computes not back yet", d.len()),
                    Err(e) => tracing::info!("  nova does not answer yet: {e:#}"),
                }
            }
            if started.elapsed() > RECOVERY_LIMIT {
                bail!(
                    "the simulated hosts are not all up {} after the storm (chassis {}, nova-computes {})",
                    humantime::format_duration(RECOVERY_LIMIT),
                    if chassis_up.is_some() { "up" } else { "not up" },
                    if computes_up.is_some() {
                        "up"
                    } else {
                        "not up"
                    },
                );
            }
            std::thread::sleep(Duration::from_secs(2));
        }
        let after = Snapshot::take(cp_init);
        let units = before.window(&after);
        Ok(Storm {
            outage_seconds,
            down_before_recovery: down,
            all_up_seconds: chassis_up.unwrap_or_default(),
            computes_up_seconds: with_compute.then(|| computes_up.unwrap_or_default()),
            cpu_percent: units.values().map(|u| u.cpu_percent).sum(),
            pss_bytes: units.values().map(|u| u.pss_bytes).sum(),
        })
    }
}
