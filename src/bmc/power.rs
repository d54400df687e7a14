//! The boot source override (PATCH `Boot`) and power (`ComputerSystem.Reset`),
//! with the vendor workarounds each named where it is applied.

use super::client::{Client, Request, SendError};
use super::deadline::Deadline;
use super::discover::System;
use super::model::ActionInfo;
use anyhow::{Context, Result, bail};
use reqwest::Method;
use serde_json::json;
use std::time::{Duration, Instant};

/// Attempts of a request that a BMC refuses for a short while (HPE iLO
/// during POST, Dell iDRAC 10 just after power-off).
const BUSY_ATTEMPTS: u32 = 5;

/// The boot override that was set.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Override {
    pub target: String,
    pub enabled: String,
}

/// Set a boot override to the virtual CD: once, or, when the BMC refuses
/// that and `allow_continuous` says so, until it is cleared.
pub fn boot_from_cd(client: &Client, system: &System, allow_continuous: bool) -> Result<Override> {
    let target = cd_target(system)?;
    let once = try_override(client, system, &target, "Once");
    let err = match once {
        Ok(()) => {
            return Ok(Override {
                target,
                enabled: "Once".into(),
            });
        }
        Err(e) => e,
    };
    let refuses_once = err.answer().is_some_and(|re| {
        re.status < 500 && (re.mentions("Once") || re.mentions("BootSourceOverrideEnabled"))
    });
    let err = override_failed(err, system, &target, "Once");
    if !refuses_once {
        return Err(err);
    }
    // No vendor is documented as refusing Once (the documented problem is
    // older hardware refusing Continuous); the fallback exists because a
    // persistent override to CD reinstalls a server on every boot, so it is
    // taken only when the operator asked for it.
    if !allow_continuous {
        return Err(err).context(
            "the BMC refuses a one-time boot override (BootSourceOverrideEnabled: Once). Pass --allow-continuous to set a persistent one instead: the server then boots from the virtual CD on every boot until `dcn bmc eject` clears it",
        );
    }
    tracing::warn!(
        "The BMC refuses a one-time boot override; setting a persistent one (Continuous) as --allow-continuous allows. The server boots from the virtual CD on every boot until `dcn bmc eject` clears it."
    );
    set_override(client, &system.reload(client)?, &target, "Continuous")?;
    Ok(Override {
        target,
        enabled: "Continuous".into(),
    })
}

/// Clear a boot override (target `None`, `Disabled`).
pub fn clear_override(client: &Client, system: &System) -> Result<()> {
    set_override(client, system, "None", "Disabled")
}

/// The override target that means "the virtual CD".
fn cd_target(system: &System) -> Result<String> {
    let allowed = system
        .resource
        .boot
        .as_ref()
        .and_then(|b| b.allowed_targets.clone());
    let Some(allowed) = allowed else {
        return Ok("Cd".into());
    };
    if allowed.iter().any(|t| t == "Cd") {
        return Ok("Cd".into());
    }
    // Supermicro X11/X12 call the virtual CD UsbCd and offer no Cd.
    if allowed.iter().any(|t| t == "UsbCd") {
        tracing::info!(
            "The BMC offers no boot target Cd but UsbCd, as Supermicro X11/X12 BMCs do; using UsbCd."
        );
        return Ok("UsbCd".into());
    }
    bail!(
        "system {} offers no CD boot target (it offers: {})",
        system.label(),
        allowed.join(", ")
    )
}

/// PATCH `Boot` with target and enabled together (Supermicro falls back to
/// Once when Enabled is left out), with `If-Match` when the BMC gave an ETag.
pub(super) fn set_override(
    client: &Client,
    system: &System,
    target: &str,
    enabled: &str,
) -> Result<()> {
    try_override(client, system, target, enabled)
        .map_err(|e| override_failed(e, system, target, enabled))
}

/// [`set_override`], the BMC's refusal left as it answered, for callers
/// that look at it.
fn try_override(
    client: &Client,
    system: &System,
    target: &str,
    enabled: &str,
) -> Result<(), SendError> {
    let body = json!({"Boot": {
        "BootSourceOverrideTarget": target,
        "BootSourceOverrideEnabled": enabled,
    }});
    let mut etag = system.etag.clone();
    let mut stale_etag_retried = false;
    let mut attempt = 1;
    loop {
        let req = Request {
            if_match: etag.as_deref(),
            ..Request::new(Method::PATCH, &system.path).json(&body)
        };
        let err = match client.send(&req) {
            Ok(_) => return Ok(()),
            Err(e) => e,
        };
        let Some(re) = err.answer() else {
            return Err(err);
        };
        if re.status == 412 && !stale_etag_retried {
            // The resource changed since it was read: read its ETag again.
            stale_etag_retried = true;
            etag = system.reload(client).map_err(SendError::Other)?.etag;
            continue;
        }
        if re.has_message_id("UnableToModifyDuringSystemPOST") && attempt < BUSY_ATTEMPTS {
            // HPE iLO refuses boot changes while the server is in POST.
            attempt += 1;
            let delay = client.retry().delay(attempt);
            tracing::info!(
                "The BMC refuses to change the boot override while the server is in POST, as HPE iLO does; retrying in {:.1}s (attempt {attempt} of {BUSY_ATTEMPTS}).",
                delay.as_secs_f64()
            );
            client.pause(delay);
            continue;
        }
        return Err(err);
    }
}

/// The error of a boot override: what the BMC answered, said with what
/// was asked of it; anything else as it is.
fn override_failed(err: SendError, system: &System, target: &str, enabled: &str) -> anyhow::Error {
    if err.answer().is_none() {
        return err.into();
    }
    anyhow::Error::new(err).context(format!(
        "setting the boot override of system {} to {target} ({enabled})",
        system.label()
    ))
}

/// What the operator asks of the power.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Power {
    On,
    Off { graceful: bool },
    Reset { graceful: bool },
}

impl Power {
    /// ResetTypes that do it, best first.
    fn candidates(self) -> &'static [&'static str] {
        match self {
            Power::On => &["On", "ForceOn", "PushPowerButton"],
            Power::Off { graceful: false } => &["ForceOff"],
            Power::Off { graceful: true } => &["GracefulShutdown"],
            Power::Reset { graceful: false } => &["ForceRestart", "PowerCycle", "GracefulRestart"],
            Power::Reset { graceful: true } => &["GracefulRestart"],
        }
    }

    /// The PowerState it ends in.
    pub fn end_state(self) -> &'static str {
        match self {
            Power::Off { .. } => "Off",
            _ => "On",
        }
    }
}

/// Ask for `power` with a ResetType the system advertises; returns it.
pub fn reset(client: &Client, system: &System, power: Power) -> Result<String> {
    let action = system
        .resource
        .actions
        .as_ref()
        .and_then(|a| a.reset.clone())
        .with_context(|| {
            format!(
                "system {} has no ComputerSystem.Reset action",
                system.label()
            )
        })?;
    let allowed = match (&action.allowed, &action.action_info) {
        (Some(a), _) => Some(a.clone()),
        (None, Some(info)) => client
            .get::<ActionInfo>(info)
            .with_context(|| format!("reading the reset types the BMC allows ({info})"))?
            .value
            .parameters
            .into_iter()
            .find(|p| p.name == "ResetType")
            .and_then(|p| p.allowable_values),
        (None, None) => None,
    };
    let reset_type = match &allowed {
        // Nothing advertised: the first, standard, choice.
        None => power.candidates()[0],
        Some(a) => power
            .candidates()
            .iter()
            .copied()
            .find(|c| a.iter().any(|v| v == c))
            .with_context(|| {
                format!(
                    "system {} allows no reset type that does this (it allows: {}; dcn would use one of: {})",
                    system.label(),
                    a.join(", "),
                    power.candidates().join(", ")
                )
            })?,
    };
    let body = json!({ "ResetType": reset_type });
    let mut attempt = 1;
    loop {
        let err = match client.send(&Request::new(Method::POST, &action.target).json(&body)) {
            Ok(_) => return Ok(reset_type.to_string()),
            Err(e) => e,
        };
        let conflict = err.answer().is_some_and(|re| {
            re.status == 409 && re.has_message_id("ActionParameterValueConflict")
        });
        if conflict && attempt < BUSY_ATTEMPTS {
            // Dell iDRAC 10 refuses On for a short while after a power-off.
            attempt += 1;
            let delay = client.retry().delay(attempt);
            tracing::info!(
                "The BMC refuses {reset_type} for now, as Dell iDRAC 10 does just after a power-off; retrying in {:.1}s (attempt {attempt} of {BUSY_ATTEMPTS}).",
                delay.as_secs_f64()
            );
            client.pause(delay);
            continue;
        }
        return Err(err)
            .with_context(|| format!("asking system {} for {reset_type}", system.label()));
    }
}

/// Poll PowerState until it is `state` or `deadline` passed; returns the
/// last state seen and how long it took. Each read gets at most the time
/// left, so a BMC that answers slowly cannot stretch the wait.
pub fn wait_for(
    client: &Client,
    system: &System,
    state: &str,
    deadline: &Deadline,
) -> Result<(String, Duration)> {
    let started = Instant::now();
    let client = client.within(deadline);
    loop {
        let now = system
            .reload(&client)
            .with_context(|| format!("waiting for power {state}"))?;
        let seen = now.resource.power_state.unwrap_or_else(|| "unknown".into());
        if seen == state || deadline.passed() {
            return Ok((seen, started.elapsed()));
        }
        deadline.sleep(Duration::from_secs(1));
        if !deadline.room_for_a_call() {
            deadline.run_out();
            return Ok((seen, started.elapsed()));
        }
    }
}
