//! `dcn lab scale`: how the control plane's cost grows with the number of
//! edge hosts, measured in the lab (docs/scale.md).
//!
//! The lab's spare edge containers carry simulated edge hosts ([`plan`]):
//! each is joined through dcn's real join path and runs a real
//! `ovn-controller` with its own chassis ([`chassis`], run inside the
//! carrier as `dcn lab chassis`). The harness first measures the idle
//! control plane, then grows the fleet step by step; after each step it
//! waits until every chassis answers the southbound, lets the control
//! plane settle, and measures a window: CPU, PSS and TCP connections of
//! every control-plane unit ([`sample`]). The report ([`report`]) fits the
//! cost per host and draws the curve; [`markdown`] writes it for people.
//! A host's compute load is a real fake-driver nova-compute
//! ([`fake_compute`]) or the carrier's replayer ([`compute_replay`]); with
//! `--calibrate`, each step measures a second window with the real ones'
//! load replayed, to show what the replayer's figures are worth. With
//! `--storms`, the run ends with the reconnect storms ([`storm`]).

mod calibration;
mod carrier;
pub mod chassis;
mod compute_replay;
mod curve;
mod fake_compute;
mod health;
mod markdown;
mod plan;
mod report;
mod sample;
mod sim_node;
pub(crate) mod storm;

pub use plan::ComputeLoad;
pub use report::{ScaleReport, Step, Views};

use super::nsenter::ContainerRunner;
use super::state::{HostState, LabState};
use crate::host::command::{Cmd, Runner, SystemRunner};
use crate::host::{FileSpec, Files};
use anyhow::{Context, Result, bail};
use plan::SimHost;
use std::collections::{BTreeMap, BTreeSet};
use std::net::Ipv4Addr;
use std::path::PathBuf;
use std::time::{Duration, Instant, SystemTime};

/// Options of `dcn lab scale`.
#[derive(Debug, Clone)]
pub struct ScaleOptions {
    pub dir: PathBuf,
    /// The fleet sizes measured, growing (`10,100,300`).
    pub steps: Vec<usize>,
    pub per_site: usize,
    pub per_carrier: usize,
    /// Each measurement window.
    pub window: Duration,
    /// The pause after a step's chassis are all up, before its window.
    pub settle: Duration,
    /// Where the report goes (report.json, report.md, curve.svg).
    pub report: PathBuf,
    /// After the last step, the reconnect storms, with the links cut for
    /// this long.
    pub storms: Option<Duration>,
    /// The first this many simulated hosts also run a nova-compute with
    /// nova's fake virt driver…
    pub fake_computes: usize,
    /// …and the next this many a replayed one.
    pub replayed_computes: usize,
    /// After each step's window, a second one with the fake-driver
    /// computes' load replayed.
    pub calibrate: bool,
}

/// Parse `--hosts 10,100,300`.
pub fn parse_steps(list: &str) -> Result<Vec<usize>> {
    plan::steps(list)
}

/// Run the harness against the lab in `opts.dir`.
pub fn run(opts: &ScaleOptions) -> Result<ScaleReport> {
    super::require_root()?;
    let files = Files::new("/", false);
    let state = LabState::load(&files, &opts.dir)?
        .with_context(|| format!("no lab in {}: run `dcn lab up` first", opts.dir.display()))?;
    let cp = state.host("cp")?;
    let cp_init = cp.init_pid.context("the control plane is not running")?;
    let carriers = carriers(&state)?;
    let largest = *opts.steps.last().context("no fleet size given")?;
    if opts.calibrate && opts.fake_computes == 0 {
        bail!("--calibrate compares the replayer with real nova-computes: give --fake-computes K");
    }
    let layout = plan::layout(
        largest,
        opts.per_site,
        opts.per_carrier,
        (opts.fake_computes, opts.replayed_computes),
        &carriers,
    )?;
    let harness = Harness {
        files: &files,
        state: &state,
        cp_runner: ContainerRunner::new(cp_init),
        cp_init,
        opts,
    };
    let mut report = ScaleReport::new(opts);
    tracing::info!(
        "measuring the idle control plane for {}",
        humantime::format_duration(opts.window)
    );
    report.push(harness.measure(0, Vec::new(), 0.0, None)?);
    report.write(&files, &opts.report)?;
    let mut joined = 0;
    let mut pins = BTreeMap::new();
    for &n in &opts.steps {
        let new = &layout[joined..n];
        tracing::info!("growing the fleet from {joined} to {n} simulated edge hosts");
        pins.append(&mut harness.export_sites(new)?);
        let joined_at = SystemTime::now();
        let joins = harness.add(new, &pins)?;
        let started = Instant::now();
        harness.wait_up(&layout[..n], joined_at)?;
        let up = started.elapsed().as_secs_f64();
        tracing::info!("  all {n} hosts up {up:.0}s after the last join");
        std::thread::sleep(opts.settle);
        let first_site = layout.first().map(|h| h.site.as_str());
        let mut step = harness.measure(n, joins, up, first_site)?;
        let count = |load| {
            layout[..n]
                .iter()
                .filter(|h| h.compute == Some(load))
                .count()
        };
        step.computes = count(ComputeLoad::Fake);
        step.replayed = count(ComputeLoad::Replayed);
        if opts.calibrate {
            step.calibration = Some(harness.calibrate(&layout[..n], &pins)?);
        }
        report.push(step);
        report.write(&files, &opts.report)?;
        joined = n;
    }
    report.fit();
    report.write(&files, &opts.report)?;
    if let Some(cut) = opts.storms {
        tracing::info!("reconnect storms at {joined} simulated edge hosts");
        let storms = storm::StormLab {
            dir: &opts.dir,
            state: &state,
            hosts: &layout[..joined],
            cut,
        }
        .run()?;
        report.storms = Some(storms);
        report.write(&files, &opts.report)?;
    }
    Ok(report)
}

/// The spare edge containers (no site), with their addresses.
fn carriers(state: &LabState) -> Result<Vec<(String, Ipv4Addr)>> {
    let mut v: Vec<(String, Ipv4Addr)> = (state.hosts.iter())
        .filter(|h| h.role == "edge" && h.site.is_none())
        .map(|h| Ok((h.name.clone(), h.address.parse()?)))
        .collect::<Result<_>>()?;
    v.sort_by_key(|(name, _)| name.trim_start_matches("edge").parse::<u32>().unwrap_or(0));
    if v.is_empty() {
        bail!(
            "the lab has no spare edge hosts to carry simulated ones: bring it up with `dcn lab up --spare K` (K = hosts / {})",
            plan::MAX_PER_CARRIER
        );
    }
    Ok(v)
}

/// The lab, as the harness drives it.
struct Harness<'a> {
    files: &'a Files,
    state: &'a LabState,
    cp_runner: ContainerRunner,
    cp_init: u32,
    opts: &'a ScaleOptions,
}

impl Harness<'_> {
    /// Export the bundles of `hosts`' sites; their CA pins by site.
    fn export_sites(&self, hosts: &[SimHost]) -> Result<BTreeMap<String, String>> {
        let sites: BTreeSet<&str> = hosts.iter().map(|h| h.site.as_str()).collect();
        let mut pins = BTreeMap::new();
        for site in sites {
            pins.insert(site.to_string(), self.export(site)?);
        }
        Ok(pins)
    }

    /// Join `hosts` with their sites' bundles and start their chassis,
    /// every carrier at once. Returns each join's time.
    fn add(
        &self,
        hosts: &[SimHost],
        pins: &BTreeMap<String, String>,
    ) -> Result<Vec<chassis::ChassisJoin>> {
        let mut by_carrier: BTreeMap<(&str, &str, Option<ComputeLoad>), Vec<&SimHost>> =
            BTreeMap::new();
        for h in hosts {
            by_carrier
                .entry((h.carrier.as_str(), h.site.as_str(), h.compute))
                .or_default()
                .push(h);
        }
        let results: Vec<Result<Vec<chassis::ChassisJoin>>> = std::thread::scope(|scope| {
            let jobs: Vec<_> = (by_carrier.iter())
                .map(|((carrier, site, _), hosts)| {
                    let pin = &pins[*site];
                    scope.spawn(move || self.join_on(carrier, site, pin, hosts))
                })
                .collect();
            jobs.into_iter()
                .map(|j| {
                    j.join()
                        .unwrap_or_else(|_| bail!("a carrier's thread panicked"))
                })
                .collect()
        });
        let mut joins = Vec::new();
        for r in results {
            joins.extend(r?);
        }
        Ok(joins)
    }

    /// Export `site`'s bundle on the control plane, for as many joins as
    /// a site has hosts. Returns its CA pin.
    fn export(&self, site: &str) -> Result<String> {
        let out = self.cp_runner.run(
            &Cmd::new(format!("exporting the bundle of site {site}"), "dcn")
                .args(["bundle", "export", "--site", site])
                .args(["--max-uses", &self.opts.per_site.to_string()])
                .args(["-o", &bundle_path(site)])
                .timeout(Duration::from_secs(300)),
        )?;
        Ok(out
            .stdout
            .lines()
            .find_map(|l| l.strip_prefix("CA pin: "))
            .context("`dcn bundle export` printed no CA pin")?
            .to_string())
    }

    /// On `carrier`: its addresses for `hosts`, the bundle of their site,
    /// then `dcn lab chassis`.
    fn join_on(
        &self,
        carrier: &str,
        site: &str,
        pin: &str,
        hosts: &[&SimHost],
    ) -> Result<Vec<chassis::ChassisJoin>> {
        let host = self.state.host(carrier)?;
        let cp = self.state.host("cp")?;
        let bundle = bundle_path(site);
        let inside = |h: &HostState| h.rootfs.join(bundle.trim_start_matches('/'));
        self.files
            .copy(inside(cp), inside(host), &FileSpec::secret())
            .with_context(|| format!("copying the bundle of {site} to {carrier}"))?;
        let system = SystemRunner::new(false);
        for h in hosts {
            super::net::add_address(&system, &host.netns, h.address)?;
        }
        let runner = ContainerRunner::new(host.init_pid.context("a carrier is not running")?);
        let mut cmd = Cmd::new(
            format!("joining {} hosts of {site} on {carrier}", hosts.len()),
            "dcn",
        )
        .args(["-q", "lab", "chassis", "--bundle", &bundle, "--ca-pin", pin])
        .timeout(Duration::from_secs(30 * 60));
        for h in hosts {
            cmd = cmd.args(["--host", &format!("{}={}", h.name, h.address)]);
        }
        // A carrier's hosts are grouped by their load (`add`).
        if let Some(load) = hosts.first().and_then(|h| h.compute) {
            cmd = cmd.args(["--compute", load.name()]);
        }
        let out = runner.run(&cmd)?;
        serde_json::from_str(&out.stdout)
            .with_context(|| format!("reading what `dcn lab chassis` on {carrier} printed"))
    }

    /// Wait until every host of `hosts` has a chassis that answers the
    /// southbound's ping, and each with a nova-compute has reported to
    /// nova since `since`.
    fn wait_up(&self, hosts: &[SimHost], since: SystemTime) -> Result<()> {
        let deadline = Instant::now() + Duration::from_secs(30 * 60);
        loop {
            // A southbound busy with hundreds of chassis connecting at once
            // may not answer a read within its 10 s (at 600 hosts here):
            // asked again until the deadline, not a failed run.
            let chassis =
                match health::down_chassis(&self.cp_runner, hosts, Duration::from_secs(30)) {
                    Ok(down) => down,
                    Err(e) if Instant::now() < deadline => {
                        tracing::warn!("  the southbound did not answer ({e:#}); asking again");
                        std::thread::sleep(Duration::from_secs(5));
                        continue;
                    }
                    Err(e) => return Err(e),
                };
            let computes = match hosts
                .iter()
                .any(|h| h.compute.is_some_and(ComputeLoad::reports))
            {
                true => health::silent_computes(&self.cp_runner, hosts, since)?,
                false => Vec::new(),
            };
            let down: BTreeSet<&String> = chassis.iter().chain(&computes).collect();
            if down.is_empty() {
                return Ok(());
            }
            if Instant::now() > deadline {
                let first: Vec<&str> = down.iter().take(5).map(|s| s.as_str()).collect();
                bail!(
                    "simulated hosts are not up after 30 minutes: {} chassis, {} nova-computes (first: {}); see /var/log/ovn/dcn-sim-<name>.log and /var/log/nova/dcn-sim-nova-<name>.log in their carriers",
                    chassis.len(),
                    computes.len(),
                    first.join(", ")
                );
            }
            tracing::info!(
                "  {} of {} hosts up ({} chassis, {} nova-computes not yet)",
                hosts.len() - down.len(),
                hosts.len(),
                chassis.len(),
                computes.len(),
            );
            std::thread::sleep(Duration::from_secs(5));
        }
    }

    /// `--calibrate`: the fake-driver computes of `hosts` switched to the
    /// replayer (the same hosts, services, compute nodes and resource
    /// providers) and a window measured once every one reports again; then
    /// stopped, and a window without compute load; then switched back,
    /// and a window of the real ones (`calibration`: why not the step's).
    fn calibrate(
        &self,
        hosts: &[SimHost],
        pins: &BTreeMap<String, String>,
    ) -> Result<calibration::Calibration> {
        let with_load = |load| -> Vec<SimHost> {
            (hosts.iter())
                .filter(|h| h.compute == Some(ComputeLoad::Fake))
                .map(|h| SimHost {
                    compute: Some(load),
                    ..h.clone()
                })
                .collect()
        };
        let switch = |load| -> Result<()> {
            let switched = with_load(load);
            let at = SystemTime::now();
            self.add(&switched, pins)?;
            self.wait_up(&switched, at)
        };
        let computes = with_load(ComputeLoad::Fake).len();
        tracing::info!("  calibrating: the {computes} fake-driver computes' load replayed");
        switch(ComputeLoad::Replayed)?;
        std::thread::sleep(self.opts.settle);
        let replayed = self.measure(hosts.len(), Vec::new(), 0.0, None)?.into();
        tracing::info!("  calibrating: no compute load");
        switch(ComputeLoad::Off)?;
        std::thread::sleep(self.opts.settle);
        let without = self.measure(hosts.len(), Vec::new(), 0.0, None)?.into();
        tracing::info!("  calibrating: the fake-driver computes again");
        switch(ComputeLoad::Fake)?;
        std::thread::sleep(self.opts.settle);
        let real = self.measure(hosts.len(), Vec::new(), 0.0, None)?.into();
        Ok(calibration::Calibration {
            computes,
            replayed,
            without,
            real,
        })
    }

    /// One window of the control plane at `hosts` simulated hosts.
    fn measure(
        &self,
        hosts: usize,
        joins: Vec<chassis::ChassisJoin>,
        up_seconds: f64,
        first_site: Option<&str>,
    ) -> Result<Step> {
        let before = sample::Snapshot::take(self.cp_init);
        std::thread::sleep(self.opts.window);
        let after = sample::Snapshot::take(self.cp_init);
        let mut step = Step::new(
            hosts,
            self.opts.window,
            before.window(&after),
            joins,
            up_seconds,
        );
        step.views = self.views(first_site)?;
        tracing::info!(
            "  {hosts} hosts: control plane {:.1} % of a core, PSS {:.2} GB; node list {:.2}s, site status {:.2}s",
            step.cpu_percent,
            step.pss_bytes as f64 / 1e9,
            step.views.node_list_seconds,
            step.views.site_status_seconds
        );
        Ok(step)
    }

    /// Time the operator's views on the control plane: `dcn node list`,
    /// and `dcn site status` of `site` (none before the first step).
    fn views(&self, site: Option<&str>) -> Result<Views> {
        let timed = |what: &str, args: &[&str]| -> Result<f64> {
            let started = Instant::now();
            self.cp_runner.run(
                &Cmd::new(what, "dcn")
                    .args(args.iter().copied())
                    .read_only()
                    .timeout(Duration::from_secs(300)),
            )?;
            Ok(started.elapsed().as_secs_f64())
        };
        Ok(Views {
            node_list_seconds: timed("listing the edge hosts", &["node", "list"])?,
            site_status_seconds: match site {
                Some(site) => timed(
                    &format!("showing the status of site {site}"),
                    &["site", "status", site],
                )?,
                None => 0.0,
            },
        })
    }
}

/// Where a site's bundle is written on the control plane and read on its
/// carriers.
fn bundle_path(site: &str) -> String {
    format!("/root/dcn-scale-{site}.tar.gz")
}
