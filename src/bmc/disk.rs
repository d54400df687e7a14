//! Booting the installed system: the virtual media out, the boot override
//! to the disk, and the power on. `dcn site deploy` does this once the
//! installer reports the disk written.
//!
//! A one-time (`Once`) override to the CD is used up by the installer's
//! boot, but some BMCs keep every override (the Redfish emulator's libvirt
//! driver treats `Once` as `Continuous`), and a CD that stays first would
//! install the node again on every boot. So the override is set to `Hdd`
//! explicitly rather than only cleared.

use super::client::Client;
use super::discover::System;
use super::power::{self, Power};
use anyhow::{Context, Result};

/// What to do with the power once the disk is the boot target.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DiskBoot {
    /// Power on a system that is off; leave a running one alone (it is
    /// already booting the disk).
    PowerOnIfOff,
    /// Power on a system that is off, restart a running one.
    Restart,
}

/// Eject the media, point the override at the disk and power as asked.
/// Returns one line per step done.
pub fn boot_from_disk(client: &Client, system: &System, how: DiskBoot) -> Result<Vec<String>> {
    let mut lines = super::eject(client, system)?;
    let system = system.reload(client)?;
    if offers_hdd(&system) {
        power::set_override(client, &system, "Hdd", "Once")
            .context("the media is out, but the boot override could not be set to the disk")?;
        lines.push("Boot override: Hdd (Once).".into());
    }
    let system = system.reload(client)?;
    let state = system.resource.power_state.clone().unwrap_or_default();
    let off = matches!(state.as_str(), "Off" | "PoweringOff");
    let wanted = match (off, how) {
        (true, _) => Some(Power::On),
        (false, DiskBoot::Restart) => Some(Power::Reset { graceful: false }),
        (false, DiskBoot::PowerOnIfOff) => None,
    };
    match wanted {
        Some(p) => {
            let reset_type = power::reset(client, &system, p)?;
            lines.push(format!("Power: asked for {reset_type} (it was {state})."));
        }
        None => lines.push(format!("Power: left {state}.")),
    }
    Ok(lines)
}

/// Whether the system lists `Hdd` among its override targets (a system
/// that lists none is assumed to take the standard ones).
fn offers_hdd(system: &System) -> bool {
    system
        .resource
        .boot
        .as_ref()
        .and_then(|b| b.allowed_targets.as_ref())
        .is_none_or(|t| t.iter().any(|x| x == "Hdd"))
}
