//! `dcn cert …` and `dcn ca …`: the certificates dcn issued and the
//! control plane's CA, printed for the operator.

use crate::cli::{CaCommand, CertCommand, OutputFormat};
use crate::deployment::Deployment;
use crate::host::Host;
use crate::recipes::Recipes;
use crate::terminal_text::{Column, Table};
use anyhow::{Context, Result};
use std::process::ExitCode;

pub(super) fn cert(cmd: CertCommand, recipes: &Recipes) -> Result<ExitCode> {
    let host = Host::system("/", false);
    match cmd {
        CertCommand::List { output } => {
            let rows =
                crate::status::certificates::list(&host.files, std::time::SystemTime::now())?;
            match output {
                OutputFormat::Json => println!("{}", serde_json::to_string_pretty(&rows)?),
                OutputFormat::Text => print_certificates(&rows),
            }
        }
        CertCommand::Renew { force } => renew(recipes, &host, force)?,
    }
    Ok(ExitCode::SUCCESS)
}

/// `dcn cert list` as a table.
fn print_certificates(rows: &[crate::certs::inventory::CertRow]) {
    let mut t = Table::new(&[
        Column::new("OWNER", 64).at_least(13),
        Column::new("NAME", 16).at_least(8),
        Column::new("SUBJECT", 64).at_least(20),
        Column::new("ISSUER", 64).at_least(20),
        Column::new("SERIAL", 40).at_least(12),
        Column::new("NOT AFTER", 32).at_least(20),
        Column::new("LEFT", 16).at_least(7),
        Column::new("STATE", 16),
    ])
    .gap(1);
    for r in rows {
        t.row([
            r.owner.as_str(),
            &r.name,
            &r.subject,
            &r.issuer,
            &r.serial,
            &r.not_after,
            &r.left_shown(),
            &r.state,
        ]);
    }
    print!("{}", t.render());
}

/// `dcn cert renew`: the control plane's certificates that are due (or all
/// with `force`), or this node's.
fn renew(recipes: &Recipes, host: &Host, force: bool) -> Result<()> {
    let deployment = Deployment::load(&host.files)?
        .context("dcn has set up nothing on this host: run `dcn standalone init` or `dcn join`")?;
    if deployment.roles.iter().any(|r| r == "controller") {
        let run = crate::centre::renewal::renew::renew(recipes, host, force)?;
        if run.issued.is_empty() {
            println!("No certificate of the control plane is due.");
        }
        for (name, why, info) in &run.issued {
            println!(
                "Renewed the {name} certificate ({why}): serial {}, valid until {}.",
                info.serial,
                crate::timefmt::rfc3339(crate::pki::lifetime::system_time(info.not_after))
            );
        }
        if run.trust_changed {
            println!(
                "Wrote the CA certificates clients trust to {}.",
                crate::paths::PUBLIC_CA
            );
        }
        for i in &run.installed {
            println!(
                "Installed {}'s {} certificate; {}.",
                i.service, i.leaf, i.told
            );
        }
    } else {
        let done = crate::edge::join::node_cert::check_now(recipes, host, force)?;
        match &done.renewed {
            Some((serial, until)) => {
                println!("Renewed this node's certificate: serial {serial}, valid until {until}.")
            }
            None => {
                println!("This node's certificate is not due; the join service has it on record.")
            }
        }
        if done.trust_changed {
            println!("The CAs this node trusts changed.");
        }
    }
    Ok(())
}

pub(super) fn ca(cmd: CaCommand, recipes: &Recipes) -> Result<ExitCode> {
    let host = Host::system("/", false);
    match cmd {
        CaCommand::Status { output } => {
            let s = crate::centre::renewal::rotation::status(&host)?;
            match output {
                OutputFormat::Json => println!("{}", serde_json::to_string_pretty(&s)?),
                OutputFormat::Text => {
                    println!(
                        "CA in service: {} (pin {}), valid until {}",
                        s.current.subject, s.current.pin, s.current.not_after
                    );
                    match &s.next {
                        None => println!("No rotation under way."),
                        Some(n) => {
                            println!(
                                "Rotation: {} to {} (pin {}), valid until {}",
                                s.rotation, n.subject, n.pin, n.not_after
                            );
                            println!(
                                "Nodes that trust the new CA: {} of {}{}",
                                s.nodes_moved.len(),
                                s.nodes_moved.len() + s.nodes_not_moved.len(),
                                if s.nodes_not_moved.is_empty() {
                                    String::new()
                                } else {
                                    format!("; not yet: {}", s.nodes_not_moved.join(", "))
                                }
                            );
                        }
                    }
                }
            }
        }
        CaCommand::Rotate { finish: false, .. } => {
            let s = crate::centre::renewal::rotation::start(recipes, &host)?;
            if s.created {
                println!(
                    "Made a new CA (pin {}), trusted beside the one in service.",
                    s.pin
                );
            } else {
                println!(
                    "A rotation to the CA with pin {} is under way; carried on.",
                    s.pin
                );
            }
            println!(
                "Nodes trust it from their next certificate check; new join bundles pin it. `dcn ca status` shows which nodes do; then `dcn ca rotate --finish`."
            );
        }
        CaCommand::Rotate {
            finish: true,
            force,
        } => {
            let f = crate::centre::renewal::rotation::finish(recipes, &host, force)?;
            println!(
                "The CA with pin {} is in service; {} certificate(s) of the control plane reissued by it.",
                f.pin,
                f.reissued.len()
            );
            if let Some(old) = &f.retired {
                println!(
                    "Retired the CA with pin {old}: its key is deleted; bundles pinned to it are refused."
                );
            }
            if !f.left_behind.is_empty() {
                println!(
                    "These nodes did not trust the new CA and cannot reach the control plane until `dcn node trust-ca --ca-pin {}` runs on each: {}",
                    f.pin,
                    f.left_behind.join(", ")
                );
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}
