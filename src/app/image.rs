//! `dcn image …` and `dcn install`: the parsed arguments as the image
//! library's options, its reports printed.

use crate::bmc::{ImageServeOptions, ImageServerLimits};
use crate::cli::OutputFormat;
use crate::cli::bmc::ImageServeArgs;
use crate::cli::image::{ImageCommand, InstallArgs};
use crate::edge::install;
use crate::image::{build, embed};
use crate::recipes::Recipes;
use anyhow::{Context, Result};
use std::process::ExitCode;

/// Run `dcn image ...`.
pub(super) fn image(cmd: ImageCommand, recipes: &Recipes) -> Result<ExitCode> {
    match cmd {
        ImageCommand::Serve(args) => {
            crate::bmc::serve_images(&serve_options(args))?;
            Ok(ExitCode::SUCCESS)
        }
        ImageCommand::Build(args) => {
            let dcn_binary = match args.dcn_binary {
                Some(p) => p,
                None => std::env::current_exe().context("finding the running dcn binary")?,
            };
            let runner = crate::host::SystemRunner::new(false);
            let report = build::build(
                recipes,
                &runner,
                // The tools the build runs (debootstrap, chroot, mounts) are
                // handed these paths from elsewhere than the operator's
                // directory, and debootstrap refuses a relative cache.
                &build::BuildOptions {
                    recipe: std::path::absolute(&args.recipe)?,
                    output: std::path::absolute(&args.output)?,
                    cache: std::path::absolute(&args.cache)?,
                    dcn_binary: std::path::absolute(&dcn_binary)?,
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
            let r = embed::embed(recipes, &args.iso, &args.bundle, &args.node, &dest)?;
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
            let shown = embed::show(recipes, &iso)?;
            match output {
                OutputFormat::Text => println!("{shown}"),
                OutputFormat::Json => println!("{}", serde_json::to_string_pretty(&shown)?),
            }
            Ok(ExitCode::SUCCESS)
        }
    }
}

/// `dcn image serve`'s arguments: the default limits but for the
/// connection counts.
fn serve_options(args: ImageServeArgs) -> ImageServeOptions {
    ImageServeOptions {
        dir: args.dir,
        listen: args.listen,
        limits: ImageServerLimits {
            max_connections: args.max_connections as usize,
            max_per_client: args.max_per_client as usize,
            ..ImageServerLimits::default()
        },
        tls_cert: args.tls_cert,
        tls_key: args.tls_key,
    }
}

/// Run `dcn install`.
pub(super) fn install(args: InstallArgs, recipes: &Recipes) -> Result<ExitCode> {
    install::run(
        recipes,
        &install::Options {
            medium: args.medium,
            console: args.console,
            no_reboot: args.no_reboot,
        },
    )?;
    Ok(ExitCode::SUCCESS)
}
