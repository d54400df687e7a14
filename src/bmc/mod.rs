//! Driving a server's BMC over Redfish: boot it from an ISO through virtual
//! media, show and change its boot override and power, and publish ISOs
//! over HTTP for BMCs to fetch (`dcn image serve`).
//!
//! A small typed client ([`client`], [`model`]) follows links from
//! `/redfish/v1/` rather than guessing vendor paths. Vendor behaviour that
//! departs from the standard is handled where the request is made
//! (`media.rs`, `power.rs`), each case named after the BMC known to do it.
//! TLS to the BMC is verified (system CAs, `--bmc-ca`, or `--bmc-pin`);
//! `--insecure` is allowed but warned about on every run. The password is
//! read from a file or the environment, is never printed, and goes only to
//! the origin given with `--bmc` ([`transport`]). What the BMC sends is
//! bounded (body size, collection size) and cleaned of the password and of
//! control characters before anything prints it ([`untrusted`]).

mod boot;
pub mod client;
mod collection;
mod discover;
mod disk;
pub mod error;
mod fingerprint;
mod media;
mod media_trust;
pub mod model;
mod power;
mod retry;
mod serve;
mod status;
mod transport;
pub mod untrusted;

pub use boot::{BootReport, BootRequest, boot};
pub use client::{Client, ClientOptions, Retry};
pub use discover::{Slot, System, cd_slot, find_system, virtual_media};
pub use disk::{DiskBoot, boot_from_disk};
pub use error::RedfishError;
pub use media_trust::{MediaTrust, trust_media_ca};
pub use power::{Power, reset};
pub use serve::{ImageServer, Limits as ImageServerLimits, serve_images};
pub use status::{Status, status};
pub(crate) use transport::{OriginError, origin};

use crate::cli::OutputFormat;
use crate::cli::bmc::{BmcArgs, BmcCommand, BmcTlsArgs, PowerAction};
use crate::secrets::Secret;
use crate::tls::ServerTrust;
use anyhow::{Context, Result, bail};
use std::process::ExitCode;
use std::time::Duration;

/// The environment variable that may hold the BMC password.
pub const PASSWORD_ENV: &str = "DCN_BMC_PASSWORD";

/// Run a `dcn bmc` subcommand.
pub fn run(cmd: BmcCommand) -> Result<ExitCode> {
    match cmd {
        BmcCommand::Boot(args) => {
            let (client, system) = connect(&args.bmc)?;
            let report = boot(
                &client,
                &system,
                &BootRequest {
                    image_url: args.iso_url.clone(),
                    allow_continuous: args.allow_continuous,
                    media_timeout: Duration::from_secs(args.media_timeout),
                    power_timeout: Duration::from_secs(args.power_timeout),
                },
            )?;
            println!(
                "System {} is booting {} from virtual media {}: boot override {} ({}), {} requested, power {}.",
                report.system,
                report.image,
                report.virtual_media,
                report.boot_target,
                report.boot_enabled,
                report.reset_type,
                report.power_state
            );
            insecure_reminder(&client, &args.bmc.tls);
            Ok(ExitCode::SUCCESS)
        }
        BmcCommand::Status { bmc, output } => {
            let (client, system) = connect(&bmc)?;
            let st = status(&client, &system)?;
            match output {
                OutputFormat::Text => println!("{st}"),
                OutputFormat::Json => println!("{}", serde_json::to_string_pretty(&st)?),
            }
            insecure_reminder(&client, &bmc.tls);
            Ok(ExitCode::SUCCESS)
        }
        BmcCommand::Eject(bmc) => {
            let (client, system) = connect(&bmc)?;
            for line in eject(&client, &system)? {
                println!("{line}");
            }
            insecure_reminder(&client, &bmc.tls);
            Ok(ExitCode::SUCCESS)
        }
        BmcCommand::Power(args) => {
            let (client, system) = connect(&args.bmc)?;
            let power = match args.action {
                PowerAction::On => Power::On,
                PowerAction::Off => Power::Off {
                    graceful: args.graceful,
                },
                PowerAction::Reset => Power::Reset {
                    graceful: args.graceful,
                },
            };
            let reset_type = power::reset(&client, &system, power)?;
            let label = system.label();
            let waits = !matches!(power, Power::Reset { .. }) && args.power_timeout > 0;
            if waits {
                let timeout = Duration::from_secs(args.power_timeout);
                let (seen, took) = power::wait_for(&client, &system, power.end_state(), timeout)?;
                if seen != power.end_state() {
                    bail!(
                        "system {label}: the BMC accepted {reset_type}, but the power state is still {seen} after {}s",
                        args.power_timeout
                    );
                }
                println!(
                    "System {label}: {reset_type} done, power {seen} after {:.1}s.",
                    took.as_secs_f64()
                );
            } else {
                println!("System {label}: {reset_type} requested.");
            }
            insecure_reminder(&client, &args.bmc.tls);
            Ok(ExitCode::SUCCESS)
        }
        BmcCommand::Fingerprint(args) => fingerprint::run(&args),
    }
}

/// Log in and find the system.
fn connect(args: &BmcArgs) -> Result<(Client, System)> {
    let client = Client::new(&ClientOptions {
        url: args.bmc.clone(),
        username: args.username.clone(),
        password: password(args)?,
        trust: trust(&args.tls)?,
        timeout: Duration::from_secs(args.timeout.max(1)),
        retry: Retry::default(),
        credentials_from: "--username, and the password in --password-file or DCN_BMC_PASSWORD"
            .into(),
    })?;
    let system = find_system(&client, args.system.as_deref())?;
    Ok((client, system))
}

/// `dcn bmc eject`: empty the virtual CD, and clear a boot override that
/// still points at it, so the next boot is from disk.
pub fn eject(client: &Client, system: &System) -> Result<Vec<String>> {
    let slot = cd_slot(client, system)?;
    let mut lines = Vec::new();
    if slot.media.is_inserted() {
        let what = slot
            .media
            .inserted_image()
            .unwrap_or("the media")
            .to_string();
        media::eject(client, &slot)?;
        lines.push(format!("Ejected {what} from virtual media {}.", slot.id()));
    } else {
        lines.push(format!("Virtual media {} was already empty.", slot.id()));
    }
    let system = system.reload(client)?;
    let boot = system.resource.boot.clone().unwrap_or_default();
    let target = boot.boot_source_override_target.unwrap_or_default();
    let enabled = boot.boot_source_override_enabled.unwrap_or_default();
    if matches!(target.as_str(), "Cd" | "UsbCd") && enabled != "Disabled" {
        power::clear_override(client, &system).with_context(|| {
            format!(
                "the virtual CD was emptied, but the boot override to {target} ({enabled}) is still set"
            )
        })?;
        lines.push(format!(
            "Boot override to {target} ({enabled}) cleared: the next boot is from the disk."
        ));
    }
    Ok(lines)
}

/// The BMC password: `--password-file` (its first line), else the
/// environment. Never from the command line.
fn password(args: &BmcArgs) -> Result<Secret> {
    if let Some(file) = &args.password_file {
        let text = std::fs::read_to_string(file)
            .with_context(|| format!("reading the BMC password from {}", file.display()))?;
        warn_if_readable_by_others(file);
        let line = text.lines().next().unwrap_or("");
        if line.is_empty() {
            bail!(
                "{} is empty: write the BMC password on its first line",
                file.display()
            );
        }
        return Ok(Secret::new(line));
    }
    match std::env::var(PASSWORD_ENV) {
        Ok(v) if !v.is_empty() => Ok(Secret::new(v)),
        _ => bail!(
            "no BMC password: write it to a file only you can read and pass --password-file FILE, or set {PASSWORD_ENV}"
        ),
    }
}

fn warn_if_readable_by_others(file: &std::path::Path) {
    use std::os::unix::fs::PermissionsExt;
    if let Ok(meta) = std::fs::metadata(file)
        && meta.permissions().mode() & 0o077 != 0
    {
        tracing::warn!(
            "{} holds the BMC password but other users may read it; `chmod 600 {}`",
            file.display(),
            file.display()
        );
    }
}

fn trust(args: &BmcTlsArgs) -> Result<ServerTrust> {
    if args.insecure {
        return Ok(ServerTrust::Insecure);
    }
    if let Some(pin) = &args.bmc_pin {
        return Ok(ServerTrust::Pin(pin.clone()));
    }
    if let Some(file) = &args.bmc_ca {
        let pem = std::fs::read_to_string(file)
            .with_context(|| format!("reading --bmc-ca {}", file.display()))?;
        crate::tls::certs_from_pem(&pem)
            .with_context(|| format!("--bmc-ca {}: no PEM certificate in it", file.display()))?;
        return Ok(ServerTrust::Ca(pem));
    }
    Ok(ServerTrust::SystemRoots)
}

/// After an `--insecure` run: the pin to use next time.
fn insecure_reminder(client: &Client, tls: &BmcTlsArgs) {
    if tls.insecure
        && let Some(pin) = client.presented_pin()
    {
        tracing::info!(
            "The BMC presented the key {pin}: once it is checked out of band (`dcn bmc fingerprint`), pass --bmc-pin {pin} instead of --insecure."
        );
    }
}
