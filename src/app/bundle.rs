//! `dcn bundle …`: export a join bundle for an edge site, and inspect or
//! verify one, printed for the operator.

use crate::cli::{BundleCommand, OutputFormat};
use crate::recipes::Recipes;
use anyhow::{Context, Result};
use std::process::ExitCode;

pub(super) fn bundle(cmd: BundleCommand, recipes: &Recipes) -> Result<ExitCode> {
    use crate::bundle::{ReadOptions, read_bundle_file};
    match cmd {
        BundleCommand::Export {
            site,
            ttl,
            max_uses,
            output,
        } => export(
            recipes,
            &crate::centre::sites::export::ExportOptions {
                site,
                ttl,
                max_uses,
                output,
            },
        ),
        BundleCommand::Inspect { file, output } => {
            // Inspect shows an expired bundle (marked expired) rather than
            // refusing it; every other check still applies.
            let opts = ReadOptions {
                check_expiry: false,
                ..ReadOptions::new()
            };
            let bundle = read_bundle_file(recipes, &file, &opts)?;
            let inspection = bundle.inspect();
            match output {
                OutputFormat::Text => println!("{inspection}"),
                OutputFormat::Json => println!("{}", serde_json::to_string_pretty(&inspection)?),
            }
            if !bundle.pin_checked {
                tracing::warn!(
                    "the CA pin was not checked: compare it with the one `dcn bundle export` printed"
                );
            }
            Ok(ExitCode::SUCCESS)
        }
        BundleCommand::Verify { file, ca_pin } => {
            let pin = ca_pin
                .map(|p| p.parse::<crate::pki::Pin>())
                .transpose()
                .context("--ca-pin")?;
            let bundle = read_bundle_file(recipes, &file, &ReadOptions::new().with_pin(pin))?;
            if !bundle.pin_checked {
                tracing::warn!(
                    "the bundle's CA was trusted on first use: no --ca-pin was given; check that {} is the pin `dcn bundle export` printed",
                    bundle.ca_pin
                );
            }
            let left = crate::timefmt::rough(bundle.expires_in(std::time::SystemTime::now()));
            println!(
                "{}: valid join bundle for site {} (CA {}{}), expires in {left}",
                file.display(),
                bundle.manifest.site,
                bundle.ca_pin,
                if bundle.pin_checked { ", pinned" } else { "" }
            );
            Ok(ExitCode::SUCCESS)
        }
    }
}

/// `dcn bundle export`: the bundle written, and what to do with it.
fn export(
    recipes: &Recipes,
    opts: &crate::centre::sites::export::ExportOptions,
) -> Result<ExitCode> {
    let site = &opts.site;
    let host = crate::host::Host::system("/", false);
    let e = crate::centre::sites::export::export(recipes, &host, opts)?;
    if e.site_created {
        println!(
            "Created site {site}: availability zone and host aggregate {site}, with its own credentials."
        );
    }
    let left = crate::timefmt::rough(
        e.not_after
            .duration_since(std::time::SystemTime::now())
            .unwrap_or_default(),
    );
    println!(
        "Wrote {} (0600): for {} host(s), valid for {left}. It is a secret: copy it to the edge host over a trusted channel.",
        e.path.display(),
        e.max_uses
    );
    println!("CA pin: {}", e.pin);
    println!(
        "On the edge host: dcn join {} --ca-pin {}",
        e.path.display(),
        e.pin
    );
    Ok(ExitCode::SUCCESS)
}
