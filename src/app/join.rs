//! `dcn join BUNDLE`: join this host to a control plane as an edge compute
//! node, then print the time per step.

use crate::cli::JoinArgs;
use anyhow::{Context, Result};
use std::process::ExitCode;

pub(super) fn join(args: JoinArgs, recipes: &crate::recipes::Recipes) -> Result<ExitCode> {
    let ca_pin = args
        .ca_pin
        .as_deref()
        .map(str::parse::<crate::pki::Pin>)
        .transpose()
        .context("--ca-pin")?;
    let host = crate::host::Host::system("/", false);
    let started = std::time::Instant::now();
    let report = crate::edge::join::join(
        recipes,
        &host,
        &crate::edge::join::JoinOptions {
            bundle: args.bundle,
            ca_pin,
            hostname: args.hostname,
            my_ip: args.my_ip,
            timeout: args.timeout,
            packages: args.packages,
            ignore_preflight: crate::preflight::parse_ignore(&args.ignore_preflight_errors)?,
        },
    )?;
    println!(
        "{} ({}) {} site {}: its nova-compute is up, in availability zone {}, and in placement.",
        report.hostname,
        report.address,
        if report.rejoined {
            "is still a node of"
        } else {
            "joined"
        },
        report.site,
        report.site
    );
    println!("Time per step:");
    for (step, took) in &report.steps {
        println!("  {step:<46} {:>7.1}s", took.as_secs_f64());
    }
    println!(
        "  {:<46} {:>7.1}s",
        "total",
        started.elapsed().as_secs_f64()
    );
    Ok(ExitCode::SUCCESS)
}
