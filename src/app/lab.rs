//! `dcn lab …`: bring the local lab up and down, show its hosts, and run
//! commands in them, restart them or cut their links.

use crate::cli::{LabCommand, LabUpArgs, LinkState, OutputFormat};
use crate::recipes::Recipes;
use anyhow::{Context, Result};
use std::process::ExitCode;

pub(super) fn lab(cmd: LabCommand, recipes: &Recipes) -> Result<ExitCode> {
    match cmd {
        LabCommand::Up(args) => up(args, recipes),
        LabCommand::Down(dir) => {
            let unexpected = crate::lab::down(&dir.dir)?;
            for what in &unexpected {
                println!("removed {what}");
            }
            println!("The lab in {} is down.", dir.dir.display());
            Ok(ExitCode::SUCCESS)
        }
        LabCommand::Status { dir, output } => {
            let status = crate::lab::status(&dir.dir)?;
            match output {
                OutputFormat::Json => println!("{}", serde_json::to_string_pretty(&status)?),
                OutputFormat::Text => print_lab_status(&status),
            }
            Ok(ExitCode::SUCCESS)
        }
        LabCommand::Exec { dir, host, command } => {
            let code = crate::lab::exec(&dir.dir, &host, &command)?;
            Ok(ExitCode::from(u8::try_from(code).unwrap_or(1)))
        }
        LabCommand::Restart { dir, host, cut } => {
            let r = crate::lab::restart(&dir.dir, &host, cut)?;
            if r.link_down {
                println!(
                    "{host}: restarted, reachable after {:.1}s; its link is down, so what needs the control plane starts once `dcn lab link` brings it up",
                    r.seconds
                );
            } else {
                println!("{host}: restarted, systemd running after {:.1}s", r.seconds);
            }
            Ok(ExitCode::SUCCESS)
        }
        LabCommand::Replace { dir, host } => {
            let r = crate::lab::replace(&dir.dir, &host)?;
            println!(
                "{host}: replaced by a blank host of the same name and address, up after {:.1}s; what was on its disk is gone",
                r.seconds
            );
            Ok(ExitCode::SUCCESS)
        }
        LabCommand::Tempest {
            dir,
            smoke,
            regexes,
            zone,
            concurrency,
            output,
        } => {
            let summary = crate::lab::tempest::run(&crate::lab::tempest::TempestOptions {
                dir: dir.dir,
                smoke,
                regexes,
                zone,
                concurrency,
            })?;
            match output {
                OutputFormat::Json => println!("{}", serde_json::to_string_pretty(&summary)?),
                OutputFormat::Text => print!("{summary}"),
            }
            Ok(if summary.failed == 0 {
                ExitCode::SUCCESS
            } else {
                ExitCode::FAILURE
            })
        }
        LabCommand::Scale(args) => {
            let report = args.report.unwrap_or_else(|| args.dir.dir.join("scale"));
            let r = crate::lab::scale::run(&crate::lab::scale::ScaleOptions {
                dir: args.dir.dir,
                steps: args.hosts,
                per_site: args.per_site as usize,
                per_carrier: args.per_carrier as usize,
                window: args.window,
                settle: args.settle,
                report: report.clone(),
                storms: args.storms,
                fake_computes: args.fake_computes,
                replayed_computes: args.replayed_computes,
                calibrate: args.calibrate,
            })?;
            print!("{}", r.markdown());
            println!("\nThe report is in {}.", report.display());
            Ok(ExitCode::SUCCESS)
        }
        LabCommand::Chassis(args) => {
            let joins = crate::lab::scale::chassis::join_and_start(
                recipes,
                &crate::lab::scale::chassis::ChassisOptions {
                    bundle: args.bundle,
                    ca_pin: args.ca_pin,
                    hosts: args.hosts,
                    state: args.state,
                    timeout: std::time::Duration::from_secs(20 * 60),
                    compute: args.compute,
                },
            )?;
            println!("{}", serde_json::to_string(&joins)?);
            Ok(ExitCode::SUCCESS)
        }
        LabCommand::Link {
            dir,
            host,
            state,
            rate,
        } => {
            if rate.is_some() && state == LinkState::Down {
                anyhow::bail!("--rate goes with `up`: a link that is down carries nothing");
            }
            crate::lab::link(&dir.dir, &host, state == LinkState::Up)?;
            if let Some(rate) = &rate {
                crate::lab::link_rate(&dir.dir, &host, rate)?;
            }
            println!(
                "{host}: link {}{}",
                if state == LinkState::Up { "up" } else { "down" },
                rate.map(|r| format!(", {r} toward {host}"))
                    .unwrap_or_default()
            );
            Ok(ExitCode::SUCCESS)
        }
        LabCommand::Publish { dir, debs } => {
            for p in crate::lab::publish::publish(&dir.dir, &debs)? {
                println!(
                    "published {} {} ({}); lab hosts see it at their next apt-get update",
                    p.package, p.version, p.architecture
                );
            }
            Ok(ExitCode::SUCCESS)
        }
    }
}

fn print_lab_status(status: &crate::lab::LabStatus) {
    println!(
        "{:<8} {:<11} {:<8} {:<13} {:<8} LINK",
        "HOST", "ROLE", "SITE", "ADDRESS", "STATE"
    );
    for h in &status.hosts {
        println!(
            "{:<8} {:<11} {:<8} {:<13} {:<8} {}",
            h.name,
            h.role,
            h.site.as_deref().unwrap_or("-"),
            h.address,
            if h.running { "running" } else { "stopped" },
            if h.link_up { "up" } else { "down" }
        );
    }
    if status.vms.is_empty() {
        return;
    }
    println!(
        "\n{:<11} {:<8} {:<13} {:<18} {:<9} SERIAL LOG",
        "VM", "SITE", "ADDRESS", "MAC", "POWER"
    );
    for v in &status.vms {
        println!(
            "{:<11} {:<8} {:<13} {:<18} {:<9} {}",
            v.vm.name,
            v.vm.site,
            v.vm.address,
            v.vm.mac,
            v.power,
            v.vm.serial_log.display()
        );
    }
}

/// `dcn lab up`: the lab brought up, its phases' times printed.
fn up(args: LabUpArgs, recipes: &Recipes) -> Result<ExitCode> {
    let dcn_binary = std::env::current_exe().context("finding the running dcn binary")?;
    let report = crate::lab::up(
        &crate::lab::UpOptions {
            dir: args.dir.dir.clone(),
            cache: args.cache,
            edges: args.edges,
            spare: args.spare,
            edge_layer: !args.no_edge_layer,
            dcn_binary,
            copy_dcn: args.copy_dcn,
            config: args.config,
            cert_lifetime: args.cert_lifetime,
            bare_metal: args.bare_metal,
            bare_metal_failures: args.bare_metal_failures,
            edge_iso: args.edge_iso,
        },
        recipes,
    )?;
    println!("The lab is up ({:.0}s). Phases:", report.total_seconds);
    for p in &report.phases {
        println!("  {:<40} {:>7.1}s", p.phase, p.seconds);
    }
    println!(
        "Timings are in {}.",
        args.dir.dir.join("report.json").display()
    );
    if let Some(inventory) = &report.bare_metal_inventory {
        println!(
            "Bare-metal site {}: inventory {} (in cp: {}). Deploy it with:\n  dcn lab exec cp -- dcn site deploy {}",
            crate::lab::bare_metal::SITE,
            inventory.display(),
            crate::lab::bare_metal::CP_INVENTORY,
            crate::lab::bare_metal::CP_INVENTORY
        );
    }
    println!("Try: dcn lab exec cp -- openstack server list");
    Ok(ExitCode::SUCCESS)
}
