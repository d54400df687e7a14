//! `dcn bmc …`: the parsed arguments as a [`crate::bmc::Connection`] and a
//! request, the BMC driven through the library, the outcome printed.

use crate::bmc::{self, BootRequest, Connection, Power, Trust};
use crate::cli::OutputFormat;
use crate::cli::bmc::{BmcArgs, BmcCommand, BmcTlsArgs, FingerprintArgs, PowerAction, PowerArgs};
use anyhow::{Result, bail};
use std::process::ExitCode;
use std::time::Duration;

/// Run a `dcn bmc` subcommand.
pub(super) fn bmc(cmd: BmcCommand) -> Result<ExitCode> {
    match cmd {
        BmcCommand::Boot(args) => {
            let conn = connection(&args.bmc);
            let (client, system) = bmc::connect(&conn)?;
            let report = bmc::boot(
                &client,
                &system,
                &BootRequest {
                    image_url: args.iso_url.clone(),
                    allow_continuous: args.allow_continuous,
                    media_timeout: Duration::from_secs(args.media_timeout),
                    power_timeout: Duration::from_secs(args.power_timeout),
                    timeouts_are_flags: true,
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
            bmc::insecure_reminder(&client, &conn);
            Ok(ExitCode::SUCCESS)
        }
        BmcCommand::Status { bmc, output } => {
            let conn = connection(&bmc);
            let (client, system) = bmc::connect(&conn)?;
            let st = bmc::status(&client, &system)?;
            match output {
                OutputFormat::Text => println!("{st}"),
                OutputFormat::Json => println!("{}", serde_json::to_string_pretty(&st)?),
            }
            bmc::insecure_reminder(&client, &conn);
            Ok(ExitCode::SUCCESS)
        }
        BmcCommand::Eject(bmc) => {
            let conn = connection(&bmc);
            let (client, system) = bmc::connect(&conn)?;
            for line in bmc::eject(&client, &system)? {
                println!("{line}");
            }
            bmc::insecure_reminder(&client, &conn);
            Ok(ExitCode::SUCCESS)
        }
        BmcCommand::Power(args) => power(&args),
        BmcCommand::Fingerprint(args) => fingerprint(&args),
    }
}

/// `--bmc`, `--user`, `--password-file`, the TLS choice and `--timeout`.
fn connection(args: &BmcArgs) -> Connection {
    Connection {
        url: args.bmc.clone(),
        system: args.system.clone(),
        username: args.username.clone(),
        password_file: args.password_file.clone(),
        trust: trust(&args.tls),
        timeout: Duration::from_secs(args.timeout),
    }
}

/// `--insecure` wins over `--bmc-pin`, which wins over `--bmc-ca`.
fn trust(tls: &BmcTlsArgs) -> Trust {
    if tls.insecure {
        Trust::Insecure
    } else if let Some(pin) = &tls.bmc_pin {
        Trust::Pin(pin.clone())
    } else if let Some(file) = &tls.bmc_ca {
        Trust::CaFile(file.clone())
    } else {
        Trust::SystemRoots
    }
}

/// `dcn bmc power`: request the change, and (but for a reset) wait for the
/// power state it ends in.
fn power(args: &PowerArgs) -> Result<ExitCode> {
    let conn = connection(&args.bmc);
    let (client, system) = bmc::connect(&conn)?;
    let power = match args.action {
        PowerAction::On => Power::On,
        PowerAction::Off => Power::Off {
            graceful: args.graceful,
        },
        PowerAction::Reset => Power::Reset {
            graceful: args.graceful,
        },
    };
    let reset_type = bmc::reset(&client, &system, power)?;
    let label = system.label();
    let waits = !matches!(power, Power::Reset { .. }) && args.power_timeout > 0;
    if waits {
        let wait = bmc::Deadline::after(
            Duration::from_secs(args.power_timeout),
            format!("the wait for power {}", power.end_state()),
        )
        .set_by("--power-timeout");
        let (seen, took) = bmc::wait_for(&client, &system, power.end_state(), &wait)?;
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
    bmc::insecure_reminder(&client, &conn);
    Ok(ExitCode::SUCCESS)
}

/// `dcn bmc fingerprint`: the certificate's facts, then how to check them.
fn fingerprint(args: &FingerprintArgs) -> Result<ExitCode> {
    let fp = bmc::fingerprint(&args.bmc, Duration::from_secs(args.timeout))?;
    match args.output {
        OutputFormat::Json => println!("{}", serde_json::to_string_pretty(&fp)?),
        OutputFormat::Text => {
            let names: Vec<String> = fp
                .dns_names
                .iter()
                .chain(&fp.ip_addresses)
                .cloned()
                .collect();
            println!("pin:          {}", fp.pin);
            println!("fingerprint:  SHA256 {}", fp.sha256_fingerprint);
            println!("subject:      {}", fp.subject);
            println!("valid until:  {}", fp.not_after);
            println!(
                "names:        {}",
                if names.is_empty() {
                    "-".to_string()
                } else {
                    names.join(", ")
                }
            );
        }
    }
    tracing::info!(
        "Not yet trusted: compare the fingerprint with the one the BMC's own console shows (or `openssl x509 -noout -fingerprint -sha256` on its certificate), then pass --bmc-pin {}",
        fp.pin
    );
    Ok(ExitCode::SUCCESS)
}
