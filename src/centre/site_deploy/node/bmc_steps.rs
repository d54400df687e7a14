//! What the deploy asks of a node's BMC: boot its ISO, then leave the
//! installer for the disk; each step recorded at the centre.

use super::{Failure, NodeTarget, Run, at, say};
use crate::bmc::{self, BootRequest, Client, Deadline, DiskBoot};
use crate::centre::site_deploy::watch;
use crate::centre::sites::progress::Phase;
use anyhow::{Context as _, Result};
use std::time::{Duration, Instant};

/// A client whose every call ends by `deadline`, and the node's system.
fn connect(node: &NodeTarget, deadline: &Deadline) -> Result<(Client, bmc::System)> {
    let client = Client::new(&node.bmc)
        .with_context(|| format!("connecting to the BMC at {}", node.bmc.url))?
        .within(deadline);
    let system = bmc::find_system(&client, node.system.as_deref())
        .with_context(|| format!("logging in to the BMC at {}", node.bmc.url))?;
    Ok((client, system))
}

/// Boot the node's ISO, all of it by `deadline` (the install phase's).
pub(super) fn boot(ctx: &Run, node: &NodeTarget, url: &str, deadline: &Deadline) -> Result<()> {
    let (client, system) = connect(node, deadline)?;
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
            timeouts_are_flags: false,
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

/// How long the installer may take to reboot after it reported the disk
/// written, before the node is restarted from the disk.
const REBOOT_GRACE: Duration = Duration::from_secs(600);

/// After `disk-written` the installer reboots. A BMC that kept the CD
/// override once would boot the installer again, so: as soon as the node
/// is off (the lab's VMs power off on reboot) or its installed system
/// reports its first boot, eject the media, set the override to the disk
/// and power it on if it is off. A node still running the installer after
/// [`REBOOT_GRACE`] is restarted from the disk. All of it by `deadline`
/// (the join phase's), however slowly the BMC answers.
pub(super) fn leave_installer(
    ctx: &Run,
    node: &NodeTarget,
    deadline: &Deadline,
) -> Result<(), Failure> {
    let started = Instant::now();
    let mut power = String::from("unknown");
    loop {
        let seen = watch::seen(ctx.files, node.hostname()).map_err(at("media-ejected"))?;
        if seen.booted {
            return to_disk(ctx, node, DiskBoot::PowerOnIfOff, deadline)
                .map_err(at("media-ejected"));
        }
        if !deadline.room_for_a_call() {
            deadline.run_out();
            return Err(at("media-ejected")(anyhow::anyhow!(
                "waited {} for the node to leave the installer (its power: {power}); see its console through the BMC{}",
                deadline.shown(),
                deadline
                    .setting()
                    .map(|s| format!(", or raise {s} if the hardware is slow"))
                    .unwrap_or_default()
            )));
        }
        let (client, system) = connect(node, deadline).map_err(at("media-ejected"))?;
        power = system.resource.power_state.clone().unwrap_or_default();
        if power == "Off" {
            return to_disk(ctx, node, DiskBoot::PowerOnIfOff, deadline)
                .map_err(at("media-ejected"));
        }
        drop(client);
        if started.elapsed() > REBOOT_GRACE {
            say("still not rebooted from the installer; restarting it from the disk");
            return to_disk(ctx, node, DiskBoot::Restart, deadline).map_err(at("media-ejected"));
        }
        deadline.sleep(ctx.limits.poll);
    }
}

/// Eject, override to the disk, power as `how` says; recorded as
/// `media-ejected` (and `powered-on` when the power was asked for); by
/// `deadline`.
pub(super) fn to_disk(
    ctx: &Run,
    node: &NodeTarget,
    how: DiskBoot,
    deadline: &Deadline,
) -> Result<()> {
    let (client, system) = connect(node, deadline)?;
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
