//! `dcn join BUNDLE`: an edge host joins the control plane. The bundle is
//! verified (and pinned) before anything changes; the join service is
//! contacted with bounded, jittered retries; the node's key never leaves the
//! host (the service signs a CSR); the compute services are installed (or
//! found preinstalled, as on the edge ISO), configured from the same recipes
//! as the standalone host's, started; and the join waits until the control
//! plane reports the compute service up, mapped, in the site's aggregate and
//! in placement. Each step is reported to the join service as it starts
//! ([`reporter`], best effort), and the error if the join fails.

pub mod client;
pub mod config_sync;
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
use client::{JoinClient, Refused};
use reporter::Reporter;
use std::net::IpAddr;
use std::path::PathBuf;
use std::time::{Duration, Instant, SystemTime};

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

/// Largest clock difference with the control plane that is accepted:
/// tokens expire and certificates start an hour back.
const MAX_SKEW: Duration = Duration::from_secs(300);

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
        let kept = if rejoined {
            edge::kept(recipes, &host.files)?
        } else {
            None
        };
        match kept {
            Some(credentials) => Ok(credentials),
            None => edge::request(recipes, host, &client, bundle, &hostname, address, deadline),
        }
    })?;
    timer
        .reporter
        .use_credential(credentials.node_secret.clone());
    timer.step("install and configure the compute services", || {
        edge::deploy(
            recipes,
            host,
            bundle,
            &credentials,
            &hostname,
            address,
            &opts.packages,
        )
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

/// Reach the join service (bounded retries with jitter), check the clocks,
/// and check that every control-plane endpoint the host will use answers.
fn reach(client: &JoinClient, bundle: &VerifiedBundle, deadline: Instant) -> Result<()> {
    let health = retry(
        deadline,
        &format!("the join service at {}", client.endpoint()),
        || client.health(),
    )?;
    let theirs = crate::timefmt::parse_rfc3339(&health.time)?;
    let now = SystemTime::now();
    let skew = now
        .duration_since(theirs)
        .or_else(|e| Ok::<_, anyhow::Error>(e.duration()))?;
    if skew > MAX_SKEW {
        bail!(
            "this host's clock is {} off the control plane's; tokens and certificates depend on time: fix NTP (chrony) and join again",
            crate::timefmt::rough(skew)
        );
    }
    if skew > Duration::from_secs(30) {
        tracing::warn!(
            "this host's clock is {}s off the control plane's; keep NTP running",
            skew.as_secs()
        );
    }
    for (name, target) in edge::endpoints(bundle) {
        retry(deadline, &format!("{name} at {target}"), || {
            edge::tcp_reachable(&target)
        })?;
    }
    Ok(())
}

/// Call `f` until it succeeds, with jittered exponential backoff up to the
/// deadline. Refusals by the join service are not retried, but for
/// `rate-limited`: this host asked too often, and may ask again soon.
pub(crate) fn retry<T>(
    deadline: Instant,
    what: &str,
    mut f: impl FnMut() -> Result<T>,
) -> Result<T> {
    let mut pause = Duration::from_secs(1);
    let mut attempt = 1;
    loop {
        match f() {
            Ok(v) => return Ok(v),
            // Slowed down, not refused: the service takes this host's
            // requests again within seconds.
            Err(e)
                if e.downcast_ref::<Refused>()
                    .is_some_and(|r| r.0.error != "rate-limited") =>
            {
                return Err(e);
            }
            Err(e) if e.downcast_ref::<client::Untrusted>().is_some() => return Err(e),
            Err(e) => {
                if Instant::now() + pause > deadline {
                    return Err(e.context(format!(
                        "{what} did not answer within the join timeout; check the WAN link and that the control plane's ports are open, then run `dcn join` again (this host was not changed by this attempt)"
                    )));
                }
                tracing::warn!(
                    "waiting for {what} (attempt {attempt}, next in {}s): {e:#}",
                    pause.as_secs()
                );
                let mut jitter = [0u8; 1];
                getrandom::fill(&mut jitter).ok();
                std::thread::sleep(pause + Duration::from_millis(jitter[0] as u64 * 4));
                pause = (pause * 2).min(Duration::from_secs(30));
                attempt += 1;
            }
        }
    }
}

/// Poll the join service until the control plane reports the node ready.
fn wait_ready(
    client: &JoinClient,
    hostname: &str,
    secret: &crate::secrets::Secret,
    deadline: Instant,
) -> Result<()> {
    let mut last = None;
    loop {
        let status = retry(deadline, "the join service", || {
            client.node_status(hostname, secret.expose())
        })?;
        if last.as_ref() != Some(&status) {
            tracing::info!(
                "    compute service {}, cell {}, aggregate {}, placement {}",
                status.compute_service,
                if status.cell_mapped {
                    "mapped"
                } else {
                    "not yet"
                },
                if status.in_aggregate {
                    status.site.as_str()
                } else {
                    "not yet"
                },
                if status.resource_provider {
                    "yes"
                } else {
                    "not yet"
                }
            );
        }
        if status.ready() {
            return Ok(());
        }
        if Instant::now() > deadline {
            bail!(
                "the control plane does not report {hostname} ready in time (last: compute service {}, in aggregate {}, resource provider {}); see `journalctl -u nova-compute` here and `journalctl -u dcn-join` on the control plane",
                status.compute_service,
                status.in_aggregate,
                status.resource_provider
            );
        }
        last = Some(status);
        std::thread::sleep(Duration::from_secs(3));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::ErrorReply;

    fn refused(error: &str) -> anyhow::Error {
        Refused(ErrorReply {
            error: error.into(),
            message: "no".into(),
        })
        .into()
    }

    #[test]
    fn a_rate_limited_request_is_tried_again_and_a_refusal_is_not() {
        let deadline = Instant::now() + Duration::from_secs(30);
        let mut calls = 0;
        let r = retry(deadline, "the join service", || {
            calls += 1;
            if calls < 3 {
                Err(refused("rate-limited"))
            } else {
                Ok(calls)
            }
        });
        assert_eq!(r.unwrap(), 3);
        let mut calls = 0;
        let r: Result<()> = retry(deadline, "the join service", || {
            calls += 1;
            Err(refused("token-expired"))
        });
        assert!(r.is_err());
        assert_eq!(calls, 1);
    }
}
