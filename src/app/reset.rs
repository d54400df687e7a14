//! `dcn reset`: remove what dcn set up on this host, after the operator
//! confirms.

use anyhow::Result;
use std::process::ExitCode;

pub(super) fn reset(purge: bool, yes: bool, recipes: &crate::recipes::Recipes) -> Result<ExitCode> {
    use std::io::{BufRead, IsTerminal, Write};
    if !yes {
        if !std::io::stdin().is_terminal() {
            anyhow::bail!(
                "refusing to reset without confirmation: there is no terminal to ask on; pass --yes"
            );
        }
        eprint!(
            "This removes the OpenStack services dcn set up here: guests, databases, configuration, secrets and the CA{}.\nType 'yes' to go on: ",
            if purge { ", and the packages" } else { "" }
        );
        std::io::stderr().flush()?;
        let mut answer = String::new();
        std::io::stdin().lock().read_line(&mut answer)?;
        if answer.trim() != "yes" {
            println!("Nothing was changed.");
            return Ok(ExitCode::FAILURE);
        }
    }
    let host = crate::host::Host::system("/", false);
    let report = crate::reset::reset(&host, recipes, purge)?;
    println!(
        "Reset: {} unit(s) stopped, {} database(s) dropped, {} path(s) removed{}.",
        report.units.len(),
        report.databases.len(),
        report.paths.len(),
        if purge {
            format!(", {} package(s) purged", report.packages)
        } else {
            String::new()
        }
    );
    Ok(ExitCode::SUCCESS)
}
