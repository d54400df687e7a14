//! `dcn upgrade [--plan]`: show the plan, then (without `--plan`) apply it
//! and say what changed, what restarted and what still runs old code.

use crate::centre::upgrade::{self, Plan};
use crate::cli::UpgradeArgs;
use crate::recipes::Recipes;
use anyhow::Result;
use std::process::ExitCode;

pub(super) fn upgrade(args: UpgradeArgs, recipes: &Recipes) -> Result<ExitCode> {
    let ignore = crate::preflight::parse_ignore(&args.ignore_preflight_errors)?;
    let host = crate::host::Host::system("/", false);
    let plan = upgrade::plan(recipes, &host)?;
    if plan.is_empty() {
        println!(
            "Nothing to upgrade: this host runs dcn {}, every package is at its source's version, and every file and unit is current.",
            plan.release_to
        );
        return Ok(ExitCode::SUCCESS);
    }
    print_plan(&plan);
    if args.plan {
        println!("\nPlan only: nothing was changed. `dcn upgrade` applies it.");
        return Ok(ExitCode::SUCCESS);
    }
    println!("\nApplying.");
    let started = std::time::Instant::now();
    let applied = upgrade::apply(recipes, &host, plan.packages, ignore)?;
    println!(
        "Upgraded to dcn {} in {:.0}s: {} package(s) changed; restarted or started: {}.",
        plan.release_to,
        started.elapsed().as_secs_f64(),
        applied.packages.len(),
        match applied.restarted_units() {
            u if u.is_empty() => "nothing".to_string(),
            u => u.join(", "),
        }
    );
    if !applied.guests_on_old_qemu.is_empty() {
        println!(
            "{} guest(s) still run the qemu the upgrade replaced, and take the new one when next restarted (a hard reboot, or a migration): {}",
            applied.guests_on_old_qemu.len(),
            applied.guests_on_old_qemu.join(", ")
        );
    }
    Ok(ExitCode::SUCCESS)
}

fn print_plan(plan: &Plan) {
    println!(
        "dcn: {} → {}",
        plan.release_from.as_deref().unwrap_or("(not recorded)"),
        plan.release_to
    );
    println!("Packages ({}):", plan.packages.len());
    for p in &plan.packages {
        println!("  {}", p.line());
    }
    println!("Files ({}):", plan.files.len());
    for f in &plan.files {
        println!("  {} ({:?})", f.path, f.change);
    }
    println!("In order, after the packages and files:");
    for (i, s) in plan.services.iter().enumerate() {
        println!("  {}. {}", i + 1, s.service);
        for sync in &s.schema_syncs {
            println!("       schema sync {sync} runs again");
        }
        for (unit, why) in &s.restarts {
            println!("       restart {unit}: {why}");
        }
    }
    if plan.services.is_empty() {
        println!("  no service restarts");
    }
    if !plan.other_steps.is_empty() {
        println!("Also: {}", plan.other_steps.join(", "));
    }
    for change in &plan.files {
        println!("\n--- {} ({:?})", change.path, change.change);
        print!("{}", change.diff);
    }
}
