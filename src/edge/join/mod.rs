//! `dcn join BUNDLE`: an edge host joins the control plane. The bundle is
//! verified (and pinned) before anything changes; the join service is
//! contacted with bounded, jittered retries ([`contact`]); the node's key
//! never leaves the host (the service signs a CSR); the compute services
//! are installed (or found preinstalled, as on the edge ISO), configured
//! from the same recipes as the standalone host's, started; and the join
//! waits until the control plane reports the compute service up, mapped,
//! in the site's aggregate and in placement. Each step is reported to the join service as it starts
//! ([`reporter`], best effort), and the error if the join fails.

pub mod client;
pub mod config_sync;
mod contact;
pub(crate) mod edge;
pub mod node_cert;
pub mod reporter;

use crate::bundle::{ReadOptions, VerifiedBundle, read_bundle_file};
use crate::deployment::Deployment;
use crate::engine::Stopwatch;
use crate::host::Host;
use crate::pki::Pin;
use crate::recipes::Recipes;
use crate::types::PackageSource;
use crate::wire::Phase;
use anyhow::{Result, bail};
use client::JoinClient;
pub(crate) use contact::retry;
use contact::{reach, wait_ready};
use reporter::Reporter;
use std::net::IpAddr;
use std::path::PathBuf;
use std::time::{Duration, Instant};

/// Options of `dcn join`.
pub struct JoinOptions {
    pub bundle: PathBuf,
    pub ca_pin: Option<Pin>,
    pub hostname: Option<String>,
    pub my_ip: Option<IpAddr>,
    /// How long to keep trying to reach the control plane, and to wait for
    /// it to see the node.
    pub timeout: Duration,
    pub packages: PackageSource,
    pub ignore_preflight: Vec<String>,
}

/// What the join did, with the time each step took.
pub struct JoinReport {
    pub site: String,
    pub hostname: String,
    pub address: String,
    pub steps: Vec<(String, Duration)>,
    /// The host had joined this site before (the run converged).
    pub rejoined: bool,
}

/// How long the join waits for its queued progress reports before its
/// request (they are best effort: a centre that is slow to take them
/// does not hold up the join for longer).
const REPORTS_BEFORE_JOIN: Duration = Duration::from_secs(20);

/// Set (to anything) by the first-boot unit: the join then reports
/// `first-boot` before it starts.
pub const FIRSTBOOT_ENV: &str = "DCN_FIRSTBOOT";

/// Each step timed, logged and reported to the control plane.
struct Timer {
    watch: Stopwatch,
    reporter: Reporter,
}

impl Timer {
    fn step<T>(&mut self, name: &str, f: impl FnOnce() -> Result<T>) -> Result<T> {
        self.reporter.phase(Phase::JoinStep, Some(name));
        self.watch.time(name, f)
    }

    /// A step that starts once the reports queued so far (its own
    /// included) have left, or [`REPORTS_BEFORE_JOIN`] passed.
    fn step_after_reports<T>(&mut self, name: &str, f: impl FnOnce() -> Result<T>) -> Result<T> {
        self.reporter.phase(Phase::JoinStep, Some(name));
        if !self.reporter.flush(REPORTS_BEFORE_JOIN) {
            tracing::debug!("progress reports are still queued; the centre may refuse them");
        }
        self.watch.time(name, f)
    }
}

/// Join this host to the control plane the bundle names, reporting each
/// step to it (best effort), and the failure if it fails.
pub fn join(recipes: &Recipes, host: &Host, opts: &JoinOptions) -> Result<JoinReport> {
    let mut timer = Timer {
        watch: Stopwatch::new(),
        reporter: Reporter::off(),
    };
    let _lock = node_lock(host)?;
    crate::release::refuse_if_newer(&host.files, "join it again")?;
    let previous = Deployment::load(&host.files)?;
    let bundle = timer.step("verify the bundle", || {
        verify(recipes, opts, previous.as_ref())
    })?;
    let hostname = edge::hostname(host, opts.hostname.as_deref(), previous.as_ref())?;
    timer.reporter = edge::reporter(host, &bundle, &hostname);
    if std::env::var_os(FIRSTBOOT_ENV).is_some() {
        timer.reporter.phase(Phase::FirstBoot, None);
    }
    timer.reporter.phase(Phase::JoinStarted, None);
    let result = join_verified(recipes, host, opts, &mut timer, &bundle, previous, hostname);
    match &result {
        // The centre records `placed` once it sees both planes up too.
        Ok(_) => timer.reporter.phase(Phase::JoinFinished, None),
        Err(e) => timer
            .reporter
            .failed(&format!("{e:#}"), crate::logging::recent_lines()),
    }
    let reporter = std::mem::replace(&mut timer.reporter, Reporter::off());
    reporter.finish(reporter::FINISH_WITHIN);
    result
}

/// The node's lock, held for the whole join: a site-config sync that ran
/// meanwhile could write a drop-in the join then replaces with what it
/// read before.
fn node_lock(host: &Host) -> Result<crate::host::lock::FileLock> {
    use crate::host::lock::FileLock;
    use config_sync::NODE_LOCK;
    if let Some(lock) = FileLock::try_take(&host.files, NODE_LOCK)? {
        return Ok(lock);
    }
    tracing::info!("waiting for the site-config sync running on this host ({NODE_LOCK})");
    FileLock::wait(&host.files, NODE_LOCK)
}

fn join_verified(
    recipes: &Recipes,
    host: &Host,
    opts: &JoinOptions,
    timer: &mut Timer,
    bundle: &VerifiedBundle,
    previous: Option<Deployment>,
    hostname: String,
) -> Result<JoinReport> {
    let site = bundle.manifest.site.to_string();
    let rejoined = previous.as_ref().and_then(|d| d.site.clone()).as_deref() == Some(site.as_str());
    let address = edge::address(opts.my_ip, previous.as_ref())?;
    tracing::info!("joining {hostname} ({address}) to site {site}");

    timer.step("preflight", || {
        edge::preflight(recipes, host, &opts.ignore_preflight, rejoined)
    })?;
    let client = JoinClient::new(
        bundle.manifest.control_plane.join_endpoint.as_str(),
        &bundle.trusted_pem(),
    )?;
    let deadline = Instant::now() + opts.timeout;
    timer.step("reach the control plane", || {
        reach(&client, bundle, deadline)
    })?;
    // The reports sent with the join token must reach the centre before
    // the join does: after it, only the node secret is taken.
    let credentials = timer.step_after_reports("join the site", || {
        if rejoined && let Some(kept) = edge::kept(recipes, &host.files)? {
            return Ok(kept);
        }
        edge::request(recipes, host, &client, bundle, &hostname, address, deadline)
    })?;
    timer
        .reporter
        .use_credential(credentials.node_secret.clone());
    timer.step("install and configure the compute services", || {
        edge::keep_manifest(&host.files, &bundle.manifest)?;
        let trusted = bundle.trusted_pem();
        let deploy = edge::Deploy {
            manifest: &bundle.manifest,
            trusted_pem: Some(&trusted),
            creds: &credentials,
            hostname: &hostname,
            address,
            source: &opts.packages,
            upgrade: false,
        };
        edge::deploy(recipes, host, &deploy).map(|_| ())
    })?;
    // `--timeout` again: the install has bounds of its own, and a slow one
    // (nova-compute on a busy host) must not eat this step's time.
    let deadline = Instant::now() + opts.timeout;
    timer.step("wait until the control plane sees this host", || {
        wait_ready(&client, &hostname, &credentials.node_secret, deadline)
    })?;
    Ok(JoinReport {
        site,
        hostname,
        address: address.to_string(),
        steps: std::mem::take(&mut timer.watch).into_laps(),
        rejoined,
    })
}

/// Verify the bundle. A host that already joined the bundle's site may
/// re-run with the same bundle after it expired (to converge); anything else
/// needs a valid one.
fn verify(
    recipes: &Recipes,
    opts: &JoinOptions,
    previous: Option<&Deployment>,
) -> Result<VerifiedBundle> {
    let lenient = ReadOptions {
        check_expiry: false,
        ..ReadOptions::new().with_pin(opts.ca_pin.clone())
    };
    let bundle = read_bundle_file(recipes, &opts.bundle, &lenient)?;
    let site = bundle.manifest.site.to_string();
    match previous {
        Some(d) if d.roles.iter().any(|r| r == "controller") => {
            bail!("this host is a dcn control plane; edge hosts join it, it does not join itself");
        }
        Some(d) => match &d.site {
            Some(s) if *s == site => {}
            Some(s) => bail!(
                "this host is a node of site {s}; to move it to site {site}, run `dcn node remove {}` on the control plane and `dcn reset --yes` here, then join again",
                d.hostname
            ),
            None => {}
        },
        None => {}
    }
    let joined = previous.and_then(|d| d.site.as_deref()) == Some(site.as_str());
    if !joined {
        // Expiry, checked now (the first read skipped it).
        read_bundle_file(
            recipes,
            &opts.bundle,
            &ReadOptions::new().with_pin(opts.ca_pin.clone()),
        )?;
    }
    if !bundle.pin_checked {
        tracing::warn!(
            "no --ca-pin: the bundle's CA ({}) is trusted on first use; compare it with the pin `dcn bundle export` printed",
            bundle.ca_pin
        );
    }
    Ok(bundle)
}
