//! One node's deploy, from where it stands: boot its ISO through its BMC,
//! wait for the installer to say the disk is written, eject the media (the
//! installer reboots into the disk), and follow the node until the centre
//! has placed it in its site's zone. Every step is recorded at the centre
//! beside what the node reports ([`super::watch`]), so `dcn site status`
//! shows the whole story, and a re-run knows where to resume
//! ([`super::plan`]).

mod bmc_steps;
mod follow;

use super::plan::Start;
use super::watch;
use crate::bmc::{ClientOptions, Deadline, DiskBoot};
use crate::config::NodeConfig;
use crate::host::Files;
use crate::recipes::Recipes;
use anyhow::Result;
use bmc_steps::{boot, leave_installer, to_disk};
use follow::wait;
use serde::Serialize;
use std::path::Path;
use std::time::{Duration, Instant};

/// What the deploy needs to reach one node.
pub struct NodeTarget {
    pub config: NodeConfig,
    /// How to log in to its BMC (the password already read).
    pub bmc: ClientOptions,
    /// The system on the BMC, when it manages several.
    pub system: Option<String>,
}

impl NodeTarget {
    pub fn hostname(&self) -> &str {
        self.config.hostname.as_str()
    }
}

/// What every node's run shares.
pub struct Run<'a> {
    pub files: &'a Files,
    pub site: &'a str,
    /// The generic edge ISO.
    pub iso: &'a Path,
    pub bundle: &'a Path,
    pub ca_pin: &'a str,
    /// The media server's base URL.
    pub media_url: &'a str,
    /// The CA of the media server's certificate (HTTPS), for BMCs that can
    /// verify it.
    pub media_ca: Option<&'a str>,
    pub limits: Limits,
}

/// How long each phase may take (software emulation is slow: the
/// defaults leave room for it). Each is a deadline for everything in the
/// phase, the BMC's answers included: a BMC that answers slowly cannot
/// stretch it.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// From the first request to the node's BMC (or, on a re-run, from
    /// following the install) until the installer reports the disk written.
    pub install: Duration,
    /// From the disk written until the node is placed: leaving the
    /// installer for the disk, then the join.
    pub join: Duration,
    /// How often the centre's records are read.
    pub poll: Duration,
}

/// How a node's run ended.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case", tag = "result")]
pub enum Outcome {
    /// Placed before this run: nothing was done.
    AlreadyPlaced,
    Placed,
    Failed {
        phase: String,
        reason: String,
    },
}

/// One node's run: its outcome and the time of each stretch.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct NodeRun {
    pub hostname: String,
    #[serde(flatten)]
    pub outcome: Outcome,
    /// `(stretch, seconds)` in order, e.g. `("bmc", 14.2)`.
    pub stretches: Vec<(String, f64)>,
    pub seconds: f64,
}

/// Run one node from `start`. Failures are recorded at the centre and
/// returned in the outcome; they never stop the other nodes.
pub fn run(recipes: &Recipes, ctx: &Run, node: &NodeTarget, start: Start) -> NodeRun {
    let _named = crate::logging::LinePrefix::new(node.hostname());
    let started = Instant::now();
    let mut stretches = Vec::new();
    let outcome = match drive(recipes, ctx, node, start, &mut stretches) {
        Ok(o) => o,
        Err(Failure {
            phase,
            error,
            recorded,
            ..
        }) => {
            let reason = format!("{error:#}");
            say(&format!("FAILED in {phase}: {reason}"));
            // A failure the node reported is at the centre already, with
            // its log lines: recording it again would replace them.
            let record = || watch::fail(ctx.files, ctx.site, node.hostname(), &phase, &error);
            if let Err(e) = if recorded { Ok(()) } else { record() } {
                tracing::warn!("recording the failure at the centre: {e:#}");
            }
            Outcome::Failed { phase, reason }
        }
    };
    NodeRun {
        hostname: node.hostname().to_string(),
        outcome,
        stretches,
        seconds: started.elapsed().as_secs_f64(),
    }
}

/// An error and the phase it happened in.
struct Failure {
    phase: String,
    error: anyhow::Error,
    /// Already recorded at the centre (the node reported it).
    recorded: bool,
    /// Silent since the deploy powered it on: the node never spoke.
    unheard: bool,
}

fn at(phase: &str) -> impl FnOnce(anyhow::Error) -> Failure + '_ {
    move |error| Failure {
        phase: phase.to_string(),
        error,
        recorded: false,
        unheard: false,
    }
}

/// A line about `node` (named by the thread's [`LinePrefix`]).
fn say(line: &str) {
    tracing::info!("{line}");
}

fn drive(
    recipes: &Recipes,
    ctx: &Run,
    node: &NodeTarget,
    start: Start,
    stretches: &mut Vec<(String, f64)>,
) -> Result<Outcome, Failure> {
    let mut timed =
        |name: &str, t: Instant| stretches.push((name.into(), t.elapsed().as_secs_f64()));
    let join = match start {
        Start::Placed => {
            say("already placed; left alone");
            return Ok(Outcome::AlreadyPlaced);
        }
        Start::Boot => one_more_power_on(|_| from_iso(recipes, ctx, node, &mut timed))?,
        Start::Reset => {
            // The installed system is on the disk: a restart from the disk
            // makes its first-boot join run again.
            one_more_power_on(|_| {
                let t = Instant::now();
                let join = ctx.limits.join_deadline();
                to_disk(ctx, node, DiskBoot::Restart, &join).map_err(at("powered-on"))?;
                timed("bmc", t);
                let t = Instant::now();
                wait(ctx, node, "the node to be placed", &join, |s| s.placed)?;
                timed("join", t);
                Ok(())
            })?;
            return placed(ctx, node);
        }
        Start::Follow => {
            say("already under way; following it");
            let seen = watch::seen(ctx.files, node.hostname()).map_err(at("following"))?;
            if seen.booted {
                ctx.limits.join_deadline()
            } else {
                // Following an install; a node silent since its power-on
                // boots its ISO again.
                one_more_power_on(|again| {
                    if again {
                        from_iso(recipes, ctx, node, &mut timed)
                    } else {
                        let install = ctx.limits.install_deadline();
                        install_then_boot_disk(ctx, node, &install, &mut timed)
                    }
                })?
            }
        }
    };
    let t = Instant::now();
    wait(ctx, node, "the node to be placed", &join, |s| s.placed)?;
    timed("join", t);
    placed(ctx, node)
}

/// How many more times a node that said nothing after the deploy powered
/// it on is powered on again before it is failed. Real hardware
/// sometimes hangs in its firmware or early kernel on one boot and not the
/// next (the lab's emulated nodes do too); nobody is at the site to press
/// the button.
const UNHEARD_RETRIES: u32 = 1;

/// Run `attempt` (a power-on and what follows it; its argument says
/// whether this is a retry); when the node never spoke after the power-on,
/// try again, up to [`UNHEARD_RETRIES`] times.
fn one_more_power_on<T>(mut attempt: impl FnMut(bool) -> Result<T, Failure>) -> Result<T, Failure> {
    let mut left = UNHEARD_RETRIES;
    let mut again = false;
    loop {
        match attempt(again) {
            Err(f) if f.unheard && left > 0 => {
                left -= 1;
                again = true;
                say("silent since it was powered on (a boot that hung?): powering it on again");
            }
            done => return done,
        }
    }
}

/// Boot the node's ISO through its BMC and follow the install until the
/// node boots its disk. Returns the join phase's deadline.
fn from_iso(
    recipes: &Recipes,
    ctx: &Run,
    node: &NodeTarget,
    timed: &mut impl FnMut(&str, Instant),
) -> Result<Deadline, Failure> {
    let t = Instant::now();
    let media = media_for(recipes, ctx, node).map_err(at("media"))?;
    timed("media", t);
    let t = Instant::now();
    let url = format!("{}/{}", ctx.media_url, media);
    let install = ctx.limits.install_deadline();
    boot(ctx, node, &url, &install).map_err(at("powered-on"))?;
    timed("bmc", t);
    install_then_boot_disk(ctx, node, &install, timed)
}

/// The node is placed: its ISO (which holds a token) is no longer needed.
fn placed(ctx: &Run, node: &NodeTarget) -> Result<Outcome, Failure> {
    let dir = super::media::media_dir(ctx.site);
    super::media::remove_for(ctx.files, &dir, node.hostname()).map_err(at("placed"))?;
    Ok(Outcome::Placed)
}

/// Make the node's ISO; returns its file name.
fn media_for(recipes: &Recipes, ctx: &Run, node: &NodeTarget) -> Result<String> {
    let mut config = node.config.clone();
    config.join.ca_pin = Some(
        ctx.ca_pin
            .parse()
            .map_err(|e: String| anyhow::anyhow!("the bundle's CA pin: {e}"))?,
    );
    let media = super::media::prepare(recipes, ctx.files, ctx.site, ctx.iso, ctx.bundle, &config)?;
    say(&format!(
        "ISO ready ({} payload bytes written in {:.0} ms)",
        media.report.payload_bytes,
        media.report.write_seconds * 1000.0
    ));
    Ok(media.file_name)
}

/// Wait for the installer to write the disk (by `install`), then for the
/// node to leave the installer, and boot it from the disk; returns the
/// join phase's deadline, which starts with the disk written.
fn install_then_boot_disk(
    ctx: &Run,
    node: &NodeTarget,
    install: &Deadline,
    timed: &mut impl FnMut(&str, Instant),
) -> Result<Deadline, Failure> {
    let t = Instant::now();
    wait(ctx, node, "the disk to be written", install, |s| s.on_disk)?;
    timed("install", t);
    let t = Instant::now();
    let join = ctx.limits.join_deadline();
    leave_installer(ctx, node, &join)?;
    timed("to-disk", t);
    Ok(join)
}

impl Limits {
    /// The install phase's deadline, from now.
    pub fn install_deadline(&self) -> Deadline {
        Deadline::after(self.install, "the install phase").set_by("--install-timeout")
    }

    /// The join phase's deadline, from now.
    pub fn join_deadline(&self) -> Deadline {
        Deadline::after(self.join, "the join phase").set_by("--join-timeout")
    }
}
