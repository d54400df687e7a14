//! `dcn standalone init`: set up the control plane, then print what changed,
//! the time per phase and where the credentials are (or, in a dry run, the
//! plan).

use crate::cli::InitArgs;
use crate::recipes::Recipes;
use anyhow::Result;
use std::process::ExitCode;

fn load_config(
    path: Option<&std::path::Path>,
    recipes: &Recipes,
) -> Result<crate::config::StandaloneConfig> {
    match path {
        Some(p) => crate::config::load_standalone(recipes, p),
        None => Ok(crate::config::StandaloneConfig::default()),
    }
}

pub(super) fn standalone_init(args: InitArgs, recipes: &Recipes) -> Result<ExitCode> {
    use crate::centre::standalone::PhaseName;
    let config = load_config(args.config.as_deref(), recipes)?;
    let until = args.phase.0;
    let ignore_preflight = crate::preflight::parse_ignore(&args.ignore_preflight_errors)?;
    let host = crate::host::Host::system(&args.root, args.dry_run);
    let started = std::time::Instant::now();
    let report = crate::centre::standalone::init(
        recipes,
        &config,
        &host,
        &crate::centre::standalone::InitOptions {
            until,
            ignore_preflight,
            upgrade: false,
        },
    )?;
    if args.dry_run {
        print_plan(&report.run);
        return Ok(ExitCode::SUCCESS);
    }
    let changed = report.changed_steps();
    if changed.is_empty() {
        println!("Nothing to do: every step was already done; the checks passed.");
    } else {
        // Name what changed; a first run changes everything, so cap the list.
        const SHOWN: usize = 12;
        let mut list = changed[..changed.len().min(SHOWN)].join(", ");
        if changed.len() > SHOWN {
            list.push_str(&format!(", and {} more", changed.len() - SHOWN));
        }
        println!("Applied {} step(s): {list}", changed.len());
    }
    println!(
        "Control plane {} at {} (roles: {}; {} packages).",
        report.hostname,
        report.address,
        report.roles.join(", "),
        report.packages
    );
    println!("Time per phase:");
    for (phase, took) in &report.run.phases {
        println!("  {phase:<15} {:>7.1}s", took.as_secs_f64());
    }
    println!(
        "  {:<15} {:>7.1}s",
        "total",
        started.elapsed().as_secs_f64()
    );
    println!(
        "CPU time: dcn {:.1}s, the commands it ran {:.1}s",
        cpu_seconds(false),
        cpu_seconds(true)
    );
    if let Some(pin) = &report.ca_pin {
        println!("CA pin: {pin}");
    }
    if until == PhaseName::Finalize {
        println!(
            "Credentials: {} (0600), {}",
            crate::centre::standalone::finalize::CLOUDS_YAML,
            crate::centre::standalone::finalize::OPENRC
        );
        println!(
            "Logs: journalctl -u <unit>, and /var/log/{{keystone,nova,neutron,glance,placement}}/"
        );
        println!("Try: OS_CLOUD=dcn openstack compute service list");
    }
    Ok(ExitCode::SUCCESS)
}

/// Print a dry run's steps and file diffs.
fn print_plan(run: &crate::engine::RunReport) {
    use crate::engine::Outcome;
    for (name, outcome) in &run.steps {
        match outcome {
            Outcome::AlreadyDone | Outcome::Checked | Outcome::Ensured => {
                println!("  ok       {name}")
            }
            Outcome::Applied => println!("  applied  {name}"),
            Outcome::WouldApply(files) => {
                println!("  change   {name}");
                for f in files {
                    println!("             {f}");
                }
            }
        }
    }
    for change in &run.planned {
        println!("\n--- {} ({:?})", change.path, change.change);
        print!("{}", change.diff);
    }
    println!("\nDry run: nothing was changed.");
}

/// User + system CPU seconds of this process, or of the children it waited for.
fn cpu_seconds(children: bool) -> f64 {
    use nix::sys::resource::{UsageWho, getrusage};
    let who = if children {
        UsageWho::RUSAGE_CHILDREN
    } else {
        UsageWho::RUSAGE_SELF
    };
    getrusage(who)
        .map(|u| {
            let t = |tv: nix::sys::time::TimeVal| tv.tv_sec() as f64 + tv.tv_usec() as f64 / 1e6;
            t(u.user_time()) + t(u.system_time())
        })
        .unwrap_or(0.0)
}
