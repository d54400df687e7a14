//! `dcn bmc boot`: eject, insert the ISO, boot once from CD, power on or
//! reset. Each step is printed as it finishes; when one fails, the error
//! says which steps changed the BMC and which did not happen, so the
//! operator knows the state it was left in.

use super::client::Client;
use super::deadline::Deadline;
use super::discover::{self, Slot, System};
use super::media;
use super::power::{self, Power};
use anyhow::Result;
use std::time::{Duration, Instant};

/// What to boot and how long to wait.
#[derive(Debug, Clone)]
pub struct BootRequest {
    pub image_url: String,
    pub allow_continuous: bool,
    pub media_timeout: Duration,
    pub power_timeout: Duration,
    /// The operator set the two timeouts (`dcn bmc boot`'s
    /// `--media-timeout` and `--power-timeout`, named in errors).
    pub timeouts_are_flags: bool,
}

/// What `boot` did.
#[derive(Debug, Clone, serde::Serialize)]
pub struct BootReport {
    pub system: String,
    pub virtual_media: String,
    pub ejected: Option<String>,
    pub image: String,
    pub boot_target: String,
    pub boot_enabled: String,
    pub reset_type: String,
    pub power_state: String,
}

/// The steps, in order, for the "left in" message.
const STEPS: [&str; 4] = [
    "eject the current media",
    "insert the image",
    "set the boot override",
    "power on or reset",
];

/// Boot `system` from the ISO at `req.image_url`.
pub fn boot(client: &Client, system: &System, req: &BootRequest) -> Result<BootReport> {
    media::check_image_url(&req.image_url)?;
    let mut done: Vec<String> = Vec::new();
    // The cause first, then the state it left; not as a context, which
    // would print before the cause.
    run(client, system, req, &mut done).map_err(|e| anyhow::anyhow!("{e:#}\n  {}", left_in(&done)))
}

fn run(
    client: &Client,
    system: &System,
    req: &BootRequest,
    done: &mut Vec<String>,
) -> Result<BootReport> {
    let label = system.label();
    let slot = discover::cd_slot(client, system)?;
    let slot_id = slot.id();
    step(&format!(
        "System {label}: virtual media {slot_id} ({})",
        slot.media.media_types.join(", ")
    ));

    let ejected = eject_old(client, &slot, done)?;
    insert(client, &slot, req, done)?;

    let system = system.reload(client)?;
    let over = power::boot_from_cd(client, &system, req.allow_continuous)?;
    step(&format!(
        "Boot override: {} ({})",
        over.target, over.enabled
    ));
    done.push(format!(
        "set the boot override to {} ({})",
        over.target, over.enabled
    ));

    let system = system.reload(client)?;
    let (reset_type, state) = power_on(client, &system, done)?;
    let power_state = if req.power_timeout.is_zero() {
        format!("{state} (not waited for)")
    } else {
        wait_for_on(client, &system, req, &reset_type)?
    };
    Ok(BootReport {
        system: label,
        virtual_media: slot_id,
        ejected,
        image: req.image_url.clone(),
        boot_target: over.target,
        boot_enabled: over.enabled,
        reset_type,
        power_state,
    })
}

/// Eject what the drive holds, if anything; its name.
fn eject_old(client: &Client, slot: &Slot, done: &mut Vec<String>) -> Result<Option<String>> {
    let slot_id = slot.id();
    if !slot.media.is_inserted() {
        done.push(format!("{slot_id} was empty"));
        return Ok(None);
    }
    let old = slot
        .media
        .inserted_image()
        .unwrap_or("(unnamed media)")
        .to_string();
    let t = Instant::now();
    media::eject(client, slot)?;
    step(&format!("Ejected {old} from {slot_id} ({})", secs(t)));
    done.push(format!("ejected {old} from {slot_id}"));
    Ok(Some(old))
}

fn insert(client: &Client, slot: &Slot, req: &BootRequest, done: &mut Vec<String>) -> Result<()> {
    let slot_id = slot.id();
    let t = Instant::now();
    step(&format!(
        "Inserting {} into {slot_id} (the BMC fetches it)…",
        req.image_url
    ));
    let media_flag = req.timeouts_are_flags.then_some("--media-timeout");
    media::insert(client, slot, &req.image_url, req.media_timeout, media_flag)?;
    step(&format!(
        "Inserted {} into {slot_id} ({})",
        req.image_url,
        secs(t)
    ));
    done.push(format!("inserted {} into {slot_id}", req.image_url));
    Ok(())
}

/// Power the system on, or reset it when it is on; the reset type asked
/// for and the power state before.
fn power_on(client: &Client, system: &System, done: &mut Vec<String>) -> Result<(String, String)> {
    let state = system.resource.power_state.clone().unwrap_or_default();
    let wanted = if matches!(state.as_str(), "Off" | "PoweringOff") {
        Power::On
    } else {
        Power::Reset { graceful: false }
    };
    let reset_type = power::reset(client, system, wanted)?;
    done.push(format!("asked for {reset_type} (power was {state})"));
    step(&format!("Power: asked for {reset_type} (it was {state})"));
    Ok((reset_type, state))
}

/// Wait up to the power timeout for power On; the state last seen.
fn wait_for_on(
    client: &Client,
    system: &System,
    req: &BootRequest,
    reset_type: &str,
) -> Result<String> {
    let mut wait = Deadline::after(req.power_timeout, "the wait for power On");
    if req.timeouts_are_flags {
        wait = wait.set_by("--power-timeout");
    }
    let (seen, took) = power::wait_for(client, system, "On", &wait)?;
    if seen == "On" {
        step(&format!("Power: On after {:.1}s", took.as_secs_f64()));
    } else {
        tracing::warn!(
            "The BMC accepted {reset_type}, but the power state is still {seen} after {}s; watch it with `dcn bmc status`.",
            req.power_timeout.as_secs()
        );
    }
    Ok(seen)
}

/// What the BMC was left like, from the steps that were done.
fn left_in(done: &[String]) -> String {
    let changed: Vec<&String> = done.iter().filter(|d| !d.ends_with("was empty")).collect();
    // The failed step is the first not done; "was empty" counts as done.
    let not_done = &STEPS[done.len().min(STEPS.len())..];
    let changed = if changed.is_empty() {
        "dcn changed nothing on the BMC".to_string()
    } else {
        format!(
            "dcn changed the BMC: {}",
            changed
                .iter()
                .map(|s| s.as_str())
                .collect::<Vec<_>>()
                .join("; ")
        )
    };
    let not_done = if not_done.is_empty() {
        String::new()
    } else {
        format!("; not done: {}", not_done.join(", "))
    };
    format!("Boot stopped: {changed}{not_done}.")
}

fn step(line: &str) {
    tracing::info!("{line}");
}

fn secs(t: Instant) -> String {
    format!("{:.1}s", t.elapsed().as_secs_f64())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn left_in_names_changes_and_missing_steps() {
        assert_eq!(
            left_in(&[]),
            "Boot stopped: dcn changed nothing on the BMC; not done: eject the current media, insert the image, set the boot override, power on or reset."
        );
        assert_eq!(
            left_in(&["Cd was empty".into()]),
            "Boot stopped: dcn changed nothing on the BMC; not done: insert the image, set the boot override, power on or reset."
        );
        assert_eq!(
            left_in(&[
                "ejected http://a/old.iso from Cd".into(),
                "inserted http://a/new.iso into Cd".into()
            ]),
            "Boot stopped: dcn changed the BMC: ejected http://a/old.iso from Cd; inserted http://a/new.iso into Cd; not done: set the boot override, power on or reset."
        );
    }
}
