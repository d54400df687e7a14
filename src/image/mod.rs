//! The edge boot image: one generic ISO per release, customised per node in
//! milliseconds.
//!
//! - [`build`]: `dcn image build`, the ISO from a recipe (`images/edge/`):
//!   a Debian live system with the edge packages, dcn and the installer;
//! - [`iso9660`] and [`payload`]: the ISO's zero-filled payload area
//!   (`dcn/payload.bin`) and the framed bundle + `NodeConfig` written in it;
//! - [`embed`]: `dcn image embed` and `dcn image show`;
//! - [`install`]: `dcn install`, run by the live system: disk, OS,
//!   bootloader, node settings, and the first-boot unit that runs
//!   `dcn join` ([`firstboot`]).
//!
//! `docs/image.md` is the operator's guide and the format's description.

pub mod build;
pub mod embed;
pub mod firstboot;
pub mod install;
pub mod iso9660;
mod mounts;
mod output;
pub mod payload;
pub mod recipe;

use crate::cli::OutputFormat;
use crate::cli::image::{ImageCommand, InstallArgs};
use anyhow::{Context, Result};
use std::process::ExitCode;

/// The payload area's path on the ISO.
pub const PAYLOAD_PATH: &str = "dcn/payload.bin";

/// Run `dcn image ...`.
pub fn run(cmd: ImageCommand) -> Result<ExitCode> {
    match cmd {
        ImageCommand::Serve(args) => {
            crate::bmc::serve_images(&args)?;
            Ok(ExitCode::SUCCESS)
        }
        ImageCommand::Build(args) => {
            let dcn_binary = match args.dcn_binary {
                Some(p) => p,
                None => std::env::current_exe().context("finding the running dcn binary")?,
            };
            let runner = crate::host::SystemRunner::new(false);
            let report = build::build(
                &runner,
                &build::BuildOptions {
                    recipe: args.recipe,
                    output: args.output,
                    cache: args.cache,
                    dcn_binary,
                    refresh: args.refresh,
                },
            )?;
            println!(
                "Wrote {} ({} MiB; {} packages; payload area {} KiB) in {:.0}s:",
                report.output.display(),
                report.iso_bytes / (1024 * 1024),
                report.packages,
                report.payload_area_bytes / 1024,
                report.total_seconds
            );
            for s in &report.stages {
                println!("  {:<10} {:>7.1}s {}", s.stage, s.seconds, s.note);
            }
            if let Some(path) = args.report {
                std::fs::write(&path, serde_json::to_string_pretty(&report)?)
                    .with_context(|| format!("writing {}", path.display()))?;
            }
            println!(
                "Next: dcn image embed {} --bundle BUNDLE --node NODE.yaml -o NODE.iso",
                report.output.display()
            );
            Ok(ExitCode::SUCCESS)
        }
        ImageCommand::Embed(args) => {
            let dest = match args.output {
                Some(out) if !args.in_place => embed::Destination::Copy(out),
                _ => embed::Destination::InPlace,
            };
            let r = embed::embed(&args.iso, &args.bundle, &args.node, &dest)?;
            println!(
                "{}: embedded node {} (site {}): {} of {} bytes of the payload area, written in {:.1} ms",
                r.iso.display(),
                r.hostname,
                r.site,
                r.payload_bytes,
                r.area_bytes,
                r.write_seconds * 1000.0
            );
            Ok(ExitCode::SUCCESS)
        }
        ImageCommand::Show { iso, output } => {
            let shown = embed::show(&iso)?;
            match output {
                OutputFormat::Text => println!("{shown}"),
                OutputFormat::Json => println!("{}", serde_json::to_string_pretty(&shown)?),
            }
            Ok(ExitCode::SUCCESS)
        }
    }
}

/// Run `dcn install`.
pub fn install(args: InstallArgs) -> Result<ExitCode> {
    install::run(&args)
}
