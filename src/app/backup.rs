//! `dcn backup [verify]` and `dcn restore`, printed for the operator.

use crate::cli::{BackupArgs, BackupCommand, OutputFormat, RestoreArgs};
use crate::host::Host;
use crate::recipes::Recipes;
use anyhow::{Context, Result};
use std::process::ExitCode;

fn mib(bytes: u64) -> String {
    format!("{:.1} MiB", bytes as f64 / (1 << 20) as f64)
}

pub(super) fn backup(args: BackupArgs, recipes: &Recipes) -> Result<ExitCode> {
    let host = Host::system("/", false);
    if let Some(BackupCommand::Verify {
        file,
        ca_pin,
        output,
    }) = args.command
    {
        let pin = ca_pin.map(|p| p.parse()).transpose()?;
        let v = crate::centre::backup::archive::read(recipes, &file, None, pin.as_ref())?;
        let m = &v.manifest;
        match output {
            OutputFormat::Json => println!("{}", serde_json::to_string_pretty(m)?),
            OutputFormat::Text => println!(
                "{}: a backup of control plane {} ({}) taken {} by dcn {}: {} members, {}, signed by CA {}{}. It verifies.",
                file.display(),
                m.hostname,
                m.address,
                m.created_at,
                m.dcn_version,
                m.members.len(),
                mib(m.total_size()),
                m.ca_pin,
                if m.with_images { ", with images" } else { "" }
            ),
        }
        return Ok(ExitCode::SUCCESS);
    }
    let report = if args.scheduled {
        match crate::centre::backup::schedule::run(recipes, &host)? {
            None => {
                println!("Scheduled backups are off (backup.schedule in the config).");
                return Ok(ExitCode::SUCCESS);
            }
            Some(s) => {
                for p in &s.pruned {
                    println!("Deleted the older backup {}.", p.display());
                }
                s.report
            }
        }
    } else {
        let output = args.output.context(
            "say where the archive goes: --output FILE (it holds every secret of the cloud: keep it where only you can read it)",
        )?;
        crate::centre::backup::create::backup(
            recipes,
            &host,
            &crate::centre::backup::create::Options {
                output,
                with_images: args.with_images,
            },
        )?
    };
    match args.output_format {
        OutputFormat::Json => println!("{}", serde_json::to_string_pretty(&report)?),
        OutputFormat::Text => {
            println!(
                "Wrote {} (0600): {} compressed from {} in {:.1}s. It holds every secret of the cloud: keep it off this host, where only you can read it.",
                report.path.display(),
                mib(report.size),
                mib(report.content),
                report.seconds
            );
            for p in &report.parts {
                println!("  {:<24} {:>12} {:>7.1}s", p.name, mib(p.bytes), p.seconds);
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}

pub(super) fn restore(args: RestoreArgs, recipes: &Recipes) -> Result<ExitCode> {
    let host = Host::system("/", false);
    let ca_pin = args.ca_pin.map(|p| p.parse()).transpose()?;
    let report = crate::centre::backup::restore::restore(
        recipes,
        &host,
        &crate::centre::backup::restore::LiveHost,
        &crate::centre::backup::restore::Options {
            archive: args.file,
            ca_pin,
            ignore_preflight: args.ignore_preflight_errors,
        },
    )?;
    match args.output {
        OutputFormat::Json => println!("{}", serde_json::to_string_pretty(&report)?),
        OutputFormat::Text => println!(
            "Restored control plane {} ({}) from its backup of {} in {:.0}s (checked {:.0}s, infrastructure {:.0}s, data loaded {:.0}s, services {:.0}s). Edges reconnect by themselves: `dcn node list` shows them.",
            report.hostname,
            report.address,
            report.backup_created_at,
            report.total_seconds,
            report.verify_seconds,
            report.infrastructure_seconds,
            report.load_seconds,
            report.services_seconds
        ),
    }
    Ok(ExitCode::SUCCESS)
}
