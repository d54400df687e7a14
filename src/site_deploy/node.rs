//! One node's deploy, from where it stands: boot its ISO through its BMC,
//! wait for the installer to say the disk is written, eject the media (the
//! installer reboots into the disk), and follow the node until the centre
//! has placed it in its site's zone. Every step is recorded at the centre
//! beside what the node reports ([`super::watch`]), so `dcn site status`
//! shows the whole story, and a re-run knows where to resume
//! ([`super::plan`]).

use super::plan::Start;
use super::watch::{self, Seen};
use crate::bmc::{self, BootRequest, Client, ClientOptions, DiskBoot};
use crate::config::NodeConfig;
use crate::host::Files;
use crate::sites::progress::Phase;
use anyhow::{Context as _, Result};
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

/// How long each stretch may take (software emulation is slow: the
/// defaults leave room for it).
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// From power-on until the installer reports the disk written.
    pub install: Duration,
    /// From the disk written until the node is placed.
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
pub fn run(ctx: &Run, node: &NodeTarget, start: Start) -> NodeRun {
    let _named = crate::logging::LinePrefix::new(node.hostname());
    let started = Instant::now();
    let mut stretches = Vec::new();
    let outcome = match drive(ctx, node, start, &mut stretches) {
        Ok(o) => o,
        Err(Failure {
            phase,
            error,
            recorded,
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
}

fn at(phase: &str) -> impl FnOnce(anyhow::Error) -> Failure + '_ {
    move |error| Failure {
        phase: phase.to_string(),
        error,
        recorded: false,
    }
}

/// A line about `node` (named by the thread's [`LinePrefix`]).
fn say(line: &str) {
    tracing::info!("{line}");
}

fn drive(
    ctx: &Run,
    node: &NodeTarget,
    start: Start,
    stretches: &mut Vec<(String, f64)>,
) -> Result<Outcome, Failure> {
    let mut timed =
        |name: &str, t: Instant| stretches.push((name.into(), t.elapsed().as_secs_f64()));
    match start {
        Start::Placed => {
            say("already placed; left alone");
            return Ok(Outcome::AlreadyPlaced);
        }
        Start::Boot => {
            let t = Instant::now();
            let media = media_for(ctx, node).map_err(at("media"))?;
            timed("media", t);
            let t = Instant::now();
            let url = format!("{}/{}", ctx.media_url, media);
            boot(ctx, node, &url).map_err(at("powered-on"))?;
            timed("bmc", t);
            install_then_boot_disk(ctx, node, &mut timed)?;
        }
        Start::Reset => {
            // The installed system is on the disk: a restart from the disk
            // makes its first-boot join run again.
            let t = Instant::now();
            to_disk(ctx, node, DiskBoot::Restart).map_err(at("powered-on"))?;
            timed("bmc", t);
        }
        Start::Follow => {
            say("already under way; following it");
            let seen = watch::seen(ctx.files, node.hostname()).map_err(at("following"))?;
            if !seen.booted {
                install_then_boot_disk(ctx, node, &mut timed)?;
            }
        }
    }
    let t = Instant::now();
    wait(ctx, node, "the node to be placed", ctx.limits.join, |s| {
        s.placed
    })?;
    timed("join", t);
    // Placed: its ISO (which holds a token) is no longer needed.
    let dir = ctx
        .files
        .host_path(&super::media::media_dir(ctx.site))
        .map_err(at("placed"))?;
    super::media::remove_for(&dir, node.hostname()).map_err(at("placed"))?;
    Ok(Outcome::Placed)
}

/// Make the node's ISO; returns its file name.
fn media_for(ctx: &Run, node: &NodeTarget) -> Result<String> {
    let mut config = node.config.clone();
    config.join.ca_pin = Some(
        ctx.ca_pin
            .parse()
            .map_err(|e: String| anyhow::anyhow!("the bundle's CA pin: {e}"))?,
    );
    let media = super::media::prepare(ctx.files, ctx.site, ctx.iso, ctx.bundle, &config)?;
    say(&format!(
        "ISO ready ({} payload bytes written in {:.0} ms)",
        media.report.payload_bytes,
        media.report.write_seconds * 1000.0
    ));
    Ok(media.file_name)
}

fn connect(node: &NodeTarget) -> Result<(Client, bmc::System)> {
    let client = Client::new(&node.bmc)
        .with_context(|| format!("connecting to the BMC at {}", node.bmc.url))?;
    let system = bmc::find_system(&client, node.system.as_deref())
        .with_context(|| format!("logging in to the BMC at {}", node.bmc.url))?;
    Ok((client, system))
}

fn boot(ctx: &Run, node: &NodeTarget, url: &str) -> Result<()> {
    let (client, system) = connect(node)?;
    if let Some(ca) = ctx.media_ca {
        let slot = bmc::cd_slot(&client, &system)?;
        match bmc::trust_media_ca(&client, &slot, ca)? {
            bmc::MediaTrust::Verified => {
                say("its BMC verifies the media server against the dcn CA")
            }
            bmc::MediaTrust::Unsupported(why) => tracing::warn!(
                "its BMC cannot be told to verify the media server ({why}): it fetches the ISO, which holds a join token, without checking whom from"
            ),
        }
    }
    let report = bmc::boot(
        &client,
        &system,
        &BootRequest {
            image_url: url.to_string(),
            allow_continuous: false,
            media_timeout: Duration::from_secs(600),
            power_timeout: Duration::from_secs(120),
        },
    )?;
    watch::record(
        ctx.files,
        ctx.site,
        node.hostname(),
        Phase::MediaInserted,
        &report.virtual_media,
    )?;
    watch::record(
        ctx.files,
        ctx.site,
        node.hostname(),
        Phase::PoweredOn,
        &format!("{} ({})", report.reset_type, report.boot_target),
    )?;
    say(&format!(
        "booting its ISO ({} requested)",
        report.reset_type
    ));
    Ok(())
}

/// Wait for the installer to write the disk, then for the node to leave
/// the installer, and boot it from the disk.
fn install_then_boot_disk(
    ctx: &Run,
    node: &NodeTarget,
    timed: &mut impl FnMut(&str, Instant),
) -> Result<(), Failure> {
    let t = Instant::now();
    wait(
        ctx,
        node,
        "the disk to be written",
        ctx.limits.install,
        |s| s.on_disk,
    )?;
    timed("install", t);
    let t = Instant::now();
    leave_installer(ctx, node)?;
    timed("to-disk", t);
    Ok(())
}

/// How long the installer may take to reboot after it reported the disk
/// written, before the node is restarted from the disk.
const REBOOT_GRACE: Duration = Duration::from_secs(600);

/// After `disk-written` the installer reboots. A BMC that kept the CD
/// override once would boot the installer again, so: as soon as the node
/// is off (the lab's VMs power off on reboot) or its installed system
/// reports its first boot, eject the media, set the override to the disk
/// and power it on if it is off. A node still running the installer after
/// [`REBOOT_GRACE`] is restarted from the disk.
fn leave_installer(ctx: &Run, node: &NodeTarget) -> Result<(), Failure> {
    let started = Instant::now();
    loop {
        let seen = watch::seen(ctx.files, node.hostname()).map_err(at("media-ejected"))?;
        if seen.booted {
            return to_disk(ctx, node, DiskBoot::PowerOnIfOff).map_err(at("media-ejected"));
        }
        let (client, system) = connect(node).map_err(at("media-ejected"))?;
        let power = system.resource.power_state.clone().unwrap_or_default();
        if power == "Off" {
            return to_disk(ctx, node, DiskBoot::PowerOnIfOff).map_err(at("media-ejected"));
        }
        drop(client);
        if started.elapsed() > REBOOT_GRACE {
            say("still not rebooted from the installer; restarting it from the disk");
            return to_disk(ctx, node, DiskBoot::Restart).map_err(at("media-ejected"));
        }
        std::thread::sleep(ctx.limits.poll);
    }
}

/// Eject, override to the disk, power as `how` says; recorded as
/// `media-ejected` (and `powered-on` when the power was asked for).
fn to_disk(ctx: &Run, node: &NodeTarget, how: DiskBoot) -> Result<()> {
    let (client, system) = connect(node)?;
    let lines = bmc::boot_from_disk(&client, &system, how)?;
    watch::record(
        ctx.files,
        ctx.site,
        node.hostname(),
        Phase::MediaEjected,
        "",
    )?;
    if let Some(power) = lines.iter().find(|l| l.contains("asked for")) {
        watch::record(
            ctx.files,
            ctx.site,
            node.hostname(),
            Phase::PoweredOn,
            &format!(
                "{}: boots the installed system",
                power.trim_end_matches('.')
            ),
        )?;
    }
    say(&lines.join(" "));
    Ok(())
}

/// Poll the centre's records until `done`, a failure the node reported,
/// silence past the bound, or `limit`.
fn wait(
    ctx: &Run,
    node: &NodeTarget,
    what: &str,
    limit: Duration,
    done: impl Fn(&Seen) -> bool,
) -> Result<(), Failure> {
    let started = Instant::now();
    let mut last = String::new();
    loop {
        let seen = watch::seen(ctx.files, node.hostname()).map_err(at("following"))?;
        if seen.phase != last {
            say(&seen.phase);
            if seen.retrying
                && let Some(reason) = &seen.failed
            {
                say(&format!(
                    "its join failed ({reason}); its first-boot unit tries again"
                ));
            }
            last = seen.phase.clone();
        }
        if done(&seen) {
            return Ok(());
        }
        // A failed join is retried by the node: keep following it, up to
        // the limit.
        if let Some(reason) = seen.failed.filter(|_| !seen.retrying) {
            return Err(Failure {
                phase: "node".into(),
                error: anyhow::anyhow!("the node reported: {reason}"),
                recorded: true,
            });
        }
        if seen.silent {
            return Err(Failure {
                phase: seen.phase.clone(),
                error: anyhow::anyhow!(
                    "the node has reported nothing for {} (last: {}); see its console through the BMC",
                    humantime::format_duration(Duration::from_secs(seen.quiet_seconds)),
                    seen.phase
                ),
                recorded: false,
            });
        }
        if started.elapsed() > limit {
            return Err(Failure {
                phase: seen.phase.clone(),
                error: anyhow::anyhow!(
                    "waited {} for {what} (last: {}); raise the limit if the hardware is slow",
                    humantime::format_duration(limit),
                    seen.phase
                ),
                recorded: false,
            });
        }
        std::thread::sleep(ctx.limits.poll);
    }
}
